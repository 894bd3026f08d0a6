"""Kernel-development probe (one device call): implicit_gemm_frame (one staged input frame a
channel block, every tap's A operand a view of it read by wgmma from shared memory) against
cuDNN and tileconv's own choice on the stride-1 3x3 rows whose frame width is a power of two,
several tiles each, CUDA-graph replays with L2 cleared, every output checked against float32
F.conv2d (NaN-filled before the call), plus one bias + ReLU check a row.

    python3 benchmarks/probe_frame.py [--json OUT.json] [--rows NAME ...]
"""
import argparse
import json
import math
import os
import sys
import time

sys.path.insert(0, os.getcwd())
import torch
import torch.nn.functional as F
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

import tileconv
from tileconv._runtime import sm_count
from tileconv.bench.host import _graph_us
from tileconv.bench.suites import get_suite
from tileconv.dispatch import select
from tileconv.kernels.implicit_gemm_frame import conv2d_frame_kernel
from tileconv.testing import compare, random_inputs, tolerance

GL = {torch.float16: gl.float16, torch.bfloat16: gl.bfloat16}


def plan(p, block_m, block_k):
    """The frame's geometry for ``p`` at ``block_m`` rows: (FW, TP, FROWS, PIECES, PIECE_ROWS)."""
    reach_w = (p.s - 1) * p.dilation[1]
    fw = 1 << max(3, math.ceil(math.log2(p.out_w + reach_w)))
    if fw > block_m:
        raise ValueError(f"frame width {fw} > block_m {block_m}")
    tp = block_m // fw
    reach_h = (p.r - 1) * p.dilation[0]
    piece = tp if reach_h == 0 else math.gcd(tp, reach_h) & -math.gcd(tp, reach_h)
    pieces = (tp + reach_h) // piece
    frows = (tp + reach_h) * fw + -(-reach_w // 8) * 8
    return fw, tp, frows, pieces, piece


def make_launcher(p, x, weight, bias, out, block_m, block_n, block_k, fstages, bstages, num_warps):
    fw, tp, frows, pieces, piece = plan(p, block_m, block_k)
    dt = GL[p.dtype]
    swz = block_k * p.itemsize
    x4 = x.permute(0, 2, 3, 1)
    x_desc = TensorDescriptor.from_tensor(x4, [1, piece, fw, block_k], gl.NVMMASharedLayout(swz, 16, rank=4))
    w2d = weight.permute(0, 2, 3, 1).reshape(p.k, p.r * p.s * p.c).contiguous()
    w_desc = TensorDescriptor.from_tensor(w2d, [block_n, block_k],
                                          gl.NVMMASharedLayout.get_default_for([block_n, block_k], dt))
    epi_n = 64
    out4 = out.permute(0, 2, 3, 1)
    out_desc = TensorDescriptor.from_tensor(out4, [1, tp, fw, epi_n], gl.NVMMASharedLayout(epi_n * 2, 16, rank=4))
    tiles_p = -(-p.out_h // tp)
    num_m, num_n = p.n * tiles_p, -(-p.k // block_n)
    grid = (min(num_m * num_n, sm_count(x.device)),)
    act = p.epilogue.activation

    def run():
        conv2d_frame_kernel[grid](
            x_desc, w_desc, out_desc, bias if bias is not None else out, num_m, num_n, tiles_p,
            p.c, p.k, p.padding[0], p.padding[1], act.alpha, act.beta,
            ACTIVATION=act.code, HAS_BIAS=bias is not None, R=p.r, S=p.s, DIL_H=p.dilation[0], DIL_W=p.dilation[1],
            TP=tp, FW=fw, FROWS=frows, PIECES=pieces, PIECE_ROWS=piece, SWIZZLE=swz,
            BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, GROUP_M=8, FSTAGES=fstages, BSTAGES=bstages,
            NUM_WARPS=num_warps, LOADER_REGS=40, num_warps=num_warps, maxnreg=256 if num_warps == 4 else 168)
    return run


TILES = [  # block_m, block_n, block_k, fstages, bstages, num_warps
    (128, 64, 64, 2, 8, 4), (128, 128, 64, 2, 6, 4), (256, 64, 64, 2, 6, 8), (256, 128, 64, 2, 4, 8),
    (128, 128, 32, 3, 8, 4), (256, 128, 32, 3, 8, 8), (64, 128, 64, 3, 8, 4),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--rows", nargs="*")
    ap.add_argument("--dtype", default="float16")
    args = ap.parse_args()
    dtype = getattr(torch, args.dtype)
    torch.backends.cudnn.benchmark = True
    print(torch.cuda.get_device_name(), flush=True)
    records = []
    cases = [c for s in ("resnet50", "seed", "vae") for c in get_suite(s)]
    for case in cases:
        p = case.problem(dtype, "nhwc")
        if p.r != 3 or p.stride != (1, 1) or p.groups != 1 or p.c % 32 or p.k % 8:
            continue
        if args.rows and case.name not in args.rows:
            continue
        i = random_inputs(p, "cuda", seed=0)
        ref = F.conv2d(i.x.float(), i.weight.float(), None, p.stride, p.padding, p.dilation, p.groups)
        t_ref = _graph_us(lambda p=p, i=i: F.conv2d(i.x, i.weight, None, p.stride, p.padding, p.dilation, p.groups))
        algo, config = select(p)
        t_auto = _graph_us(lambda i=i, p=p: tileconv.conv2d(i.x, i.weight, None, p.stride, p.padding, p.dilation))
        print(f"{case.name:28s} {p} cuDNN {t_ref:7.1f} us | auto ({algo.name} {config}) {t_auto:6.1f} us "
              f"{t_ref / t_auto:4.2f}x", flush=True)
        rec = {"case": case.name, "cudnn_us": t_ref, "auto_algo": algo.name, "auto_us": t_auto, "frame": []}
        tol = tolerance(p)
        for tile in TILES:
            block_m, block_n, block_k = tile[:3]
            if p.c % block_k:
                continue
            try:
                plan(p, block_m, block_k)
            except ValueError:
                continue
            out = torch.full_like(ref, float("nan"), dtype=dtype).contiguous(memory_format=torch.channels_last)
            try:
                run = make_launcher(p, i.x, i.weight, None, out, *tile)
                start = time.perf_counter()
                run()
                torch.cuda.synchronize()
                first = time.perf_counter() - start
            except Exception as e:  # a tile that does not compile or fit: say so, go on
                print(f"    frame {tile}: {type(e).__name__}: {str(e)[:300]}", flush=True)
                continue
            ok = compare(out, ref.double(), tol).ok
            t = _graph_us(run)
            print(f"    frame {tile}: {t:6.1f} us {t_ref / t:4.2f}x cuDNN, {t_auto / t:4.2f}x auto, ok {ok}, "
                  f"first {first:4.1f} s", flush=True)
            rec["frame"].append({"tile": tile, "us": t, "ok": ok, "first_call_s": first})
        # The epilogue: bias + ReLU on the first tile that ran.
        if rec["frame"]:
            pe = case.problem(dtype, "nhwc", "bias_relu")
            ie = random_inputs(pe, "cuda", seed=1)
            refe = pe.epilogue.torch_apply(
                F.conv2d(ie.x.float(), ie.weight.float(), None, pe.stride, pe.padding), ie.bias.float(), None)
            out = torch.full_like(refe, float("nan"), dtype=dtype).contiguous(memory_format=torch.channels_last)
            make_launcher(pe, ie.x, ie.weight, ie.bias, out, *rec["frame"][0]["tile"])()
            okb = compare(out, refe.double(), tolerance(pe)).ok
            print(f"    bias+relu ok {okb}", flush=True)
            rec["bias_relu_ok"] = okb
        records.append(rec)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(), "rows": records}, f, indent=1)


if __name__ == "__main__":
    main()
