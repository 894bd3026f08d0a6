"""tileconv's kernels and the registry that names them.

Each algorithm is a Triton kernel plus its launcher, in a module of its own:

- ``implicit_gemm`` (:mod:`.implicit_gemm`): tensor-core implicit GEMM, every problem.
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
from .launch import launch_direct, launch_implicit_gemm


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


ALGORITHMS: dict[str, Algorithm] = {
    "implicit_gemm": Algorithm(
        "implicit_gemm",
        "tensor-core implicit GEMM (tl.dot), every problem",
        launch_implicit_gemm,
        _always,
    ),
    "direct": Algorithm(
        "direct",
        "CUDA-core direct convolution: depthwise, grouped, few channels",
        launch_direct,
        _always,
    ),
}


def get_algorithm(name: str) -> Algorithm:
    if name not in ALGORITHMS:
        raise ValueError(f"algo={name!r} is not a tileconv algorithm; known: {', '.join(ALGORITHMS)}")
    return ALGORITHMS[name]


__all__ = ["ALGORITHMS", "Algorithm", "LaunchConfig", "get_algorithm"]
