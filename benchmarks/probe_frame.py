"""Kernel-development probe (one device call): implicit_gemm_frame (one staged input frame a
channel block, every tap's A operand a view of it read by wgmma from shared memory) against
cuDNN and tileconv's own choice on the suites' 3x3 rows that it can take (stride 2 through the
stride's phase frames since session 50), several tiles each, CUDA-graph replays with L2 cleared,
every output checked against float32 F.conv2d (NaN-filled before the call), plus one bias + ReLU
check a row.

    python3 benchmarks/probe_frame.py [--json OUT.json] [--rows NAME ...] [--stride 1|2]
                                      [--dtype float16|bfloat16] [--grouped]

``--grouped``: grouped_frame (the kernel one merged group a tile, grouped_gemm_ws's merge) on the
grouped suite's rows, each of its candidates beside the row's cuDNN and tileconv times, every
output checked. With ``--stand-ins`` (session 55's question before grouped_frame existed: would
the kernel pay there?) each row's dense stand-in instead: the dense convolution whose tiles do
the same work (C = K = the merged group's channels, the batch times the merged groups), its frame
tiles and implicit_gemm_ws's 128x64 tile (grouped_gemm_ws's, one loader warpgroup).
"""
import argparse
import json
import os
import sys
from dataclasses import replace

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
from tileconv.dispatch.candidates import grouped_frame_candidates
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
    ap.add_argument("--grouped", action="store_true", help="grouped_frame on the grouped suite's rows")
    ap.add_argument("--stand-ins", action="store_true", help="--grouped: dense stand-ins instead of grouped_frame")
    args = ap.parse_args()
    dtype = getattr(torch, args.dtype)
    torch.backends.cudnn.benchmark = True
    print(torch.cuda.get_device_name(), flush=True)
    records = grouped(args, dtype) if args.grouped else dense_rows(args, dtype)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(), "rows": records}, f, indent=1)


def _row_head(case, p, i, extra: str = "") -> dict:
    """A row's record: cuDNN's and tileconv.conv2d's times (CUDA-graph replays), printed."""
    t_ref = _graph_us(lambda: F.conv2d(i.x, i.weight, None, p.stride, p.padding, p.dilation, p.groups))
    algo, config = select(p)
    t_auto = _graph_us(lambda: tileconv.conv2d(i.x, i.weight, None, p.stride, p.padding, p.dilation, p.groups))
    print(f"{case.name:28s} cuDNN {t_ref:7.1f} us | auto ({algo.name} {config}) {t_auto:6.1f} us "
          f"{t_ref / t_auto:4.2f}x{extra}", flush=True)
    return {"case": case.name, "cudnn_us": t_ref, "auto_algo": algo.name, "auto_us": t_auto}


def _time_tiles(label, launcher, p, i, ref, configs, rec, fits=None) -> list[dict]:
    """Each config of ``configs`` (those ``fits`` takes: a ValueError says why not) through
    ``launcher``, measured and checked (probe_window.measure), printed beside the row's cuDNN and
    tileconv times in ``rec``; their records."""
    out = []
    for config in configs:
        try:
            if fits is not None:
                fits(p, config)
        except ValueError as error:  # not this problem's tile: say why, go on
            print(f"    {label} {config}: {error}", flush=True)
            continue
        m = measure(launcher, p, i, ref, config, tolerance(p))
        print(f"    {label} {config}: {m['us']:6.1f} us {rec['cudnn_us'] / m['us']:4.2f}x cuDNN, "
              f"{rec['auto_us'] / m['us']:4.2f}x auto, ok {m['ok']}, first {m['first_call_s']:4.1f} s", flush=True)
        out.append({"config": config.to_dict(), **m})
    return out


def dense_rows(args, dtype) -> list[dict]:
    """The suites' 3x3 rows the kernel takes: its tiles, then bias + ReLU on the first that ran."""
    records = []
    for case in (c for s in ("resnet50", "seed", "vae") for c in get_suite(s)):
        p = case.problem(dtype, "nhwc")
        if p.r != 3 or launch.implicit_gemm_frame_unsupported_reason(p) is not None:
            continue
        if (args.rows and case.name not in args.rows) or (args.stride and p.stride[0] != args.stride):
            continue
        i = random_inputs(p, "cuda", seed=0)
        ref = F.conv2d(i.x.float(), i.weight.float(), None, p.stride, p.padding, p.dilation, p.groups)
        rec = _row_head(case, p, i)
        configs = [LaunchConfig(m, n, k, 8, warps, stages) for m, n, k, warps, stages in TILES + STRIDED_TILES]
        rec["frame"] = _time_tiles("frame", launch.launch_implicit_gemm_frame, p, i, ref, configs, rec,
                                   launch.frame_tiling)
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
    return records


def grouped(args, dtype) -> list[dict]:
    """``--grouped``: see the module's docstring."""
    records = []
    for case in get_suite("grouped"):
        p = case.problem(dtype, "nhwc")
        i = random_inputs(p, "cuda", seed=0)
        if not args.stand_ins:
            ref = F.conv2d(i.x.float(), i.weight.float(), None, p.stride, p.padding, p.dilation, p.groups)
            rec = _row_head(case, p, i)
            rec["grouped_frame"] = _time_tiles("grouped_frame", launch.launch_grouped_frame, p, i, ref,
                                               grouped_frame_candidates(p), rec)
            records.append(rec)
            continue
        merged = launch.grouped_ws_merged(p)
        dense = replace(p, n=p.n * merged.groups, c=merged.c_per_group, k=merged.k_per_group, groups=1)
        rec = _row_head(case, p, i, f" | stand-in n={dense.n} c={dense.c} k={dense.k}")
        rec["stand_in"] = {"n": dense.n, "c": dense.c, "k": dense.k}
        di = random_inputs(dense, "cuda", seed=0)
        ref = F.conv2d(di.x.float(), di.weight.float(), None, dense.stride, dense.padding)
        rec["ws"] = _time_tiles("ws", launch.launch_implicit_gemm_ws, dense, di, ref,
                                [LaunchConfig(128, dense.k, 64, 8, 4, 8)], rec)
        configs = [LaunchConfig(m, n, k, 8, warps, stages)
                   for m, n, k, warps, stages in dict.fromkeys(TILES + STRIDED_TILES) if n == dense.k]
        rec["frame"] = _time_tiles("frame", launch.launch_implicit_gemm_frame, dense, di, ref, configs, rec,
                                   launch.frame_tiling)
        records.append(rec)
    return records


if __name__ == "__main__":
    main()
