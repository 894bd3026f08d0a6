"""``python -m tileconv bench --host-cost``: what a call costs the CPU, and whether the
benchmark's small rows measure the GPU or the host.

0. First call: a shape never seen by this process, from the call to its completion.
1. Host cost: ``tileconv.conv2d`` and ``F.conv2d`` on a tiny problem (1x16x8x8 -> 16,
   3x3), each called 1000 times back to back on an already-seen shape; CPU time of the
   calling thread per call (``time.thread_time``) and wall time per call.
   Also tileconv.conv2d with call plans off (:mod:`tileconv.call_plans`): the normal path.
2. Launch-bound check: for every row of ``--suite``, ``tileconv.conv2d``'s event timing (the
   benchmark's own :func:`~tileconv.bench.timing.bench_us`) against the same call replayed
   from a CUDA graph (no host work at all, same cold L2). A row whose event time exceeds
   its graph time by more than 10% is measuring the host: the table flags it.
"""

from __future__ import annotations

import argparse
import json
import time

CALLS = 1000
LAUNCH_BOUND_RATIO = 1.10


def _host_cost(fn, calls: int = CALLS) -> tuple[float, float]:
    """(CPU us, wall us) per call of ``fn`` over ``calls`` back-to-back calls."""
    import torch

    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    cpu0, wall0 = time.thread_time(), time.perf_counter()
    for _ in range(calls):
        fn()
    cpu, wall = time.thread_time() - cpu0, time.perf_counter() - wall0
    torch.cuda.synchronize()
    return cpu / calls * 1e6, wall / calls * 1e6


def _graph_us(fn) -> float:
    """``fn`` captured once in a CUDA graph, replayed under the benchmark's timer."""
    from .models import cuda_graph_call
    from .timing import bench_us

    replay, _ = cuda_graph_call(lambda _: fn(), None)
    return bench_us(replay)


def _first_call_s(dtype, fmt) -> float:
    """Seconds for the first ``tileconv.conv2d`` call of a shape this process has not seen
    (selection by heuristics, kernel loaded or compiled, launch), up to its completion."""
    import torch

    import tileconv

    x = torch.randn(3, 64, 45, 45, device="cuda", dtype=dtype).contiguous(memory_format=fmt)
    w = torch.randn(64, 64, 3, 3, device="cuda", dtype=dtype) / 24
    b = torch.randn(64, device="cuda", dtype=dtype)
    torch.cuda.synchronize()
    start = time.perf_counter()
    tileconv.conv2d(x, w, b, 1, 1, activation="relu")
    torch.cuda.synchronize()
    return time.perf_counter() - start


def run_host_cost(args: argparse.Namespace) -> int:
    """Print both measurements (and write them as JSON with ``--json``)."""
    import torch
    import torch.nn.functional as F

    import tileconv

    from ..functional import conv2d_as_called
    from ..testing import random_inputs
    from .options import DTYPES
    from .report import make_console, output_path
    from .suites import get_suite
    from .timing import bench_us, environment, environment_line

    console = make_console()
    env = environment()
    console.print(environment_line(env))
    dtype, allow_tf32 = DTYPES[args.dtype]
    fmt = torch.channels_last if args.layout == "nhwc" else torch.contiguous_format
    first_call = _first_call_s(dtype, fmt)
    console.print(f"first call of a never-seen shape (3x64x45x45 -> 64, 3x3, bias + relu; no tuning entry; "
                  f"Triton's on-disk cache as earlier runs left it): {first_call * 1e3:.0f} ms")
    x = torch.randn(1, 16, 8, 8, device="cuda", dtype=dtype).contiguous(memory_format=fmt)
    w = torch.randn(16, 16, 3, 3, device="cuda", dtype=dtype) / 12
    from .. import call_plans
    from ..kernels import fast_launch

    before, replays_before = fast_launch.stats(), call_plans.stats()["replays"]
    costs = {"tileconv.conv2d": _host_cost(lambda: tileconv.conv2d(x, w, None, 1, 1))}
    replays = call_plans.stats()["replays"] - replays_before
    previous = call_plans.set_enabled(False)
    try:
        costs["tileconv, no replay"] = _host_cost(lambda: tileconv.conv2d(x, w, None, 1, 1))
    finally:
        call_plans.set_enabled(previous)
    after = fast_launch.stats()
    costs["F.conv2d"] = _host_cost(lambda: F.conv2d(x, w, None, 1, 1))
    launches = {k: after[k] - before[k] for k in ("hits", "misses")}
    launches["replayed_calls"] = replays
    console.print(f"tileconv.conv2d: {replays} of {CALLS + 20} calls replayed from a call plan; without replay, "
                  f"{launches['hits']} launches from a launch plan, {launches['misses']} through Triton's dispatch "
                  f"(launch plans held: {after['plans']})")
    for name, (cpu, wall) in costs.items():
        console.print(f"host cost, {name:19s} 1x16x8x8 -> 16, 3x3: {cpu:6.1f} us CPU, {wall:6.1f} us wall per call "
                      f"({CALLS} calls)")

    from rich.table import Table

    table = Table(title=f"event timing vs CUDA-graph replay, suite {args.suite} ({args.dtype}, {args.layout})")
    for column in ("case", "events us", "graph us", "events / graph", "launch-bound"):
        table.add_column(column, justify="left" if column == "case" else "right")
    rows = []
    for case in get_suite(args.suite):
        problem = case.problem(dtype, args.layout, args.epilogue, args.batch, allow_tf32)
        inputs = random_inputs(problem, "cuda", seed=0)

        def call(problem=problem, inputs=inputs):
            return conv2d_as_called(problem, inputs.x, inputs.weight, inputs.bias, inputs.residual)

        events, graph = bench_us(call), _graph_us(call)
        bound = events > LAUNCH_BOUND_RATIO * graph
        rows.append({"case": case.name, "events_us": events, "graph_us": graph, "launch_bound": bound})
        table.add_row(case.name, f"{events:.1f}", f"{graph:.1f}", f"{events / graph:.2f}",
                      "[red]yes[/]" if bound else "no")
    console.print(table)
    bound_rows = sum(r["launch_bound"] for r in rows)
    console.print(f"{bound_rows} of {len(rows)} rows launch-bound (events > {LAUNCH_BOUND_RATIO:.2f} x graph)")
    if args.json:
        path = output_path(args.json, env.get("device_slug", "unknown"), f"host-cost-{args.suite}", ".json")
        payload = {"env": env, "calls": CALLS, "launches": launches, "first_call_s": first_call,
                   "host_cost_us": {name: {"cpu": cpu, "wall": wall} for name, (cpu, wall) in costs.items()},
                   "rows": [dict(r, suite="host", pass_="fwd") for r in rows]}
        path.write_text(json.dumps(payload, indent=2) + "\n")
        console.print(f"wrote {path}")
    return 0
