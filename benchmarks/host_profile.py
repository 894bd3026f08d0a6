"""Where a tileconv.conv2d call spends its host time, on a GPU machine: 1000 calls on a tiny
problem (time per call, how many launch plans the fast path holds before and after: a count
that grows with every call means the plan misses), then a cProfile of 1000 more; first with
call plans (tileconv.call_plans), then on the normal path.

    python benchmarks/host_profile.py
"""
import cProfile
import os
import pstats
import sys
import time

sys.path.insert(0, os.getcwd())
import torch  # noqa: E402

import tileconv  # noqa: E402
from tileconv import call_plans  # noqa: E402
from tileconv.kernels import fast_launch  # noqa: E402


def call() -> None:
    tileconv.conv2d(x, w, None, 1, 1)


def calls(n: int) -> None:
    for _ in range(n):
        call()


x = torch.randn(1, 16, 8, 8, device="cuda", dtype=torch.float16).contiguous(memory_format=torch.channels_last)
w = torch.randn(16, 16, 3, 3, device="cuda", dtype=torch.float16) / 12
def timed(label: str) -> None:
    calls(20)
    torch.cuda.synchronize()
    before = fast_launch.stats()
    start = time.perf_counter()
    calls(1000)
    per_call = (time.perf_counter() - start) * 1e3
    after = fast_launch.stats()
    print(f"{label}: {per_call:.1f} us a call; launch plans {before['plans']} -> {after['plans']}, "
          f"hits +{after['hits'] - before['hits']}, misses +{after['misses'] - before['misses']}; "
          f"call plans {call_plans.stats()}", flush=True)
    torch.cuda.synchronize()
    profile = cProfile.Profile()
    profile.enable()
    calls(1000)
    profile.disable()
    torch.cuda.synchronize()
    pstats.Stats(profile).sort_stats("tottime").print_stats(18)


timed("tileconv.conv2d, replayed")
call_plans.set_enabled(False)
timed("tileconv.conv2d, normal path")
