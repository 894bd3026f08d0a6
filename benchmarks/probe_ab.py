"""Kernel-development probe for one device call: a change (variant A, the code as it is) against
the launcher's choice before it (variant B, put back for the run), beside cuDNN in the same
process, on the suites' rows (fp16, channels_last) that the dispatcher sends to the kernels the
change is about.

    python3 benchmarks/probe_ab.py epilogue [--epilogue none|bias_relu] [--suites seed,resnet50]

- epilogue: implicit_gemm_ws's and gemm_1x1_ws's TMA-store epilogue against their pointer stores
  (``launch._ws_output_descriptor`` returning None).
- loader: implicit_gemm_ws's (and grouped_gemm_ws's) loader warps as ``launch.ws_loader_warps``
  says against one warpgroup always (``launch.WS_LOADER_WARPS``). Session 55 measured it with two
  loader warpgroups for every one-warpgroup tile, grouped or dense.
- sub-blocks: grouped_frame's wgmmas over the block-diagonal weight's diagonal blocks
  (``launch.frame_sub_blocks``) against one over the whole merged tile.

``--algo NAME`` times that algorithm (its default tile) on every row of the suites it can run,
whatever the dispatcher would choose, and the dispatcher's choice beside it ("D").

Each variant is timed ``--rounds`` times in turn (A, B, A, B, ...: the machine's drift falls on
both), each time by ``triton.testing.do_bench`` (L2 cleared before every run, median), and its
output is checked against a float32 reference with outputs poisoned before the call. Not the
benchmark of record (that is ``python -m tileconv bench``).
"""
import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.getcwd())
import torch
import torch.nn.functional as F
import triton
from triton.testing import do_bench

import tileconv
from tileconv import call_plans
from tileconv.bench.suites import get_suite
from tileconv.dispatch import select
from tileconv.dispatch.heuristics import default_config
from tileconv.functional import conv2d_problem
from tileconv.kernels import ALGORITHMS, launch
from tileconv.testing import compare, random_inputs, tolerance

parser = argparse.ArgumentParser()
parser.add_argument("change", choices=("epilogue", "loader", "sub-blocks"))
parser.add_argument("--algo", default=None)
parser.add_argument("--epilogue", default="none")
parser.add_argument("--rounds", type=int, default=3)
parser.add_argument("--suites", default=None)
args = parser.parse_args()
torch.backends.cudnn.benchmark = True
print(torch.cuda.get_device_name(), torch.__version__, triton.__version__, torch.backends.cudnn.version(), flush=True)
CHANGES = {  # change: (the launcher's attribute, A, B, the algorithms it is about, default suites)
    "epilogue": ("_ws_output_descriptor", launch._ws_output_descriptor, lambda *a, **k: None,
                 ("implicit_gemm_ws", "gemm_1x1_ws"), "seed,resnet50"),
    "loader": ("ws_loader_warps", launch.ws_loader_warps, lambda config, grouped: launch.WS_LOADER_WARPS,
               ("implicit_gemm_ws", "grouped_gemm_ws"), "grouped,resnet50,seed"),
    "sub-blocks": ("frame_sub_blocks", launch.frame_sub_blocks, lambda *a: 1, ("grouped_frame",), "grouped"),
}
attribute, new, old, algorithms, suites = CHANGES[args.change]
variants = {"A": new, "B": old}
rows = []
for suite in (args.suites or suites).split(","):
    for case in get_suite(suite):
        p = case.problem(torch.float16, "nhwc", args.epilogue)
        algo, config = select(p)
        chosen = (algo, config)
        if args.algo is not None:
            if ALGORITHMS[args.algo].unsupported_reason(p) is not None:
                continue
            algo, config = ALGORITHMS[args.algo], default_config(p, args.algo)
        elif algo.name not in algorithms:
            continue
        i = random_inputs(p, "cuda", seed=0)
        ref = p.epilogue.torch_apply(F.conv2d(i.x.float(), i.weight.float(), None, p.stride, p.padding, p.dilation, p.groups),
                                     None if i.bias is None else i.bias.float(),
                                     None if i.residual is None else i.residual.float())

        def run(p=p, i=i, algo=algo, config=config):
            return conv2d_problem(p, i.x, i.weight, i.bias, i.residual, algo=algo.name, config=config)

        def cudnn(p=p, i=i):
            return p.epilogue.torch_apply(F.conv2d(i.x, i.weight, None, p.stride, p.padding, p.dilation, p.groups), i.bias,
                                          i.residual)

        def dispatched(p=p, i=i, chosen=chosen):
            return conv2d_problem(p, i.x, i.weight, i.bias, i.residual, algo=chosen[0].name, config=chosen[1])

        times = {"cudnn": [], "A": [], "B": []} | ({"D": []} if args.algo is not None else {})
        ok = {}
        for _ in range(args.rounds):
            times["cudnn"].append(do_bench(cudnn, warmup=25, rep=100, return_mode="median") * 1e3)
            if args.algo is not None:
                call_plans.clear()  # (a plan recorded under variant B would replay B's kernel)
                times["D"].append(do_bench(dispatched, warmup=25, rep=100, return_mode="median") * 1e3)
            for name, variant in variants.items():
                setattr(launch, attribute, variant)
                call_plans.clear()  # a replay would launch the other variant's recorded kernel
                try:
                    with tileconv.poison_outputs():
                        ok[name] = compare(run(), ref, tolerance(p)).ok
                    times[name].append(do_bench(run, warmup=25, rep=100, return_mode="median") * 1e3)
                finally:
                    setattr(launch, attribute, new)
        med = {name: statistics.median(t) for name, t in times.items()}
        row = dict(name=case.name, algorithm=algo.name, config=str(config), us=med, runs=times, ok=ok,
                   a_over_b=med["B"] / med["A"], cudnn_over_a=med["cudnn"] / med["A"],
                   cudnn_over_b=med["cudnn"] / med["B"])
        rows.append(row)
        if args.algo is not None:
            row["dispatch"] = f"{chosen[0].name} {chosen[1]}"
            print(f"  dispatch: {row['dispatch']} {med['D']:7.1f} us", flush=True)
        print(f"{case.name:30s} {algo.name:16s} {str(config):22s} cudnn {med['cudnn']:7.1f} A {med['A']:7.1f} "
              f"B {med['B']:7.1f} us  A over B x{row['a_over_b']:.3f}  "
              f"vs cudnn A x{row['cudnn_over_a']:.3f} B x{row['cudnn_over_b']:.3f}  ok {ok}", flush=True)
print(f"{args.change}: geomean A over B x{statistics.geometric_mean([r['a_over_b'] for r in rows]):.3f} over "
      f"{len(rows)} rows; vs cudnn A x{statistics.geometric_mean([r['cudnn_over_a'] for r in rows]):.3f}, "
      f"B x{statistics.geometric_mean([r['cudnn_over_b'] for r in rows]):.3f}", flush=True)
with open(os.path.join(os.environ.get("OUT", "/tmp"), f"probe_ab_{args.change}_{args.epilogue}{'_' + args.algo if args.algo else ''}.json"), "w") as f:
    json.dump(dict(device=torch.cuda.get_device_name(), change=args.change, epilogue=args.epilogue, rows=rows), f,
              indent=1)
