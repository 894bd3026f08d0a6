"""What a memory-bound row can gain at most: each row's cuDNN time beside the time of plain
ATen kernels that move the same bytes, all timed as the bench times (do_bench medians, L2
cleared before every repetition), in one process.

A convolution reads its input and writes its output at least once. For a stride-1 row that
is a copy of the input (``out.copy_(x)``); for a stride-2 row, a read of the input and a
write of a quarter of it (a 2x2 average pool, ``F.avg_pool2d``, channels_last). No kernel
moves those bytes faster than these do on small rows, where launch and DRAM latency are most
of the time: the copy's time bounds the speedup over cuDNN any kernel can show,
``cudnn_us / copy_us``. An empty Triton kernel's time is printed first (the floor of any
timed call).

    python3 benchmarks/copy_floor.py [SUITE ...]     # default: depthwise grouped
"""
import json
import math
import os
import sys

sys.path.insert(0, os.getcwd())
import torch
import torch.nn.functional as F
import triton

from tileconv.bench.suites import get_suite
from tileconv.bench.timing import bench_us


@triton.jit
def _empty_kernel(x):
    pass


def _row(suite: str, case) -> dict | None:
    """cuDNN's time on ``case`` (fp16 channels_last) and its floor's, or None where no plain
    kernel moves the same bytes (K != C, or a stride other than 1 and 2)."""
    p = case.problem(torch.float16, "nhwc")
    if p.k != p.c or p.stride not in ((1, 1), (2, 2)) or (p.stride == (1, 1) and (p.out_h, p.out_w) != (p.h, p.w)):
        return None
    x = torch.randn(p.n, p.c, p.h, p.w, device="cuda", dtype=p.dtype).contiguous(memory_format=torch.channels_last)
    w = torch.randn(p.k, p.c_per_group, p.r, p.s, device="cuda", dtype=p.dtype)
    cudnn_us = bench_us(lambda: F.conv2d(x, w, None, p.stride, p.padding, p.dilation, p.groups))
    if p.stride == (1, 1):
        out = torch.empty_like(x)
        floor, floor_us = "copy", bench_us(lambda: out.copy_(x))
    else:
        floor, floor_us = "avg_pool2d 2x2", bench_us(lambda: F.avg_pool2d(x, 2))
    return dict(suite=suite, name=case.name, taps=f"{p.r}x{p.s}", cudnn_us=cudnn_us, floor=floor, floor_us=floor_us,
                min_bytes=p.min_bytes, max_speedup=cudnn_us / floor_us)


def main(suites: list[str]) -> None:
    torch.backends.cudnn.benchmark = True
    out_dir = os.environ.get("OUT", ".")
    dummy = torch.empty(1, device="cuda")
    empty_us = bench_us(lambda: _empty_kernel[(1,)](dummy))
    print(f"{torch.cuda.get_device_name()}: empty Triton kernel {empty_us:.2f} us", flush=True)
    rows = []
    for suite in suites:
        ratios = {}
        for case in get_suite(suite):
            row = _row(suite, case)
            if row is None:
                continue
            ratios.setdefault(row.pop("taps"), []).append(row["max_speedup"])
            rows.append(row)
            print(f"{case.name:30s} cuDNN {row['cudnn_us']:7.2f} us  {row['floor']} {row['floor_us']:7.2f} us "
                  f"({row['min_bytes'] / row['floor_us'] / 1e6:.2f} TB/s)  most a kernel can gain: "
                  f"{row['max_speedup']:5.2f}x", flush=True)
        for taps, values in ratios.items():
            print(f"{suite} {taps}: geomean of the most a kernel can gain {math.exp(sum(map(math.log, values)) / len(values)):.2f}x")
    with open(os.path.join(out_dir, "copy_floor.json"), "w") as f:
        json.dump(dict(device=torch.cuda.get_device_name(), empty_kernel_us=empty_us, rows=rows), f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1:] or ["depthwise", "grouped"])
