"""Which kernels cuDNN runs on a suite's rows, and for how long: the peer's tile shapes (its kernel
names carry them, e.g. ``..._tilesize128x128x32_...``), grids and times, from torch.profiler.

    python benchmarks/cudnn_kernels.py [--suite resnet50] [--case TEXT] [--dtype tf32] [--layout nhwc]

Each row: cuDNN's forward (PyTorch eager, benchmark mode so it picks its fastest algorithm as the
bench does) warmed up, then 20 calls profiled; every CUDA kernel of those calls with its mean time.
Needs a GPU.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402
from pass_kernels import kernel_times, show  # noqa: E402  (this script's folder: benchmarks/)

from tileconv.bench.suites import SUITE_NAMES, select_cases  # noqa: E402

DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32, "tf32": torch.float32}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", default="resnet50", choices=SUITE_NAMES)
    parser.add_argument("--case", default=None)
    parser.add_argument("--dtype", default="tf32", choices=sorted(DTYPES))
    parser.add_argument("--layout", default="nhwc", choices=("nhwc", "nchw"))
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args()
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = args.dtype == "tf32"
    dtype = DTYPES[args.dtype]
    fmt = torch.channels_last if args.layout == "nhwc" else torch.contiguous_format
    print(f"{torch.cuda.get_device_name()}, cuDNN {torch.backends.cudnn.version()}, {args.dtype} {args.layout}")
    for case in select_cases(args.suite, args.case):
        p = case.problem(dtype, args.layout, allow_tf32=args.dtype == "tf32")
        x = torch.randn(p.input_shape, device="cuda", dtype=dtype).contiguous(memory_format=fmt)
        w = torch.randn(p.weight_shape, device="cuda", dtype=dtype).contiguous(memory_format=fmt)

        def run(x=x, w=w, p=p):
            return torch.nn.functional.conv2d(x, w, None, p.stride, p.padding, p.dilation, p.groups)

        print(f"{case.name}:")
        show("cuDNN", kernel_times(run, args.calls), args.calls)


if __name__ == "__main__":
    main()
