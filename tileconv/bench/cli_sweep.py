"""``python -m tileconv sweep``: the seed's head/tail experiment.

A 1x1 convolution is a GEMM: M = N*H*W output pixels, N_gemm = K output channels and the
reduction C. With M = K = 4096 fixed (N = 1, H = W = 64; the seed found that how M splits
into N, H, W does not matter) and C from 32 to 8192 in powers of 2, throughput shows the
fixed cost of a kernel's head (first tiles loaded) and tail (epilogue, stores): short
reductions are dominated by them, long ones approach the GEMM ceiling.

    python -m tileconv sweep --plot sweep.png --json sweep.json
"""

from __future__ import annotations

import argparse

import torch

from ..problem import ConvProblem
from .options import DTYPES, add_measurement_arguments
from .runner import BenchItem

HELP = "1x1-conv GEMM sweep (M = K = 4096, C = 32..8192): TFLOP/s of tileconv and cuDNN against C"
SWEEP_BATCH, SWEEP_PIXELS = 1, 64  # M = 1 * 64 * 64 = 4096 output pixels
SWEEP_CHANNELS_OUT = 4096
SWEEP_REDUCTIONS = tuple(2**e for e in range(5, 14))  # C = 32 ... 8192


def sweep_items(dtype: torch.dtype, layout: str, allow_tf32: bool) -> list[BenchItem]:
    return [
        BenchItem("sweep", f"1x1 c{c}", ConvProblem(
            n=SWEEP_BATCH, c=c, h=SWEEP_PIXELS, w=SWEEP_PIXELS, k=SWEEP_CHANNELS_OUT, r=1, s=1,
            dtype=dtype, layout=layout, allow_tf32=allow_tf32,
        ))
        for c in SWEEP_REDUCTIONS
    ]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_measurement_arguments(parser)


def run(args: argparse.Namespace) -> int:
    if not torch.cuda.is_available():
        print("No CUDA GPU: the sweep measures throughput and needs one; nothing measured.")
        return 1
    from .timing import refuses_interpreter

    if refuses_interpreter():
        return 2
    from .plot import plot_sweep
    from .report import make_console, render_table
    from .session import exit_code, measure, write_outputs

    dtype, allow_tf32 = DTYPES[args.dtype]
    console = make_console()
    result = measure(sweep_items(dtype, args.layout, allow_tf32), args, "sweep", console)
    render_table(result, console, title=f"tileconv sweep: 1x1, M = K = 4096, C = 32..8192, {args.dtype}, {args.layout}")
    write_outputs(result, args, console, f"sweep-{args.dtype}-{args.layout}", plot_sweep)
    return exit_code(result)
