"""Probe: how much of a small row's time is the benchmark's L2 flush leaving dirty lines behind?

The benchmark clears the L2 before each repetition with a 1 GiB memset (``timing.event_median_ms``),
which leaves the L2 full of dirty lines: the timed kernel's first misses evict them, so their
write-back to DRAM lands inside its time. Sessions 13-37 found every dense ResNet-50 row taking
operands in at about 30 bytes a clock an SM whatever the tile; session 38's 192-row tiles move 45%
fewer bytes into each SM on c1024 hw14 k512 in the same time. This times cuDNN and tileconv (the
heuristics' choice, no tuning cache), each captured in a CUDA graph, under three protocols in one
process: the benchmark's memset, a read of the same 1 GiB (the L2 left holding clean lines), and no
flush (operands warm in L2 where they fit). Every tileconv output is checked against the float64
reference first.

    python benchmarks/probe_flush.py --json OUT.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import tileconv  # noqa: E402
from tileconv.bench.suites import get_suite  # noqa: E402
from tileconv.bench.timing import event_median_ms, flush_buffer  # noqa: E402
from tileconv.functional import _run_problem  # noqa: E402
from tileconv.reference import conv2d_reference  # noqa: E402
from tileconv.testing import compare, random_inputs, tolerance  # noqa: E402


def _graph(fn) -> torch.cuda.CUDAGraph:
    fn()  # compile, choose, warm
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--json")
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    buffer = flush_buffer()
    sink = torch.empty((), dtype=torch.int64, device="cuda")
    protocols = {"memset": buffer.zero_, "read": lambda: torch.sum(buffer, dim=0, out=sink), "none": lambda: None}
    cases = [c for c in get_suite("resnet50") if (c.r == 1 and c.stride == 1) or c.name in (
        "r50 c64 hw56 k64 3x3/1", "r50 c256 hw14 k256 3x3/1")]
    rows = []
    for case in cases:
        problem = case.problem(torch.float16, "nhwc", "none", batch=32)
        inputs = random_inputs(problem, "cuda", seed=38, draw_on_device=True)
        x, w = inputs.x, inputs.weight
        out = torch.full(problem.output_shape, float("nan"), device="cuda", dtype=torch.float16).contiguous(
            memory_format=torch.channels_last)
        _run_problem(problem, x, w, None, None, "auto", None, out=out)  # the dispatch's choice, into a poisoned output
        comparison = compare(out, conv2d_reference(x, w, padding=problem.padding, device="cuda"), tolerance(problem))
        graphs = {"cudnn": _graph(lambda: F.conv2d(x, w, padding=problem.padding)),  # noqa: B023 - used here
                  "tileconv": _graph(lambda: tileconv.conv2d(x, w, padding=problem.padding))}  # noqa: B023
        times = {f"{side}_{name}": [] for side in graphs for name in protocols}
        for _ in range(args.rounds):
            for side, graph in graphs.items():
                for name, clear in protocols.items():
                    times[f"{side}_{name}"].append(event_median_ms(graph.replay, flush=clear) * 1000)
        row = {"name": case.name, "ok": comparison.ok, "rel_err": comparison.rel_err,
               **{k: statistics.median(v) for k, v in times.items()}}
        rows.append(row)
        print(row["name"], "ok" if row["ok"] else "WRONG",
              " ".join(f"{k}={row[k]:.1f}" for k in times), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
