"""One launch of grouped_halo (and of the heuristics' kernel) on a grouped-suite row, for Nsight Compute:

    ncu --launch-skip 2 -k regex:grouped_halo python3 benchmarks/probe_grouped_once.py "resnext g32 c128 hw56/1" 256 16 4
"""
import os
import sys

sys.path.insert(0, os.getcwd())
import torch

import tileconv.kernels.launch as launch
from tileconv.bench.suites import get_suite
from tileconv.kernels import LaunchConfig
from tileconv.testing import random_inputs

name, block_m, block_n, persistent = sys.argv[1], *map(int, sys.argv[2:5])
p = next(c for c in get_suite("grouped") if c.name == name).problem(torch.float16, "nhwc")
i = random_inputs(p, "cuda", seed=0)
out = torch.empty(p.output_shape, dtype=p.dtype, device="cuda").contiguous(memory_format=torch.channels_last)
config = LaunchConfig(block_m=block_m, block_n=block_n, num_warps=4, persistent=persistent)
for _ in range(4):
    launch.launch_grouped_halo(p, i.x, i.weight, None, None, out, config)
torch.cuda.synchronize()
