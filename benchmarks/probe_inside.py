"""Kernel-development probe (one device call): depthwise_window's strips with and without the
loads' masks left out (launch.window_inside: window columns inside the input in every tile load
without a column mask; CLAMP: rows load clamped without a row mask where every strip's steady
rows are inside), on the depthwise suite's 7x7 (--filter) strip rows, against cuDNN and the
dispatch in the same run.
Variants: 'masked' (every load masked by row and column, INSIDE = (0, 0, False): the kernel
before the change), 'cols', 'clamp' (the steady steps' loads without a row mask), 'both' (the
launcher's INSIDE). CUDA-graph replays with L2
cleared, every output checked against float32 F.conv2d.

    python3 benchmarks/probe_inside.py [--filter 7] [--strips 7 14 28] [--widths 7] [--steps 1]
                                       [--variants masked cols both] [--json OUT.json]
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
from tileconv.dispatch.heuristics import depthwise_window_config
from tileconv.testing import random_inputs, tolerance

REAL = launch.window_inside
VARIANTS = {
    "masked": lambda p, strip, tile_w: (0, 0, False),
    "cols": lambda p, strip, tile_w: (*REAL(p, strip, tile_w)[:2], False),
    "clamp": lambda p, strip, tile_w: (0, 0, REAL(p, strip, tile_w)[2]),
    "both": REAL,
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--strips", type=int, nargs="+", default=[7, 14, 28], help="strip heights raced")
    ap.add_argument("--variants", nargs="+", default=["masked", "cols", "both"], choices=list(VARIANTS))
    ap.add_argument("--suite", default="depthwise")
    ap.add_argument("--filter", type=int, default=7, help="the suite's rows of this filter size (R = S)")
    ap.add_argument("--widths", type=int, nargs="+", default=[7], help="tile widths raced")
    ap.add_argument("--steps", type=int, nargs="+", default=[1], help="input rows a loop step raced")
    args = ap.parse_args()
    torch.backends.cudnn.benchmark = True
    print(torch.cuda.get_device_name(), flush=True)
    rows = []
    for case in get_suite(args.suite):
        p = case.problem(torch.float16, "nhwc")
        if (p.r != args.filter or launch.depthwise_window_unsupported_reason(p) is not None
                or (launch.image_fits(p) and p.c_per_group == 1)):
            continue
        i = random_inputs(p, "cuda", seed=0)
        ref = F.conv2d(i.x.float(), i.weight.float(), None, p.stride, p.padding, p.dilation, p.groups)
        t_ref = _graph_us(lambda p=p, i=i: F.conv2d(i.x, i.weight, None, p.stride, p.padding, p.dilation, p.groups))
        algo, auto = select(p)
        t_auto = _graph_us(lambda p=p, i=i: tileconv.conv2d(i.x, i.weight, None, p.stride, p.padding, p.dilation,
                                                            p.groups))
        print(f"{case.name:28s} cuDNN {t_ref:7.1f} us | dispatch ({algo.name} {auto}) {t_auto:6.1f} us "
              f"{t_ref / t_auto:4.2f}x", flush=True)
        row = {"case": case.name, "cudnn_us": t_ref, "dispatch": algo.name, "dispatch_us": t_auto, "runs": []}
        tiles = [(strip, width, step) for strip in args.strips for width in args.widths for step in args.steps
                 if max(strip, p.r - 1) <= p.out_h and width <= p.out_w]
        for strip, width, step in tiles:
            config = depthwise_window_config(p, max(strip, p.r - 1), width, None, step)
            line = f"    {str(config):22s}"
            for name in args.variants:
                launch.window_inside = VARIANTS[name]
                m = measure(launch.launch_depthwise_window, p, i, ref, config, tolerance(p, p.r * p.s))
                launch.window_inside = REAL
                line += f" | {name} {m['us']:6.1f} {t_ref / m['us']:4.2f}x r{m['regs']}{'' if m['ok'] else ' WRONG'}"
                row["runs"].append({"config": config.to_dict(), "variant": name, **m})
            print(line, flush=True)
        rows.append(row)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
