"""Kernel-development probe (one device call): depthwise_window (each thread's input window in
registers, the tile unrolled) against the heuristics' depthwise kernel and cuDNN on the
depthwise suite's stride-1 rows up to 7x7, several tiles and warp counts each, CUDA-graph replays
with L2 cleared, every output checked against float32 F.conv2d. Prints each kernel's
registers and spills and its first call's seconds (the compile).

    python3 benchmarks/probe_window.py [--rows 3|7|all] [--strips 7 14] [--steps 1 2] [--json OUT.json]
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
from tileconv.dispatch.heuristics import depthwise_window_config
from tileconv.testing import compare, random_inputs, tolerance


def measure(launcher, p, i, ref, config, tol) -> dict:
    """One tile of a probe: ``launcher``'s first call (the compile included) into a NaN-filled
    channels_last output, checked against ``ref`` within ``tol``, then its time as CUDA-graph
    replays; the compiled kernel's registers and spills (None where the launcher returns no
    compiled kernel). Shared with probe_grouped.py."""
    out = torch.full_like(ref, float("nan"), dtype=p.dtype).contiguous(memory_format=torch.channels_last)

    def run():
        return launcher(p, i.x, i.weight, None, None, out, config)
    start = time.perf_counter()
    compiled = run()
    torch.cuda.synchronize()
    first = time.perf_counter() - start
    ok = compare(out, ref.double(), tol).ok
    return {"us": _graph_us(run), "ok": ok, "regs": getattr(compiled, "n_regs", None),
            "spills": getattr(compiled, "n_spills", None), "first_call_s": first}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="all")
    ap.add_argument("--json")
    ap.add_argument("--steps", type=int, nargs="+", default=[1], help="input rows a loop step raced")
    ap.add_argument("--strips", type=int, nargs="+", default=[7, 14], help="strip heights raced")
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
        rec = {"case": case.name, "cudnn_us": t_ref, "auto_algo": algo.name, "auto_us": t_auto, "window": []}
        default = depthwise_window_config(p)
        configs = [default]
        warps = sorted({1, default.num_warps})
        if p.r > 3:
            configs = [depthwise_window_config(p, min(strip, p.out_h), min(width, p.out_w), nw, step)
                       for strip in args.strips for width in (4, 8 if p.out_w % 7 else 7)
                       for step in args.steps for nw in warps[-1:]]
        else:
            configs += [depthwise_window_config(p, rows_a_step=4)]
        for config in dict.fromkeys(configs):
            m = measure(launch.launch_depthwise_window, p, i, ref, config, tolerance(p, p.r * p.s))
            t = m["us"]
            print(f"    window {config}: {t:6.1f} us {t_ref / t:4.2f}x (auto {t_auto / t:4.2f}x) regs {m['regs']} "
                  f"spills {m['spills']} first call {m['first_call_s']:4.1f} s ok {m['ok']}", flush=True)
            entry = {"config": config.to_dict(), **m}
            rec["window"].append(entry)
        records.append(rec)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(), "rows": records}, f, indent=1)


if __name__ == "__main__":
    main()
