"""Kernel-development probe for one device call: depthwise_window's tile of the whole image
(``depthwise_window._image``: the image's geometry compiled in, padding taps left out), its
output rows in strips of several sizes, on the depthwise suite's rows with small outputs, against
the dispatcher's choice, the window kernel's strips of tiles (where the row stride is 1) and
cuDNN, in the same process.

    python3 benchmarks/probe_image.py [--rounds 3] [--warps 1,4] [--rows "dw7x7 c768 hw7:1.2.7"]

Each variant is timed ``--rounds`` times in turn (the machine's drift falls on all), each time by
``triton.testing.do_bench`` (L2 cleared before every run, median), and its output is checked
against a float32 reference with outputs poisoned before the call. Not the benchmark of record
(that is ``python -m tileconv bench``).
"""
import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.getcwd())
import torch
import torch.nn.functional as F
import triton
from triton.testing import do_bench

import tileconv
from tileconv import call_plans
from tileconv.bench.suites import get_suite
from tileconv.dispatch import select
from tileconv.dispatch.heuristics import depthwise_window_config
from tileconv.functional import conv2d_problem
from tileconv.kernels import launch
from tileconv.testing import compare, random_inputs, tolerance

parser = argparse.ArgumentParser()
parser.add_argument("--rounds", type=int, default=3)
parser.add_argument("--warps", default="1")
parser.add_argument("--rows", default="dw7x7 c768 hw7:1.2.3.4.7,dw3x3 c960 hw7/1:1.2.3.4.7,dw3x3 c576 hw14/1:2.4.7.14,"
                    "dw3x3 c384 hw14/1:2.4.7.14,dw3x3 c576 hw14/2:1.2.3.7,dw3x3 c192 hw28/2:2.4.7.14",
                    help="row name endings, each with the image strips to try (output rows a program)")
parser.add_argument("--max-image", type=int, default=None, help="MAX_IMAGE_MULTIPLY_ADDS for the image variants")
args = parser.parse_args()
torch.backends.cudnn.benchmark = True
print(torch.cuda.get_device_name(), torch.__version__, triton.__version__, torch.backends.cudnn.version(), flush=True)
default_max = launch.MAX_IMAGE_MULTIPLY_ADDS
max_image = args.max_image or default_max
wanted = dict(item.split(":") for item in args.rows.split(","))
rows = []
for case in sorted(get_suite("depthwise"), key=lambda c: [c.name.endswith(w) for w in wanted].index(True)
                   if any(c.name.endswith(w) for w in wanted) else len(wanted)):
    ending = next((w for w in wanted if case.name.endswith(w)), None)
    if ending is None:
        continue
    p = case.problem(torch.float16, "nhwc", "none")
    i = random_inputs(p, "cuda", seed=0)
    ref = F.conv2d(i.x.float(), i.weight.float(), None, p.stride, p.padding, p.dilation, p.groups)
    algo, config = select(p)
    variants = {"dispatch": (algo.name, config, default_max)}
    if p.stride[0] == 1:
        variants["strips"] = ("depthwise_window", depthwise_window_config(p), 0)
    for w in (int(v) for v in args.warps.split(",")):
        for strip in (int(v) for v in wanted[ending].split(".")):
            if p.k % (32 * w) == 0:
                variants[f"image s{strip} w{w}"] = ("depthwise_window",
                                                    depthwise_window_config(p, strip, p.out_w, w), max_image)

    def cudnn(p=p, i=i):
        return F.conv2d(i.x, i.weight, None, p.stride, p.padding, p.dilation, p.groups)

    times = {"cudnn": [], **{name: [] for name in variants}}
    ok = {}
    for _ in range(args.rounds):
        times["cudnn"].append(do_bench(cudnn, warmup=25, rep=100, return_mode="median") * 1e3)
        for name, (algo_name, cfg, limit) in variants.items():
            launch.MAX_IMAGE_MULTIPLY_ADDS = limit
            call_plans.clear()

            def run(p=p, i=i, algo_name=algo_name, cfg=cfg):
                return conv2d_problem(p, i.x, i.weight, i.bias, i.residual, algo=algo_name, config=cfg)

            try:
                with tileconv.poison_outputs():
                    ok[name] = compare(run(), ref, tolerance(p)).ok
                times[name].append(do_bench(run, warmup=25, rep=100, return_mode="median") * 1e3)
            except Exception as e:  # noqa: BLE001 - a probe reports and goes on
                ok[name] = f"{type(e).__name__}: {str(e)[:200]}"
                times[name].append(float("nan"))
            finally:
                launch.MAX_IMAGE_MULTIPLY_ADDS = default_max
    med = {name: statistics.median(t) for name, t in times.items()}
    row = dict(name=case.name, dispatch=f"{algo.name} {config}", us=med, runs=times, ok=ok,
               vs_cudnn={name: med["cudnn"] / t for name, t in med.items() if name != "cudnn"})
    rows.append(row)
    print(f"{case.name:28s} cudnn {med['cudnn']:6.1f} | " + " | ".join(
        f"{name} {t:6.1f} x{med['cudnn'] / t:.2f}" for name, t in med.items() if name != "cudnn")
        + f"  ({algo.name}) ok {ok}", flush=True)
with open(os.path.join(os.environ.get("OUT", "/tmp"), "probe_image.json"), "w") as f:
    json.dump(dict(device=torch.cuda.get_device_name(), rows=rows), f, indent=1)
