"""Which CUDA kernels each side runs for one pass of a suite's rows, and for how long: cuDNN's
(``aten.convolution_backward`` or ``F.conv2d``, as ``bench`` calls it) beside tileconv's, on the
bench's own inputs (``tileconv.testing.random_inputs``: NCHW weights), from torch.profiler.
Also prints the layout of each side's result (a gradient's strides), so that a row where the two
sides do different work (a layout conversion one of them pays) shows.

    python benchmarks/pass_kernels.py --pass wgrad [--suite resnet50] [--case TEXT] [--calls 20]

Each row: both sides warmed up, then ``--calls`` calls of each profiled; every kernel with its mean
time a call and its count a call. tileconv's choice is the tuning cache's (TILECONV_CACHE_DIR) or
the heuristics'. Needs a GPU.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

from tileconv import dispatch  # noqa: E402
from tileconv.bench.peers import backward_outputs, cudnn_call  # noqa: E402
from tileconv.bench.suites import SUITE_NAMES, select_cases  # noqa: E402
from tileconv.functional import conv2d_backward_problem, conv2d_problem  # noqa: E402
from tileconv.testing import random_inputs  # noqa: E402

DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16}


def kernel_times(fn, calls: int) -> dict[str, list[float]]:
    """Device time (us) of every CUDA kernel ``calls`` calls of ``fn`` launch, by name."""
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    times: dict[str, list[float]] = defaultdict(list)
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            times[event.name].append(event.device_time)
    return times


def show(side: str, times: dict[str, list[float]], calls: int) -> None:
    total = sum(sum(us) for us in times.values()) / calls
    print(f"  {side}: {total:.1f} us of kernels a call")
    for name, us in sorted(times.items(), key=lambda item: -sum(item[1])):
        print(f"    {sum(us) / calls:8.1f} us  x{len(us) / calls:g}  {name[:150]}")


def layout(t: torch.Tensor) -> str:
    if t.is_contiguous():
        return "contiguous"
    if t.dim() == 4 and t.is_contiguous(memory_format=torch.channels_last):
        return "channels_last"
    return f"strides {tuple(t.stride())}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", default="resnet50", choices=SUITE_NAMES)
    parser.add_argument("--case", default=None)
    parser.add_argument("--pass", dest="pass_name", default="wgrad", choices=("fwd", "dgrad", "wgrad"))
    parser.add_argument("--dtype", default="float16", choices=sorted(DTYPES))
    parser.add_argument("--layout", default="nhwc", choices=("nhwc", "nchw"))
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args()
    torch.backends.cudnn.benchmark = True
    dtype = DTYPES[args.dtype]
    print(f"{torch.cuda.get_device_name()}, cuDNN {torch.backends.cudnn.version()}, {args.dtype} {args.layout}, "
          f"pass {args.pass_name}")
    for case in select_cases(args.suite, args.case):
        p = case.problem(dtype, args.layout)
        inputs = random_inputs(p, "cuda", seed=0)
        if args.pass_name == "fwd":
            ours = lambda p=p, i=inputs: [conv2d_problem(p, i.x, i.weight, i.bias, i.residual)]  # noqa: E731
            theirs = lambda p=p, i=inputs: [cudnn_call(p, i)()]  # noqa: E731
            chosen = dispatch.select(p)
        else:
            grad = torch.randn(p.output_shape, device="cuda", dtype=dtype)
            if args.layout == "nhwc":
                grad = grad.contiguous(memory_format=torch.channels_last)
            need_x, need_w = args.pass_name == "dgrad", args.pass_name == "wgrad"
            ours = lambda p=p, i=inputs, g=grad, nx=need_x, nw=need_w: [  # noqa: E731
                t for t in conv2d_backward_problem(p, g, i.x, i.weight, nx, nw) if t is not None]
            theirs = lambda p=p, i=inputs, g=grad: backward_outputs(p, i, g, args.pass_name)  # noqa: E731
            algorithm = dispatch.select_backward(p)
            chosen = (algorithm.name, dispatch.backward_config(p, algorithm, args.pass_name))
        print(f"{case.name}: tileconv {ours()[0].shape} {layout(ours()[0])}, cuDNN {layout(theirs()[0])}; "
              f"tileconv's choice {chosen}")
        show("cuDNN", kernel_times(theirs, args.calls), args.calls)
        show("tileconv", kernel_times(ours, args.calls), args.calls)


if __name__ == "__main__":
    main()
