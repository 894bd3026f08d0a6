"""Where a tileconv.conv2d call spends its host time, on a GPU machine: 1000 calls on a tiny
problem (time per call, how many launch plans the fast path holds before and after: a count
that grows with every call means the plan misses), then a cProfile of 1000 more.

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
from tileconv.kernels import fast_launch  # noqa: E402


def call() -> None:
    tileconv.conv2d(x, w, None, 1, 1)


def calls(n: int) -> None:
    for _ in range(n):
        call()


x = torch.randn(1, 16, 8, 8, device="cuda", dtype=torch.float16).contiguous(memory_format=torch.channels_last)
w = torch.randn(16, 16, 3, 3, device="cuda", dtype=torch.float16) / 12
calls(20)
torch.cuda.synchronize()
before = len(fast_launch._plans)
start = time.perf_counter()
calls(1000)
per_call = (time.perf_counter() - start) * 1e3
print(f"tileconv.conv2d: {per_call:.1f} us a call; launch plans {before} before, {len(fast_launch._plans)} after",
      flush=True)
torch.cuda.synchronize()
profile = cProfile.Profile()
profile.enable()
calls(1000)
profile.disable()
torch.cuda.synchronize()
pstats.Stats(profile).sort_stats("tottime").print_stats(25)
