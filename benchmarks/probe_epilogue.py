"""Kernel-development probe for one device call: the warp-specialized kernels' TMA-store epilogue
(``launch._ws_output_descriptor``) against their pointer-store epilogue, on every seed and
ResNet-50 row (fp16, channels_last) the dispatcher sends to ``implicit_gemm_ws`` or
``gemm_1x1_ws``, beside cuDNN in the same process.

    python3 benchmarks/probe_epilogue.py [--epilogue none|bias_relu] [--rounds 3]

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
from tileconv.functional import conv2d_problem
from tileconv.kernels import launch
from tileconv.testing import compare, random_inputs, tolerance

parser = argparse.ArgumentParser()
parser.add_argument("--epilogue", default="none")
parser.add_argument("--rounds", type=int, default=3)
parser.add_argument("--suites", default="seed,resnet50")
args = parser.parse_args()
torch.backends.cudnn.benchmark = True
print(torch.cuda.get_device_name(), torch.__version__, triton.__version__, torch.backends.cudnn.version(), flush=True)
tma_descriptor = launch._ws_output_descriptor
variants = {"tma": tma_descriptor, "pointers": lambda *a, **k: None}
rows = []
for suite in args.suites.split(","):
    for case in get_suite(suite):
        p = case.problem(torch.float16, "nhwc", args.epilogue)
        algo, config = select(p)
        if algo.name not in ("implicit_gemm_ws", "gemm_1x1_ws"):
            continue
        i = random_inputs(p, "cuda", seed=0)
        ref = p.epilogue.torch_apply(F.conv2d(i.x.float(), i.weight.float(), None, p.stride, p.padding, p.dilation),
                                     None if i.bias is None else i.bias.float(),
                                     None if i.residual is None else i.residual.float())

        def run():
            return conv2d_problem(p, i.x, i.weight, i.bias, i.residual, algo=algo.name, config=config)

        def cudnn():
            return p.epilogue.torch_apply(F.conv2d(i.x, i.weight, None, p.stride, p.padding, p.dilation), i.bias,
                                          i.residual)

        times = {"cudnn": [], "tma": [], "pointers": []}
        ok = {}
        for _ in range(args.rounds):
            times["cudnn"].append(do_bench(cudnn, warmup=25, rep=100, return_mode="median") * 1e3)
            for name, descriptor in variants.items():
                launch._ws_output_descriptor = descriptor
                call_plans.clear()  # a replay would launch the other variant's recorded kernel
                try:
                    with tileconv.poison_outputs():
                        ok[name] = compare(run(), ref, tolerance(p)).ok
                    times[name].append(do_bench(run, warmup=25, rep=100, return_mode="median") * 1e3)
                finally:
                    launch._ws_output_descriptor = tma_descriptor
        med = {name: statistics.median(t) for name, t in times.items()}
        row = dict(name=case.name, algorithm=algo.name, config=str(config), us=med, runs=times, ok=ok,
                   tma_over_pointers=med["pointers"] / med["tma"], cudnn_over_tma=med["cudnn"] / med["tma"],
                   cudnn_over_pointers=med["cudnn"] / med["pointers"])
        rows.append(row)
        print(f"{case.name:30s} {algo.name:16s} {str(config):22s} cudnn {med['cudnn']:7.1f} tma {med['tma']:7.1f} "
              f"pointers {med['pointers']:7.1f} us  tma gain x{row['tma_over_pointers']:.3f}  "
              f"vs cudnn x{row['cudnn_over_tma']:.3f} (pointers x{row['cudnn_over_pointers']:.3f})  ok {ok}", flush=True)
gain = statistics.geometric_mean([r["tma_over_pointers"] for r in rows])
print(f"geomean tma over pointers x{gain:.3f} over {len(rows)} rows; "
      f"vs cudnn tma x{statistics.geometric_mean([r['cudnn_over_tma'] for r in rows]):.3f}, "
      f"pointers x{statistics.geometric_mean([r['cudnn_over_pointers'] for r in rows]):.3f}", flush=True)
with open(os.path.join(os.environ.get("OUT", "/tmp"), f"probe_epilogue_{args.epilogue}.json"), "w") as f:
    json.dump(dict(device=torch.cuda.get_device_name(), epilogue=args.epilogue, rows=rows), f, indent=1)
