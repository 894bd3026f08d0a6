"""Where the host time of a training step goes, on a GPU machine: ResNet-50 at batch 32, bf16
autocast, SGD (the step of ``bench --train``), eager PyTorch beside ``tileconv.convert``.

    python benchmarks/probe_train_host.py [--model resnet50] [--steps 30] [--profile 10]

For each run: the wall time a step over back-to-back steps, and the time between CUDA events
around each step (what ``bench --train`` reports). Then a
cProfile of ``--profile`` tileconv steps (top functions by own time and by cumulative time)
and the call-plan counters (tileconv.call_plans.stats): a ``recorded`` count that grows with
every step means replays miss. Not the benchmark of record (``bench --train`` is).
"""
from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402

from tileconv import call_plans  # noqa: E402
from tileconv.bench import train as tb  # noqa: E402


def free_running(model, batches, steps: int) -> float:
    """Wall ms a step over ``steps`` back-to-back steps (one synchronisation at the end)."""
    torch.cuda.synchronize()
    start = time.perf_counter()
    tb.train(model, batches, steps, 0.01, torch.bfloat16, timed=False)
    torch.cuda.synchronize()
    return (time.perf_counter() - start) * 1e3 / steps


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="resnet50")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--profile", type=int, default=10)
    parser.add_argument("--batch", type=int, default=32)
    args = parser.parse_args()
    device = torch.device("cuda")
    initial, image_size, classes = tb.initial_model(args.model, 0)
    batches = tb.fixed_batches(4, args.batch, image_size, classes, 0, device)
    print(f"{torch.cuda.get_device_name()}  torch {torch.__version__}  {args.model} batch {args.batch}", flush=True)
    models = {kind: tb.prepare(initial, kind, device) for kind in ("pytorch", "tileconv")}
    for kind, model in models.items():
        start = time.perf_counter()
        tb.train(model, batches, 12, 0.01, torch.bfloat16, timed=False)  # compiles, records plans
        torch.cuda.synchronize()
        print(f"{kind}: warm-up 12 steps {time.perf_counter() - start:.1f} s", flush=True)
    for kind, model in models.items():
        before = dict(call_plans.stats())
        free = free_running(model, batches, args.steps)
        _, event_ms = tb.train(model, batches, args.steps, 0.01, torch.bfloat16)
        event_ms.sort()
        after = call_plans.stats()
        print(f"{kind}: free-running {free:.2f} ms/step; CUDA events a step: median {event_ms[len(event_ms) // 2]:.2f}"
              f" ms, min {event_ms[0]:.2f} ms; plans {before} -> {after}", flush=True)
    profiler = cProfile.Profile()
    model = models["tileconv"]
    torch.cuda.synchronize()
    profiler.enable()
    tb.train(model, batches, args.profile, 0.01, torch.bfloat16, timed=False)
    torch.cuda.synchronize()
    profiler.disable()
    print_profile(profiler, f"tileconv, {args.profile} steps", 45)
    return 0


def print_profile(profiler: cProfile.Profile, label: str, lines: int) -> None:
    """The top ``lines`` functions of ``profiler``, by own time and by cumulative time."""
    for order in ("tottime", "cumulative"):
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats(order).print_stats(lines)
        print(f"--- {label}, by {order}\n{text.getvalue()}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
