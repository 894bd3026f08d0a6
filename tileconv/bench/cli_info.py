"""``python -m tileconv info``: the GPU, the versions, the tuning cache, the measured ceilings.

The ceilings are the two numbers ``bench`` divides by in its "% ceiling" column: fp16
GEMM TFLOP/s (``torch.matmul``, 8192^3, random operands) and device copy bandwidth
(TB/s, read + write), each a do_bench median. On a machine without a GPU it prints what
it can and says so.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

HELP = "show the GPU, versions, tuning cache and the measured GEMM and copy ceilings"


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
    if args.json:
        data = dict(env, gpu=gpu, tuning_cache=cache, ceilings=None if ceilings is None else ceilings.to_dict())
        Path(args.json).write_text(json.dumps(data, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0
