"""Probe: programmatic dependent launch (PDL) on and off, in one process, on a suite's backward rows.

tileconv's weight gradient is two kernels where it splits the reduction: the GEMM's partial sums,
then their sum (``wgrad.sum_splits``). With PDL (``tileconv._runtime.programmatic_launch``) the sum
kernel is launched programmatically, its programs scheduled once every program of the GEMM has
started, waiting on the GEMM's completion in the kernel (``griddepcontrol.wait``). This times each
row's ``tileconv`` pass with PDL on and off, and cuDNN's, in turn, round after round, with the bench's
timer (cold L2, CUDA events, median), on whatever tuning cache ``$TILECONV_CACHE_DIR`` holds. Every
output is checked against the bench's float32 reference before it is timed, in both settings.

    python benchmarks/probe_pdl.py --suite resnet50 --pass wgrad --rounds 3 --json OUT.json [--rows c1024,c512 hw7]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402

import tileconv._runtime as runtime  # noqa: E402
from tileconv import call_plans  # noqa: E402
from tileconv.bench.peers import cudnn_pass_call, reference_pass  # noqa: E402
from tileconv.bench.report import geomean  # noqa: E402
from tileconv.bench.runner import _compare_all, _pass_tolerances, _random_grad, _tileconv_pass_call  # noqa: E402
from tileconv.bench.suites import get_suite  # noqa: E402
from tileconv.bench.timing import event_median_ms  # noqa: E402
from tileconv.testing import random_inputs  # noqa: E402


def use_pdl(pdl: bool) -> None:
    """PDL on or off for the launches that follow, the call plans recorded afresh (a plan keeps
    the launches it recorded, programmatic or not)."""
    runtime.PDL_ENABLED = pdl
    call_plans.clear()


def timed(call, pdl: bool) -> float:
    """Microseconds of ``call`` with PDL set to ``pdl``."""
    use_pdl(pdl)
    return event_median_ms(call) * 1000.0


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--suite", default="resnet50")
    p.add_argument("--pass", dest="pass_name", default="wgrad", choices=("dgrad", "wgrad", "fwd+bwd"))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--rows", help="comma-separated parts of row names (default: every row)")
    p.add_argument("--json")
    args = p.parse_args()
    torch.backends.cudnn.benchmark = True
    wanted = [w.strip() for w in args.rows.split(",")] if args.rows else None
    results = []
    for case in get_suite(args.suite):
        if wanted and not any(w in case.name for w in wanted):
            continue
        problem = case.problem(torch.float16, "nhwc", "none")
        inputs = random_inputs(problem, device="cuda")
        grad = _random_grad(problem, "cuda")
        reference = reference_pass(problem, inputs, grad, args.pass_name, "float32")
        tols = _pass_tolerances(problem, args.pass_name)
        call = _tileconv_pass_call(problem, inputs, grad, args.pass_name, "auto")
        checks = {}
        for pdl in (True, False):
            use_pdl(pdl)
            for _ in range(2):  # recorded, then replayed
                check = _compare_all(call(), reference, tols)
            checks["on" if pdl else "off"] = (check.ok, check.rel_err)
        cudnn = cudnn_pass_call(problem, inputs, grad, args.pass_name)
        cudnn()
        samples = {"on": [], "off": [], "cudnn": []}
        for _ in range(args.rounds):
            samples["on"].append(timed(call, True))
            samples["off"].append(timed(call, False))
            samples["cudnn"].append(event_median_ms(cudnn) * 1000.0)
        us = {label: statistics.median(values) for label, values in samples.items()}
        row = {"name": case.name, "us": us, "checks": checks, "on_over_off": us["on"] / us["off"],
               "speedup_on": us["cudnn"] / us["on"], "speedup_off": us["cudnn"] / us["off"]}
        results.append(row)
        print(f"{case.name:32s} on {us['on']:7.1f}  off {us['off']:7.1f}  cudnn {us['cudnn']:7.1f}  "
              f"on/off {row['on_over_off']:.3f}  ok {checks}", flush=True)
    summary = {label: geomean([r[label] for r in results]) for label in ("on_over_off", "speedup_on", "speedup_off")}
    print("geomean", {k: round(v, 4) for k, v in summary.items()})
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "suite": args.suite, "pass": args.pass_name,
                       "rounds": args.rounds, "rows": results, "geomean": summary}, f, indent=1)


if __name__ == "__main__":
    main()
