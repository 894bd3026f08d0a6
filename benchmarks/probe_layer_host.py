"""The host time of one convolution's training step, on a GPU machine: a tiny layer (so that
the GPU never waits the host) run forward and backward under bf16 autocast, as ``bench
--train`` runs ResNet-50's, PyTorch's ``nn.Conv2d`` beside ``tileconv.nn.Conv2d``.

    python benchmarks/probe_layer_host.py [--iters 2000] [--profile 500]

For each layer kind (3x3 stride 1: dgrad as a forward convolution; 1x1; 3x3 stride 2: the
phase dgrad): wall us an iteration (forward + backward; the backward runs on autograd's
device thread, so CPU time of the calling thread would miss it), forward alone, and the
aten ops an iteration dispatches. Then a cProfile of ``--profile`` tileconv iterations.
Not a benchmark of record.
"""
from __future__ import annotations

import argparse
import collections
import cProfile
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402
from probe_train_host import print_profile  # noqa: E402  (benchmarks/, the script's folder)
from torch import nn  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

import tileconv  # noqa: E402
from tileconv import call_plans  # noqa: E402

LAYERS = {  # name: (C, K, kernel, stride, padding)
    "3x3/1": (64, 64, 3, 1, 1),
    "1x1/1": (64, 256, 1, 1, 0),
    "3x3/2": (64, 64, 3, 2, 1),
}


class _OpCounter(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.ops: collections.Counter[str] = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops[str(func.overloadpacket.__name__)] += 1
        return func(*args, **(kwargs or {}))


def make(kind: str, spec, device) -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    c, k, kernel, stride, padding = spec
    torch.manual_seed(0)
    layer = nn.Sequential(nn.Conv2d(c, k, kernel, stride, padding, bias=False))
    layer = layer.to(device, memory_format=torch.channels_last)
    if kind == "tileconv":
        layer = tileconv.convert(layer, fuse=False)
        assert isinstance(layer[0], tileconv.nn.Conv2d)
    x = torch.randn(2, c, 8, 8, device=device).contiguous(memory_format=torch.channels_last).requires_grad_()
    with torch.no_grad(), torch.autocast("cuda", torch.bfloat16):
        g = torch.randn_like(layer(x.detach()))
    return layer, x, g


def step(layer, x, g, backward: bool = True) -> None:
    with torch.autocast("cuda", torch.bfloat16):
        out = layer(x)
    if backward:
        out.backward(g)


_SAVED_ENCODINGS: dict[int, object] = {}


def set_encoding(on: bool | None) -> None:
    """Every held plan's steps with (True) or without (False) their own descriptor encoding."""
    if on is None:
        return
    for plan in call_plans._plans.values():
        for launch_step in getattr(plan, "steps", ()):
            saved = _SAVED_ENCODINGS.setdefault(id(launch_step), launch_step.encoded)
            launch_step.encoded = saved if on else None


def per_iter_us(layer, x, g, iters: int, backward: bool = True) -> float:
    for _ in range(10):
        step(layer, x, g, backward)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(iters):
        step(layer, x, g, backward)
    torch.cuda.synchronize()
    return (time.perf_counter() - start) * 1e6 / iters


def timed_us(fn, iters: int) -> float:
    """Wall us a call of ``fn`` over ``iters`` back-to-back calls (the GPU never the bound)."""
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(iters):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) * 1e6 / iters


class _Passthrough(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        return grad, None


_base_apply = super(torch.autograd.Function, _Passthrough).apply  # Function.apply minus its Python wrapper


def _flip_copy(w: torch.Tensor) -> torch.Tensor:
    """The dgrad weight as session 22 derived it (flip, then a transposing copy), groups 1."""
    k, c, r, s = w.shape
    flipped = w.flip((2, 3))
    out = torch.empty((c, k, r, s), dtype=w.dtype, device=w.device, memory_format=torch.channels_last)
    out.copy_(flipped.transpose(0, 1))
    return out


def parts(name: str, iters: int) -> None:
    """The pieces of one tileconv training call, each timed alone, beside PyTorch's."""
    import torch.nn.functional as F

    from tileconv import functional
    from tileconv.kernels import weights
    from tileconv.problem import problem_from_arguments

    c, k, kernel, stride, padding = LAYERS[name]
    dev = "cuda"
    x = torch.randn(2, c, 8, 8, device=dev, dtype=torch.bfloat16).contiguous(memory_format=torch.channels_last)
    w = torch.randn(k, c, kernel, kernel, device=dev, dtype=torch.bfloat16).contiguous(
        memory_format=torch.channels_last)
    problem = problem_from_arguments(x, w, None, stride, padding)
    g = torch.randn(problem.output_shape, device=dev, dtype=torch.bfloat16).contiguous(
        memory_format=torch.channels_last)
    xr = x.detach().requires_grad_()
    ones = torch.ones_like(xr)
    results = {
        "F.conv2d (bf16, no grad)": lambda: F.conv2d(x, w, None, stride, padding),
        "aten convolution_backward": lambda: torch.ops.aten.convolution_backward(
            g, x, w, None, (stride, stride), (padding, padding), (1, 1), False, (0, 0), 1, (True, True, False)),
        "tileconv forward replay": lambda: functional.conv2d_problem(problem, x, w, None, None),
        "tileconv backward replay": lambda: functional.conv2d_backward_problem(problem, g, x, w, True, True),
        "problem_from_arguments (memo)": lambda: problem_from_arguments(x, w, None, stride, padding),
        "dgrad weight build": lambda: weights.dgrad_weight(w.detach().requires_grad_(), 1)
        if torch.is_grad_enabled() else None,
        "dgrad weight, flip + copy (before)": lambda: _flip_copy(w),
        "empty autograd.Function fwd+bwd": lambda: _Passthrough.apply(xr, w).backward(ones),
        "native view fwd+bwd": lambda: xr.view_as(xr).backward(ones),
        "empty Function.apply, fwd": lambda: _Passthrough.apply(xr, w),
        "empty _FunctionBase.apply, fwd": lambda: _base_apply(xr, w),
        "x.to(bf16) no-op": lambda: x.to(torch.bfloat16),
        "torch.empty_strided": lambda: torch.empty_strided(g.shape, g.stride(), dtype=g.dtype, device=dev),
    }
    for label, fn in results.items():
        print(f"  {name} part: {label:34s} {timed_us(fn, iters):7.1f} us", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iters", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--profile", type=int, default=500)
    parser.add_argument("--layers", default=",".join(LAYERS))
    parser.add_argument("--parts", action="store_true", help="also time each piece of a call alone")
    parser.add_argument("--trace", action="store_true", help="torch.profiler: GPU time and aten ops of each run")
    parser.add_argument("--caller-thread", action="store_true",
                        help="run backward on the calling thread (torch.autograd.set_multithreading_enabled(False))")
    args = parser.parse_args()
    device = torch.device("cuda")
    torch.backends.cudnn.benchmark = True
    print(f"{torch.cuda.get_device_name()}  torch {torch.__version__}", flush=True)
    if args.caller_thread:
        torch.autograd.set_multithreading_enabled(False)
        print("backward on the calling thread", flush=True)
    for name in args.layers.split(","):
        spec = LAYERS[name]
        models = {kind: make(kind, spec, device) for kind in ("pytorch", "tileconv")}
        for kind, (layer, x, g) in models.items():
            counter = _OpCounter()
            step(layer, x, g)
            with counter:
                step(layer, x, g)
            ops = ", ".join(f"{op} {n}" for op, n in sorted(counter.ops.items()))
            print(f"{name} {kind}: {sum(counter.ops.values())} aten ops an iteration: {ops}", flush=True)
        # Runs take turns in chunks (the host's speed drifts by tens of percent within a
        # minute); tileconv-wrapper is tileconv with its plans' steps launching through
        # Triton's tensor-descriptor wrapper (every descriptor encoded on every launch).
        runs = {"pytorch": (models["pytorch"], None), "tileconv-wrapper": (models["tileconv"], False),
                "tileconv": (models["tileconv"], True)}
        chunk = max(args.iters // args.rounds, 1)
        times: dict[str, dict[str, list[float]]] = {kind: {"fwd+bwd": [], "fwd": []} for kind in runs}
        for _ in range(args.rounds):
            for kind, ((layer, x, g), encoded) in runs.items():
                set_encoding(encoded)
                times[kind]["fwd+bwd"].append(per_iter_us(layer, x, g, chunk))
                times[kind]["fwd"].append(per_iter_us(layer, x, g, chunk, backward=False))
        set_encoding(True)
        for kind, measured in times.items():
            print(f"{name} {kind:16s}: fwd+bwd {statistics.median(measured['fwd+bwd']):6.1f} us, "
                  f"fwd {statistics.median(measured['fwd']):6.1f} us (medians of {args.rounds} chunks of {chunk})",
                  flush=True)
        layer, x, g = models["tileconv"]
        print(f"  call plans: {call_plans.stats()}", flush=True)
        if args.parts:
            parts(name, args.iters)
        if args.trace:
            for kind, (layer_k, x_k, g_k) in models.items():
                with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                                        torch.profiler.ProfilerActivity.CUDA]) as trace:
                    for _ in range(50):
                        step(layer_k, x_k, g_k)
                    torch.cuda.synchronize()
                events = trace.key_averages()
                gpu_us = sum(e.self_device_time_total for e in events) / 50
                print(f"--- {kind} {name}: GPU kernel time {gpu_us:.1f} us an iteration (under the profiler)\n"
                      f"{events.table(sort_by='self_device_time_total', row_limit=12, max_name_column_width=60)}",
                      flush=True)
        # From Python 3.12 cProfile sees every thread (sys.monitoring), autograd's device
        # thread, where the backward runs, included; before 3.12 only the calling thread.
        profile = cProfile.Profile()
        torch.cuda.synchronize()
        profile.enable()
        for _ in range(args.profile):
            step(layer, x, g)
        torch.cuda.synchronize()
        profile.disable()
        print_profile(profile, f"tileconv {name}, {args.profile} iterations", 30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
