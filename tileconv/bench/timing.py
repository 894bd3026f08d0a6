"""How the benchmark measures time, and the two ceilings every row is judged against.

Every time in tileconv's benchmark comes from :func:`bench_us`, which follows
``triton.testing.do_bench``'s protocol and returns its median: the function runs once (JIT
compilation, cuDNN's algorithm search), warms up for ``WARMUP_MS``, then each repetition is
timed with CUDA events for ``REP_MS``, the L2 cache cleared before every one (a memset of
``FLUSH_BYTES``), so that no input is timed from L2. The memset is 1 GiB where do_bench's is
256 MB: the host must get ahead of the GPU for a repetition's events to time the GPU's work
alone, and it does only while the memset outlasts the host's side of a call. do_bench's ~58 us
memset (H200) did not outlast cuDNN's weight gradients of 1x1 convolutions (35-66 us of CPU a
call): their event times moved between 12.7 and 24.1 us within one process, three times their
kernels' 6.9 us. The 1 GiB memset takes ~230 us.

The ceilings (:func:`measure_ceilings`) are measured the same way in the same process:

- GEMM: ``torch.matmul`` of two random 8192 x 8192 matrices (2 * 8192^3 FLOPs), in the
  run's dtype (``info`` reports float16).
- copy: ``dst.copy_(src)`` of a 512 MiB buffer, counting read + write (2 x 512 MiB), far
  larger than any L2.

A row's arithmetic intensity (FLOPs per byte of :attr:`ConvProblem.min_bytes`) says which
of the two bounds it (the roofline): :func:`roofline`.
"""

from __future__ import annotations

import contextlib
import datetime
import platform
import re
import statistics
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass

import torch

WARMUP_MS = 25  # the warm-up budget per measurement (do_bench's default)
REP_MS = 100  # the timed budget per measurement: >= 100 repetitions below 1 ms
FLUSH_BYTES = 2**30  # the L2-clearing memset before each repetition (see above)
GEMM_SIZE = 8192  # the GEMM ceiling's M = N = K
COPY_BYTES = 512 * 2**20  # the copy ceiling's buffer: 512 MiB, ten times an H100's L2

Timer = Callable[[Callable[[], object]], float]


def bench_us(fn: Callable[[], object], repeat: int = 1) -> float:
    """Median time of ``fn()`` in microseconds: the median of ``repeat`` medians of
    :func:`event_median_ms`."""
    medians_ms = [event_median_ms(fn) for _ in range(repeat)]
    return statistics.median(medians_ms) * 1000.0


_flush_buffer: torch.Tensor | None = None


def flush_buffer() -> torch.Tensor:
    """The :data:`FLUSH_BYTES` buffer whose memset clears the L2 before each repetition (made once)."""
    global _flush_buffer
    if _flush_buffer is None:
        _flush_buffer = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
    return _flush_buffer


def event_median_ms(fn: Callable[[], object], warmup_ms: float = WARMUP_MS, rep_ms: float = REP_MS,
                    flush: Callable[[], object] | None = None) -> float:
    """``triton.testing.do_bench(fn, warmup_ms, rep_ms, return_mode="median")`` with an L2
    flush of :data:`FLUSH_BYTES` (the module's docstring says why): one call, five flushed
    calls to estimate its time, ``warmup_ms`` of calls, then ``rep_ms`` of flushed
    repetitions, each between two CUDA events; their median in milliseconds. ``flush``:
    another way to clear the L2 before each repetition (a probe's; the benchmark's is the memset)."""
    clear = flush if flush is not None else flush_buffer().zero_
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        clear()
        fn()
    end.record()
    torch.cuda.synchronize()
    estimate_ms = start.elapsed_time(end) / 5
    for _ in range(max(1, int(warmup_ms / estimate_ms))):
        fn()
    n_repeat = max(1, int(rep_ms / estimate_ms))
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n_repeat)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n_repeat)]
    for i in range(n_repeat):
        clear()
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends, strict=True))


@contextlib.contextmanager
def tf32_matmul(enabled: bool) -> Iterator[None]:
    """Within this block float32 ``torch.matmul`` uses TF32 tensor cores iff ``enabled``."""
    previous = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = enabled
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = previous


def measure_gemm_tflops(
    dtype: torch.dtype = torch.float16,
    allow_tf32: bool = False,
    size: int = GEMM_SIZE,
    device: str = "cuda",
    timer: Timer = bench_us,
) -> float:
    """TFLOP/s of ``torch.matmul`` on random ``size``^3 operands in ``dtype``."""
    a = torch.randn(size, size, device=device, dtype=dtype)
    b = torch.randn(size, size, device=device, dtype=dtype)
    with tf32_matmul(allow_tf32 and dtype == torch.float32):
        us = timer(lambda: torch.matmul(a, b))
    return 2 * size**3 / (us * 1e-6) / 1e12


def measure_copy_tbps(nbytes: int = COPY_BYTES, device: str = "cuda", timer: Timer = bench_us) -> float:
    """Device copy bandwidth in TB/s, counting the bytes read plus the bytes written."""
    src = torch.randn(nbytes // 2, device=device, dtype=torch.float16)
    dst = torch.empty_like(src)
    us = timer(lambda: dst.copy_(src))
    return 2 * nbytes / (us * 1e-6) / 1e12


@dataclass(frozen=True)
class Ceilings:
    """What the GPU can do at best, measured in this process."""

    gemm_tflops: float  # dense GEMM in ``gemm_dtype``
    copy_tbps: float  # device-to-device copy, read + write
    gemm_dtype: str = "float16"

    def to_dict(self) -> dict:
        return asdict(self)


def measure_ceilings(dtype_name: str = "float16", device: str = "cuda", timer: Timer = bench_us) -> Ceilings:
    """GEMM (in the benchmark dtype ``dtype_name``: float16, bfloat16, float32, tf32) and copy."""
    dtype = {"float16": torch.float16, "bfloat16": torch.bfloat16}.get(dtype_name, torch.float32)
    gemm = measure_gemm_tflops(dtype, allow_tf32=dtype_name == "tf32", device=device, timer=timer)
    copy = measure_copy_tbps(device=device, timer=timer)
    if device == "cuda":
        torch.cuda.empty_cache()  # the 8192^2 and 512 MiB buffers are not needed again
    return Ceilings(gemm_tflops=gemm, copy_tbps=copy, gemm_dtype=dtype_name)


def roofline(flops: int, min_bytes: int, us: float, ceilings: Ceilings) -> tuple[str, float]:
    """('compute' or 'memory', percent of that ceiling reached) for a run of ``us``.

    The attainable rate is min(GEMM rate, intensity * copy bandwidth): above the ridge
    point (GEMM / copy FLOPs per byte) compute bounds the row, below it memory does.
    """
    intensity = flops / max(min_bytes, 1)  # FLOP per byte; times TB/s gives TFLOP/s
    memory_tflops = intensity * ceilings.copy_tbps
    bound = "compute" if memory_tflops >= ceilings.gemm_tflops else "memory"
    attainable_tflops = min(ceilings.gemm_tflops, memory_tflops)
    achieved_tflops = flops / (us * 1e-6) / 1e12
    return bound, 100.0 * achieved_tflops / attainable_tflops


# --------------------------------------------------------------------- the machine
def device_name() -> str:
    """The GPU's name, or 'cpu' without one."""
    return torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"


def slug(name: str) -> str:
    """A file-name form of a device name: 'NVIDIA H100 80GB HBM3' -> 'nvidia-h100-80gb-hbm3'."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "unknown"


def environment_line(env: dict) -> str:
    """The one-line header every GPU run prints: device and versions."""
    return (f"{env['device']} | torch {env['torch']} (CUDA {env['cuda']}, cuDNN {env['cudnn']}) | "
            f"triton {env['triton']} | tileconv {env['tileconv']}")


def refuses_interpreter() -> bool:
    """True (after saying why) when TRITON_INTERPRET=1 is set on a GPU machine: tileconv's
    kernels would run in the interpreter, and its timings would say nothing about the GPU."""
    from .._runtime import INTERPRET

    if INTERPRET:
        print("TRITON_INTERPRET=1 is set: tileconv would run in the interpreter; unset it to measure the GPU.")
    return INTERPRET


def environment() -> dict:
    """Device and versions, as the JSON results and ``info`` report them."""
    import triton

    from .. import __version__

    name = device_name()
    return {
        "device": name,
        "device_slug": slug(name),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "cuda": torch.version.cuda,
        "tileconv": __version__,
        "python": platform.python_version(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
