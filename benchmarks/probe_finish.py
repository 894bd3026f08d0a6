"""The split-K wgrad's second pass alone: summing [split, K, C] fp32 partial sums into a 1x1
weight gradient, as ``sum_splits`` launches it and with other channel blocks and warps, beside
PyTorch's ``sum(0)`` of the same workspace. Warm L2 (the partials were just written by the GEMM
in a real call) and cold, per ResNet-50 1x1 row at its launcher's split.

    python benchmarks/probe_finish.py

A kernel-development probe, not a benchmark of record. Needs a GPU.
"""

from __future__ import annotations

import os
import sys
from types import SimpleNamespace

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402

from tileconv._runtime import cdiv  # noqa: E402
from tileconv.bench.models import cuda_graph_call  # noqa: E402
from tileconv.bench.timing import bench_us  # noqa: E402
from tileconv.kernels.wgrad import FINISH_TILE, sum_splits, wgrad_finish_taps_kernel  # noqa: E402

# (name, K, C, split) of ResNet-50's 1x1 wgrads at batch 32, the splits call 1's launches used.
ROWS = [("c1024 hw14 k512", 512, 1024, 4), ("c1024 hw14 k256", 256, 1024, 8), ("c128 hw28 k512", 512, 128, 33),
        ("c512 hw28 k256", 256, 512, 16), ("c256 hw56 k128", 128, 256, 128)]


def time_us(fn, cold: bool) -> float:
    """Cold: the bench's own median (:func:`tileconv.bench.timing.bench_us`: L2 cleared before
    each call, events). Warm: a CUDA graph of
    20 calls replayed, its median time over 20 (no host in the loop, the data in L2)."""
    if cold:
        return bench_us(fn)
    replay, _ = cuda_graph_call(lambda _: [fn() for _ in range(20)], None)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(20):
        start.record()
        replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000 / 20)
    return sorted(times)[len(times) // 2]


def probe_row(name: str, k: int, c: int, split: int) -> None:
    ws = torch.randn(split, k, c, device="cuda", dtype=torch.float32)
    grad = torch.empty(k, c, 1, 1, device="cuda", dtype=torch.float16)
    want = ws.sum(0).to(torch.float16).view(k, c, 1, 1)
    problem = SimpleNamespace(k=k, c_per_group=c, r=1, s=1)  # the fields sum_splits reads

    def launcher(block_c: int, warps: int):
        block_s = min(FINISH_TILE // block_c, 1 << (split - 1).bit_length())

        def run():
            wgrad_finish_taps_kernel[(k * cdiv(c, block_c),)](
                ws, grad, k * c, c, c, 1, 1, split, *grad.stride(), BLOCK_S=block_s, BLOCK_C=block_c, WAIT_PRIOR=False,
                num_warps=warps)
        return run

    variants = {"sum_splits": lambda: sum_splits(problem, ws, grad, split),
                "torch sum(0)": lambda: grad.copy_(ws.sum(0).view(k, c, 1, 1))}
    for block_c in (64, 128, 256, 512, 1024):
        for warps in (1, 2, 4):
            if block_c <= c:
                variants[f"block_c {block_c} w{warps}"] = launcher(block_c, warps)
    print(f"{name}: split {split}, {split * k * c * 4 / 1e6:.1f} MB of partial sums")
    for label, fn in variants.items():
        grad.fill_(float("nan"))
        fn()
        ok = torch.allclose(grad.float(), want.float(), rtol=2e-3, atol=2e-2)  # fp32 sums in another order
        warm, cold = time_us(fn, False), time_us(fn, True)
        print(f"    {label:18s} warm {warm:6.2f} us  cold {cold:6.2f} us  {'ok' if ok else 'WRONG'}")


def main() -> None:
    print(torch.cuda.get_device_name())
    for row in ROWS:
        probe_row(*row)


if __name__ == "__main__":
    main()
