"""``python -m tileconv bench``: tileconv beside cuDNN (and torch.compile) in one run.

Examples::

    python -m tileconv bench                                  # seed suite, float16, NHWC
    python -m tileconv bench --suite resnet50 --epilogue bias_add_relu
    python -m tileconv bench --suite all --algo all --json benchmarks/results/ --plot benchmarks/results/
    python -m tileconv bench --suite vae --against cudnn,compile
    python -m tileconv bench --host-cost --suite resnet50       # CPU cost a call; launch-bound rows?

Exit code 0 when every row matched the reference, 1 when one did not (or failed to run).
Without a GPU it runs a short correctness demo through the Triton interpreter instead.
"""

from __future__ import annotations

import argparse
import sys

from .options import DTYPES, add_measurement_arguments, options_argv, positive_int
from .peers import PASSES
from .suites import EPILOGUES, SUITE_NAMES

HELP = "time tileconv against cuDNN (and torch.compile) on the seed shapes and real networks"
MODULE = "tileconv.bench.cli_bench"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--suite", choices=list(SUITE_NAMES), default="seed",
                        help="problems to run (default seed; all = every suite)")
    parser.add_argument("--case", metavar="TEXT", default=None,
                        help="only the suite's cases whose name contains TEXT (e.g. seed001)")
    parser.add_argument("--batch", type=positive_int, default=None, help="batch size for every problem (default: the suite's)")
    parser.add_argument("--epilogue", choices=list(EPILOGUES), default="none",
                        help="fused into tileconv; the eager peer runs conv, then the same ops in PyTorch")
    parser.add_argument("--pass", dest="pass_", choices=list(PASSES), default="fwd",
                        help="what is timed: fwd (default), dgrad (input gradient), wgrad (weight gradient) or "
                             "fwd+bwd; the cudnn peer runs aten.convolution_backward for the same gradients")
    parser.add_argument("--model", metavar="NAME", default=None,
                        help="a whole torchvision model (random weights; e.g. resnet50) instead of a suite: eager, "
                             "CUDA graph, torch.compile, tileconv.convert, tileconv + CUDA graph (--batch default 32)")
    parser.add_argument("--train", metavar="NAME", default=None,
                        help="a training run instead of a suite: torchvision NAME (resnet50, resnet18) or tiny, "
                             "PyTorch beside tileconv.convert(fuse=False), bf16 autocast, SGD, fixed random data: "
                             "loss curves, their difference against PyTorch's own spread, median step time "
                             "(--batch default 32)")
    parser.add_argument("--host-cost", action="store_true",
                        help="CPU cost of a call (tileconv vs F.conv2d, 1000 calls on a tiny problem) and, per row "
                             "of --suite, event timing against CUDA-graph replay (is the row launch-bound?)")
    parser.add_argument("--replot", metavar="JSON", default=None,
                        help="draw --plot P.png from a run's --json file instead of measuring (no GPU needed)")
    parser.add_argument("--steps", type=positive_int, default=None, help="--train: training steps (default 200)")
    parser.add_argument("--lr", type=float, default=None, help="--train: SGD learning rate (default 0.1 * batch / 256)")
    add_measurement_arguments(parser)


def bench_argv(args: argparse.Namespace) -> list[str]:
    """``args`` back as this command's words (to re-execute it)."""
    argv = ["--suite", args.suite, "--epilogue", args.epilogue, "--pass", getattr(args, "pass_", "fwd")]
    if args.batch is not None:
        argv += ["--batch", str(args.batch)]
    if getattr(args, "case", None) is not None:
        argv += ["--case", args.case]
    if getattr(args, "model", None) is not None:
        argv += ["--model", args.model]
    for name in ("train", "steps", "lr"):
        if getattr(args, name, None) is not None:
            argv += [f"--{name}", str(getattr(args, name))]
    return argv + options_argv(args)


def replot(json_path: str, plot_path: str | None) -> int:
    """``bench --replot JSON --plot P.png``: the chart of a recorded run, from its JSON."""
    import json
    from pathlib import Path

    from .plot import plot_bench
    from .report import BenchResult

    if plot_path is None:
        print("--replot needs --plot P.png: where to draw the chart", file=sys.stderr)
        return 2
    try:
        result = BenchResult.from_json(json.loads(Path(json_path).read_text()))
    except (OSError, ValueError, KeyError, TypeError) as error:
        print(f"--replot {json_path}: cannot read a bench run from it ({type(error).__name__}: {error})",
              file=sys.stderr)
        return 2
    plot_bench(result, Path(plot_path))
    print(f"wrote {plot_path} ({len(result.rows)} rows of {result.env.get('device')}, {result.env.get('date')})")
    return 0


def run(args: argparse.Namespace) -> int:
    import torch

    if getattr(args, "replot", None) is not None:
        return replot(args.replot, getattr(args, "plot", None))
    if getattr(args, "model", None) is not None:
        from .models import run_model_bench

        return run_model_bench(args)
    if getattr(args, "train", None) is not None:
        from .train import run_train_bench

        return run_train_bench(args)
    if getattr(args, "host_cost", False) and torch.cuda.is_available():
        from .host import run_host_cost

        return run_host_cost(args)
    from .suites import select_cases

    try:
        cases = select_cases(args.suite, getattr(args, "case", None))
    except ValueError as error:
        print(error, file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        from .demo import run_demo

        return run_demo(args, MODULE, bench_argv(args))
    from .timing import refuses_interpreter

    if refuses_interpreter():
        return 2

    from .plot import plot_bench
    from .report import make_console, render_table
    from .runner import BenchItem
    from .session import exit_code, measure, write_outputs

    dtype, allow_tf32 = DTYPES[args.dtype]
    items = [
        BenchItem(case.suite, case.name, case.problem(dtype, args.layout, args.epilogue, args.batch, allow_tf32))
        for case in cases
    ]
    console = make_console()
    result = measure(items, args, args.suite, console)
    pass_name = getattr(args, "pass_", "fwd")
    title = (f"tileconv bench: suite {args.suite}, {args.dtype}, {args.layout}, epilogue {args.epilogue}"
             + ("" if pass_name == "fwd" else f", pass {pass_name}")
             + ("" if args.batch is None else f", batch {args.batch}"))
    render_table(result, console, title=title)
    stem = f"bench-{args.suite}-{args.dtype}-{args.layout}-{args.epilogue}" + (
        "" if pass_name == "fwd" else "-" + pass_name.replace("+", "-"))
    write_outputs(result, args, console, stem, plot_bench)
    return exit_code(result)


def main(argv: list[str] | None = None) -> int:
    """Entry of ``python -m tileconv.bench.cli_bench`` (how the demo re-executes itself)."""
    parser = argparse.ArgumentParser(prog="python -m tileconv bench", description=HELP)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
