"""Probe: the columns wgrad (``im2row``'s, kernels/wgrad_columns.py) on few-channel stems at batch 32,
at several tiles, beside the implicit GEMM's Triton wgrad (the stems' kernel before it) and cuDNN.

Each form is timed as a CUDA-graph replay of its launcher (the padding copy, the GEMM, the split
sums), rounds interleaved, with the bench's timer (cold L2); cuDNN's ``convolution_backward``
(weight gradient only) the same way. Every output, NaN-poisoned first, is checked against
PyTorch's float64 weight gradient on the GPU.

    python benchmarks/probe_columns_wgrad.py --json OUT.json [--configs 64x256x64s3w4[kSPLIT],...]
        [--dtype float16] [--layout nhwc] [--rows r50,mbv2]
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # (probe_ring_depth's timing helpers)

import torch  # noqa: E402
from probe_ring_depth import capture_wgrad_form, parse_backward_configs, time_wgrad_row, write_rows  # noqa: E402

from tileconv.bench.suites import _conv, get_suite  # noqa: E402
from tileconv.dispatch.heuristics import columns_wgrad_config, triton_wgrad_config  # noqa: E402
from tileconv.kernels import BackwardConfig  # noqa: E402
from tileconv.kernels.backward import aten_convolution_backward  # noqa: E402
from tileconv.kernels.wgrad import launch_wgrad_implicit_gemm  # noqa: E402
from tileconv.kernels.wgrad_columns import launch_wgrad_columns  # noqa: E402
from tileconv.problem import weight_gradient_layout  # noqa: E402
from tileconv.testing import random_inputs, tolerance  # noqa: E402

CONFIGS = "64x256x64s3w4,64x256x32s4w4,64x256x64s2w4,64x256x128s2w4,64x256x64s3w8,64x64x64s3w4,64x64x128s3w4"



def _label(config: BackwardConfig) -> str:
    return (f"{config.block_m}x{config.block_n}x{config.block_k} s{config.num_stages} w{config.num_warps}"
            + (f" k{config.split_k}" if config.split_k else ""))


STEMS = [
    next(c for c in get_suite("resnet50") if c.name == "r50 stem 7x7/2"),
    _conv("stems", "mbv2 stem c3 k32 3x3/2", 32, 3, 224, 32, 3, 2, 1),
    _conv("stems", "vgg c3 k64 3x3/1", 32, 3, 224, 64, 3, 1, 1),
    _conv("stems", "convnext stem c3 k96 4x4/4", 32, 3, 224, 96, 4, 4, 0),
]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--json")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--configs", default=CONFIGS)
    p.add_argument("--dtype", default="float16", choices=["float16", "bfloat16", "float32"])
    p.add_argument("--layout", default="nhwc", choices=["nhwc", "nchw"])
    p.add_argument("--rows", help="comma-separated parts of row names (default: every stem)")
    args = p.parse_args()
    torch.backends.cudnn.benchmark = True
    dtype = getattr(torch, args.dtype)
    fmt = torch.channels_last if args.layout == "nhwc" else torch.contiguous_format
    rows = []
    for case in [c for c in STEMS if not args.rows or any(part in c.name for part in args.rows.split(","))]:
        problem = case.problem(dtype, args.layout, "none", batch=32)
        inputs = random_inputs(problem, "cuda", seed=40, draw_on_device=True)
        x = inputs.x
        grad = torch.randn(problem.output_shape, device="cuda", dtype=problem.dtype).contiguous(memory_format=fmt)
        ref = aten_convolution_backward(problem, grad.double(), x.double(), inputs.weight.double(), False, True)[1]
        tol = tolerance(problem, problem.gemm_m)
        gw = torch.empty(problem.weight_shape, device="cuda", dtype=problem.dtype)
        if weight_gradient_layout(problem, inputs.weight) == "nhwc":  # the library's (and cuDNN's) choice
            gw = gw.contiguous(memory_format=torch.channels_last)
        forms = [("implicit_gemm " + _label(triton_wgrad_config(problem)), launch_wgrad_implicit_gemm,
                  triton_wgrad_config(problem)),
                 ("columns auto " + _label(columns_wgrad_config(problem)), launch_wgrad_columns,
                  columns_wgrad_config(problem))]
        forms += [("columns " + _label(c), launch_wgrad_columns, c) for c in parse_backward_configs(args.configs)]
        row = {"name": case.name, "forms": {}}
        graphs = {}
        for key, launcher, config in forms:
            try:
                capture_wgrad_form(row, graphs, key, launcher, (problem, grad, x), config, gw, ref, tol)
            except ValueError as err:  # a tile that splits a filter row
                print(f"{case.name} {key}: {err}")
        time_wgrad_row(row, graphs, problem, grad, x, inputs.weight, args.rounds)
        rows.append(row)
    if args.json:
        write_rows(args.json, rows)


if __name__ == "__main__":
    main()
