"""Strided dgrads two ways, beside cuDNN's: the phase kernel (tuned by ``tune --pass dgrad`` where
the cache has it) and the sub-pixel forward convolution (``dispatch.dgrad_route``'s 'subpixel'
route, forced here: every U*V phase of a cell as the channels of one stride-1 convolution, its
forward problem tuned first, then ``shuffle_subpixels``). Cold L2,
:func:`tileconv.bench.timing.bench_us`, ResNet-50's strided 3x3 rows and stem at batch 32, fp16
channels_last. Each form is checked against cuDNN before it is timed.

    python benchmarks/probe_subpixel_dgrad.py [--case 3x3/2]

A kernel-development probe, not a benchmark of record: it decides which strided dgrads the
heuristics send to the sub-pixel route. Needs a GPU.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402

from tileconv import call_plans, dispatch  # noqa: E402
from tileconv.bench.suites import SUITES  # noqa: E402
from tileconv.bench.timing import bench_us  # noqa: E402
from tileconv.dispatch.tune import tune  # noqa: E402
from tileconv.functional import conv2d_backward_problem  # noqa: E402


def probe(problem, force_subpixel: bool) -> tuple[float, float]:
    """(us, relative error against cuDNN) of tileconv's dgrad of ``problem`` by one route."""
    cl = torch.channels_last
    x = torch.randn(problem.input_shape, device="cuda", dtype=torch.float16).contiguous(memory_format=cl)
    weight = torch.randn(problem.weight_shape, device="cuda", dtype=torch.float16) / (problem.c * problem.r * problem.s) ** 0.5
    grad = torch.randn(problem.output_shape, device="cuda", dtype=torch.float16).contiguous(memory_format=cl)
    want = torch.ops.aten.convolution_backward(grad, x, weight, None, problem.stride, problem.padding, problem.dilation,
                                               False, (0, 0), problem.groups, (True, False, False))[0].float()
    saved = dispatch.prefers_subpixel_dgrad
    dispatch.prefers_subpixel_dgrad = lambda problem, forward: force_subpixel
    dispatch.clear_selection_cache()
    try:
        def run():
            return conv2d_backward_problem(problem, grad, x, weight, need_weight=False)[0]

        got = run().float()
        err = ((got - want).abs().max() / want.abs().max()).item()
        before = call_plans.stats()
        us = bench_us(run, repeat=3)
        after = call_plans.stats()
        if after["replays"] == before["replays"]:
            print(f"  (no replays: {after}: the calls took the normal path, the host's time is in the figure)")
        return us, err
    finally:
        dispatch.prefers_subpixel_dgrad = saved
        dispatch.clear_selection_cache()


def cudnn_us(problem) -> float:
    cl = torch.channels_last
    x = torch.randn(problem.input_shape, device="cuda", dtype=torch.float16).contiguous(memory_format=cl)
    weight = torch.randn(problem.weight_shape, device="cuda", dtype=torch.float16)
    grad = torch.randn(problem.output_shape, device="cuda", dtype=torch.float16).contiguous(memory_format=cl)
    return bench_us(lambda: torch.ops.aten.convolution_backward(
        grad, x, weight, None, problem.stride, problem.padding, problem.dilation, False, (0, 0), problem.groups,
        (True, False, False)), repeat=3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", default="/2", help="ResNet-50 rows whose name contains this (default: strided)")
    args = parser.parse_args()
    torch.backends.cudnn.benchmark = True
    print(torch.cuda.get_device_name(), f"cuDNN {torch.backends.cudnn.version()}")
    cases = [(case.name, case.problem()) for case in SUITES["resnet50"] if args.case in case.name]
    cases = [(name, p) for name, p in cases if p.dgrad_as_subpixel_forward() is not None and (p.r, p.s) != (1, 1)]
    for result in tune([p.dgrad_as_subpixel_forward() for _, p in cases], progress=False, store=True):
        print(f"  tuned {result.problem.describe()}: {result.status} {result.algorithm} {result.time_ms} ms")
    for name, problem in cases:
        peer = cudnn_us(problem)
        phase_us, phase_err = probe(problem, False)
        cells_us, cells_err = probe(problem, True)
        print(f"{name:<28} cuDNN {peer:7.1f} us | phase kernel {phase_us:7.1f} us ({peer / phase_us:4.2f}x, err "
              f"{phase_err:.1e}) | sub-pixel {cells_us:7.1f} us ({peer / cells_us:4.2f}x, err {cells_err:.1e})")


if __name__ == "__main__":
    main()
