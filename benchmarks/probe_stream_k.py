"""Probe: does stream-K (the programs share out reduction steps, not tiles) lift gemm_1x1_ws on
ResNet-50's 1x1 rows, where too few tiles leave SMs idle or a last wave half empty?

Session 35 (Nsight Compute) found every SM taking operands in at about the same rate whatever the
kernel, cuBLAS's included: c2048 hw7 k512 is 100 tiles of 64x128 (32 steps each) for 132 SMs, and
cuBLAS's 112 tiles of 112x64 leave it 8% fewer bytes an SM and 10% less time. Stream-K gives every
program within one step of the others (24-25 steps there), at the price of a float32 partial sum
written and read once a split tile.

For each 1x1 row, each tile with and without ``stream_k``: the production launcher
(``launch.launch_gemm_1x1_ws``) checked three times in a row against F.conv2d in float32, the
output poisoned (NaN) before each (the flags a launch leaves must let the next one run right),
then timed over a CUDA-graph replay with the bench's timer (cold L2), rounds interleaved, beside
cuDNN.

    python benchmarks/probe_stream_k.py --json OUT.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from tileconv.bench.suites import get_suite  # noqa: E402
from tileconv.bench.timing import bench_us  # noqa: E402
from tileconv.kernels import LaunchConfig  # noqa: E402
from tileconv.kernels.launch import launch_gemm_1x1_ws  # noqa: E402
from tileconv.testing import random_inputs, tolerance  # noqa: E402

# (block_m, block_n, num_warps, stages): the ws candidates' one- and two-warpgroup tiles
TILES = [(64, 128, 4, 8), (128, 128, 4, 6), (128, 256, 8, 4), (128, 64, 4, 8)]


def _label(config: LaunchConfig) -> str:
    return f"{config.block_m}x{config.block_n} s{config.num_stages}" + (" sk" if config.stream_k else "")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--json")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--rows", default="", help="comma-separated substrings of the row names to keep")
    args = p.parse_args()
    keep = [s for s in args.rows.split(",") if s]
    cases = [c for c in get_suite("resnet50") if c.r == 1 and c.s == 1
             and (not keep or any(k in c.name for k in keep))]
    rows = []
    for case in cases:
        problem = case.problem(torch.float16, "nhwc", "none", batch=32)
        inputs = random_inputs(problem, "cuda", seed=36, draw_on_device=True)
        x, w = inputs.x, inputs.weight
        ref = F.conv2d(x.float(), w.float(), stride=problem.stride)
        out = torch.empty(problem.output_shape, device="cuda", dtype=torch.float16).contiguous(
            memory_format=torch.channels_last)
        configs = [LaunchConfig(block_m=m, block_n=min(n, max(64, problem.k)), block_k=64, num_warps=nw,
                                num_stages=st, stream_k=sk) for m, n, nw, st in TILES for sk in (0, 1)]
        configs = list(dict.fromkeys(configs))
        row = {"name": case.name, "cudnn_us": [], "configs": {}}
        for config in configs:
            worst = 0.0
            for _ in range(3):
                out.fill_(float("nan"))
                launch_gemm_1x1_ws(problem, x, w, None, None, out, config)
                torch.cuda.synchronize()
                err = ((out.float() - ref).abs().max() / ref.abs().max()).nan_to_num(float("inf")).item()
                worst = max(worst, err)
            row["configs"][_label(config)] = {"err": worst, "ok": worst <= tolerance(problem), "us": []}
        graphs = {}
        for config in configs:
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                launch_gemm_1x1_ws(problem, x, w, None, None, out, config)
            graphs[_label(config)] = graph
        for _ in range(args.rounds):
            row["cudnn_us"].append(bench_us(lambda: F.conv2d(x, w, stride=problem.stride)))  # noqa: B023
            for key, graph in graphs.items():
                row["configs"][key]["us"].append(bench_us(graph.replay))
        # The graphs' replays, checked too (a replay reuses the capture's flag set).
        out.fill_(float("nan"))
        for key, graph in graphs.items():
            out.fill_(float("nan"))
            graph.replay()
            torch.cuda.synchronize()
            err = ((out.float() - ref).abs().max() / ref.abs().max()).nan_to_num(float("inf")).item()
            row["configs"][key]["replay_ok"] = err <= tolerance(problem)
        row["cudnn_us"] = statistics.median(row["cudnn_us"])
        for v in row["configs"].values():
            v["us"] = statistics.median(v["us"])
        rows.append(row)
        print(row["name"], f"cudnn {row['cudnn_us']:.1f}",
              " ".join(f"[{k}]={v['us']:.1f}{'' if v['ok'] and v['replay_ok'] else '(WRONG)'}"
                       for k, v in row["configs"].items()), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
