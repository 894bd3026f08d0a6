"""Kernel-development probe (one device call): depthwise_stream (row streams as the M of a
tensor-core Toeplitz product, channels as its batch) against the heuristics' depthwise kernel
and cuDNN on the depthwise suite's stride-1 rows, several tiles each, CUDA-graph replays with L2
cleared, every output checked against float32 F.conv2d. Prints each kernel's registers and
spills and its first call's seconds (the compile).

    python3 benchmarks/probe_stream.py [--rows 3|7|all] [--json OUT.json]
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.getcwd())
import torch
import torch.nn.functional as F

import tileconv
import tileconv.kernels.launch as launch
from tileconv.bench.host import _graph_us
from tileconv.bench.suites import get_suite
from tileconv.dispatch import select
from tileconv.kernels import LaunchConfig
from tileconv.testing import compare, random_inputs, tolerance

# (band rows, streams, output columns, channels, warps)
TILES = [(7, 16, 16, 4, 4), (14, 16, 16, 4, 4), (28, 16, 16, 4, 4), (56, 16, 16, 4, 4), (14, 16, 16, 8, 8),
         (7, 16, 16, 8, 8), (28, 16, 16, 8, 8), (14, 32, 16, 8, 8), (14, 16, 16, 2, 2)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="all")
    ap.add_argument("--json")
    args = ap.parse_args()
    torch.backends.cudnn.benchmark = True
    print(torch.cuda.get_device_name(), flush=True)
    records = []
    for case in get_suite("depthwise"):
        p = case.problem(torch.float16, "nhwc")
        if p.r > 7 or p.stride[0] != 1 or (args.rows != "all" and str(p.r) != args.rows):
            continue
        i = random_inputs(p, "cuda", seed=0)
        ref = F.conv2d(i.x.float(), i.weight.float(), None, p.stride, p.padding, p.dilation, p.groups)
        t_ref = _graph_us(lambda p=p, i=i: F.conv2d(i.x, i.weight, None, p.stride, p.padding, p.dilation, p.groups))
        algo, config = select(p)
        t_auto = _graph_us(lambda i=i, p=p: tileconv.conv2d(i.x, i.weight, None, p.stride, p.padding, p.dilation, p.groups))
        print(f"{case.name:28s} cuDNN {t_ref:7.1f} us | auto ({algo.name} {config}) {t_auto:6.1f} us {t_ref / t_auto:4.2f}x",
              flush=True)
        rec = {"case": case.name, "cudnn_us": t_ref, "auto_algo": algo.name, "auto_us": t_auto, "stream": []}
        seen = set()
        for band, streams, tile_q, block_c, warps in TILES:
            config = LaunchConfig(min(band, p.out_h), block_c, tile_q, streams, warps, 1)
            if config in seen:
                continue
            seen.add(config)
            out = torch.full_like(ref, float("nan"), dtype=p.dtype).contiguous(memory_format=torch.channels_last)

            def run(out=out, p=p, i=i, config=config):
                return launch.launch_depthwise_stream(p, i.x, i.weight, None, None, out, config)
            start = time.perf_counter()
            compiled = run()
            torch.cuda.synchronize()
            first = time.perf_counter() - start
            ok = compare(out, ref.double(), tolerance(p, p.r * p.s)).ok
            t = _graph_us(run)
            regs, spills = getattr(compiled, "n_regs", None), getattr(compiled, "n_spills", None)
            print(f"    stream band {config.block_m} streams {streams} cols {tile_q} chans {block_c} w{warps}: "
                  f"{t:6.1f} us {t_ref / t:4.2f}x (auto {t_auto / t:4.2f}x) regs {regs} spills {spills} "
                  f"first call {first:4.1f} s ok {ok}", flush=True)
            rec["stream"].append({"config": config.to_dict(), "us": t, "ok": ok, "regs": regs, "spills": spills,
                                  "first_call_s": first})
        records.append(rec)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(), "rows": records}, f, indent=1)


if __name__ == "__main__":
    main()
