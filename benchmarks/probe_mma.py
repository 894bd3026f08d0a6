"""Kernel-development probe (one device call): depthwise_mma (each filter row a banded matrix on
the tensor cores, Gluon) against cuDNN and the heuristics' kernel on the depthwise suite's
stride-1 rows it can run, every channel block that fits, CUDA-graph replays with L2 cleared.
Every output is checked against float32 F.conv2d (NaN-filled before the call), once more with
bias + residual + ReLU fused, and once with an infinite and a NaN input planted (the NaN and
Inf pattern must be F.conv2d's).

    python3 benchmarks/probe_mma.py [--rows 3|7|all] [--widths 8 16 32 64] [--walkers 0 1 2] [--json OUT.json]
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.getcwd())
import torch
import torch.nn.functional as F

import tileconv
import tileconv.kernels.launch as launch
from tileconv.bench.host import _graph_us
from tileconv.bench.suites import get_suite
from tileconv.dispatch import select
from tileconv.epilogue import Activation, Epilogue
from tileconv.kernels import LaunchConfig
from tileconv.testing import compare, random_inputs, tolerance

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from probe_window import measure  # noqa: E402


def same_nonfinite(out: torch.Tensor, ref: torch.Tensor, tol: float) -> bool:
    """NaN and Inf where ``ref`` has them (Inf of the same sign), the finite rest within ``tol``."""
    out, ref = out.double(), ref.double()
    if not torch.equal(out.isnan(), ref.isnan()) or not torch.equal(out.isinf(), ref.isinf()):
        return False
    inf = ref.isinf()
    if not torch.equal(out[inf], ref[inf]):
        return False
    fin = ref.isfinite()
    return compare(torch.where(fin, out, 0.0), torch.where(fin, ref, 0.0), tol).ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="all")
    ap.add_argument("--widths", type=int, nargs="+", default=[8, 16, 32, 64])
    ap.add_argument("--walkers", type=int, nargs="+", default=[0, 1, 2],
                    help="persistent values raced: programs an SM walking the items (0: one item a program)")
    ap.add_argument("--json")
    args = ap.parse_args()
    torch.backends.cudnn.benchmark = True
    print(torch.cuda.get_device_name(), flush=True)
    records = []
    for case in get_suite("depthwise"):
        p = case.problem(torch.float16, "nhwc")
        if args.rows != "all" and str(p.r) != args.rows:
            continue
        reason = launch.depthwise_mma_unsupported_reason(p)
        if reason is not None:
            print(f"{case.name:28s} skipped: {reason}", flush=True)
            continue
        i = random_inputs(p, "cuda", seed=0)
        ref = F.conv2d(i.x.float(), i.weight.float(), None, p.stride, p.padding, p.dilation, p.groups)
        t_ref = _graph_us(lambda p=p, i=i: F.conv2d(i.x, i.weight, None, p.stride, p.padding, p.dilation, p.groups))
        algo, config = select(p)
        t_auto = _graph_us(lambda i=i, p=p: tileconv.conv2d(i.x, i.weight, None, p.stride, p.padding, p.dilation, p.groups))
        print(f"{case.name:28s} cuDNN {t_ref:7.1f} us | auto ({algo.name} {config}) {t_auto:6.1f} us {t_ref / t_auto:4.2f}x",
              flush=True)
        rec = {"case": case.name, "cudnn_us": t_ref, "auto_algo": algo.name, "auto_us": t_auto, "mma": []}
        tol = tolerance(p, p.r * p.s)
        for width, walkers in ((w, k) for w in args.widths for k in args.walkers):
            config = LaunchConfig(block_m=16, block_n=width, num_warps=4, persistent=walkers)
            tiling = launch.depthwise_mma_tiling(p, config)
            if not tiling.passes_fit() or tiling.shared_bytes(p) > launch.DEPTHWISE_MMA_MAX_SHARED_BYTES:
                continue
            m = measure(launch.launch_depthwise_mma, p, i, ref, config, tol)
            # The fused epilogue, and planted non-finite inputs.
            bias = torch.randn(p.k, device="cuda", dtype=p.dtype)
            res = torch.randn_like(ref, dtype=p.dtype).contiguous(memory_format=torch.channels_last)
            pe = p.with_epilogue(Epilogue(Activation.parse("relu"), has_bias=True, has_residual=True))
            out = torch.full_like(res, float("nan"))
            launch.launch_depthwise_mma(pe, i.x, i.weight, bias, res, out, config)
            ref_e = torch.relu(ref + bias.float()[None, :, None, None] + res.float())
            epi_ok = compare(out, ref_e.double(), tol).ok
            x_bad = i.x.clone()
            x_bad[0, 1, p.h // 2, p.w // 3] = float("inf")
            x_bad[-1, -1, p.h - 1, p.w - 1] = float("nan")
            x_bad[0, 5 % p.c, 0, 0] = float("-inf")
            out = torch.full_like(res, float("nan"))
            launch.launch_depthwise_mma(p, x_bad, i.weight, None, None, out, config)
            ref_bad = F.conv2d(x_bad.float(), i.weight.float(), None, p.stride, p.padding, p.dilation, p.groups)
            nonfinite_ok = same_nonfinite(out, ref_bad, tol)
            t = m["us"]
            print(f"    mma {config}: {t:6.1f} us {t_ref / t:4.2f}x (auto {t_auto / t:4.2f}x) regs {m['regs']} "
                  f"spills {m['spills']} shared {tiling.shared_bytes(p)} first call {m['first_call_s']:4.1f} s "
                  f"ok {m['ok']} epilogue {epi_ok} nonfinite {nonfinite_ok}", flush=True)
            rec["mma"].append({"config": config.to_dict(), **m, "epilogue_ok": epi_ok, "nonfinite_ok": nonfinite_ok})
        records.append(rec)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(), "rows": records}, f, indent=1)


if __name__ == "__main__":
    main()
