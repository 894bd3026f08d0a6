"""Tuning the backward kernels: the dgrad and wgrad launch configs of each problem.

``tileconv.tune_backward(problems)`` and ``python -m tileconv tune --pass dgrad|wgrad|bwd``.
The heuristics size the backward configs from the forward's tiles; this races variants of
them (on an H200, ResNet-50: 1.24x-1.27x over the heuristics, geometric mean).

A dgrad that runs as a forward convolution (stride 1, an unpadded strided 1x1, a sub-pixel
one: :func:`tileconv.dispatch.dgrad_route`) is tuned as that forward problem with
:func:`tileconv.tune` (ResNet's such dgrads are often forward problems of the same suite,
tuned once for both). For every other
problem and gradient:

1. random inputs, weight and upstream gradient on the device; the float64 reference of
   both gradients from ``aten.convolution_backward`` on the same device;
2. the candidates of :func:`backward_candidates` for the backward algorithm the dispatcher
   picks (``implicit_gemm``, or ``depthwise`` for groups = C): the heuristics' config
   first, then tile, warp and stage variants and, for wgrad, split-K factors; each runs
   once into a NaN-filled gradient (compiling it) and is checked against the reference
   with :func:`tileconv.testing.tolerance` for its reduction length;
3. the correct ones are timed as CUDA-graph replays (:func:`.tune.cuda_timer`: the
   kernels' time, L2 flushed), the fastest is written to the tuning cache under the
   forward's key and ``|dgrad`` / ``|wgrad`` (:func:`.cache.backward_key`), where
   :func:`tileconv.dispatch.backward_config` finds it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import torch

from ..kernels import BackwardConfig, get_backward_algorithm
from ..kernels.backward import aten_convolution_backward
from ..kernels.config import WS_GATHER, WS_TMA
from ..kernels.wgrad_columns import MAX_ROW_COLUMNS, columns_split, row_columns
from ..kernels.wgrad_halo import MAX_SHARED_BYTES as MAX_HALO_WGRAD_SHARED_BYTES
from ..kernels.wgrad_halo import halo_wgrad_split, wgrad_halo_tiling
from ..kernels.wgrad_toeplitz import split_rows as toeplitz_wgrad_split
from ..kernels.wgrad_ws import (
    input_by_tma,
    input_is_pixel_matrix,
    slice_tiles_fit,
    wgrad_ws_unsupported_reason,
)
from ..problem import ConvProblem, weight_gradient_layout
from ..testing import random_inputs, tolerance
from . import cache, clear_selection_cache, dgrad_forward, same_kernel
from .heuristics import (
    WS_WGRAD_SLICED,
    choose_backward_algorithm,
    default_backward_config,
    triton_wgrad_config,
    ws_wgrad_config,
)
from .tune import (
    Timer,
    TuneResult,
    _confirm,
    _describe_error,
    _device_context,
    _resolve_device,
    _wrong_result,
    cuda_timer,
    wall_clock_timer,
)
from .tune import tune as tune_forward

GRADIENTS = ("dgrad", "wgrad")
DEFAULT_MAX_CANDIDATES = 12


def backward_candidates(problem: ConvProblem, algorithm: str, gradient: str,
                        limit: int = DEFAULT_MAX_CANDIDATES) -> list[BackwardConfig]:
    """The configs raced for ``gradient`` of ``problem`` on ``algorithm``: the heuristics'
    own first, then variants of it (tile sizes halved and doubled up to 256 and down to 16,
    or to the heuristics' own narrower CUDA-core tile, 4 or 8
    warps, 2 to 4 stages; for wgrad split-K of 1, 4, 16 beside the launcher's own
    choice), without duplicates, at most ``limit``."""
    base = default_backward_config(problem, algorithm, gradient)
    if algorithm == "depthwise_halo" and gradient == "wgrad":
        return _halo_wgrad_candidates(problem, base, limit)
    if algorithm == "depthwise_toeplitz" and gradient == "wgrad":
        return _toeplitz_wgrad_candidates(problem, base, limit)
    if algorithm == "im2row" and gradient == "wgrad":
        return _columns_wgrad_candidates(problem, base, limit)
    variants: list[BackwardConfig] = [base]
    smallest = min(16, base.block_m, base.block_n)  # tl.dot's 16, or a CUDA-core kernel's narrower tile

    def add(config: BackwardConfig) -> None:
        if config not in variants and all(smallest <= v <= 256 for v in (config.block_m, config.block_n)):
            variants.append(config)

    if gradient == "wgrad" and algorithm == "implicit_gemm" and wgrad_ws_unsupported_reason(problem) is None:
        # The warp-specialized kernel's tiles and the Triton kernel's, whichever the heuristics chose.
        # The small ones (two programs an SM) serve small gradients: more tiles need fewer
        # splits to fill the GPU, so fewer fp32 partial sums to write and add up.
        for config in (ws_wgrad_config(problem), *_ws_wgrad_tiles(problem)):
            add(config)
        if base.ws:  # the Triton kernel's own tile, whose variants follow
            base = triton_wgrad_config(problem)
            add(base)
    if gradient == "wgrad":  # the reduction over N*P*Q: how many programs share it matters most
        for split in (1, 4, 16):
            add(replace(base, split_k=split))
    for field_name in ("block_m", "block_n"):
        value = getattr(base, field_name)
        add(replace(base, **{field_name: value * 2}))
        add(replace(base, **{field_name: value // 2}))
    if algorithm not in ("depthwise", "depthwise_halo", "depthwise_toeplitz"):
        add(replace(base, block_k=32 if base.block_k == 64 else 64))
        add(replace(base, num_stages=2 if base.num_stages >= 3 else 3))
        add(replace(base, num_stages=4))
    add(replace(base, num_warps=8 if base.num_warps == 4 else 4))
    return variants[:limit]


def _ws_wgrad_tiles(problem: ConvProblem) -> tuple[BackwardConfig, ...]:
    """The warp-specialized wgrad's tiles raced beside its heuristics' own (H200, session 39:
    ``heuristics.ws_wgrad_config`` has the measurements). A 1x1 stride-1 filter (the input by
    TMA as a matrix): deep rings of small tiles (64x64 won c256 hw56 k64). Where the input could
    come by TMA in boxes of rows: both copies at the tiles that won one of ResNet-50's rows.
    Gathering only: four and six stages at 128x128, four at three more tile shapes, and eight at
    64x128. Where K fills them (:func:`~tileconv.kernels.wgrad_ws.slice_tiles_fit`), 192x128
    tiles on three MMA warpgroups, gathered (and by TMA where it can); not for the pixel matrix,
    whose split sums they multiply (session 41: 1.15x-1.7x slower there)."""
    def ws(block_m, block_n, block_k, warps, stages, copy):
        return BackwardConfig(block_m, block_n, block_k, 0, warps, stages, ws=copy)

    if input_is_pixel_matrix(problem):
        return ws(64, 64, 64, 4, 8, WS_TMA), ws(128, 128, 64, 4, 6, WS_TMA), ws(64, 128, 32, 4, 12, WS_TMA)
    sliced = (WS_WGRAD_SLICED,) if slice_tiles_fit(problem.k) else ()
    if input_by_tma(problem):
        return (ws(128, 128, 64, 4, 6, WS_TMA), ws(64, 128, 64, 4, 8, WS_GATHER), ws(64, 128, 64, 4, 8, WS_TMA),
                ws(128, 128, 64, 4, 6, WS_GATHER), ws(256, 128, 32, 8, 6, WS_GATHER), ws(128, 128, 64, 4, 4, WS_TMA),
                *sliced, *(replace(c, ws=WS_TMA) for c in sliced))
    return (ws(128, 128, 64, 4, 6, WS_GATHER), ws(128, 128, 64, 4, 4, WS_GATHER), ws(256, 128, 32, 8, 6, WS_GATHER),
            ws(128, 128, 64, 8, 4, WS_GATHER), ws(64, 64, 64, 4, 4, WS_GATHER), ws(64, 128, 64, 4, 4, WS_GATHER),
            ws(64, 128, 64, 4, 8, WS_GATHER), *sliced)


def _halo_wgrad_candidates(problem: ConvProblem, base: BackwardConfig, limit: int) -> list[BackwardConfig]:
    """The halo wgrad's variants (:mod:`tileconv.kernels.wgrad_halo`): the heuristics' tile,
    with the other buffer count, then half and twice the split-K the launcher picks, all
    the filter's rows or one a program, other tiles (8x8, 4x8, 8x4, 4x4 pixels) single- and
    double-buffered, 32 and 64 channels a warp, two warps; each only if its accumulators and
    shared memory fit."""
    _, split = halo_wgrad_split(problem, base)
    variants: list[BackwardConfig] = [base]
    other = replace(base, num_stages=3 - base.num_stages)

    def add(config: BackwardConfig) -> None:
        try:
            tiling = wgrad_halo_tiling(problem, config)
        except ValueError:
            return
        if config not in variants and tiling.shared_bytes(problem) <= MAX_HALO_WGRAD_SHARED_BYTES:
            variants.append(config)

    add(other)
    for factor in (0.5, 2):
        add(replace(base, split_k=max(1, round(split * factor))))
    for rows in (0, 1):  # every filter row a program, or one
        add(replace(base, tap_rows=rows))
    for block_m, block_k in ((64, 8), (32, 8), (32, 4), (16, 4)):
        add(replace(base, block_m=block_m, block_k=block_k))
        add(replace(other, block_m=block_m, block_k=block_k))
    for block_n in (32, 64):
        add(replace(base, block_n=block_n))
    add(replace(base, block_n=base.block_n * 2, num_warps=2))
    return variants[:limit]


def _toeplitz_wgrad_candidates(problem: ConvProblem, base: BackwardConfig, limit: int) -> list[BackwardConfig]:
    """The Toeplitz wgrad's variants (:mod:`tileconv.kernels.wgrad_toeplitz`): the heuristics'
    launch, then half and twice its split-K, 16 to 64 input columns a step, 1, 2 and 4 warps,
    2 and 4 stages."""
    _, split = toeplitz_wgrad_split(problem, base)
    return _field_variants(base, split, lambda config: True, limit,
                           block_k=(16, 32, 64), num_warps=(1, 2, 4), num_stages=(2, 4))


def _columns_wgrad_candidates(problem: ConvProblem, base: BackwardConfig, limit: int) -> list[BackwardConfig]:
    """The columns wgrad's variants (:mod:`tileconv.kernels.wgrad_columns`): the heuristics'
    tile, then half and twice the split-K the launcher picks, 32 to 128 pixels a step, 2, 4
    and 6 stages, half and twice the column tile (whole filter rows still), 8 warps."""
    _, _, split = columns_split(problem, base)

    def whole_rows(config: BackwardConfig) -> bool:
        return config.block_n % row_columns(problem) == 0 and 16 <= config.block_n <= MAX_ROW_COLUMNS

    return _field_variants(base, split, whole_rows, limit, block_k=(32, 64, 128), num_stages=(2, 4, 6),
                           block_n=(base.block_n * 2, base.block_n // 2), num_warps=(8,))


def _field_variants(base: BackwardConfig, split: int, valid: Callable[[BackwardConfig], bool], limit: int,
                    **values: tuple[int, ...]) -> list[BackwardConfig]:
    """``base``, then half and twice ``split`` (the launcher's split-K), then ``base`` with each
    field of ``values`` set to each of its values in turn: those ``valid`` accepts, without
    duplicates, at most ``limit``."""
    variants: list[BackwardConfig] = [base]
    for config in [replace(base, split_k=max(1, round(split * factor))) for factor in (0.5, 2)] + [
            replace(base, **{name: value}) for name, options in values.items() for value in options]:
        if config not in variants and valid(config):
            variants.append(config)
    return variants[:limit]


@dataclass
class BackwardTuneResult:
    """What tuning did for one (problem, gradient)."""

    problem: ConvProblem
    gradient: str
    key: str
    status: str  # "tuned", "cached" or "failed"
    algorithm: str | None = None
    config: BackwardConfig | None = None
    time_ms: float | None = None
    default_ms: float | None = None
    timings: list[tuple[BackwardConfig, float]] = field(default_factory=list)
    rejected: list[tuple[BackwardConfig, str]] = field(default_factory=list)
    message: str = ""  # why it failed
    seconds: float = 0.0
    # dgrad run as a forward convolution (:func:`tileconv.dispatch.dgrad_forward`): the
    # forward tuning of that problem, whose winner the dgrad then uses.
    forward: TuneResult | None = None

    @property
    def speedup(self) -> float | None:
        if self.status != "tuned" or not self.time_ms or not self.default_ms:
            return None
        return self.default_ms / self.time_ms


def _gradient_buffer(problem: ConvProblem, gradient: str, weight: torch.Tensor) -> torch.Tensor:
    """The gradient's output, NaN-filled, in the layout a call gives it (the input's for dgrad,
    :func:`~tileconv.problem.weight_gradient_layout` for wgrad): a wgrad tuned into another
    layout would time a reordering pass that calls do not make."""
    shape, layout = ((problem.input_shape, problem.layout) if gradient == "dgrad"
                     else (problem.weight_shape, weight_gradient_layout(problem, weight)))
    fmt = torch.channels_last if layout == "nhwc" else torch.contiguous_format
    out = torch.empty(shape, dtype=problem.dtype, device=weight.device, memory_format=fmt)
    return out.fill_(float("nan"))


def _tune_gradient(problem: ConvProblem, gradient: str, key: str, device: torch.device, timer: Timer,
                   max_candidates: int, seed: int) -> BackwardTuneResult:
    algorithm = get_backward_algorithm(choose_backward_algorithm(problem))
    launcher = algorithm.dgrad if gradient == "dgrad" else algorithm.wgrad
    result = BackwardTuneResult(problem, gradient, key, "failed", algorithm.name)
    inputs = random_inputs(problem, device, seed, draw_on_device=device.type == "cuda")
    fmt = torch.channels_last if problem.layout == "nhwc" else torch.contiguous_format
    generator = torch.Generator(device=device).manual_seed(seed + 1)
    grad = torch.randn(problem.output_shape, generator=generator, device=device, dtype=torch.float32)
    grad = grad.to(problem.dtype).contiguous(memory_format=fmt)
    need_x, need_w = gradient == "dgrad", gradient == "wgrad"
    ref_x, ref_w = aten_convolution_backward(problem, grad.double(), inputs.x.double(), inputs.weight.double(),
                                             need_x, need_w)
    reference = ref_x if need_x else ref_w
    tol = tolerance(problem, problem.k_per_group * problem.r * problem.s if need_x else problem.gemm_m)
    operand = inputs.weight if need_x else inputs.x
    out = _gradient_buffer(problem, gradient, inputs.weight)
    launches = []  # launches[i] ran result.timings[i]
    for index, config in enumerate(backward_candidates(problem, algorithm.name, gradient, max_candidates)):
        def launch(config=config) -> None:
            launcher(problem, grad, operand, out, config)

        try:
            out.fill_(float("nan"))
            launch()
            why = _wrong_result(out, reference, tol)
            if why is None:
                ms = timer(launch)
        except Exception as err:  # noqa: BLE001 - a failing candidate is rejected, not fatal
            why = _describe_error(err)
        if why is not None:
            result.rejected.append((config, why))
            continue
        launches.append(launch)
        result.timings.append((config, ms))
        if index == 0:
            result.default_ms = ms
    if not result.timings:
        result.message = "; ".join(f"{c}: {why}" for c, why in result.rejected[:3]) or "no candidate"
        return result
    rows = [(algorithm.name, config, ms) for config, ms in result.timings]
    _, result.config, result.time_ms = _confirm(rows, launches, timer)
    result.timings = [(config, ms) for _, config, ms in rows]  # the confirmed medians, as the forward keeps
    result.status = "tuned"
    return result


def _tune_as_forward(problem: ConvProblem, forward: ConvProblem, device: torch.device, timer: Timer, force: bool,
                     max_candidates: int, seed: int, store: bool) -> BackwardTuneResult:
    """dgrad of ``problem`` runs as the forward convolution ``forward``: tune that."""
    (tuned,) = tune_forward([forward], device=device, force=force, max_candidates=max_candidates, timer=timer,
                            progress=False, seed=seed, store=store)
    return BackwardTuneResult(
        problem, "dgrad", tuned.key, tuned.status, algorithm=f"forward {tuned.algorithm}",
        time_ms=tuned.time_ms, default_ms=tuned.default_ms, message=tuned.message, forward=tuned,
    )


def tune_backward(
    problems: Sequence[ConvProblem],
    *,
    gradients: Sequence[str] = GRADIENTS,
    device: torch.device | str | int | None = None,
    force: bool = False,
    max_candidates: int = DEFAULT_MAX_CANDIDATES,
    timer: Timer | None = None,
    seed: int = 0,
    store: bool = True,
    report: Callable[[BackwardTuneResult], None] | None = None,
) -> list[BackwardTuneResult]:
    """Measure dgrad / wgrad configs for each problem and keep the fastest correct one in
    the tuning cache (see the module's docstring). ``gradients``: which of 'dgrad' and
    'wgrad'; ``force`` re-measures cached ones; ``timer(fn) -> ms`` (default: CUDA-graph
    replays on a GPU, wall clock on the CPU under the interpreter); ``report`` is called
    with each result as it is done. Returns one result per distinct (problem, gradient).
    Problems whose backward runs on PyTorch's ``aten`` are skipped."""
    for gradient in gradients:
        if gradient not in GRADIENTS:
            raise ValueError(f"gradients={tuple(gradients)!r}: each must be 'dgrad' or 'wgrad'")
    device = _resolve_device(device)
    timer = timer or (cuda_timer if device.type == "cuda" else wall_clock_timer)
    name = cache.device_name(device)
    cache.reload()
    seen: set[str] = set()
    results = []
    with _device_context(device):
        for problem in problems:
            for gradient in gradients:
                key = cache.backward_key(problem, name, gradient)
                if key in seen:
                    continue
                seen.add(key)
                start = time.perf_counter()
                forward = dgrad_forward(problem) if gradient == "dgrad" else None
                if forward is not None:
                    result = _tune_as_forward(problem, forward, device, timer, force, max_candidates, seed, store)
                    result.seconds = time.perf_counter() - start
                    results.append(result)
                    if report is not None:
                        report(result)
                    continue
                cached = None if force else cache.lookup_backward(
                        problem, gradient, device,
                        same_kernel(get_backward_algorithm(choose_backward_algorithm(problem)), gradient),
                        sibling=False)
                if cached is not None:
                    result = BackwardTuneResult(problem, gradient, key, "cached", config=cached)
                elif problem.n == 0:
                    result = BackwardTuneResult(problem, gradient, key, "failed",
                                                message="an empty batch has nothing to measure")
                else:
                    result = _tune_gradient(problem, gradient, key, device, timer, max_candidates, seed)
                    if result.status == "tuned" and store:
                        cache.store({key: cache.make_backward_entry(
                            result.algorithm, result.config, gradient, time_ms=result.time_ms,
                            default_ms=result.default_ms, problem=problem)})
                result.seconds = time.perf_counter() - start
                results.append(result)
                if report is not None:
                    report(result)
    clear_selection_cache()
    return results


def result_line(result: BackwardTuneResult) -> str:
    """One line for the command line's log."""
    what = f"{result.gradient} {result.problem.describe()} {result.problem.dtype_name} {result.problem.layout}"
    if result.status == "failed":
        return f"FAILED {what}: {result.message}"
    config = result.config if result.forward is None else result.forward.config
    if result.status == "cached":
        return f"cached {what}: {result.algorithm or ''} {config}"
    speedup = f", {result.speedup:.2f}x the heuristics" if result.speedup else ""
    timed, rejected = (result.timings, result.rejected) if result.forward is None else (
        result.forward.timings, result.forward.rejected)
    return (f"tuned  {what}: {result.algorithm} {config} {result.time_ms * 1e3:.1f} us{speedup} "
            f"({len(timed)} timed, {len(rejected)} rejected, {result.seconds:.1f} s)")
