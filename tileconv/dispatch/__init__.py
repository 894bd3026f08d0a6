"""Who decides which kernel runs: tuning cache first, heuristics otherwise.

:func:`select` is called on every ``tileconv.conv2d``; its answer for a problem is kept
in a dict keyed by the problem, so a shape seen before costs one lookup.
"""

from __future__ import annotations

from ..kernels import ALGORITHMS, Algorithm, LaunchConfig, get_algorithm
from ..problem import ConvProblem
from .heuristics import choose_algorithm, default_config

_selected: dict[tuple[ConvProblem, str], tuple[Algorithm, LaunchConfig]] = {}


def select(problem: ConvProblem, algo: str = "auto") -> tuple[Algorithm, LaunchConfig]:
    """The algorithm and launch config for ``problem``; ``algo`` forces an algorithm."""
    key = (problem, algo)
    hit = _selected.get(key)
    if hit is not None:
        return hit
    if algo == "auto":
        name = choose_algorithm(problem)
    else:
        name = get_algorithm(algo).name
    algorithm = ALGORITHMS[name]
    reason = algorithm.unsupported_reason(problem)
    if reason is not None:
        raise ValueError(f"algo={name!r} cannot compute {problem.describe()}: {reason}")
    choice = (algorithm, default_config(problem, name))
    _selected[key] = choice
    return choice


def clear_selection_cache() -> None:
    """Forget every remembered choice (after tuning, or in tests)."""
    _selected.clear()
