"""implicit_gemm_ws with two programs an SM (``ctas_per_sm=2``: small tiles, half the registers
each), against the tuned choice and cuDNN, on ResNet-50's rows: cuDNN's Hopper kernels for the
rows tileconv loses run one warpgroup a CTA on 64x64 and 64x128 tiles (benchmarks/cudnn_kernels.py).

    python benchmarks/probe_ctas.py [--dtype tf32|float16] [--case TEXT]

Times by triton.testing.do_bench (L2 cleared before each call), medians; the tuned choice is
whatever the tuning cache in TILECONV_CACHE_DIR holds (the heuristics otherwise). Needs a GPU.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402
from triton.testing import do_bench  # noqa: E402

from tileconv.bench.suites import select_cases  # noqa: E402
from tileconv.functional import conv2d_problem  # noqa: E402
from tileconv.kernels import LaunchConfig  # noqa: E402

VARIANTS = [  # block_m, block_n, block_k (0: 128 bytes of channels), num_stages, ctas_per_sm
    (64, 128, 0, 3, 2), (64, 128, 0, 4, 2), (64, 64, 0, 4, 2), (64, 64, 0, 6, 2), (64, 128, 0, 3, 1),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", default="tf32", choices=("tf32", "float16"))
    parser.add_argument("--case", default=None)
    args = parser.parse_args()
    tf32 = args.dtype == "tf32"
    dtype = torch.float32 if tf32 else torch.float16
    torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.benchmark = True
    print(f"{torch.cuda.get_device_name()} {args.dtype} nhwc: us (do_bench median)")
    for case in select_cases("resnet50", args.case):
        p = case.problem(dtype, "nhwc", allow_tf32=tf32)
        x = torch.randn(p.input_shape, device="cuda", dtype=dtype).contiguous(memory_format=torch.channels_last)
        w = torch.randn(p.weight_shape, device="cuda", dtype=dtype).contiguous(memory_format=torch.channels_last)
        ref = torch.nn.functional.conv2d(x.double(), w.double(), None, p.stride, p.padding)
        row = {"cudnn": do_bench(lambda: torch.nn.functional.conv2d(x, w, None, p.stride, p.padding))}
        row["tuned"] = do_bench(lambda: conv2d_problem(p, x, w, None, None))
        for block_m, block_n, block_k, stages, ctas in VARIANTS:
            config = LaunchConfig(block_m=block_m, block_n=min(block_n, p.k), block_k=block_k or 128 // p.itemsize,
                                  num_warps=4, num_stages=stages, ctas_per_sm=ctas)
            try:
                out = conv2d_problem(p, x, w, None, None, algo="implicit_gemm_ws", config=config)
                err = ((out.double() - ref).abs().max() / ref.abs().max()).item()
                if err > 1e-2:
                    raise RuntimeError(f"rel err {err:.1e}")
                row[str(config)] = do_bench(lambda c=config: conv2d_problem(p, x, w, None, None, algo="implicit_gemm_ws",
                                                                            config=c))
            except Exception as exc:  # noqa: BLE001 - a config that cannot run: say why, go on
                row[str(config)] = f"failed: {str(exc).splitlines()[0][:80]}"
        print(case.name)
        for name, value in row.items():
            print(f"    {name:40s} {value:8.1f}" if isinstance(value, float) else f"    {name:40s} {value}")


if __name__ == "__main__":
    main()
