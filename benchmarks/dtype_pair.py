"""bf16 against fp16 in one process (issue 4: "bf16 within 3% of fp16"): each suite row's
``tileconv.conv2d`` in fp16 and in bf16 on the same random numbers, timed in turn round after
round with the bench's timer (CUDA events, cold L2, median: ``runner.time_round_robin``), so
that a drift of the clocks or another machine's host does not enter the ratio. cuDNN's calls in
both dtypes are timed in the same rounds for context. Every output is first checked against the
bench's float32 reference; a wrong row fails the run.

    python benchmarks/dtype_pair.py [--suite resnet50] [--case TEXT] [--rounds 5] [--json OUT.json]

The tuning cache in use ($TILECONV_CACHE_DIR) decides each dtype's configs: with entries of
its own a dtype runs its own winners; without, the other 16-bit dtype's (dispatch's fallback).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402

import tileconv  # noqa: E402
from tileconv.bench.peers import cudnn_call, reference_output  # noqa: E402
from tileconv.bench.report import geomean  # noqa: E402
from tileconv.bench.runner import time_round_robin  # noqa: E402
from tileconv.bench.suites import get_suite  # noqa: E402
from tileconv.bench.timing import bench_us, device_name  # noqa: E402
from tileconv.testing import ConvInputs, compare, random_inputs, tolerance  # noqa: E402

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}


def _inputs_as(inputs: ConvInputs, dtype: torch.dtype) -> ConvInputs:
    """The same numbers in ``dtype`` (the layout kept)."""
    def cast(t):
        return None if t is None else t.to(dtype)
    return ConvInputs(cast(inputs.x), cast(inputs.weight), cast(inputs.bias), cast(inputs.residual))


def _tileconv_call(problem, inputs: ConvInputs):
    return lambda: tileconv.conv2d(inputs.x, inputs.weight, inputs.bias, problem.stride, problem.padding,
                                   problem.dilation, problem.groups)


def measure_row(case, batch: int | None, rounds: int, seed: int, device: str = "cuda") -> dict:
    """One row: both dtypes checked, then timed round-robin with cuDNN's calls."""
    problems = {name: case.problem(dtype, "nhwc", "none", batch=batch) for name, dtype in DTYPES.items()}
    base = random_inputs(problems["fp16"], device, seed=seed, draw_on_device=True)
    calls, errors = {}, {}
    for name, problem in problems.items():
        inputs = _inputs_as(base, problem.dtype)
        call = _tileconv_call(problem, inputs)
        with tileconv.poison_outputs():
            check = compare(call(), reference_output(problem, inputs), tolerance(problem))
        errors[name] = check.rel_err
        if not check.ok:
            raise AssertionError(f"{case.name} {name}: {check.message()}")
        calls[f"tileconv {name}"] = call
        calls[f"cudnn {name}"] = cudnn_call(problem, inputs)
    medians, failures = time_round_robin(calls, lambda label, call: bench_us(call), rounds)
    if failures:
        raise RuntimeError(f"{case.name}: {failures}")
    return {"name": case.name, "us": medians, "rel_err": errors,
            "bf16_over_fp16": medians["tileconv bf16"] / medians["tileconv fp16"],
            "cudnn_bf16_over_fp16": medians["cudnn bf16"] / medians["cudnn fp16"]}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--suite", default="resnet50")
    p.add_argument("--case", help="only the suite's cases whose name contains TEXT")
    p.add_argument("--batch", type=int)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json")
    args = p.parse_args()
    if not torch.cuda.is_available():
        print("dtype_pair.py times GPU kernels: no CUDA device here", file=sys.stderr)
        return 2
    torch.backends.cudnn.benchmark = True
    rows = []
    for case in get_suite(args.suite):
        if args.case and args.case not in case.name:
            continue
        row = measure_row(case, args.batch, args.rounds, args.seed)
        us = row["us"]
        print(f"{row['name']:28s} fp16 {us['tileconv fp16']:7.1f} bf16 {us['tileconv bf16']:7.1f} us  "
              f"bf16/fp16 {row['bf16_over_fp16']:.3f}   cuDNN {us['cudnn fp16']:7.1f} / {us['cudnn bf16']:7.1f} "
              f"({row['cudnn_bf16_over_fp16']:.3f})", flush=True)
        rows.append(row)
    ratios = [r["bf16_over_fp16"] for r in rows]
    worst = max(rows, key=lambda r: r["bf16_over_fp16"])
    summary = {"geomean_bf16_over_fp16": geomean(ratios), "worst_row": worst["name"],
               "worst_bf16_over_fp16": worst["bf16_over_fp16"], "best_bf16_over_fp16": min(ratios),
               "cudnn_geomean_bf16_over_fp16": geomean(r["cudnn_bf16_over_fp16"] for r in rows)}
    print(f"tileconv bf16 / fp16: geomean {summary['geomean_bf16_over_fp16']:.3f}, worst {worst['name']} "
          f"{summary['worst_bf16_over_fp16']:.3f}, best {summary['best_bf16_over_fp16']:.3f}; "
          f"cuDNN's geomean {summary['cudnn_geomean_bf16_over_fp16']:.3f}; all {len(rows)} rows right in both")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": device_name(), "torch": torch.__version__, "suite": args.suite, "rounds": args.rounds,
                       "cache_dir": os.environ.get("TILECONV_CACHE_DIR"), **summary, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
