"""``bench`` without a GPU: a correctness demo through the Triton interpreter, no timings.

A few problems of the suite, shrunk to interpreter size (batch 1, at most 16 channels per
group, at most 12x12 pixels; same kernel size, stride, padding, dilation and kind of
grouping), run by tileconv's kernels under ``TRITON_INTERPRET=1`` and compared with the
float64 reference. Triton reads ``TRITON_INTERPRET`` when kernels are decorated, at
import, so without it the command re-executes itself with it set.

Times measured here would be the interpreter's, not a GPU's: none are taken or printed.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from .._runtime import INTERPRET
from .options import DTYPES
from .report import BenchResult, make_console, render_table
from .runner import BenchItem, algorithms_for, run_items
from .session import exit_code, write_outputs
from .suites import SUITES, BenchCase, get_suite
from .timing import environment

CASES_PER_SUITE = 3  # distinct shrunk problems per suite, the first, middle and last ones first
MAX_CHANNELS_PER_GROUP = 16
MAX_PIXELS = 12  # per side
MAX_GROUPS = {"depthwise": 8, "grouped": 2}


def shrink(case: BenchCase) -> BenchCase:
    """``case`` at interpreter size, keeping what selects code paths in the kernels."""
    groups = 1
    if case.groups > 1:
        kind = "depthwise" if case.groups == case.c else "grouped"
        groups = min(case.groups, MAX_GROUPS[kind])
    c = min(case.c // case.groups, MAX_CHANNELS_PER_GROUP) * groups
    k = min(case.k // case.groups, MAX_CHANNELS_PER_GROUP) * groups
    span_h = case.dilation * (case.r - 1) + 1
    span_w = case.dilation * (case.s - 1) + 1
    # Never smaller than the kernel's span, so that an unpadded case keeps an output.
    h = min(case.h, max(MAX_PIXELS, span_h))
    w = min(case.w, max(MAX_PIXELS, span_w))
    return replace(case, n=1, c=c, h=h, w=w, k=k, groups=groups)


def demo_cases(suite: str) -> list[BenchCase]:
    """Up to :data:`CASES_PER_SUITE` cases of each suite in ``suite`` ('all': every suite)
    whose shrunk forms differ, preferring its first, middle and last case, in suite order."""
    names = list(SUITES) if suite == "all" else [suite]
    picked = []
    for name in names:
        cases = get_suite(name)
        preferred = [0, len(cases) // 2, len(cases) - 1]
        order = list(dict.fromkeys(preferred + list(range(len(cases)))))
        chosen: dict[tuple, int] = {}  # shrunk shape -> index of the case that gave it
        for index in order:
            small = shrink(cases[index])
            key = (small.c, small.h, small.w, small.k, small.r, small.s, small.stride, small.padding, small.groups)
            if key not in chosen:
                chosen[key] = index
            if len(chosen) == CASES_PER_SUITE:
                break
        picked += [cases[i] for i in sorted(chosen.values())]
    return picked


def demo_items(suite: str, dtype_name: str, layout: str, epilogue: str) -> list[BenchItem]:
    dtype, allow_tf32 = DTYPES[dtype_name]
    return [
        BenchItem(case.suite, case.name, shrink(case).problem(dtype, layout, epilogue, None, allow_tf32))
        for case in demo_cases(suite)
    ]


def reexec_with_interpreter(module: str, argv: Sequence[str]) -> None:
    """Replace this process by ``python -m module argv...`` with ``TRITON_INTERPRET=1``."""
    env = dict(os.environ, TRITON_INTERPRET="1")
    package_root = str(Path(__file__).resolve().parents[2])  # the folder that holds tileconv/
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, "-m", module, *argv], env)


def run_demo(args: argparse.Namespace, module: str, argv: Sequence[str]) -> int:
    """The no-GPU path of ``bench``: ``module`` and ``argv`` re-execute the command."""
    if not INTERPRET:
        reexec_with_interpreter(module, argv)
    items = demo_items(args.suite, args.dtype, args.layout, args.epilogue)
    console = make_console()
    console.print(
        f"No CUDA GPU: no timings; a correctness demo instead, {len(items)} small shapes of suite "
        f"'{args.suite}' through the Triton interpreter against the float64 reference."
    )
    pass_name = getattr(args, "pass_", "fwd")
    rows = run_items(items, algos=algorithms_for(args.algo, pass_name), against=(), device="cpu", timer=None,
                     reference="float64", pass_name=pass_name)
    env = environment()
    result = BenchResult(
        env=env, suite=args.suite, dtype=args.dtype, layout=args.layout, epilogue=args.epilogue,
        algo=args.algo, against=[], ceilings=None, rows=rows, repeat=0, batch=1,
        notes=["no GPU: Triton interpreter on the CPU, shrunk shapes, correctness only (no timings)"],
    )
    render_table(result, console, title=f"tileconv correctness demo ({args.dtype}, {args.layout}, "
                 f"epilogue {args.epilogue})", timed=False)
    write_outputs(result, args, console, stem=f"demo-{args.suite}-{args.dtype}-{args.layout}-{args.epilogue}",
                  plot=None)
    return exit_code(result)
