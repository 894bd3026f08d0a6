"""Probe: implicit_gemm_frame (each input pixel staged once a tile, every tap a shifted view)
against the tuned dispatch and cuDNN on stride-1 3x3 rows.

ResNet-50's 3x3 stride-1 rows run at 34%-49% of the GEMM ceiling on the gathering kernels,
bound by the bytes each SM takes in (nine A tiles a tile, one a tap). This times
``launch.launch_implicit_gemm_frame`` over a few tiles beside the dispatcher's choice (the tuning
cache when ``TILECONV_CACHE_DIR`` holds one, else the heuristics) and cuDNN: the bench's timer
(cold L2) over CUDA-graph replays, rounds interleaved; every output poisoned with NaN before its
checked call and compared with a float64 reference.

    python benchmarks/probe_frame.py --json OUT.json [--suite resnet50,seed,vae] [--quick]
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
from tileconv.dispatch import select  # noqa: E402
from tileconv.kernels import LaunchConfig  # noqa: E402
from tileconv.kernels.launch import (  # noqa: E402
    frame_tiling,
    implicit_gemm_frame_unsupported_reason,
    launch_implicit_gemm_frame,
)
from tileconv.testing import random_inputs, tolerance  # noqa: E402

# (block_m, block_n, block_k, num_warps, stages, pingpong: two MMA partitions of half the rows)
CONFIGS = [(128, 64, 64, 8, 4, 0), (128, 128, 64, 8, 4, 0), (128, 64, 64, 4, 4, 1), (128, 128, 64, 4, 4, 1),
           (128, 64, 64, 4, 6, 0), (256, 64, 64, 8, 4, 0), (128, 256, 64, 8, 2, 0), (256, 128, 32, 8, 4, 0)]


def _label(config: LaunchConfig) -> str:
    return (f"{config.block_m}x{config.block_n}x{config.block_k} w{config.num_warps} s{config.num_stages}"
            + (" halves" if config.pingpong else ""))


def _cell(key: str, run: dict) -> str:
    """One run's entry of a printed row: its time, flagged where its output was wrong."""
    if "us" not in run:
        return f"{key} ERROR {run['error']}"
    wrong = "" if run["ok"] else f" WRONG {run['err']:.2g}"
    return f"{key} {run['us']:.1f}{wrong}"


def _cases(suites: list[str]):
    for suite in suites:
        for case in get_suite(suite):
            if case.stride == 1 and case.r > 1 and case.groups == 1:
                yield suite, case


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--json")
    p.add_argument("--suite", default="resnet50,seed,vae")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--max-width", type=int, default=128)
    p.add_argument("--configs", help="indices into CONFIGS, comma-separated (default: all)")
    args = p.parse_args()
    torch.backends.cudnn.allow_tf32 = False
    rows = []
    for suite, case in _cases(args.suite.split(",")):
        problem = case.problem(torch.float16, "nhwc", "none", batch=None)
        if implicit_gemm_frame_unsupported_reason(problem) is not None or problem.out_w > args.max_width:
            continue
        inputs = random_inputs(problem, "cuda", seed=37, draw_on_device=True)
        x, w = inputs.x, inputs.weight
        ref = F.conv2d(x.double(), w.double(), stride=problem.stride, padding=problem.padding,
                       dilation=problem.dilation)
        out = torch.empty(problem.output_shape, device="cuda", dtype=torch.float16).contiguous(
            memory_format=torch.channels_last)
        algorithm, tuned = select(problem)
        # (every closure below runs within this iteration)
        runs = {f"tuned {algorithm.name} {tuned}": lambda: algorithm.launch(problem, x, w, None, None, out, tuned)}  # noqa: B023
        chosen = [CONFIGS[int(i)] for i in args.configs.split(",")] if args.configs else CONFIGS
        for m, n, k, nw, st, pp in chosen:
            config = LaunchConfig(block_m=m, block_n=min(n, max(64, problem.k)), block_k=k, num_warps=nw,
                                  num_stages=st, pingpong=pp)
            if frame_tiling(problem, config).fits():
                runs.setdefault(_label(config), lambda config=config: launch_implicit_gemm_frame(
                    problem, x, w, None, None, out, config))  # noqa: B023
        row = {"suite": suite, "name": case.name, "shape": problem.describe(), "cudnn_us": [], "runs": {}}
        graphs = {}
        for key, run in runs.items():
            try:
                out.fill_(float("nan"))
                run()
                torch.cuda.synchronize()
                err = ((out.double() - ref).abs().max() / ref.abs().max()).item()
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    run()
                graphs[key] = graph
                row["runs"][key] = {"err": err, "ok": err <= tolerance(problem), "us": []}
            except Exception as e:  # noqa: BLE001 - a probe reports every failure and goes on
                row["runs"][key] = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
        for _ in range(args.rounds):
            row["cudnn_us"].append(bench_us(
                lambda: F.conv2d(x, w, padding=problem.padding, dilation=problem.dilation)))  # noqa: B023
            for key, graph in graphs.items():
                row["runs"][key]["us"].append(bench_us(graph.replay))
        row["cudnn_us"] = statistics.median(row["cudnn_us"])
        for v in row["runs"].values():
            if "us" in v:
                v["us"] = statistics.median(v["us"])
        rows.append(row)
        print(f"{row['name']:28s} cudnn {row['cudnn_us']:.1f} | "
              + " | ".join(_cell(k, v) for k, v in row["runs"].items()), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
