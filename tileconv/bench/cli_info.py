"""``python -m tileconv info``: the GPU, the versions, the tuning cache, the algorithms this
machine runs, the measured ceilings.

The ceilings are the two numbers ``bench`` divides by in its "% ceiling" column: fp16
GEMM TFLOP/s (``torch.matmul``, 8192^3, random operands) and device copy bandwidth
(TB/s, read + write), each a CUDA-event median (:func:`~tileconv.bench.timing.bench_us`). On a machine without a GPU it prints what
it can and says so.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

HELP = "show the GPU, versions, tuning cache, the algorithms this machine runs, and the measured ceilings"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", metavar="PATH", help="also write what is printed as JSON")


def tuning_cache_info() -> dict:
    """{'path', 'entries', 'bytes'} of the tuning cache, or {'error': why not}."""
    try:
        from ..dispatch.cache import cache_file, cache_summary
    except ImportError:
        return {"error": "not available"}
    try:
        summary = dict(cache_summary())
        summary["path"] = str(summary.get("path") or cache_file())
        return summary
    except Exception as error:  # another module's bug must not hide the rest of info
        return {"error": f"unreadable ({type(error).__name__}: {error})"}


# Reasons that say a kernel needs another machine (not another problem).
_MACHINE_WORDS = ("interpreter", "GPU", "sm_", "compute capability", "Hopper", "cp.async", "TMA")


def algorithms_info() -> dict[str, list[dict]]:
    """Each forward and backward algorithm: its name, summary, and ``needs``: None where this
    machine runs it, else why it cannot (a Gluon kernel under the interpreter, a Hopper-only
    kernel on another GPU). Asked of a few small fp16 channels_last problems (dense 3x3 and
    1x1, depthwise 3x3 and 31x31): an algorithm that refuses all of them for a reason about
    the machine needs that machine; one that refuses them for their shapes runs here on others."""
    import torch

    from ..kernels import ALGORITHMS, BACKWARD_ALGORITHMS
    from ..problem import ConvProblem

    probes = [ConvProblem(2, 64, 16, 16, 64, 3, 3, padding=(1, 1), dtype=torch.float16, layout="nhwc"),
              ConvProblem(2, 64, 16, 16, 64, 1, 1, dtype=torch.float16, layout="nhwc"),
              ConvProblem(2, 64, 16, 16, 64, 3, 3, padding=(1, 1), groups=64, dtype=torch.float16, layout="nhwc"),
              ConvProblem(2, 64, 32, 32, 64, 31, 31, padding=(15, 15), groups=64, dtype=torch.float16, layout="nhwc")]

    def reason(unsupported_reason, problem) -> str:
        try:
            return unsupported_reason(problem)
        except Exception as error:  # an algorithm's bug must not hide the rest of info
            return f"its unsupported_reason failed ({type(error).__name__}: {error})"

    def needs(unsupported_reason) -> str | None:
        reasons = [reason(unsupported_reason, problem) for problem in probes]
        if any(reason is None for reason in reasons):
            return None
        machine = [reason for reason in reasons if any(word in reason for word in _MACHINE_WORDS)]
        return machine[0] if machine else None

    def listing(registry) -> list[dict]:
        return [{"name": name, "summary": algorithm.summary, "needs": needs(algorithm.unsupported_reason)}
                for name, algorithm in registry.items()]

    return {"forward": listing(ALGORITHMS), "backward": listing(BACKWARD_ALGORITHMS)}


def gpu_info() -> dict | None:
    import torch

    if not torch.cuda.is_available():
        return None
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    return {
        "name": props.name,
        "compute_capability": f"{props.major}.{props.minor}",
        "sms": props.multi_processor_count,
        "memory_gib": round(props.total_memory / 2**30, 1),
        "count": torch.cuda.device_count(),
    }


def run(args: argparse.Namespace) -> int:
    from .._runtime import INTERPRET
    from .timing import environment

    env = environment()
    gpu = gpu_info()
    cache = tuning_cache_info()
    print(f"tileconv  {env['tileconv']}")
    print(f"python    {env['python']}")
    print(f"torch     {env['torch']}  (CUDA {env['cuda']}, cuDNN {env['cudnn']})")
    print(f"triton    {env['triton']}" + ("  (TRITON_INTERPRET=1: kernels run in the interpreter)" if INTERPRET else ""))
    if "error" in cache:
        print(f"tuning cache: {cache['error']}")
    else:
        corrupt = ", corrupt: rebuilt on the next write" if cache.get("corrupt") else ""
        print(f"tuning cache: {cache.get('path')} ({cache.get('entries')} entries, {cache.get('bytes')} bytes{corrupt})")
    ceilings = None
    if gpu is None:
        print("GPU       none: no CUDA device visible, so no ceilings measured")
    else:
        print(f"GPU       {gpu['name']} (sm_{gpu['compute_capability'].replace('.', '')}, {gpu['sms']} SMs, "
              f"{gpu['memory_gib']} GiB; {gpu['count']} visible)")
        if INTERPRET:
            print("ceilings  not measured: unset TRITON_INTERPRET to measure them")
        else:
            from .timing import COPY_BYTES, GEMM_SIZE, measure_ceilings

            ceilings = measure_ceilings("float16")
            print(f"ceilings  fp16 GEMM ({GEMM_SIZE}^3, torch.matmul): {ceilings.gemm_tflops:.1f} TFLOP/s")
            print(f"          device copy ({COPY_BYTES // 2**20} MiB, read+write): {ceilings.copy_tbps:.2f} TB/s")
    algorithms = algorithms_info()
    if gpu is None and not INTERPRET:
        print("algorithms          none run here: no GPU and TRITON_INTERPRET unset, so tileconv.conv2d falls back "
              "to F.conv2d and the epilogue in PyTorch (set TRITON_INTERPRET=1 to run the kernels in the interpreter)")
    for direction, listed in algorithms.items():
        if gpu is None and not INTERPRET:
            break
        here = [a["name"] for a in listed if a["needs"] is None]
        print(f"{direction + ' algorithms':20s}{', '.join(here)}")
        for a in listed:
            if a["needs"] is not None:
                print(f"{'':20s}{a['name']}: not on this machine ({a['needs']})")
    if args.json:
        data = dict(env, gpu=gpu, tuning_cache=cache, ceilings=None if ceilings is None else ceilings.to_dict(),
                    algorithms=algorithms)
        Path(args.json).write_text(json.dumps(data, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0
