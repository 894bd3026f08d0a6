"""One profiled launch of a bench row on a pinned algorithm and config, for Nsight Compute.

    ncu --profile-from-start off --section SpeedOfLight --section SourceCounters -o REPORT \\
        python benchmarks/ncu_one.py --suite grouped --case "c512 hw28/2" --algo grouped_gemm_ws \\
        --config 128:64:64:4:8

The row runs three times (compile, warm-up), its output checked against float32 F.conv2d, then
once between cudaProfilerStart and cudaProfilerStop; cuDNN's convolution of the same row is
profiled the same way after it (``--cudnn``) for a side-by-side. Not a benchmark: ncu serialises
and replays the kernel.
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from tileconv.bench.suites import get_suite  # noqa: E402
from tileconv.dispatch import select  # noqa: E402
from tileconv.functional import conv2d_problem  # noqa: E402
from tileconv.kernels import LaunchConfig  # noqa: E402
from tileconv.testing import compare, random_inputs, tolerance  # noqa: E402

CONFIG_FIELDS = ("block_m", "block_n", "block_k", "num_warps", "num_stages", "persistent", "pingpong", "resident")


def profiled(fn) -> None:
    """``fn`` three times, then once inside the profiler's range."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    fn()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", required=True)
    parser.add_argument("--case", required=True, help="the row whose name contains this")
    parser.add_argument("--algo", default=None, help="default: the heuristics' choice")
    parser.add_argument("--config", default=None,
                        help=f"colon-separated {', '.join(CONFIG_FIELDS)} (a prefix of them; default: the heuristics')")
    parser.add_argument("--cudnn", action="store_true", help="profile cuDNN's convolution of the row too")
    args = parser.parse_args()
    case, = [c for c in get_suite(args.suite) if args.case in c.name]
    p = case.problem(torch.float16, "nhwc")
    i = random_inputs(p, "cuda", seed=0, draw_on_device=True)
    algo, config = select(p)
    algo = args.algo or algo.name
    if args.config:
        config = LaunchConfig(**dict(zip(CONFIG_FIELDS, (int(v) for v in args.config.split(":")), strict=False)))

    def run():
        return conv2d_problem(p, i.x, i.weight, None, None, algo=algo, config=config)

    ref = F.conv2d(i.x.float(), i.weight.float(), None, p.stride, p.padding, p.dilation, p.groups)
    print(f"{case.name}: {algo} {config}: ok {compare(run(), ref.double(), tolerance(p)).ok}", flush=True)
    profiled(run)
    if args.cudnn:
        torch.backends.cudnn.benchmark = True
        profiled(lambda: F.conv2d(i.x, i.weight, None, p.stride, p.padding, p.dilation, p.groups))


if __name__ == "__main__":
    main()
