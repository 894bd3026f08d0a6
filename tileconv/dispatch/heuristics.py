"""Which algorithm and launch config a problem gets when nothing has been tuned for it.

The rules are deliberately few; each says why. ``tileconv tune`` measures candidates and
its winners (in :mod:`tileconv.dispatch.cache`) override everything here.
"""

from __future__ import annotations

import triton

from .._runtime import INTERPRET
from ..kernels import LaunchConfig
from ..problem import ConvProblem

# A tensor-core tile needs >= 16 along N and along each tap's channel slice; below that a
# GEMM tile is mostly zero padding and the CUDA cores do the work with less waste.
MIN_TENSOR_CORE_DIM = 16


def choose_algorithm(problem: ConvProblem) -> str:
    """'direct' for depthwise, thin groups and few channels; else 'implicit_gemm'."""
    if problem.k_per_group < MIN_TENSOR_CORE_DIM // 2 or problem.c_per_group < MIN_TENSOR_CORE_DIM // 2:
        return "direct"
    return "implicit_gemm"


def _pow2_between(value: int, low: int, high: int) -> int:
    return max(low, min(high, triton.next_power_of_2(max(value, 1))))


def default_config(problem: ConvProblem, algorithm: str) -> LaunchConfig:
    """A sound config for ``algorithm`` on ``problem`` without measuring."""
    if INTERPRET:
        # The interpreter's cost is per program and per loop step: few, large tiles.
        if algorithm == "direct":
            return LaunchConfig(block_m=64, block_n=_pow2_between(problem.k, 4, 32), num_warps=1)
        return LaunchConfig(
            block_m=32, block_n=_pow2_between(problem.gemm_n, 16, 32),
            block_k=_pow2_between(problem.c_per_group, 16, 32), num_warps=1, num_stages=1,
        )
    if algorithm == "direct":
        # Channels are the contiguous axis in NHWC: a wide channel tile gives wide loads.
        block_n = _pow2_between(problem.k, 8, 64 if problem.layout == "nhwc" else 16)
        return LaunchConfig(block_m=128 if block_n <= 16 else 64, block_n=block_n, num_warps=4, num_stages=1)
    fp32_strict = problem.itemsize == 4 and not problem.allow_tf32
    block_n = _pow2_between(problem.gemm_n, 16, 128)
    block_k = _pow2_between(problem.c_per_group, 16, 32 if problem.itemsize == 4 else 64)
    # Small M (late ResNet stages, small batch) fills the GPU with narrower tiles.
    block_m = 128 if problem.gemm_m * problem.groups >= 128 * 132 else 64
    if fp32_strict:
        block_k = min(block_k, 32)
    num_warps = 8 if block_m * block_n >= 128 * 128 else 4
    return LaunchConfig(block_m=block_m, block_n=block_n, block_k=block_k, group_m=8,
                        num_warps=num_warps, num_stages=3 if problem.itemsize == 4 else 4)
