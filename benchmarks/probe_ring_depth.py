"""Probe: does a deeper operand ring help gemm_1x1_ws on ResNet-50's stride-1 1x1 rows?

cuBLAS runs c2048 hw7 k512 as 64x112 tiles with 9 stages (session 35, Nsight Compute), moving
the same bytes into the SMs as tileconv's tuned gemm_1x1_ws (64x128, 5 stages) 10% faster. The
tuning candidates stop at 4-5 stages. This times the production launcher
(``launch.launch_gemm_1x1_ws``) at each tile's listed depth and deeper (a depth whose ring leaves
no room for the TMA-store epilogue's buffers takes pointer stores: the launcher's own rule),
rounds interleaved, the bench's timer (cold L2) over a CUDA-graph replay of the launch (the
launcher's own Python costs more than the timer's L2 flush hides: session 35's run, which timed
the launcher itself, read 90-190 us on rows whose kernels take 12-30), beside cuDNN; every
output checked against F.conv2d in float32 (that run found the TMA-store epilogue's race on
one-chunk tiles, since fixed).

``--configs 192x128s4,64x128s8``: other tiles instead of the list below (``BMxBNsSTAGES``, and
``wN`` for N MMA warps: ``128x256s4w8``; session 38's 192-row tiles, three MMA warpgroups of 64
rows each: ``launch.ws_slices``; a trailing ``p`` for ping-pong, ``r`` for the held weight slice
of session 51: ``128x128s4r``, ``128x128s4pr``). ``--strided``: the stride-2 1x1 rows too. ``--rows c1024,c512 hw28``: the rows whose names contain one of
these. ``--batches 4,8,16,32``: each row at these batch sizes (the time's intercept against the
batch is a kernel's fixed cost: launch, ramp, tail; its slope the per-image cost). Every output is checked against the float64 reference (``tileconv.reference``), also with
``bias_add_relu`` (a bias, a residual: the pointer-store epilogue) for every tile.

    python benchmarks/probe_ring_depth.py --json OUT.json [--configs ...] [--rows ...]
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

from tileconv._runtime import sm_count  # noqa: E402
from tileconv.bench.suites import get_suite  # noqa: E402
from tileconv.bench.timing import bench_us  # noqa: E402
from tileconv.kernels import LaunchConfig  # noqa: E402
from tileconv.kernels.launch import launch_gemm_1x1_ws, resident_unsupported_reason, ws_slices  # noqa: E402
from tileconv.reference import conv2d_reference  # noqa: E402
from tileconv.testing import compare, random_inputs, tolerance  # noqa: E402

# (block_m, block_n, num_warps, stages): the candidates' depths, then deeper
CONFIGS = [(64, 128, 4, 5), (64, 128, 4, 8), (128, 128, 4, 4), (128, 128, 4, 6), (128, 64, 4, 5), (128, 64, 4, 8),
           (128, 256, 8, 3), (128, 256, 8, 4)]


def _label(config: LaunchConfig) -> str:
    return (f"{config.block_m}x{config.block_n} s{config.num_stages}"
            + (f" w{config.num_warps}" if config.num_warps != 4 else "") + (" pp" if config.pingpong else "")
            + (" r" if config.resident else ""))


def _parse_configs(text: str) -> list[tuple[int, ...]]:
    """``BMxBNsST[wNW][p][r]`` items, comma-separated -> (block_m, block_n, num_warps, stages,
    pingpong, resident)."""
    configs = []
    for item in text.split(","):
        resident = item.endswith("r")
        item = item.removesuffix("r")
        pingpong = item.endswith("p")
        item = item.removesuffix("p")
        tile, _, rest = item.partition("s")
        stages, _, warps = rest.partition("w")
        block_m, block_n = (int(v) for v in tile.split("x"))
        configs.append((block_m, block_n, int(warps or 4), int(stages), int(pingpong), int(resident)))
    return configs


def _check(problem, inputs, config, epilogue_problem, epilogue_inputs) -> dict:
    """The tile's output, NaN-poisoned first, against the float64 reference: plain, then with a
    bias, a residual and ReLU."""
    result = {}
    for key, prob, inp in (("err", problem, inputs), ("err_bias_add_relu", epilogue_problem, epilogue_inputs)):
        out = torch.full(prob.output_shape, float("nan"), device="cuda", dtype=prob.dtype).contiguous(
            memory_format=torch.channels_last)
        launch_gemm_1x1_ws(prob, inp.x, inp.weight, inp.bias, inp.residual, out, config)
        torch.cuda.synchronize()
        ref = conv2d_reference(inp.x, inp.weight, inp.bias, prob.stride, activation=prob.epilogue.activation,
                               residual=inp.residual, device="cuda")
        comparison = compare(out, ref, tolerance(prob))
        result[key] = comparison.rel_err
        result.setdefault("ok", True)
        result["ok"] = result["ok"] and comparison.ok
    return result


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--json")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--configs", help="BMxBNsST[wNW],... (default: the list in this file)")
    p.add_argument("--rows", help="comma-separated parts of row names (default: every stride-1 1x1 row)")
    p.add_argument("--strided", action="store_true", help="the stride-2 1x1 rows too")
    p.add_argument("--batches", default="32", help="comma-separated batch sizes a row (default: 32)")
    args = p.parse_args()
    tiles = _parse_configs(args.configs) if args.configs else [(*t, 0, 0) for t in CONFIGS]
    cases = [c for c in get_suite("resnet50") if c.r == 1 and (c.stride == 1 or args.strided)
             and (not args.rows or any(part in c.name for part in args.rows.split(",")))]
    rows = []
    batches = [int(b) for b in args.batches.split(",")]
    for case, batch in ((case, batch) for case in cases for batch in batches):
        problem = case.problem(torch.float16, "nhwc", "none", batch=batch)
        inputs = random_inputs(problem, "cuda", seed=35, draw_on_device=True)
        epilogue_problem = case.problem(torch.float16, "nhwc", "bias_add_relu", batch=batch)
        epilogue_inputs = random_inputs(epilogue_problem, "cuda", seed=36, draw_on_device=True)
        x, w = inputs.x, inputs.weight
        out = torch.empty(problem.output_shape, device="cuda", dtype=torch.float16).contiguous(
            memory_format=torch.channels_last)
        configs = [LaunchConfig(block_m=m, block_n=min(n, max(64, problem.k)), block_k=64, num_warps=nw,
                                num_stages=st, pingpong=pp, resident=res) for m, n, nw, st, pp, res in tiles]
        configs = [c for c in dict.fromkeys(configs)
                   if (not c.resident or resident_unsupported_reason(problem, c, sm_count(x.device)) is None)
                   and (ws_slices(c) == 1 or case.stride == 1)]
        row = {"name": case.name + ("" if batch == 32 else f" b{batch}"), "batch": batch, "cudnn_us": [],
               "configs": {}}
        for config in configs:
            row["configs"][_label(config)] = {**_check(problem, inputs, config, epilogue_problem, epilogue_inputs),
                                              "us": []}
        graphs = {}
        for config in configs:
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                launch_gemm_1x1_ws(problem, x, w, None, None, out, config)
            graphs[_label(config)] = graph
        row["cudnn_us"], times = time_interleaved(lambda: F.conv2d(x, w), graphs, args.rounds)  # noqa: B023
        for key, us in times.items():
            row["configs"][key]["us"] = us
        rows.append(row)
        report(row["name"], row["cudnn_us"], row["configs"])
    if args.json:
        write_rows(args.json, rows)


def parse_backward_configs(text: str, ws: int = 0) -> list:
    """``BMxBNxBKsSTwNW[kSPLIT]`` items, comma-separated -> BackwardConfigs (``ws``: the
    warp-specialized wgrad's copy, 0 for the other kernels); the wgrad probes' --configs."""
    from tileconv.kernels import BackwardConfig

    configs = []
    for item in text.split(","):
        tile, _, rest = item.partition("s")
        stages, _, rest = rest.partition("w")
        warps, _, split = rest.partition("k")
        bm, bn, bk = (int(v) for v in tile.split("x"))
        configs.append(BackwardConfig(bm, bn, bk, int(split or 0), int(warps), int(stages), ws=ws))
    return configs


def time_interleaved(peer, graphs: dict, rounds: int) -> tuple[float, dict[str, float]]:
    """Microseconds, the median of ``rounds`` interleaved rounds (the bench's timer, cold L2):
    ``peer()`` (cuDNN), then each of ``graphs``' replays, by key."""
    peer_us, times = [], {key: [] for key in graphs}
    for _ in range(rounds):
        peer_us.append(bench_us(peer))
        for key, graph in graphs.items():
            times[key].append(bench_us(graph.replay))
    return statistics.median(peer_us), {key: statistics.median(v) for key, v in times.items()}


def capture_wgrad_form(row: dict, graphs: dict, key: str, launcher, operands: tuple, config, gw, ref, tol) -> None:
    """One form of a wgrad probe's row: ``launcher(*operands, out, config)`` (a wgrad launcher:
    operands = (problem, grad, x)) run once into a NaN-poisoned copy of ``gw`` and checked
    against ``ref`` (``row["forms"][key]``: ok, rel_err, the splits it returned), then
    captured writing ``gw`` as ``graphs[key]``."""
    from tileconv.testing import compare

    poisoned = torch.full_like(gw, float("nan"))
    split = launcher(*operands, poisoned, config)
    torch.cuda.synchronize()
    cmp = compare(poisoned, ref, tol)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        launcher(*operands, gw, config)
    graphs[key] = graph
    row["forms"][key] = {"ok": cmp.ok, "rel_err": cmp.rel_err, "split": split, "us": []}


def time_wgrad_row(row: dict, graphs: dict, problem, grad, x, weight, rounds: int) -> None:
    """Time a wgrad probe's row: cuDNN's weight gradient (``aten.convolution_backward``, warmed
    up, then captured as a CUDA graph) and each form's captured graph in interleaved rounds;
    the medians go into ``row`` ("cudnn_us", each form's "us"), and its line is printed."""
    from tileconv.kernels.backward import aten_convolution_backward

    def cudnn():
        return aten_convolution_backward(problem, grad, x, weight, False, True)

    for _ in range(3):
        cudnn()
    torch.cuda.synchronize()
    cudnn_graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(cudnn_graph):
        cudnn()
    row["cudnn_us"], times = time_interleaved(cudnn_graph.replay, graphs, rounds)
    for key, us in times.items():
        row["forms"][key]["us"] = us
    report(row["name"], row["cudnn_us"], row["forms"])


def report(name: str, cudnn_us: float, forms: dict) -> None:
    """One row's line: cuDNN's time, then each form's (``us``), flagged where its output was wrong."""
    print(f"{name:28s} cudnn {cudnn_us:5.1f} "
          + " ".join(f"[{k}]={v['us']:.1f}{'' if v['ok'] else '(WRONG)'}" for k, v in forms.items()), flush=True)


def write_rows(path: str, rows: list) -> None:
    with open(path, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
