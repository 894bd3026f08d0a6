"""Kernel-development probe (one device call): depthwise_halo's forward with 4 against 8
pixels a step (UNROLL: more independent accumulator chains, and ptxas shares more of the
shared-memory loads between neighbouring pixels), on the depthwise suite's stride-1 rows up
to 7x7, each timed beside cuDNN as CUDA-graph replays with L2 cleared (the launcher called
directly pays Triton's host dispatch, above the L2-clearing memset on small rows) and checked
against float32.

    python3 benchmarks/probe_halo_unroll.py
"""
import dataclasses
import os
import sys

sys.path.insert(0, os.getcwd())
import torch
import torch.nn.functional as F

import tileconv.kernels.launch as launch
from tileconv.bench.host import _graph_us
from tileconv.bench.suites import get_suite
from tileconv.dispatch.heuristics import default_config
from tileconv.testing import compare, random_inputs, tolerance

torch.backends.cudnn.benchmark = True
tiling = launch.halo_tiling
print(torch.cuda.get_device_name(), flush=True)
for case in get_suite("depthwise"):
    p = case.problem(torch.float16, "nhwc")
    if p.stride != (1, 1) or p.r > 7:
        continue
    i = random_inputs(p, "cuda", seed=0)
    ref = F.conv2d(i.x.float(), i.weight.float(), None, p.stride, p.padding, p.dilation, p.groups)
    t_ref = _graph_us(lambda p=p, i=i: F.conv2d(i.x, i.weight, None, p.stride, p.padding, p.dilation, p.groups))
    config = default_config(p, "depthwise_halo")
    line = f"{case.name:28s} cuDNN {t_ref:7.1f} us  {config}"
    for unroll in (4, 8):
        launch.halo_tiling = lambda q, c, u=unroll: dataclasses.replace(tiling(q, c), unroll=min(u, tiling(q, c).tile_w))
        out = torch.empty_like(ref, dtype=p.dtype).contiguous(memory_format=torch.channels_last)

        def run(out=out, p=p, i=i, config=config):
            launch.launch_depthwise_halo(p, i.x, i.weight, None, None, out, config)
        run()
        ok = compare(out, ref.double(), tolerance(p, p.r * p.s)).ok
        t = _graph_us(run)
        line += f" | unroll {unroll}: {t:6.1f} us {t_ref / t:4.2f}x ok {ok}"
    launch.halo_tiling = tiling
    print(line, flush=True)
