"""tileconv's kernels and the registry that names them.

Each algorithm is a Triton kernel plus its launcher, in a module of its own:

- ``implicit_gemm`` (:mod:`.implicit_gemm`): tensor-core implicit GEMM, every problem.
- ``grouped_gemm`` (:mod:`.launch`): the implicit GEMM over several groups merged into
  one, with a block-diagonal weight, for grouped convolutions with thin groups.
- ``depthwise`` (:mod:`.depthwise`): CUDA-core depthwise convolution, any multiplier.
- ``direct`` (:mod:`.direct`): CUDA-core direct convolution for depthwise, grouped and
  few-channel problems.

Launch choices are data (:class:`LaunchConfig`), so that tests can pin them to reach
every code path and the tuning cache can store them. Who picks the algorithm and the
config is :mod:`tileconv.dispatch`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..problem import ConvProblem
from .config import LaunchConfig
from .launch import (
    group_pack_factor,
    launch_depthwise,
    launch_direct,
    launch_grouped_gemm,
    launch_implicit_gemm,
)


Launcher = Callable[..., None]


@dataclass(frozen=True)
class Algorithm:
    """A named kernel: what it computes well, and how to launch it."""

    name: str
    summary: str
    launch: Launcher  # launch(problem, x, weight, bias, residual, out, config)
    # None if the algorithm computes ``problem``; else why not (shown to users).
    unsupported_reason: Callable[[ConvProblem], str | None]


def _always(problem: ConvProblem) -> str | None:
    return None


def _depthwise_only(problem: ConvProblem) -> str | None:
    if problem.c_per_group != 1 or problem.groups != problem.c:
        return "it needs groups == C (one input channel per group)"
    return None


def _grouped_only(problem: ConvProblem) -> str | None:
    if problem.groups == 1:
        return "it merges groups, and this problem has groups=1"
    if group_pack_factor(problem) == 1:
        return "its groups are already wide enough to fill a tensor-core tile"
    return None


ALGORITHMS: dict[str, Algorithm] = {
    "implicit_gemm": Algorithm(
        "implicit_gemm",
        "tensor-core implicit GEMM (tl.dot), every problem",
        launch_implicit_gemm,
        _always,
    ),
    "grouped_gemm": Algorithm(
        "grouped_gemm",
        "implicit GEMM over merged groups with a block-diagonal weight (thin groups)",
        launch_grouped_gemm,
        _grouped_only,
    ),
    "depthwise": Algorithm(
        "depthwise",
        "CUDA-core depthwise convolution over 2D pixel tiles (groups = C)",
        launch_depthwise,
        _depthwise_only,
    ),
    "direct": Algorithm(
        "direct",
        "CUDA-core direct convolution: depthwise, grouped, few channels",
        launch_direct,
        _always,
    ),
}


def supported_algorithms(problem: ConvProblem) -> list[str]:
    """Names of the algorithms that can compute ``problem``, in registry order."""
    return [name for name, algo in ALGORITHMS.items() if algo.unsupported_reason(problem) is None]


def get_algorithm(name: str) -> Algorithm:
    if name not in ALGORITHMS:
        raise ValueError(f"algo={name!r} is not a tileconv algorithm; known: {', '.join(ALGORITHMS)}")
    return ALGORITHMS[name]


__all__ = ["ALGORITHMS", "Algorithm", "LaunchConfig", "get_algorithm", "supported_algorithms"]
