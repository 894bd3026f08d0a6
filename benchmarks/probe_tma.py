"""Kernel-development probe for one device call: ``tma_rows`` (kernels/implicit_gemm_tma.py)
against the implicit GEMM and cuDNN on the stride-1 dense rows, fp16 and TF32, NHWC.

    python3 benchmarks/probe_tma.py [fp16|tf32|both]
    python3 benchmarks/probe_tma.py r50        # ResNet-50's 1x1 stride-1 rows on gemm_1x1 instead

Each row: cuDNN, the implicit GEMM with the heuristics' config, and a handful of pinned
``tma_rows`` configs; every output checked against a float32 reference. Not the benchmark of
record (that is ``python -m tileconv bench``); a quick map of where the kernel wins.
"""
import os
import sys
from dataclasses import replace

sys.path.insert(0, os.getcwd())
import torch
import torch.nn.functional as F
import triton
from triton.testing import do_bench

import tileconv
from tileconv.bench.suites import get_suite
from tileconv.dispatch.heuristics import default_config
from tileconv.functional import conv2d_problem
from tileconv.kernels import LaunchConfig as C
from tileconv.kernels.launch import tma_rows_unsupported_reason
from tileconv.testing import compare, random_inputs, tolerance

torch.backends.cudnn.benchmark = True
print(torch.cuda.get_device_name(), torch.__version__, triton.__version__, torch.backends.cudnn.version(), flush=True)

WIDE = [C(128, 128, 32, 8, 4, 5), C(128, 128, 64, 8, 4, 4), C(128, 256, 64, 8, 8, 3), C(256, 128, 64, 8, 8, 3),
        C(64, 128, 64, 8, 4, 5), C(64, 256, 64, 8, 8, 4), C(64, 64, 64, 8, 4, 5), C(64, 64, 32, 8, 4, 6)]
TF32 = [C(128, 128, 32, 8, 8, 4), C(128, 128, 32, 8, 4, 4), C(128, 256, 32, 8, 8, 3), C(256, 128, 32, 8, 8, 3),
        C(64, 128, 32, 8, 4, 5), C(128, 64, 32, 8, 4, 5), C(64, 64, 32, 8, 4, 5)]
TMA = {False: WIDE + [replace(c, persistent=1) for c in WIDE],
       True: TF32 + [replace(c, persistent=1) for c in TF32]}
IG = {False: [C(256, 128, 64, 8, 8, 3), C(64, 128, 64, 8, 4, 4), C(128, 128, 32, 8, 4, 4)],
      True: [C(128, 128, 32, 8, 8, 3), C(128, 64, 32, 8, 4, 4), C(256, 128, 32, 8, 8, 3)]}


def timed(fn):
    return do_bench(fn, warmup=25, rep=100, return_mode="median") * 1e3  # us


GEMM_1X1 = {False: [C(128, 128, 64, 8, 4, 4), C(128, 256, 64, 8, 8, 3), C(128, 64, 64, 8, 4, 4),
                    C(64, 128, 64, 8, 4, 4), C(256, 128, 64, 8, 8, 3), C(64, 64, 64, 8, 4, 5)],
            True: [C(128, 128, 32, 8, 4, 4), C(128, 256, 32, 8, 8, 3), C(128, 64, 32, 8, 4, 4),
                   C(64, 128, 32, 8, 4, 4), C(64, 64, 32, 8, 4, 5)]}


def row(case, dtype, tf32, other="tma_rows"):
    torch.backends.cudnn.allow_tf32 = tf32
    p = case.problem(dtype, "nhwc", allow_tf32=tf32)
    if tma_rows_unsupported_reason(p) is not None:
        return
    i = random_inputs(p, "cuda", seed=0)
    ref = F.conv2d(i.x.double(), i.weight.double(), None, p.stride, p.padding, p.dilation, p.groups).float()
    t_cudnn = timed(lambda: F.conv2d(i.x, i.weight, None, p.stride, p.padding, p.dilation, p.groups))
    results = []
    igs = [("implicit_gemm", c) for c in [default_config(p, "implicit_gemm")] + IG[tf32]]
    others = TMA[tf32] if other == "tma_rows" else GEMM_1X1[tf32] + [replace(c, persistent=1) for c in GEMM_1X1[tf32]]
    for algo, cfg in igs + [(other, c) for c in others]:
        if algo == "tma_rows" and cfg.block_m > 2 * p.out_w:
            continue
        try:
            with tileconv.poison_outputs():
                out = conv2d_problem(p, i.x, i.weight, None, None, algo=algo, config=cfg)
            ok = compare(out, ref, tolerance(p)).ok
            t = timed(lambda algo=algo, cfg=cfg: conv2d_problem(p, i.x, i.weight, None, None, algo=algo, config=cfg))
            results.append((t, algo, cfg, ok))
        except Exception as e:  # noqa: BLE001 - a probe reports and goes on
            results.append((float("inf"), algo, cfg, f"{type(e).__name__}: {str(e)[:120]}"))
    ig = min(results[:len(igs)], key=lambda r: r[0])
    tma = results[len(igs):]
    best = min(tma, key=lambda r: r[0]) if tma else ig
    tf = p.flops / (best[0] * 1e-6) / 1e12
    print(f"{case.name:26s} {'tf32' if tf32 else str(dtype)[6:]:8s} cudnn {t_cudnn:8.1f}  ig {ig[0]:8.1f} ({t_cudnn/ig[0]:4.2f}x) {ig[2]}"
          f"  tma {best[0]:8.1f} ({t_cudnn/best[0]:4.2f}x, {tf:5.0f} TF/s) {best[2]} ok={best[3]}", flush=True)
    for r in results:
        if r is not best and r is not ig:
            print(f"{'':36s} {r[1][:4]} {r[0]:8.1f}  {r[2]} ok={r[3]}", flush=True)


mode = sys.argv[1] if len(sys.argv) > 1 else "both"
if mode == "r50":
    for dtype, tf32 in ((torch.float16, False), (torch.float32, True)):
        for case in get_suite("resnet50"):
            if "1x1/1" in case.name:
                row(case, dtype, tf32, "gemm_1x1")
    sys.exit(0)
cases = (get_suite("seed")[1:9] + get_suite("vae")[1:7]
         + [c for c in get_suite("resnet50") if c.name in ("r50 c64 hw56 k64 3x3/1", "r50 c128 hw28 k128 3x3/1")])
for dtype, tf32 in ([(torch.float16, False)] if mode != "tf32" else []) + ([(torch.float32, True)] if mode != "fp16" else []):
    for case in cases:
        row(case, dtype, tf32)
