"""Command-line options shared by ``bench`` and ``sweep``, and what they mean."""

from __future__ import annotations

import argparse

import torch

from ..kernels import ALGORITHMS
from .peers import PEERS

# --dtype name -> (tensor dtype, TF32 allowed). 'float32' is strict fp32 accuracy everywhere
# (cuDNN and the GEMM ceiling on FMA units, tileconv as error-compensated 3xTF32 on the
# tensor cores); 'tf32' is float32 tensors on TF32 tensor cores.
DTYPES: dict[str, tuple[torch.dtype, bool]] = {
    "float16": (torch.float16, False),
    "bfloat16": (torch.bfloat16, False),
    "float32": (torch.float32, False),
    "tf32": (torch.float32, True),
}
DEFAULT_REPEAT = 3


def parse_against(text: str) -> list[str]:
    """'cudnn', 'compile' or 'cudnn,compile' -> the peers in that order."""
    peers = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [peer for peer in peers if peer not in PEERS]
    if unknown or not peers:
        raise argparse.ArgumentTypeError(f"--against {text!r}: expected a comma list of {', '.join(PEERS)}")
    return list(dict.fromkeys(peers))


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive integer")
    return value


def add_measurement_arguments(parser: argparse.ArgumentParser) -> None:
    """--dtype --layout --algo --against --repeat --json --csv --plot."""
    parser.add_argument("--dtype", choices=list(DTYPES), default="float16",
                        help="float16 (default), bfloat16, float32 (strict fp32 accuracy) or tf32 (float32 on TF32 tensor cores)")
    parser.add_argument("--layout", choices=["nhwc", "nchw"], default="nhwc",
                        help="memory layout of input and output (default nhwc = channels_last)")
    parser.add_argument("--algo", choices=["auto", *ALGORITHMS, "all"], default="auto",
                        help="tileconv algorithm: auto (its own choice, default), one by name, or all (one row each)")
    parser.add_argument("--against", type=parse_against, default=["cudnn"], metavar="cudnn[,compile]",
                        help="peers timed in the same run: cudnn (PyTorch eager, default) and/or compile "
                             "(torch.compile max-autotune with Inductor's Triton conv template: seconds per shape)")
    parser.add_argument("--repeat", type=positive_int, default=DEFAULT_REPEAT,
                        help="timing rounds per implementation, interleaved with its peers; each round is a "
                             "CUDA-event median over 100 ms (L2 cleared before each call), a row reports the median round "
                             f"(default {DEFAULT_REPEAT})")
    parser.add_argument("--json", metavar="PATH", help="write the results as JSON ({device} in PATH: the GPU's "
                        "slug; a directory: a name made of the run's options and the GPU)")
    parser.add_argument("--csv", metavar="PATH", help="write the rows as CSV (PATH as for --json)")
    parser.add_argument("--plot", metavar="PATH.png", help="write a PNG chart (PATH as for --json)")


def options_argv(args: argparse.Namespace) -> list[str]:
    """The options of :func:`add_measurement_arguments` back as command-line words."""
    argv = ["--dtype", args.dtype, "--layout", args.layout, "--algo", args.algo,
            "--against", ",".join(args.against), "--repeat", str(args.repeat)]
    for name in ("json", "csv", "plot"):
        if getattr(args, name) is not None:
            argv += [f"--{name}", getattr(args, name)]
    return argv
