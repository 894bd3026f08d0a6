"""The input gradient of an unpadded strided 1x1 (ConvProblem.dgrad_as_strided_forward), three
ways, beside cuDNN's: gemm_1x1 writing the on-grid pixels and zeroing the rest from the same
tiles (``onto``, what ``auto`` runs), the zero fill as a launch of its own before the GEMM
(``zero_off_grid``, session 31's form), and the fused form under the forward problem's tuned
gemm_1x1 config and others. Cold L2, :func:`tileconv.bench.timing.bench_us`, ResNet-50's three
1x1/2 rows at batch 32, fp16 channels_last. Each form's result is checked against cuDNN's before it is timed.

    python benchmarks/probe_strided_dgrad.py

A kernel-development probe, not a benchmark of record. Needs a GPU.
"""

from __future__ import annotations

import dataclasses
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402

from tileconv import ConvProblem, dispatch  # noqa: E402
from tileconv.bench.timing import bench_us  # noqa: E402
from tileconv.functional import conv2d_backward_problem  # noqa: E402
from tileconv.kernels import LaunchConfig  # noqa: E402
from tileconv.kernels.dgrad import zero_off_grid  # noqa: E402
from tileconv.kernels.launch import launch_gemm_1x1  # noqa: E402
from tileconv.kernels.weights import dgrad_weight  # noqa: E402

ROWS = [("c256 hw56 k512/2", 256, 56, 512), ("c512 hw28 k1024/2", 512, 28, 1024), ("c1024 hw14 k2048/2", 1024, 14, 2048)]
CONFIGS = [LaunchConfig(128, 128, 64, 8, 4, 4), LaunchConfig(128, 256, 64, 8, 8, 3), LaunchConfig(128, 64, 64, 8, 4, 4),
           LaunchConfig(64, 128, 64, 8, 4, 4)]


def tile(config: LaunchConfig) -> str:
    return f"{config.block_m}x{config.block_n}x{config.block_k} w{config.num_warps} s{config.num_stages}"


def probe_row(name: str, c: int, hw: int, k: int) -> None:
    problem = ConvProblem(32, c, hw, hw, k, 1, 1, stride=(2, 2), dtype=torch.float16, layout="nhwc")
    cl = torch.channels_last
    x = torch.randn(problem.input_shape, device="cuda", dtype=torch.float16).contiguous(memory_format=cl)
    weight = torch.randn(problem.weight_shape, device="cuda", dtype=torch.float16) / c ** 0.5
    grad = torch.randn(problem.output_shape, device="cuda", dtype=torch.float16).contiguous(memory_format=cl)
    forward = dispatch.dgrad_forward(problem)
    weight_t = dgrad_weight(weight, 1)
    dx = torch.empty_like(x)
    on_grid = dx[:, :, ::2, ::2]
    _, tuned = dispatch.select(forward, "gemm_1x1", x.device)  # the forward problem's (dense output)
    tuned = dataclasses.replace(tuned, persistent=0)

    def cudnn():
        return torch.ops.aten.convolution_backward(grad, x, weight, None, (2, 2), (0, 0), (1, 1), False, (0, 0), 1,
                                                   (True, False, False))[0]

    def auto():
        return conv2d_backward_problem(problem, grad, x, weight, need_weight=False)[0]

    def separate(config):
        def run():
            zero_off_grid(dx, (2, 2))
            launch_gemm_1x1(forward, grad, weight_t, None, None, on_grid, config)
            return dx
        return run

    def fused(config):
        def run():
            launch_gemm_1x1(forward, grad, weight_t, None, None, on_grid, config, onto=dx, onto_stride=(2, 2))
            return dx
        return run

    want = cudnn().float()
    others = [config for config in CONFIGS if config != tuned]
    forms = [("cuDNN", cudnn), (f"auto {tile(dispatch.dgrad_route(problem).fused_config)}", auto),
             (f"separate fill, tuned {tile(tuned)}", separate(tuned))]
    forms += [(f"fused {tile(config)}", fused(config)) for config in [tuned, *others]]
    print(f"{name}: gemm_1x1's tuned config (dense output) {tile(tuned)}")
    base = None
    for label, fn in forms:
        dx.fill_(float("nan"))
        got = fn().float()
        err = ((got - want).abs().max() / want.abs().max()).item()
        assert err < 1e-2, f"{name} {label}: relative error {err:.2e}"
        us = bench_us(fn, repeat=3)
        base = base or us
        print(f"  {label:<34} {us:7.1f} us  cuDNN/this {base / us:5.2f}x  (err {err:.1e})")


def main() -> None:
    print(torch.cuda.get_device_name(), f"cuDNN {torch.backends.cudnn.version()}")
    for row in ROWS:
        probe_row(*row)


if __name__ == "__main__":
    main()
