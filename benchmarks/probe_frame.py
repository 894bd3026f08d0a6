"""Kernel-development probe (one device call): implicit_gemm_frame (one staged input frame a
channel block, every tap's A operand a view of it read by wgmma from shared memory) against
cuDNN and tileconv's own choice on the suites' 3x3 rows that it can take (stride 2 through the
stride's phase frames since session 50), several tiles each, CUDA-graph replays with L2 cleared,
every output checked against float32 F.conv2d (NaN-filled before the call), plus one bias + ReLU
check a row.

    python3 benchmarks/probe_frame.py [--json OUT.json] [--rows NAME ...] [--stride 1|2]
                                      [--dtype float16|bfloat16]
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.getcwd())
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
import torch.nn.functional as F
from probe_window import measure

import tileconv
import tileconv.kernels.launch as launch
from tileconv.bench.host import _graph_us
from tileconv.bench.suites import get_suite
from tileconv.dispatch import select
from tileconv.kernels import LaunchConfig
from tileconv.testing import compare, random_inputs, tolerance

# (block_m, block_n, block_k, num_warps, weight stages): session 45's tiles
TILES = [(128, 64, 64, 4, 8), (128, 128, 64, 4, 6), (256, 64, 64, 8, 6), (256, 128, 64, 8, 4),
         (128, 128, 32, 4, 8), (256, 128, 32, 8, 8), (64, 128, 64, 4, 8)]
# ... and (session 50) tiles with room for a stride's four phase frames
STRIDED_TILES = [(128, 128, 32, 4, 6), (128, 128, 32, 4, 4), (64, 128, 64, 4, 6), (64, 128, 64, 4, 4),
                 (128, 128, 64, 4, 2), (128, 64, 64, 4, 4), (64, 64, 64, 4, 8), (128, 64, 32, 4, 8)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--rows", nargs="*")
    ap.add_argument("--dtype", default="float16")
    ap.add_argument("--stride", type=int, help="only rows of this stride")
    args = ap.parse_args()
    dtype = getattr(torch, args.dtype)
    torch.backends.cudnn.benchmark = True
    print(torch.cuda.get_device_name(), flush=True)
    records = []
    for case in (c for s in ("resnet50", "seed", "vae") for c in get_suite(s)):
        p = case.problem(dtype, "nhwc")
        if p.r != 3 or launch.implicit_gemm_frame_unsupported_reason(p) is not None:
            continue
        if (args.rows and case.name not in args.rows) or (args.stride and p.stride[0] != args.stride):
            continue
        i = random_inputs(p, "cuda", seed=0)
        ref = F.conv2d(i.x.float(), i.weight.float(), None, p.stride, p.padding, p.dilation, p.groups)
        t_ref = _graph_us(lambda p=p, i=i: F.conv2d(i.x, i.weight, None, p.stride, p.padding, p.dilation, p.groups))
        algo, config = select(p)
        t_auto = _graph_us(lambda i=i, p=p: tileconv.conv2d(i.x, i.weight, None, p.stride, p.padding, p.dilation))
        print(f"{case.name:28s} cuDNN {t_ref:7.1f} us | auto ({algo.name} {config}) {t_auto:6.1f} us "
              f"{t_ref / t_auto:4.2f}x", flush=True)
        rec = {"case": case.name, "cudnn_us": t_ref, "auto_algo": algo.name, "auto_us": t_auto, "frame": []}
        for block_m, block_n, block_k, warps, stages in TILES + STRIDED_TILES:
            config = LaunchConfig(block_m, block_n, block_k, 8, warps, stages)
            try:
                launch.frame_tiling(p, config)
            except ValueError as error:  # not this problem's tile: say why, go on
                print(f"    frame {config}: {error}", flush=True)
                continue
            m = measure(launch.launch_implicit_gemm_frame, p, i, ref, config, tolerance(p))
            print(f"    frame {config}: {m['us']:6.1f} us {t_ref / m['us']:4.2f}x cuDNN, {t_auto / m['us']:4.2f}x auto, "
                  f"ok {m['ok']}, first {m['first_call_s']:4.1f} s", flush=True)
            rec["frame"].append({"config": config.to_dict(), **m})
        if rec["frame"]:  # the epilogue: bias + ReLU on the first tile that ran
            pe = case.problem(dtype, "nhwc", "bias_relu")
            ie = random_inputs(pe, "cuda", seed=1)
            refe = pe.epilogue.torch_apply(
                F.conv2d(ie.x.float(), ie.weight.float(), None, pe.stride, pe.padding), ie.bias.float(), None)
            out = torch.full_like(refe, float("nan"), dtype=dtype).contiguous(memory_format=torch.channels_last)
            launch.launch_implicit_gemm_frame(pe, ie.x, ie.weight, ie.bias, None, out,
                                              LaunchConfig.from_dict(rec["frame"][0]["config"]))
            rec["bias_relu_ok"] = compare(out, refe.double(), tolerance(pe)).ok
            print(f"    bias+relu ok {rec['bias_relu_ok']}", flush=True)
        records.append(rec)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(), "rows": records}, f, indent=1)


if __name__ == "__main__":
    main()
