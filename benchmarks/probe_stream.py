"""Kernel-development probe (one device call): depthwise_stream (input rows streamed by TMA into
a ring of row slots) against cuDNN and today's dispatch on the depthwise suite's
small-filter rows, several items and rings each, CUDA-graph replays with L2 cleared, every output
written over NaN and checked against the float64 reference; then bias + residual + ReLU on each
row's first tile, and planted NaN / Inf inputs.

    python3 benchmarks/probe_stream.py [--rows NAME ...] [--dtype float16] [--json OUT.json]
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

# (band rows, channel block, warps, slots, programs an SM, output rows a step); the channel block 0
# means the largest of 64 and 32 channels that the row's C wastes at most 1/8 of.
ITEMS = ((8, 0, 4, 10, 4, 2), (16, 0, 4, 12, 4, 4), (8, 0, 4, 10, 6, 2), (16, 0, 8, 12, 2, 2), (16, 0, 8, 16, 2, 4),
         (32, 0, 4, 12, 3, 3), (8, 0, 4, 12, 2, 4))


def channel_block(p, wanted: int) -> int:
    if wanted:
        return wanted
    for cb in (128 // p.itemsize, 64 // p.itemsize, 32 // p.itemsize):
        if -(-p.c // cb) * cb <= 1.125 * p.c:
            return cb
    return 16 // p.itemsize


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
    for case in get_suite("depthwise"):
        p = case.problem(dtype, "nhwc")
        if launch.depthwise_stream_unsupported_reason(p) is not None or (args.rows and case.name not in args.rows):
            continue
        i = random_inputs(p, "cuda", seed=0)
        ref = F.conv2d(i.x.double(), i.weight.double(), None, p.stride, p.padding, p.dilation, p.groups)
        t_ref = _graph_us(lambda p=p, i=i: F.conv2d(i.x, i.weight, None, p.stride, p.padding, p.dilation, p.groups))
        algo, config = select(p)
        t_auto = _graph_us(lambda i=i, p=p: tileconv.conv2d(i.x, i.weight, None, p.stride, p.padding, p.dilation,
                                                            p.groups))
        floor_us = (i.x.numel() + ref.numel()) * p.itemsize / 4.17e6  # bytes over 4.17 TB/s
        print(f"{case.name:28s} cuDNN {t_ref:7.1f} us | auto ({algo.name} {config}) {t_auto:6.1f} us "
              f"{t_ref / t_auto:4.2f}x | roofline {floor_us:5.1f} us", flush=True)
        rec = {"case": case.name, "cudnn_us": t_ref, "auto_algo": algo.name, "auto_us": t_auto,
               "roofline_us": floor_us, "stream": []}
        for band, cb, warps, slots, programs, step in ITEMS:
            config = LaunchConfig(block_m=band, block_n=channel_block(p, cb), block_k=step, num_warps=warps,
                                  num_stages=slots, persistent=programs)
            try:
                launch.stream_tiling(p, config)
            except ValueError as error:  # not this problem's tile: say why, go on
                print(f"    stream {config}: {error}", flush=True)
                continue
            m = measure(launch.launch_depthwise_stream, p, i, ref, config, tolerance(p))
            print(f"    stream band {band} cb {config.block_n} w{warps} slots {slots} x{programs} tj {step}: {m['us']:6.1f} us "
                  f"{t_ref / m['us']:4.2f}x cuDNN, {t_auto / m['us']:4.2f}x auto, {100 * floor_us / m['us']:3.0f}% "
                  f"roofline, ok {m['ok']}, regs {m['regs']} spills {m['spills']}, first {m['first_call_s']:4.1f} s",
                  flush=True)
            rec["stream"].append({"config": config.to_dict(), **m})
        if rec["stream"]:
            config = LaunchConfig.from_dict(rec["stream"][0]["config"])
            pe = case.problem(dtype, "nhwc", "bias_add_relu")
            ie = random_inputs(pe, "cuda", seed=1)
            refe = pe.epilogue.torch_apply(F.conv2d(ie.x.double(), ie.weight.double(), None, pe.stride, pe.padding,
                                                    pe.dilation, pe.groups), ie.bias.double(), ie.residual.double())
            out = torch.full_like(refe, float("nan"), dtype=dtype).contiguous(memory_format=torch.channels_last)
            launch.launch_depthwise_stream(pe, ie.x, ie.weight, ie.bias, ie.residual, out, config)
            rec["bias_add_relu_ok"] = compare(out, refe, tolerance(pe)).ok
            x = i.x.clone()
            flat = x.permute(0, 2, 3, 1).view(-1)  # channels_last: a view
            for k, v in enumerate((float("nan"), float("inf"), float("-inf"))):
                flat[(k + 1) * 7919 * 13 % flat.numel()] = v
            refn = F.conv2d(x.double(), i.weight.double(), None, p.stride, p.padding, p.dilation, p.groups)
            out = torch.full_like(refn, 0.0, dtype=dtype).contiguous(memory_format=torch.channels_last)
            launch.launch_depthwise_stream(p, x, i.weight, None, None, out, config)
            same_nan = torch.equal(out.isnan(), refn.isnan())
            same_inf = torch.equal(out.isinf() & (out > 0), refn.isinf() & (refn > 0))
            rec["nonfinite_ok"] = bool(same_nan and same_inf)
            print(f"    bias+residual+relu ok {rec['bias_add_relu_ok']}, NaN/Inf placed as the reference's "
                  f"{rec['nonfinite_ok']}", flush=True)
        records.append(rec)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(), "rows": records}, f, indent=1)


if __name__ == "__main__":
    main()
