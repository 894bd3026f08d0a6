"""Who decides which kernel runs: tuning cache first, heuristics otherwise.

:func:`select` is called on every ``tileconv.conv2d``; its answer for a problem is kept
in a dict keyed by the problem and the device, so a shape seen before costs one lookup.
On the first sight of a problem it asks the tuning cache (:mod:`.cache`, filled by
``python -m tileconv tune``) for a measured winner on this device's GPU model and this
Triton version; without one, :mod:`.heuristics` decide.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import NamedTuple

import torch

from .. import call_plans
from .._runtime import INTERPRET
from ..kernels import (
    ALGORITHMS,
    BACKWARD_ALGORITHMS,
    Algorithm,
    BackwardAlgorithm,
    BackwardConfig,
    LaunchConfig,
    get_algorithm,
    get_backward_algorithm,
)
from ..problem import ConvProblem
from . import cache
from .candidates import fit_to_epilogue
from .heuristics import (
    choose_algorithm,
    choose_backward_algorithm,
    default_backward_config,
    default_config,
    grid_dgrad_config,
    prefers_subpixel_dgrad,
)

_selected: dict[tuple[ConvProblem, str, torch.device], tuple[Algorithm, LaunchConfig]] = {}


def _default_device() -> torch.device:
    """Where kernels run when the caller does not say: the current GPU, else the CPU."""
    if not INTERPRET and torch.cuda.is_available():
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def select(
    problem: ConvProblem,
    algo: str = "auto",
    device: torch.device | str | None = None,
) -> tuple[Algorithm, LaunchConfig]:
    """The algorithm and launch config for ``problem`` on ``device``.

    ``algo='auto'``: the tuned winner for this device's GPU model and Triton version if
    the cache has one, else the heuristics. A forced ``algo`` gets that algorithm's
    fastest tuned config if tuning measured it, else the heuristic config. ``device`` is
    the inputs' device (None: the current CUDA device, or the CPU); it matters because a
    process may drive GPUs of different models.
    """
    device = _default_device() if device is None else torch.device(device)
    if device.type == "cuda" and device.index is None:  # key by the GPU, not by "whichever is current"
        device = torch.device("cuda", torch.cuda.current_device())
    key = (problem, algo, device)
    hit = _selected.get(key)
    if hit is not None:
        return hit
    if _collecting is not None and problem not in _collecting:
        _collecting.append(problem)
    name = choose_algorithm(problem) if algo == "auto" else get_algorithm(algo).name
    config = None
    tuned = cache.lookup(problem, device)
    if tuned is not None:
        # A winner whose algorithm cannot compute the problem (a rule added since it was
        # tuned) is ignored rather than trusted; so is a teaching kernel (the seed's
        # ladder), which tuning never races but a hand-edited cache could name.
        winner = ALGORITHMS[tuned.algorithm]
        if algo == "auto" and not winner.teaching and winner.unsupported_reason(problem) is None:
            name, config = tuned.algorithm, tuned.config
        elif algo != "auto":
            config = tuned.per_algorithm.get(name)
    algorithm = ALGORITHMS[name]
    reason = algorithm.unsupported_reason(problem)
    if reason is not None:
        raise ValueError(f"algo={name!r} cannot compute {problem.describe()}: {reason}")
    config = fit_to_epilogue(problem, name, config if config is not None else default_config(problem, name), device)
    choice = (algorithm, config)
    _selected[key] = choice
    return choice


def select_backward(problem: ConvProblem, algo: str = "auto") -> BackwardAlgorithm:
    """The backward algorithm for ``problem``: ``algo`` by name, or the heuristics' choice
    (:func:`~tileconv.dispatch.heuristics.choose_backward_algorithm`), remembered per
    (problem, algo). Tuning picks its configs (:func:`backward_config`), not the algorithm;
    under 'auto' some dgrads run as a forward convolution instead (:func:`dgrad_route`)."""
    key = (problem, algo)
    hit = _backward_algorithms.get(key)
    if hit is not None:
        return hit
    algorithm = get_backward_algorithm(choose_backward_algorithm(problem) if algo == "auto" else algo)
    reason = algorithm.unsupported_reason(problem)
    if reason is not None:
        raise ValueError(f"backward algo={algorithm.name!r} cannot compute {problem.describe()}: {reason}")
    _backward_algorithms[key] = algorithm
    return algorithm


# select_backward's answers: a training step asks once a convolution a step, and the halo
# wgrad's unsupported_reason costs ~10 us of Python (a replayed call's whole budget is ~20).
_backward_algorithms: dict[tuple[ConvProblem, str], BackwardAlgorithm] = {}


_collecting: list[ConvProblem] | None = None


@contextlib.contextmanager
def collect_problems() -> Iterator[list[ConvProblem]]:
    """Within this block, every forward problem :func:`select` is asked about is also
    listed, once each, in the list the block gets (the remembered choices and replay
    plans are dropped first, so that each problem is asked about again):
    :func:`tileconv.tune_model` learns a model's convolutions this way."""
    global _collecting
    clear_selection_cache()
    seen: list[ConvProblem] = []
    _collecting = seen
    try:
        yield seen
    finally:
        _collecting = None


_backward_selected: dict[tuple, BackwardConfig] = {}


class DgradRoute(NamedTuple):
    """How ``auto`` dispatch runs a dgrad as a forward convolution (:func:`dgrad_route`)."""

    kind: str  # 'forward': dx itself; 'grid': onto dx[:, :, ::U, ::V]; 'subpixel': onto cells, then dx
    problem: ConvProblem  # the forward problem: tuned, selected and timed as any other
    # 'grid' where gemm_1x1 runs the forward problem: its tile, the zeros written by the same
    # launch (:func:`~tileconv.dispatch.heuristics.grid_dgrad_config`); None: a fill launch first
    fused_config: LaunchConfig | None = None


_dgrad_routes: dict[ConvProblem, DgradRoute | None] = {}


def dgrad_route(problem: ConvProblem) -> DgradRoute | None:
    """The forward convolution that ``auto`` dispatch runs for ``problem``'s input gradient,
    or None to run the output-phase dgrad kernel. Remembered per problem.

    - 'forward': a stride-1 dgrad is a forward convolution of the upstream gradient with
      the flipped, transposed weight (:meth:`ConvProblem.dgrad_as_forward`). Depthwise
      convolutions with a channel multiplier > 1 stay on the phase kernel (their forward
      form has K/C input channels per group: no depthwise kernel runs it).
    - 'grid': an unpadded strided 1x1's, onto every U-th row and V-th column of dx, the rest
      zero (:meth:`ConvProblem.dgrad_as_strided_forward`; H200, ResNet-50's three 1x1/2
      dgrads on the phase kernel: 0.73x-0.89x cuDNN).
    - 'subpixel': a strided dgrad (groups 1, no dilation), all U*V phases of a cell as one
      convolution's channels (:meth:`ConvProblem.dgrad_as_subpixel_forward`), where
      :func:`~tileconv.dispatch.heuristics.prefers_subpixel_dgrad` says so (most of the taps
      it multiplies are the filter's).

    Each then gets the forward's kernels, heuristics and tuning (``tune --pass dgrad``
    tunes the forward problem)."""
    if problem in _dgrad_routes:
        return _dgrad_routes[problem]
    route = None
    multiplier = problem.is_depthwise and problem.k != problem.c
    if (forward := problem.dgrad_as_forward()) is not None:
        route = None if multiplier else DgradRoute("forward", forward)
    elif (forward := problem.dgrad_as_strided_forward()) is not None:
        if not multiplier:
            fused = ALGORITHMS["gemm_1x1"].unsupported_reason(forward) is None
            route = DgradRoute("grid", forward, grid_dgrad_config(forward) if fused else None)
    elif (forward := problem.dgrad_as_subpixel_forward()) is not None and prefers_subpixel_dgrad(problem, forward):
        route = DgradRoute("subpixel", forward)
    _dgrad_routes[problem] = route
    return route


def dgrad_forward(problem: ConvProblem) -> ConvProblem | None:
    """The forward problem of :func:`dgrad_route` (None where the phase kernel runs)."""
    route = dgrad_route(problem)
    return None if route is None else route.problem


def same_kernel(algorithm: BackwardAlgorithm, gradient: str) -> set[str]:
    """The backward algorithms whose ``gradient`` launcher is ``algorithm``'s (the depthwise
    ones share their dgrad): a config tuned under any of them means the same kernel's tile."""
    return {name for name, other in BACKWARD_ALGORITHMS.items()
            if getattr(other, gradient) is getattr(algorithm, gradient)}


def backward_config(problem: ConvProblem, algorithm: BackwardAlgorithm, gradient: str) -> BackwardConfig:
    """The launch config of ``gradient`` ('dgrad' or 'wgrad') for ``algorithm``: the tuned
    one for this GPU model and Triton version if ``tileconv tune --pass`` measured it for
    the algorithm the dispatcher picks, else the heuristics'. Remembered per problem."""
    device = _default_device()
    key = (problem, algorithm.name, gradient, device)
    hit = _backward_selected.get(key)
    if hit is not None:
        return hit
    tuned = None
    if algorithm.name == choose_backward_algorithm(problem):
        tuned = cache.lookup_backward(problem, gradient, device, same_kernel(algorithm, gradient))
    config = tuned if tuned is not None else default_backward_config(problem, algorithm.name, gradient)
    _backward_selected[key] = config
    return config


def clear_selection_cache() -> None:
    """Forget every remembered choice and the parsed tuning cache (after tuning, or in tests)."""
    _selected.clear()
    _backward_selected.clear()
    _backward_algorithms.clear()
    _dgrad_routes.clear()
    cache.reload()
    call_plans.clear()
