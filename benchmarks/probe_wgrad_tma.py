"""Probe: the warp-specialized wgrad on ResNet-50's rows, with the input gathered by cp.async or
copied by TMA where ``wgrad_ws.input_by_tma`` allows (``ws`` = ``WS_GATHER`` or ``WS_TMA``: the
(N*H*W, C) matrix of a 1x1 stride-1 problem, boxes of output rows otherwise), at several tiles and ring
depths, beside cuDNN's weight gradient.

Each form is timed as a CUDA-graph replay of the launcher (the GEMM and, with splits, the split
sums), rounds interleaved, with the bench's timer (cold L2); cuDNN's ``convolution_backward``
(weight gradient only) the same way. Every output, NaN-poisoned first, is checked against the
float64 product dy^T x (1x1 stride 1) or PyTorch's float64 convolution_backward on the CPU.

    python benchmarks/probe_wgrad_tma.py --json OUT.json [--configs 128x128x64s6w4,...] [--rows c1024,c512 hw7]
        [--forms gather,tma] [--all]     # --all: every row the TMA can take (default: the stride-1 1x1 rows)
        [--every] [--heuristics]         # every row the ws wgrad runs; each row's heuristics tile
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # (probe_ring_depth's timing helpers)

import torch  # noqa: E402
from probe_ring_depth import capture_wgrad_form, parse_backward_configs, time_wgrad_row, write_rows  # noqa: E402

import tileconv.kernels.wgrad_ws as wgrad_ws  # noqa: E402
from tileconv.bench.suites import get_suite  # noqa: E402
from tileconv.dispatch.heuristics import ws_wgrad_config, ws_wgrad_runs  # noqa: E402
from tileconv.kernels import BackwardConfig  # noqa: E402
from tileconv.kernels.backward import aten_convolution_backward  # noqa: E402
from tileconv.kernels.config import WS_GATHER, WS_TMA  # noqa: E402
from tileconv.problem import weight_gradient_layout  # noqa: E402
from tileconv.testing import random_inputs, tolerance  # noqa: E402

CONFIGS = "128x128x64s4w4,128x128x64s6w4"



def _label(config: BackwardConfig, tma: bool) -> str:
    return (f"{config.block_m}x{config.block_n}x{config.block_k} s{config.num_stages} w{config.num_warps}"
            + (f" k{config.split_k}" if config.split_k else "") + (" tma" if tma else " gather"))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--json")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--configs", default=CONFIGS)
    p.add_argument("--forms", default="gather,tma", help="which input copies: gather, tma or both")
    p.add_argument("--rows", help="comma-separated parts of row names (default: every stride-1 1x1 row)")
    p.add_argument("--all", action="store_true", help="every row whose input the TMA can copy")
    p.add_argument("--every", action="store_true", help="every row the ws wgrad runs (gathered where TMA cannot)")
    p.add_argument("--heuristics", action="store_true", help="each row's heuristics tile instead of --configs")
    args = p.parse_args()
    torch.backends.cudnn.benchmark = True
    configs = parse_backward_configs(args.configs, ws=1)
    def wanted(case):
        problem = case.problem(torch.float16, "nhwc", "none", batch=32)
        if args.every:
            kind = ws_wgrad_runs(problem)
        else:
            kind = wgrad_ws.input_by_tma(problem) if args.all else wgrad_ws.input_is_pixel_matrix(problem)
        return kind and (not args.rows or any(part in case.name for part in args.rows.split(",")))

    cases = [c for c in get_suite("resnet50") if wanted(c)]
    rows = []
    for case in cases:
        problem = case.problem(torch.float16, "nhwc", "none", batch=32)
        inputs = random_inputs(problem, "cuda", seed=39, draw_on_device=True)
        x = inputs.x
        grad = torch.randn(problem.output_shape, device="cuda", dtype=problem.dtype).contiguous(
            memory_format=torch.channels_last)
        if wgrad_ws.input_is_pixel_matrix(problem):
            ref = (grad.permute(0, 2, 3, 1).reshape(-1, problem.k).double().T
                   @ x.permute(0, 2, 3, 1).reshape(-1, problem.c).double()).reshape(problem.weight_shape)
        else:
            ref = aten_convolution_backward(problem, grad.cpu().double(), x.cpu().double(),
                                            inputs.weight.cpu().double(), False, True)[1]
        tol = tolerance(problem, problem.gemm_m)
        gw = torch.empty(problem.weight_shape, device="cuda", dtype=problem.dtype)
        if weight_gradient_layout(problem, inputs.weight) == "nhwc":  # the library's (and cuDNN's) choice
            gw = gw.contiguous(memory_format=torch.channels_last)
        row = {"name": case.name, "forms": {}}
        graphs = {}
        forms = ([(ws_wgrad_config(problem), ws_wgrad_config(problem).ws == WS_TMA)] if args.heuristics else
                 [(replace(tile, ws=WS_TMA if tma else WS_GATHER), tma)
                  for tile in configs for tma in [form == "tma" for form in args.forms.split(",")]])
        for config, tma in forms:
            capture_wgrad_form(row, graphs, _label(config, tma), wgrad_ws.launch_wgrad_ws, (problem, grad, x), config,
                               gw, ref, tol)
        time_wgrad_row(row, graphs, problem, grad, x, inputs.weight, args.rounds)
        rows.append(row)
    if args.json:
        write_rows(args.json, rows)


if __name__ == "__main__":
    main()
