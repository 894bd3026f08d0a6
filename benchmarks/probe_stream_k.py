"""The warp-specialized wgrad in stream-K form beside its split-K form and cuDNN: ResNet-50's
wgrad rows at batch 32, fp16 channels_last, cold L2 (:func:`tileconv.bench.timing.bench_us`).
For each row: cuDNN's ``convolution_backward`` (weight only), tileconv's ``auto`` (the tuning
cache's choice when TILECONV_CACHE_DIR holds one), and the ws kernel in stream-K form at
several tiles (the launcher's own program count). Each stream-K result is checked against
cuDNN's before it is timed; the table and a JSON file (``--json PATH``) give microseconds.

    python benchmarks/probe_stream_k.py [--json PATH] [--rows SUBSTRING] [--once]

``--once``: one call of each form and no timing (for Nsight Compute).

A kernel-development probe, not a benchmark of record. Needs an sm_90 GPU.
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402

from tileconv.bench.suites import get_suite  # noqa: E402
from tileconv.bench.timing import bench_us  # noqa: E402
from tileconv.dispatch import backward_config, select_backward  # noqa: E402
from tileconv.functional import conv2d_backward_problem  # noqa: E402
from tileconv.kernels import BackwardConfig  # noqa: E402
from tileconv.kernels.wgrad_ws import wgrad_ws_unsupported_reason  # noqa: E402

B = BackwardConfig
STREAM_K = [B(128, 128, 64, 0, 4, 4, ws=1, stream_k=1), B(256, 128, 32, 0, 8, 6, ws=1, stream_k=1),
            B(128, 256, 64, 0, 8, 3, ws=1, stream_k=1), B(64, 128, 64, 0, 4, 4, ws=1, stream_k=1)]


def tile(config: BackwardConfig) -> str:
    return f"{config.block_m}x{config.block_n}x{config.block_k} w{config.num_warps} s{config.num_stages}"


def probe_row(case) -> dict:
    problem = case.problem(torch.float16, "nhwc", "none", batch=32)
    cl = torch.channels_last
    x = torch.randn(problem.input_shape, device="cuda", dtype=torch.float16).contiguous(memory_format=cl)
    weight = torch.randn(problem.weight_shape, device="cuda", dtype=torch.float16) / (problem.c * problem.r * problem.s) ** 0.5
    grad = torch.randn(problem.output_shape, device="cuda", dtype=torch.float16).contiguous(memory_format=cl)

    def cudnn():
        return torch.ops.aten.convolution_backward(grad, x, weight, None, problem.stride, problem.padding,
                                                   problem.dilation, False, (0, 0), problem.groups,
                                                   (False, True, False))[1]

    def ours(config=None, algo="auto"):
        def run():
            return conv2d_backward_problem(problem, grad, x, weight, False, True, algo=algo, wgrad_config=config)[1]
        return run

    want = cudnn().float()
    scale = want.abs().max().item()
    algorithm = select_backward(problem)
    row = {"row": case.name, "tuned": f"{algorithm.name} {backward_config(problem, algorithm, 'wgrad')}", "us": {}}
    forms = [("cuDNN", cudnn), ("auto", ours())]
    if wgrad_ws_unsupported_reason(problem) is None:
        forms += [(f"sk {tile(config)}", ours(config, "implicit_gemm")) for config in STREAM_K]
    if "--once" in sys.argv:  # one call of each form (for ncu), no timing
        for _, fn in forms:
            fn()
        torch.cuda.synchronize()
        return row
    for label, fn in forms:
        got = fn().float()
        err = (got - want).abs().max().item() / scale
        if err > 2e-2:
            row["us"][label] = None
            print(f"  {case.name} {label}: WRONG (max error {err:.3g} of the largest value)", flush=True)
            continue
        row["us"][label] = bench_us(fn)
    times = row["us"]
    best = min((t, label) for label, t in times.items() if t is not None and label.startswith("sk"))  \
        if any(label.startswith("sk") and t is not None for label, t in times.items()) else (None, None)
    row["best_sk"] = best[1]
    print(f"{case.name:28s} cuDNN {times['cuDNN']:7.1f}  auto {times['auto']:7.1f} ({row['tuned']})"
          + (f"  best sk {best[0]:7.1f} {best[1]}  auto/cuDNN {times['cuDNN'] / times['auto']:.2f}  "
             f"sk/cuDNN {times['cuDNN'] / best[0]:.2f}" if best[0] else ""), flush=True)
    print("    " + "  ".join(f"{label} {t:.1f}" if t else f"{label} --" for label, t in times.items()), flush=True)
    return row


def main() -> int:
    torch.backends.cudnn.benchmark = True
    path = sys.argv[sys.argv.index("--json") + 1] if "--json" in sys.argv else None
    only = sys.argv[sys.argv.index("--rows") + 1] if "--rows" in sys.argv else ""
    rows = [probe_row(case) for case in get_suite("resnet50") if only in case.name]
    if path:
        with open(path, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
