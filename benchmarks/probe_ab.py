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
from dataclasses import replace

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


def batched_copies(problem, config):
    """grouped_halo's tiling as it was before one copy an item: a planar frame copied in batches of
    ``chunk`` rows (the launcher's old formula), a barrier each."""
    tiling = new_tiling(problem, config)
    if not tiling.planar:
        return tiling
    chunk = max(launch.GROUPED_HALO_CHUNK, 32 * config.num_warps * (16 // problem.itemsize) // config.block_n)
    staged = problem.stride[0] * problem.stride[1] * tiling.phase_rows
    return replace(tiling, rows=-(-staged // chunk) * chunk, chunk=chunk)


def packed_one_copy(problem, config):
    """grouped_halo's packed frames (the strided rows) staged by one copy an item too: their buffers
    grown to a power of two of rows (more shared memory: fewer programs may fit an SM)."""
    tiling = new_tiling(problem, config)
    if tiling.planar:
        return tiling
    rows = launch.pow2_at_least(problem.stride[0] * problem.stride[1] * tiling.phase_rows)
    return replace(tiling, rows=rows, chunk=rows)


parser = argparse.ArgumentParser()
parser.add_argument("change", choices=("epilogue", "grouped-copy", "grouped-copy-packed"))
parser.add_argument("--epilogue", default="none")
parser.add_argument("--rounds", type=int, default=3)
parser.add_argument("--suites", default=None)
args = parser.parse_args()
torch.backends.cudnn.benchmark = True
print(torch.cuda.get_device_name(), torch.__version__, triton.__version__, torch.backends.cudnn.version(), flush=True)
new_tiling = launch.grouped_halo_tiling
CHANGES = {  # change: (the launcher's attribute, A, B, the algorithms it is about, default suites)
    "epilogue": ("_ws_output_descriptor", launch._ws_output_descriptor, lambda *a, **k: None,
                 ("implicit_gemm_ws", "gemm_1x1_ws"), "seed,resnet50"),
    "grouped-copy": ("grouped_halo_tiling", new_tiling, batched_copies, ("grouped_halo",), "grouped"),
    "grouped-copy-packed": ("grouped_halo_tiling", packed_one_copy, new_tiling, ("grouped_halo",), "grouped"),
}
attribute, new, old, algorithms, suites = CHANGES[args.change]
variants = {"A": new, "B": old}
rows = []
for suite in (args.suites or suites).split(","):
    for case in get_suite(suite):
        p = case.problem(torch.float16, "nhwc", args.epilogue)
        algo, config = select(p)
        if algo.name not in algorithms:
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

        times = {"cudnn": [], "A": [], "B": []}
        ok = {}
        for _ in range(args.rounds):
            times["cudnn"].append(do_bench(cudnn, warmup=25, rep=100, return_mode="median") * 1e3)
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
        print(f"{case.name:30s} {algo.name:16s} {str(config):22s} cudnn {med['cudnn']:7.1f} A {med['A']:7.1f} "
              f"B {med['B']:7.1f} us  A over B x{row['a_over_b']:.3f}  "
              f"vs cudnn A x{row['cudnn_over_a']:.3f} B x{row['cudnn_over_b']:.3f}  ok {ok}", flush=True)
print(f"{args.change}: geomean A over B x{statistics.geometric_mean([r['a_over_b'] for r in rows]):.3f} over "
      f"{len(rows)} rows; vs cudnn A x{statistics.geometric_mean([r['cudnn_over_a'] for r in rows]):.3f}, "
      f"B x{statistics.geometric_mean([r['cudnn_over_b'] for r in rows]):.3f}", flush=True)
with open(os.path.join(os.environ.get("OUT", "/tmp"), f"probe_ab_{args.change}_{args.epilogue}.json"), "w") as f:
    json.dump(dict(device=torch.cuda.get_device_name(), change=args.change, epilogue=args.epilogue, rows=rows), f,
              indent=1)
