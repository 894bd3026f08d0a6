"""Does the fused epilogue cost anything? Each row of the suites named (fp16 channels_last unless
``--dtype`` / ``--layout`` say) run through ``conv2d_problem`` without an epilogue and with bias +
ReLU fused, in one process, interleaved rounds of CUDA-graph replays with L2 cleared, the dispatch's
algorithm and config printed for both. ``--candidates``: besides, every tuning candidate of the
dispatch's algorithm, each without an epilogue, with the bias alone and with bias + ReLU (which
part costs, and does another tile shape not pay it). Issue 5's figure of the epilogue's cost
(``benchmarks/record.sh issue5``); tileconv against itself, no peer. Needs a GPU.

    python benchmarks/probe_epilogue.py [--suite depthwise[,grouped,...]] [--match dw3x3] [--dtype float16]
                                        [--layout nhwc] [--rounds 3] [--candidates] [--json OUT.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import dataclasses  # noqa: E402

import torch  # noqa: E402

from tileconv.bench.host import _graph_us  # noqa: E402
from tileconv.bench.suites import get_suite  # noqa: E402
from tileconv.dispatch import select  # noqa: E402
from tileconv.dispatch.candidates import GENERATORS  # noqa: E402
from tileconv.epilogue import Epilogue  # noqa: E402
from tileconv.functional import conv2d_problem  # noqa: E402
from tileconv.testing import random_inputs  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--suite", default="depthwise", help="a suite, or several separated by commas")
    ap.add_argument("--dtype", default="float16", choices=("float16", "bfloat16", "float32"))
    ap.add_argument("--layout", default="nhwc", choices=("nhwc", "nchw"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--match", default="", help="only the rows whose name contains this (or one of several "
                    "separated by '|')")
    ap.add_argument("--candidates", action="store_true",
                    help="also time each candidate config of the chosen algorithm with each epilogue")
    ap.add_argument("--json")
    args = ap.parse_args()
    print(torch.cuda.get_device_name(), flush=True)
    rows = []
    dtype = getattr(torch, args.dtype)
    cases = [c for suite in args.suite.split(",") for c in get_suite(suite)
             if any(m in c.name for m in args.match.split("|"))]
    for case in cases:
        runs = {}
        for epilogue in ("none", "bias_relu"):
            p = case.problem(dtype, args.layout, epilogue)
            i = random_inputs(p, "cuda", seed=0)
            algo, config = select(p)
            runs[epilogue] = (p, i, f"{algo.name} {config}")
        times = {e: [] for e in runs}
        for _ in range(args.rounds):
            for e, (p, i, _) in runs.items():
                times[e].append(_graph_us(lambda p=p, i=i: conv2d_problem(p, i.x, i.weight, i.bias, i.residual)))
        plain, fused = (statistics.median(times[e]) for e in ("none", "bias_relu"))
        print(f"{case.name:28s} none {plain:7.1f} us ({runs['none'][2]}) | bias_relu {fused:7.1f} us "
              f"({runs['bias_relu'][2]}) | {fused / plain:5.3f}x", flush=True)
        rows.append({"case": case.name, "none_us": plain, "bias_relu_us": fused, "none": runs["none"][2],
                     "bias_relu": runs["bias_relu"][2], "rounds": times})
        if args.candidates:
            rows[-1]["candidates"] = _candidates(case, args.rounds, dtype, args.layout)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(), "dtype": args.dtype, "layout": args.layout,
                       "rows": rows}, f, indent=1)


def _candidates(case, rounds: int, dtype: torch.dtype, layout: str) -> list[dict]:
    """Each candidate config of the algorithm the dispatch picks for ``case`` (no epilogue), timed
    without an epilogue, with the bias alone and with bias + ReLU, interleaved."""
    plain = case.problem(dtype, layout, "none")
    algo, _ = select(plain)
    variants = {"none": plain, "bias": dataclasses.replace(plain, epilogue=Epilogue(has_bias=True)),
                "bias_relu": case.problem(dtype, layout, "bias_relu")}
    inputs = {e: random_inputs(p, "cuda", seed=0) for e, p in variants.items()}
    out = []
    for config in GENERATORS[algo.name](plain)[:10]:
        times = {e: [] for e in variants}
        for _ in range(rounds):
            for e, p in variants.items():
                i = inputs[e]
                times[e].append(_graph_us(lambda p=p, i=i, c=config: conv2d_problem(p, i.x, i.weight, i.bias,
                                                                                    i.residual, algo=algo.name,
                                                                                    config=c)))
        med = {e: statistics.median(t) for e, t in times.items()}
        print(f"    {algo.name} {str(config):28s} " + " ".join(f"{e} {t:6.1f}" for e, t in med.items())
              + f" | {med['bias_relu'] / med['none']:5.3f}x", flush=True)
        out.append({"config": str(config), **{f"{e}_us": t for e, t in med.items()}})
    return out


if __name__ == "__main__":
    main()
