"""The launch configs ``tileconv tune`` measures for a problem: one place, short lists.

Tuning a whole suite has to fit in about a minute including Triton's compiles, so each
problem gets at most a dozen candidates, chosen and ordered before anything runs:

- a base list per algorithm (and, for the GEMMs, per dtype class): the shapes that win
  Triton's GEMM tutorial and tileconv's probes on Hopper, e.g. 128x128/128x256 tiles with
  64-deep steps for 16-bit inputs, half the depth for TF32, small tiles for strict fp32;
- each base config is fitted to the problem: for the GEMMs ``block_n`` no wider than the
  group's output channels and ``block_k`` no deeper than one reduction slice (the group's
  channels, or filter-row x channels when the heuristics fuse them), both rounded up to a
  power of two and at least 16 (``tl.dot``), ``block_m`` no taller than the output pixels;
  then pipeline stages are dropped until the operand ring fits the shared memory
  (``stages * (BM*BK + BK*BN) * itemsize``), and a config that still does not fit is
  dropped. CUDA-core kernels keep their accumulators within 64 registers a thread;
- every candidate starts from the heuristics' config for its algorithm and changes only
  the tile fields, so fields the heuristics decide by rule (``fuse_sc``) stay consistent;
- duplicates that fitting produced are merged, and GEMM configs are ordered by a rough
  efficiency score (useful fraction of each tile x fullness of the last wave), so that a
  time limit cuts the least promising ones; algorithms take turns in the final list;
- the heuristics' own choice always comes first: it is the baseline the winner must beat.

Which algorithms race (:func:`algorithms_to_try`): every one that supports the problem,
except ``implicit_gemm`` where its smallest tensor-core tile would be under 1/16 useful
(depthwise), ``direct`` (the general CUDA-core fallback) where the problem is not thin,
and the teaching kernels (the seed's ladder), never.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import torch
import triton

from .._runtime import pow2_at_least
from ..kernels import ALGORITHMS, LaunchConfig
from ..kernels.launch import (
    MAX_DENSE_TOEPLITZ_COLUMNS,
    MAX_DENSE_TOEPLITZ_VALUES,
    MAX_HALO_SHARED_BYTES,
    MAX_TOEPLITZ_REACH,
    dense_toeplitz_tiling,
    direct_rows_block_k,
    direct_rows_pairs_rows,
    group_pack_factor,
    grouped_halo_tiling,
    grouped_ws_merged,
    grouped_ws_sub_groups,
    halo_tiling,
    image_fits,
    plane_sizes,
    resident_unsupported_reason,
    toeplitz_reach,
    window_strips,
)
from ..problem import ConvProblem
from .heuristics import (
    DIRECT_ROWS_ACCUMULATORS,
    MAX_BANDED_ACCUMULATORS,
    MIN_TENSOR_CORE_DIM,
    choose_algorithm,
    default_config,
    depthwise_window_config,
    direct_rows_config,
    fit_frame_stages,
    frame_tiling_or_none,
    reduction_steps,
    slice_length,
)

# Hopper (H100 SXM): 132 SMs, 227 KB of shared memory per block (opt-in). Used when the
# device cannot be asked (CPU runs), so that tests see the lists an H100 gets.
H100_SMS = 132
H100_SHARED_MEMORY = 232448

# Fraction of a block's shared memory the operand ring may take: the rest is left for
# the barriers and the epilogue's layout conversion scratch (Triton reuses the ring for
# it when it can, not always).
SHARED_MEMORY_FRACTION = 0.9

# tl.dot needs every tile dimension >= 16.
MIN_DOT_DIM = 16

DEFAULT_MAX_CANDIDATES = 12

# CUDA-core kernels keep a BLOCK_M x BLOCK_N fp32 accumulator in registers: at most this
# many values per thread, so that the kernel does not spill.
MAX_ACCUMULATORS_PER_THREAD = 64

# (block_m, block_n, block_k, num_warps, num_stages) for 16-bit and TF32 inputs, best first
# on an H100 for large problems; TF32 halves block_k (the same bytes per step).
_GEMM_BASE: tuple[tuple[int, int, int, int, int], ...] = (
    (128, 128, 64, 8, 3),
    (128, 256, 64, 8, 3),
    (256, 128, 64, 8, 3),
    (128, 128, 64, 4, 4),
    (128, 64, 64, 4, 4),
    (64, 128, 64, 4, 4),
    (128, 128, 32, 4, 4),
    (64, 64, 64, 4, 4),
    (128, 64, 32, 4, 4),
    (64, 64, 32, 4, 5),
)
# TF32 tiles stepping 64 channels (256 bytes a row, half the steps of the halved block_k):
# raced beside the halved ones. H200, session 17 (benchmarks/probe.py tf32k, ResNet-50 TF32
# NHWC at batch 32): implicit_gemm_ws 64x128x64 at 4 warps and 3 stages took c512 hw7 3x3 from
# 53.3 us tuned to 46.6, c512 hw14 3x3/2 53.5 -> 49.8, c128 hw28 3x3 47.8 -> 44.2; gemm_1x1's
# persistent 64x128x64 c128 hw28 k512 29.4 -> 25.4; 16-channel steps in an 8-deep ring won two
# 1x1 rows by 1-2%.
_GEMM_BASE_TF32_DEEP: tuple[tuple[int, int, int, int, int], ...] = (
    (64, 128, 64, 4, 3),
    (128, 64, 64, 4, 3),
    (128, 128, 16, 4, 8),
)
# Strict fp32: chosen when its dot ran on the CUDA cores (IEEE: accumulator and both operand
# tiles in registers, so small tiles). It now runs as 3xTF32 on the tensor cores (see
# kernels.config.dot_constexprs), where these still measured 1.37x-1.45x cuDNN's strict fp32;
# the 16-bit tile sizes have not been raced for it yet.
_GEMM_BASE_FP32_STRICT: tuple[tuple[int, int, int, int, int], ...] = (
    (64, 64, 32, 4, 3),
    (128, 64, 32, 8, 3),
    (64, 128, 32, 8, 3),
    (128, 128, 32, 8, 2),
    (32, 64, 32, 4, 3),
    (64, 32, 32, 4, 3),
)
# tma_rows (block_m, block_n, block_k, num_warps, num_stages, persistent), 16-bit and fp32:
# the winners of benchmarks/probe_tma.py on an H200 (2026-11-23), best first.
_TMA_ROWS_BASE: tuple[tuple[int, int, int, int, int, int], ...] = (
    (128, 256, 64, 8, 3, 1), (128, 128, 64, 4, 4, 1), (64, 256, 64, 8, 4, 1), (64, 128, 64, 4, 5, 1),
    (128, 128, 32, 4, 5, 1), (128, 128, 32, 4, 5, 0), (256, 128, 64, 8, 3, 1), (128, 128, 64, 4, 4, 0),
)
_TMA_ROWS_BASE_FP32: tuple[tuple[int, int, int, int, int, int], ...] = (
    (128, 128, 32, 4, 4, 1), (64, 128, 32, 4, 5, 1), (128, 256, 32, 8, 3, 0), (128, 128, 32, 4, 4, 0),
    (64, 128, 32, 4, 5, 0), (128, 256, 32, 8, 3, 1),
)
# Direct kernel (block_m pixels, block_n channels, num_warps). Channels are the contiguous
# axis in NHWC (wide channel tiles, wide loads); in NCHW pixels are (tall pixel tiles).
_DIRECT_BASE_NHWC: tuple[tuple[int, int, int], ...] = (
    (64, 64, 4), (128, 32, 4), (32, 128, 4), (128, 64, 8), (256, 16, 4), (64, 32, 2),
)
_DIRECT_BASE_NCHW: tuple[tuple[int, int, int], ...] = (
    (128, 16, 4), (256, 8, 4), (256, 16, 8), (512, 8, 8), (128, 32, 4), (64, 64, 4),
)
# Depthwise kernel (channels, tile width in pixels, tile size in pixels x channels,
# num_warps). The tile is (size / channels) pixels, ``width`` of them per row; wider rows
# share more of each tap's input window through L1.
_DEPTHWISE_BASE_NHWC: tuple[tuple[int, int, int, int], ...] = (
    (64, 8, 2048, 4), (64, 16, 4096, 8), (32, 8, 2048, 4), (128, 8, 4096, 4), (32, 16, 1024, 4),
    (64, 4, 1024, 2),
)
_DEPTHWISE_BASE_NCHW: tuple[tuple[int, int, int, int], ...] = (
    (8, 32, 1024, 4), (8, 16, 1024, 4), (16, 32, 2048, 4), (4, 32, 1024, 4), (8, 32, 2048, 8),
    (16, 16, 1024, 4),
)


@dataclass(frozen=True)
class DeviceLimits:
    """What the candidates are fitted to: SM count and shared memory per block."""

    num_sms: int = H100_SMS
    shared_memory_bytes: int = H100_SHARED_MEMORY

    @property
    def shared_memory_budget(self) -> int:
        return int(self.shared_memory_bytes * SHARED_MEMORY_FRACTION)

    @property
    def bulk_copy_budget(self) -> int:
        """Shared memory the TMA kernels' tiles (ring and output tile) may take: they need no
        layout-conversion scratch, so nearly all of it (a 128x256x64 3-stage persistent fp16
        config compiles to 213.5 KB)."""
        return self.shared_memory_bytes - TMA_ROWS_BARRIER_BYTES

    @classmethod
    def of(cls, device: torch.device | str | None) -> DeviceLimits:
        """The limits of a CUDA device; H100 values for anything else."""
        device = torch.device(device) if device is not None else None
        if device is None or device.type != "cuda":
            return cls()
        index = device.index if device.index is not None else torch.cuda.current_device()
        props = torch.cuda.get_device_properties(index)
        smem = getattr(props, "shared_memory_per_block_optin", 0)
        if not smem:  # older torch: ask Triton's driver
            try:
                smem = triton.runtime.driver.active.utils.get_device_properties(index)["max_shared_mem"]
            except Exception:  # noqa: BLE001 - any failure: assume the H100's
                smem = H100_SHARED_MEMORY
        return cls(num_sms=props.multi_processor_count, shared_memory_bytes=int(smem))




# --------------------------------------------------------------------- the GEMMs
def gemm_problem(problem: ConvProblem, algorithm: str) -> ConvProblem:
    """The problem whose GEMM ``algorithm`` runs: grouped_gemm (and grouped_gemm_ws, grouped_frame) merges groups,
    im2row (and im2row_ws) unrolls the filter columns into channels."""
    if algorithm == "grouped_gemm":
        return replace(problem, groups=problem.groups // group_pack_factor(problem))
    if algorithm in ("grouped_gemm_ws", "grouped_frame"):
        return grouped_ws_merged(problem)
    if algorithm in ("im2row", "im2row_ws"):
        return problem.columns_as_channels()
    if algorithm == "staged_nhwc":
        return problem.staged_channels_last()
    return problem


def reduction_slice(problem: ConvProblem, config: LaunchConfig) -> int:
    """Length of one reduction slice that ``config``'s block_k steps through (see
    :func:`~tileconv.dispatch.heuristics.slice_length`)."""
    return slice_length(problem, getattr(config, "fuse_sc", 0))


def implicit_gemm_shared_memory(problem: ConvProblem, config: LaunchConfig) -> int:
    """Bytes of the operand ring: num_stages copies of an A (BM x BK) and a B (BK x BN) tile."""
    return config.ring_bytes(problem.itemsize, channels=problem.gemm_k)


def _fit_stages(config: LaunchConfig, shared_bytes: Callable[[LaunchConfig], int], budget: int) -> LaunchConfig | None:
    """``config`` with stages dropped (down to 2) until ``shared_bytes`` of it fits ``budget``;
    None where even that does not fit."""
    while config.num_stages > 2 and shared_bytes(config) > budget:
        config = replace(config, num_stages=config.num_stages - 1)
    return config if shared_bytes(config) <= budget else None


def gemm_useful_fraction(problem: ConvProblem, algorithm: str = "implicit_gemm") -> float:
    """How much of the smallest tensor-core tile (16 wide over N and over a reduction
    slice) holds real data: 3/256 for a 3x3 depthwise convolution as an implicit GEMM;
    for grouped_gemm also the block-diagonal weight's share, 1/pack."""
    gemm = gemm_problem(problem, algorithm)
    slice_len = reduction_slice(gemm, default_config(problem, algorithm))
    n_fill = gemm.k_per_group / pow2_at_least(gemm.k_per_group, MIN_DOT_DIM)
    fill = n_fill * slice_len / pow2_at_least(slice_len, MIN_DOT_DIM)
    return fill * gemm.groups / problem.groups


def _fit_gemm(
    problem: ConvProblem, start: LaunchConfig, base: tuple[int, int, int, int, int], limits: DeviceLimits,
    halve_tf32: bool = True,
) -> LaunchConfig | None:
    block_m, block_n, block_k, num_warps, num_stages = base
    if problem.uses_tf32 and halve_tf32:
        block_k = max(MIN_DOT_DIM, block_k // 2)
    block_n = min(block_n, pow2_at_least(problem.gemm_n, MIN_DOT_DIM))
    block_k = min(block_k, pow2_at_least(reduction_slice(problem, start), MIN_DOT_DIM))
    block_m = min(block_m, pow2_at_least(problem.gemm_m, 2 * MIN_DOT_DIM))
    if block_m * block_n <= 64 * 64:
        num_warps = min(num_warps, 4)  # more warps than a 64x64 tile can feed waste themselves
    config = replace(start, block_m=block_m, block_n=block_n, block_k=block_k, group_m=8,
                     num_warps=num_warps, num_stages=min(num_stages, reduction_steps(problem, start.fuse_sc, block_k) + 1))
    return _fit_stages(config, lambda c: implicit_gemm_shared_memory(problem, c), limits.shared_memory_budget)


def _tf32_deep_tiles(problem: ConvProblem, start: LaunchConfig, limits: DeviceLimits) -> list[LaunchConfig]:
    """:data:`_GEMM_BASE_TF32_DEEP` fitted to a TF32 problem (their block_k not halved); none
    for other dtypes."""
    if not problem.uses_tf32:
        return []
    fitted = (_fit_gemm(problem, start, base, limits, halve_tf32=False) for base in _GEMM_BASE_TF32_DEEP)
    return [config for config in fitted if config is not None]


def _wave_fill(tiles: int, slots: int) -> float:
    """How full the waves of ``tiles`` on ``slots`` concurrent programs are: 1 where the last is full."""
    return tiles / (triton.cdiv(tiles, slots) * slots)


def _gemm_score(problem: ConvProblem, config: LaunchConfig, limits: DeviceLimits) -> float:
    """Rough efficiency in (0, 1]: useful fraction of the tiles x fullness of the last wave
    x a preference for larger tiles (more reuse of each loaded operand)."""
    m_tiles = triton.cdiv(problem.gemm_m, config.block_m)
    n_tiles = triton.cdiv(problem.gemm_n, config.block_n)
    slice_len = reduction_slice(problem, config)
    useful = (
        problem.gemm_m / (m_tiles * config.block_m)
        * problem.gemm_n / (n_tiles * config.block_n)
        * slice_len / (triton.cdiv(slice_len, config.block_k) * config.block_k)
    )
    tiles = m_tiles * n_tiles * problem.groups
    # Resident blocks per SM, as shared memory allows (at most 2: registers bound the rest).
    per_sm = max(1, min(2, limits.shared_memory_bytes // max(implicit_gemm_shared_memory(problem, config), 1)))
    slots = limits.num_sms * per_sm
    wave_fill = _wave_fill(tiles, slots)
    # Operand bytes per output fall as BM*BN/(BM+BN): 64 for a 128x128 tile.
    reuse = min(1.0, (config.block_m * config.block_n / (config.block_m + config.block_n)) / 64)
    return useful * wave_fill * reuse**0.5


def gemm_candidates(
    problem: ConvProblem, limits: DeviceLimits | None = None, algorithm: str = "implicit_gemm"
) -> list[LaunchConfig]:
    """Fitted, de-duplicated configs of a GEMM algorithm (``implicit_gemm``,
    ``grouped_gemm`` or ``im2row``) for ``problem``, most promising first."""
    limits = limits or DeviceLimits()
    start = default_config(problem, algorithm)
    gemm = gemm_problem(problem, algorithm)
    fp32_strict = gemm.itemsize == 4 and not gemm.allow_tf32
    base = _GEMM_BASE_FP32_STRICT if fp32_strict else _GEMM_BASE
    fitted = [config for config in (_fit_gemm(gemm, start, b, limits) for b in base) if config is not None]
    fitted += _tf32_deep_tiles(gemm, start, limits)
    unique = list(dict.fromkeys(fitted))
    # Stable sort: equal scores keep the base list's (measured) order.
    ranked = sorted(unique, key=lambda config: -_gemm_score(gemm, config, limits))
    split = _split_k_candidates(gemm, start, limits) if algorithm in ("implicit_gemm", "staged_nhwc") else []
    return list(dict.fromkeys(ranked[:1] + split + ranked[1:]))


# Split-K is tried where a dense problem has fewer 128x128 tiles than SMs and a reduction
# of at least this many steps; each split keeps at least SPLIT_K_MIN_STEPS of them.
SPLIT_K_MIN_STEPS = 4
_SPLIT_K_BASE: tuple[tuple[int, int, int, int, int], ...] = ((64, 128, 64, 4, 4), (128, 128, 64, 8, 4))


def _split_k_candidates(problem: ConvProblem, start: LaunchConfig, limits: DeviceLimits) -> list[LaunchConfig]:
    """Split-K variants for dense problems too small in N*P*Q x K to fill the GPU with
    tiles (ResNet-50's 7x7 and 14x14 layers at batch 32), best guesses first."""
    if problem.groups != 1 or start.fuse_sc:
        return []
    tiles = triton.cdiv(problem.gemm_m, 128) * triton.cdiv(problem.gemm_n, 128)
    configs = []
    for base in _SPLIT_K_BASE:
        config = _fit_gemm(problem, start, base, limits)
        if config is None or tiles >= limits.num_sms:
            continue
        steps = reduction_steps(problem, config.fuse_sc, config.block_k)
        configs += [replace(config, split_k=k) for k in (2, 4) if steps // k >= SPLIT_K_MIN_STEPS]
    return configs


def implicit_gemm_candidates(problem: ConvProblem, limits: DeviceLimits | None = None) -> list[LaunchConfig]:
    return gemm_candidates(problem, limits, "implicit_gemm")


def gemm_1x1_candidates(problem: ConvProblem, limits: DeviceLimits | None = None) -> list[LaunchConfig]:
    """The implicit GEMM's tiles without split-K (the TMA kernel has none), each also in the
    persistent form where its output tile fits beside the ring (the persistent ones first:
    they won ResNet-50's 1x1 rows on an H200); the heuristics' config first of all. Every
    one fits the device's shared memory."""
    limits = limits or DeviceLimits()
    tiles = [config for config in gemm_candidates(problem, limits, "implicit_gemm") if config.split_k == 1]
    persistent = [replace(config, persistent=1) for config in tiles]
    # TF32's 64-channel steps next (they won most of ResNet-50's TF32 1x1 rows: see
    # _GEMM_BASE_TF32_DEEP), before a cut list would drop them.
    deep = [config for config in persistent if _is_tf32_deep(problem, config)]
    return list(dict.fromkeys(config for config in [default_config(problem, "gemm_1x1"), *deep, *persistent, *tiles]
                              if tma_rows_shared_memory(problem, config) <= limits.bulk_copy_budget))


def _is_tf32_deep(problem: ConvProblem, config: LaunchConfig) -> bool:
    """Whether ``config`` is one of :data:`_GEMM_BASE_TF32_DEEP`'s tiles, as measured, on a TF32 problem."""
    shape = (config.block_m, config.block_n, config.block_k, config.num_warps, config.num_stages)
    return problem.uses_tf32 and shape in _GEMM_BASE_TF32_DEEP


# im2row_ws (block_m, block_n, num_warps, num_stages, resident) over the unrolled problem, after the
# heuristics' tile (heuristics.IM2ROW_WS_CONFIG: see the figures there): the other held tiles, then
# implicit_gemm_ws's own with the weight in the ring.
_IM2ROW_WS_BASE: tuple[tuple[int, int, int, int, int], ...] = (
    (128, 64, 4, 8, 1), (128, 64, 4, 12, 1), (256, 128, 8, 6, 1), (128, 128, 4, 8, 1), (256, 64, 8, 6, 0),
    (128, 64, 4, 8, 0),
)


def im2row_ws_candidates(problem: ConvProblem, limits: DeviceLimits | None = None) -> list[LaunchConfig]:
    """implicit_gemm_ws's configs for the unrolled problem (``block_n`` no wider than K, at least
    64), the held-weight ones kept where the weight fits beside the ring (stages dropped to make
    room, else left out: :func:`~tileconv.kernels.launch.resident_unsupported_reason`)."""
    limits = limits or DeviceLimits()
    unrolled = problem.columns_as_channels()
    start = default_config(problem, "im2row_ws")
    fitted = [start]
    for block_m, block_n, num_warps, stages, resident in _IM2ROW_WS_BASE:
        config = replace(start, block_m=block_m, block_n=min(block_n, pow2_at_least(unrolled.k, 64)),
                         num_warps=num_warps, num_stages=stages, resident=resident)
        config = _fit_stages(config, lambda c: implicit_gemm_shared_memory(unrolled, c), limits.bulk_copy_budget)
        if config is not None and (not config.resident
                                   or resident_unsupported_reason(unrolled, config, limits.num_sms) is None):
            fitted.append(config)
    return list(dict.fromkeys(fitted))


def grouped_gemm_candidates(problem: ConvProblem, limits: DeviceLimits | None = None) -> list[LaunchConfig]:
    return gemm_candidates(problem, limits, "grouped_gemm")


def im2row_candidates(problem: ConvProblem, limits: DeviceLimits | None = None) -> list[LaunchConfig]:
    """The implicit GEMM's tiles fitted to the unrolled problem (no split-K: its reductions are short)."""
    return gemm_candidates(problem, limits, "im2row")


def gemm_1x1_nchw_candidates(problem: ConvProblem, limits: DeviceLimits | None = None) -> list[LaunchConfig]:
    """The implicit GEMM's tiles (block_m over one image's pixels), without split-K."""
    return gemm_candidates(problem, limits, "gemm_1x1_nchw")


def staged_nhwc_candidates(problem: ConvProblem, limits: DeviceLimits | None = None) -> list[LaunchConfig]:
    """The implicit GEMM's tiles (split-K included) fitted to the channels_last problem."""
    return gemm_candidates(problem, limits, "staged_nhwc")


# The narrowest output rows tma_rows races on: 48 of a 64-pixel segment (wgmma's height).
TMA_ROWS_MIN_RACE_WIDTH = 48
TMA_ROWS_BARRIER_BYTES = 1024  # tma_rows's shared memory beyond its tiles: mbarriers, alignment


def tma_rows_shared_memory(problem: ConvProblem, config: LaunchConfig) -> int:
    """Bytes of tma_rows's (and gemm_1x1's) operand ring, plus the persistent form's output
    tile (its TMA store goes out of shared memory)."""
    out_tile = config.block_m * config.block_n * problem.itemsize if config.persistent else 0
    return implicit_gemm_shared_memory(problem, config) + out_tile


def fit_to_epilogue(problem: ConvProblem, algorithm: str, config: LaunchConfig,
                    device: torch.device | str | None = None) -> LaunchConfig:
    """``config`` (tuned, or the heuristics' guess: the tuning cache's key has no epilogue) fitted to
    ``problem``'s epilogue. tma_rows's and gemm_1x1's persistent forms keep the output tile in shared
    memory beside the ring, and a residual read in the accumulator's layout adds a layout
    conversion's scratch (sm_90 compiles: 32 KB at a 128x256 fp16 tile, which put ResNet-50's 1x1
    rows tuned at 128x256x64 in 3 stages at 245,784 bytes, past the 232,448 a program has: the
    launch failed). Where both do not fit, the same tile's non-persistent form (its ring alone).
    ``device``'s limits (:meth:`DeviceLimits.of`) are read only for such a config."""
    if algorithm not in ("tma_rows", "gemm_1x1") or not config.persistent or not problem.epilogue.has_residual:
        return config
    limits = DeviceLimits.of(device)
    scratch = config.block_m * config.block_n * problem.itemsize // 2
    if tma_rows_shared_memory(problem, config) + scratch <= limits.bulk_copy_budget:
        return config
    return replace(config, persistent=0)


def tma_rows_candidates(problem: ConvProblem, limits: DeviceLimits | None = None) -> list[LaunchConfig]:
    """Fitted, de-duplicated tma_rows configs: ``block_m`` (a row segment) no longer than the
    row rounded up to a power of two (at least 64, wgmma's height), ``block_n`` no wider than
    K, ``block_k`` no deeper than C; stages dropped until the ring fits."""
    limits = limits or DeviceLimits()
    start = default_config(problem, "tma_rows")
    budget = limits.bulk_copy_budget
    fitted = []
    base = _TMA_ROWS_BASE if problem.itemsize == 2 else _TMA_ROWS_BASE_FP32
    for block_m, block_n, block_k, num_warps, stages, persistent in (
            (start.block_m, start.block_n, start.block_k, start.num_warps, start.num_stages, start.persistent),
            *base):
        block_m = min(block_m, pow2_at_least(problem.out_w, 64))
        block_n = min(block_n, pow2_at_least(problem.k, MIN_DOT_DIM))
        if block_m * block_n <= 64 * 64:
            num_warps = min(num_warps, 4)  # more warps than a 64x64 tile can feed waste themselves
        config = replace(start, block_m=block_m, block_n=block_n,
                         block_k=min(block_k, pow2_at_least(problem.c, MIN_DOT_DIM)), group_m=8,
                         num_warps=num_warps, num_stages=stages, persistent=persistent)
        if (config := _fit_stages(config, lambda c: tma_rows_shared_memory(problem, c), budget)) is not None:
            fitted.append(config)
    return list(dict.fromkeys(fitted))


# implicit_gemm_ws (block_m, block_n, num_warps, num_stages, pingpong): session 11's probe
# winners first. Ping-pong is not raced: its first form hung on the GPU and the fix (main
# loops taking turns) has not run on one yet. The one-warpgroup tiles take the deepest ring
# that leaves room for the TMA-store epilogue (192 KB of ring; cuBLAS runs 9 stages of 64x112 on
# c2048 hw7 k512). H200, session 35: with these depths `tune --suite resnet50` gave every row it
# chose implicit_gemm_ws for 8 or 6 stages, and the tuned bench went from 1.02x to 1.06x of cuDNN
# (tileconv's own times 3.5% shorter in geomean; c128 hw56 3x3/2 27.6 -> 24.0 us).
_WS_BASE: tuple[tuple[int, int, int, int, int], ...] = (
    (128, 256, 8, 4, 0), (128, 128, 4, 6, 0), (64, 128, 4, 8, 0), (128, 128, 8, 6, 0),
    (128, 256, 8, 3, 0), (128, 64, 4, 8, 0),
)
# grouped_gemm_ws (block_m, num_stages, programs an SM) on top of the heuristics' tile, each the
# merged group's width: the tiles of session 54's probe (H200, benchmarks/probe_grouped.py
# --ws-merged), each best on one of the stride-2 ResNeXt rows or close.
_GROUPED_WS_BASE: tuple[tuple[int, int, int], ...] = ((128, 8, 0), (128, 4, 2), (64, 6, 2), (128, 3, 2))
# TF32 (block_m, block_n, block_k, num_warps, num_stages) stepping 64 channels, not the default
# 32 (see _GEMM_BASE_TF32_DEEP for what they measured).
_WS_BASE_TF32_DEEP: tuple[tuple[int, int, int, int, int], ...] = ((64, 128, 64, 4, 3),)


def implicit_gemm_ws_candidates(problem: ConvProblem, limits: DeviceLimits | None = None) -> list[LaunchConfig]:
    """Fitted, de-duplicated implicit_gemm_ws configs: ``block_n`` no wider than K (at least
    64, the epilogue's row of 8 threads x 8 channels), stages dropped until the ring (the
    implicit GEMM's: a BM x BK and a BN x BK tile a stage) fits."""
    limits = limits or DeviceLimits()
    start = default_config(problem, "implicit_gemm_ws")
    fitted = []
    bases = [(start.block_m, start.block_n, start.block_k, start.num_warps, start.num_stages, start.pingpong)]
    if problem.uses_tf32:  # second: a cut candidate list keeps it
        bases += [(m, n, k, warps, stages, 0) for m, n, k, warps, stages in _WS_BASE_TF32_DEEP]
    bases += [(m, n, start.block_k, warps, stages, pingpong) for m, n, warps, stages, pingpong in _WS_BASE]
    for block_m, block_n, block_k, num_warps, stages, pingpong in bases:
        config = replace(start, block_m=block_m, block_n=min(block_n, pow2_at_least(problem.k, 64)),
                         block_k=block_k, num_warps=num_warps, num_stages=stages, pingpong=pingpong)
        if (config := _fit_stages(config, lambda c: implicit_gemm_shared_memory(problem, c),
                                  limits.bulk_copy_budget)) is not None:
            fitted.append(config)
    return list(dict.fromkeys(fitted))


def grouped_gemm_ws_candidates(problem: ConvProblem, limits: DeviceLimits | None = None) -> list[LaunchConfig]:
    """grouped_gemm_ws's configs: the heuristics' tile, then :data:`_GROUPED_WS_BASE`'s, each as
    wide as a merged group (the launcher's rule), stages dropped until its programs' rings fit
    an SM together."""
    limits = limits or DeviceLimits()
    start = default_config(problem, "grouped_gemm_ws")
    merged = gemm_problem(problem, "grouped_gemm_ws")
    fitted = []
    for block_m, stages, programs in ((start.block_m, start.num_stages, start.persistent), *_GROUPED_WS_BASE):
        config = replace(start, block_m=block_m, num_stages=stages, persistent=programs)
        budget = limits.bulk_copy_budget // max(1, programs)
        if (config := _fit_stages(config, lambda c: implicit_gemm_shared_memory(merged, c), budget)) is not None:
            fitted.append(config)
    return list(dict.fromkeys(fitted))


def gemm_1x1_ws_candidates(problem: ConvProblem, limits: DeviceLimits | None = None) -> list[LaunchConfig]:
    """implicit_gemm_ws's configs (the same ring a stage), each one-warpgroup tile also in
    ping-pong (two MMA warpgroups taking the tiles in turn: one's epilogue under the other's
    main loop), after the first two; and, third, a 192-row tile where one fits the SMs'
    waves better (:func:`_row_slice_candidates`)."""
    limits = limits or DeviceLimits()
    configs = implicit_gemm_ws_candidates(problem, limits)
    pingpong = [replace(config, pingpong=1) for config in configs if config.num_warps == 4]
    return list(dict.fromkeys([*configs[:2], *_row_slice_candidates(problem, limits), *pingpong, *configs[2:]]))


ROW_SLICE_FILL_GAIN = 0.05  # how much fuller the last wave of 192-row tiles must be than of 128-row ones


def _row_slice_candidates(problem: ConvProblem, limits: DeviceLimits) -> list[LaunchConfig]:
    """gemm_1x1_ws's 192-row tile (three MMA warpgroups of 64 rows: ``launch.ws_slices``; stride
    1 only) at 128 channels wide (64 where K is), where its tiles fill the SMs' last wave by
    ROW_SLICE_FILL_GAIN more than 128-row tiles of that width do: c1024 hw14 k512 at batch 32
    makes 132 tiles of 192x128 on 132 SMs against 196 of 128x128 (H200, session 38: 16.6-16.9 us
    against 17.2-17.6 for the tuned 64x128, cuDNN 15.5-16.2), c512 hw28 k128 131 against 196.
    Where both fill their waves the bigger tile measured no faster (c256 hw14 k1024 13.1-13.3 us
    against 13.2-13.6; c1024 hw14 k256, 66 tiles, 16.0 against 13.3): none."""
    if problem.stride != (1, 1):
        return []
    start = default_config(problem, "gemm_1x1_ws")
    block_n = min(128, pow2_at_least(problem.k, 64))

    def fill(block_m: int) -> float:
        return _wave_fill(triton.cdiv(problem.gemm_m, block_m) * triton.cdiv(problem.k, block_n), limits.num_sms)

    if fill(192) < fill(128) + ROW_SLICE_FILL_GAIN:
        return []
    config = _fit_stages(replace(start, block_m=192, block_n=block_n, num_warps=4, num_stages=4, pingpong=0),
                         lambda c: implicit_gemm_shared_memory(problem, c), limits.bulk_copy_budget)
    return [config] if config is not None else []


# --------------------------------------------------------------------- CUDA-core kernels
def _fits_registers(block_m: int, block_n: int, num_warps: int) -> bool:
    return block_m * block_n <= MAX_ACCUMULATORS_PER_THREAD * 32 * num_warps


def direct_candidates(problem: ConvProblem, limits: DeviceLimits | None = None) -> list[LaunchConfig]:
    """Fitted, de-duplicated direct-convolution configs for ``problem``.

    The direct kernel tiles all K output channels (across groups), so ``block_n`` is
    bounded by K, not K/groups; its loops are not pipelined (one stage).
    """
    start = default_config(problem, "direct")
    base = _DIRECT_BASE_NHWC if problem.layout == "nhwc" else _DIRECT_BASE_NCHW
    fitted = []
    for block_m, block_n, num_warps in base:
        block_n = min(block_n, pow2_at_least(problem.k, 8))
        block_m = min(block_m, pow2_at_least(problem.gemm_m, 32))
        if _fits_registers(block_m, block_n, num_warps):
            fitted.append(replace(start, block_m=block_m, block_n=block_n, num_warps=num_warps, num_stages=1))
    return list(dict.fromkeys(fitted))


def direct_rows_candidates(problem: ConvProblem, limits: DeviceLimits | None = None) -> list[LaunchConfig]:
    """direct_rows tiles: 2 to 8 columns a thread, 2 to 8 warps, one or two rows a program (two
    computed together where :func:`direct_rows_pairs_rows`), at most 64 accumulators a thread
    (the columns' and rows' channels); the default first. A pair of 8-channel rows at 8
    columns a thread spilled 8 KB a thread in an sm_90 compile."""
    block_k = direct_rows_block_k(problem)
    configs = [default_config(problem, "direct_rows")]
    for per_thread in (2, 4, 8):
        for num_warps in (4, 2, 8):
            for rows in (1, 2):
                config = direct_rows_config(problem, per_thread, num_warps, rows)
                paired = 2 if direct_rows_pairs_rows(problem, config) else 1  # two rows' accumulators
                if paired * (config.block_m // (32 * config.num_warps)) * block_k <= 2 * DIRECT_ROWS_ACCUMULATORS:
                    configs.append(config)
    return list(dict.fromkeys(configs))


def depthwise_candidates(problem: ConvProblem, limits: DeviceLimits | None = None) -> list[LaunchConfig]:
    """Fitted, de-duplicated depthwise configs: ``block_m`` pixels in rows of ``block_k``
    (the tile width), ``block_n`` channels; one stage (no pipelined loop)."""
    start = default_config(problem, "depthwise")
    base = _DEPTHWISE_BASE_NHWC if problem.layout == "nhwc" else _DEPTHWISE_BASE_NCHW
    fitted = []
    for channels, width, size, num_warps in base:
        channels = min(channels, pow2_at_least(problem.k, 4))
        width = min(width, pow2_at_least(problem.out_w, 4))
        rows = max(1, min(size // (channels * width), pow2_at_least(problem.out_h, 1)))
        block_m = rows * width
        if _fits_registers(block_m, channels, num_warps):
            fitted.append(replace(start, block_m=block_m, block_n=channels, block_k=width,
                                  num_warps=num_warps, num_stages=1))
    return list(dict.fromkeys(fitted))


# depthwise_rows (channels, columns, rows per strip, num_warps, num_stages): written without
# a GPU, so a spread around the heuristics' tile rather than measured winners; num_stages 2
# loads the next input row ahead (1: not). Five tiles of fp32 are live per step (two partial
# sums, three input taps) and three more loaded ahead: the register check counts them.
_DEPTHWISE_ROWS_BASE_NHWC: tuple[tuple[int, int, int, int, int], ...] = (
    (64, 16, 8, 4, 2), (32, 16, 8, 4, 2), (64, 8, 16, 4, 2), (128, 8, 8, 8, 2), (32, 32, 8, 4, 2),
    (64, 16, 32, 8, 2), (32, 8, 16, 4, 2), (64, 16, 8, 4, 1),
    # 4 channels a thread (the tile twice the threads: Triton's loads then move 8 bytes): half
    # the weight and partial-sum registers of 8 (an sm_90 compile: 80 registers against 147).
    (64, 16, 8, 8, 2), (32, 32, 8, 8, 2), (32, 16, 16, 4, 2),
)
_DEPTHWISE_ROWS_BASE_NCHW: tuple[tuple[int, int, int, int, int], ...] = (
    (8, 64, 8, 4, 2), (4, 64, 16, 4, 2), (8, 32, 8, 4, 2), (16, 64, 8, 8, 2), (8, 128, 8, 8, 2),
    (8, 64, 8, 4, 1),
)


def depthwise_rows_candidates(problem: ConvProblem, limits: DeviceLimits | None = None) -> list[LaunchConfig]:
    """Fitted, de-duplicated depthwise_rows configs: ``block_n`` channels, ``block_m``
    columns, strips of ``block_k`` rows; ``num_stages`` 2 loads the next row ahead."""
    start = default_config(problem, "depthwise_rows")
    base = _DEPTHWISE_ROWS_BASE_NHWC if problem.layout == "nhwc" else _DEPTHWISE_ROWS_BASE_NCHW
    fitted = [start]
    for channels, columns, rows, num_warps, stages in base:
        channels = min(channels, pow2_at_least(problem.k, 4))
        columns = min(columns, pow2_at_least(problem.out_w, 4))
        rows = min(rows, pow2_at_least(problem.out_h, 1))
        if _fits_registers((5 + 3 * (stages - 1)) * columns, channels, num_warps):
            fitted.append(replace(start, block_m=columns, block_n=channels, block_k=rows,
                                  num_warps=num_warps, num_stages=stages))
    return list(dict.fromkeys(fitted))


# depthwise_toeplitz (output rows, columns, channels, num_warps, num_stages), a spread around
# the heuristics' tile; the reduction (JK input columns) follows the columns. One channel: 2D
# wgmma GEMMs over a zero-bordered NCHW copy; several: batched mma.sync from channels_last.
_DEPTHWISE_TOEPLITZ_BASE: tuple[tuple[int, int, int, int, int], ...] = (
    (32, 32, 8, 4, 1), (32, 32, 8, 4, 2), (32, 16, 8, 4, 3), (64, 32, 4, 4, 3), (32, 32, 16, 8, 2),
    (64, 32, 1, 4, 3), (128, 32, 1, 4, 3), (128, 16, 1, 4, 3), (128, 32, 1, 8, 2), (256, 32, 1, 8, 3),
)


# depthwise_toeplitz's operand tiles and accumulator: at most this many values per thread.
MAX_TOEPLITZ_VALUES_PER_THREAD = 256
# The narrowest filter depthwise_toeplitz races on: 5 columns fill 5/32 of its 16-column
# tiles' reduction, a 3x3's 3/32 (the CUDA-core kernels' L1 traffic is light there).
TOEPLITZ_MIN_WIDTH = 5


def toeplitz_shared_memory(problem: ConvProblem, config: LaunchConfig) -> int:
    """Shared memory of a pipelined depthwise_toeplitz config: a ring of ``num_stages`` A and
    T tiles (one stage: the operands' trip through shared memory into the dot layouts)."""
    jk = toeplitz_reach(problem, config.block_k)
    tile = config.block_n * (config.block_m * jk + jk * config.block_k) * problem.itemsize
    return max(1, config.num_stages) * tile


def depthwise_toeplitz_candidates(problem: ConvProblem, limits: DeviceLimits | None = None) -> list[LaunchConfig]:
    """Fitted, de-duplicated depthwise_toeplitz configs: ``block_m`` output rows, ``block_k``
    columns, ``block_n`` channels; tiles whose columns read more than the kernel's reach are
    left out."""
    limits = limits or DeviceLimits()
    start = default_config(problem, "depthwise_toeplitz")
    fitted = [start]
    for rows, columns, channels, num_warps, stages in _DEPTHWISE_TOEPLITZ_BASE:
        config = replace(start, block_m=rows, block_n=min(channels, pow2_at_least(problem.k, 1)),
                         block_k=columns, num_warps=num_warps, num_stages=stages)
        jk = toeplitz_reach(problem, columns)
        # Live per thread: the A and T tiles and the fp32 accumulator.
        elements = channels * (rows * jk + jk * columns + rows * columns)
        if (jk <= MAX_TOEPLITZ_REACH and elements <= MAX_TOEPLITZ_VALUES_PER_THREAD * 32 * num_warps
                and toeplitz_shared_memory(problem, config) <= limits.shared_memory_budget):
            fitted.append(config)
    return list(dict.fromkeys(fitted))


# dense_toeplitz (output rows, output channels, output columns, num_warps, num_stages): written
# without a GPU, so a spread around the heuristics' tile (the GEMM's N = columns x channels
# from 32 to 256, 64 to 256 rows) rather than measured winners. Channels past K are cut to K.
_DENSE_TOEPLITZ_BASE: tuple[tuple[int, int, int, int, int], ...] = (
    (64, 16, 8, 4, 4), (128, 16, 4, 8, 4), (64, 16, 16, 8, 3), (256, 16, 4, 8, 3), (64, 16, 4, 4, 4),
    (128, 32, 2, 8, 4), (64, 64, 2, 8, 4), (128, 16, 2, 4, 5),
)


def dense_toeplitz_shared_memory(problem: ConvProblem, config: LaunchConfig) -> int:
    """Bytes of dense_toeplitz's operand ring: num_stages A (rows x step) and band (step x N) tiles."""
    tiling = dense_toeplitz_tiling(problem, config)
    return config.num_stages * (config.block_m + tiling.block_nn) * tiling.block_t * problem.itemsize


def dense_toeplitz_candidates(problem: ConvProblem, limits: DeviceLimits | None = None) -> list[LaunchConfig]:
    """Fitted, de-duplicated dense_toeplitz configs: ``block_m`` output rows (no more than the
    problem's, rounded up to 64), ``block_n`` output channels (at most K), ``block_k`` output
    columns; configs whose bands pass the kernel's size, whose accumulator would spill or
    whose ring does not fit the shared memory (stages dropped first) are left out."""
    limits = limits or DeviceLimits()
    start = default_config(problem, "dense_toeplitz")
    fitted = [start]
    for rows, channels, columns, num_warps, stages in _DENSE_TOEPLITZ_BASE:
        rows = min(rows, pow2_at_least(problem.n * problem.out_h, 64))
        channels = min(channels, problem.k)
        columns = min(columns, pow2_at_least(problem.out_w, 1))
        config = replace(start, block_m=rows, block_n=channels, block_k=columns, num_warps=num_warps,
                         num_stages=stages)
        tiling = dense_toeplitz_tiling(problem, config)
        config = replace(config, num_stages=max(2, min(config.num_stages, tiling.t_steps * problem.r + 1)))
        config = _fit_stages(config, lambda c: dense_toeplitz_shared_memory(problem, c), limits.shared_memory_budget)
        if (config is not None and tiling.block_nn <= MAX_DENSE_TOEPLITZ_COLUMNS
                and tiling.span * problem.c <= MAX_DENSE_TOEPLITZ_VALUES
                and rows * tiling.block_nn <= MAX_BANDED_ACCUMULATORS * 32 * num_warps):
            fitted.append(config)
    return list(dict.fromkeys(fitted))


# depthwise_plane (images, channels, num_warps): written without a GPU, a spread around the
# heuristics' tile. One channel a program: a 2D GEMM; several: batched over the channels.
_DEPTHWISE_PLANE_BASE: tuple[tuple[int, int, int], ...] = (
    (32, 4, 8), (32, 1, 4), (32, 2, 4), (16, 8, 8), (64, 1, 8), (32, 8, 8), (16, 4, 4), (64, 2, 8),
)


def depthwise_plane_candidates(problem: ConvProblem, limits: DeviceLimits | None = None) -> list[LaunchConfig]:
    """Fitted, de-duplicated depthwise_plane configs: ``block_m`` images (at least 16, no more
    than the batch rounded up), ``block_n`` channels (no more than K rounded up); configs whose
    accumulator would pass :data:`MAX_BANDED_ACCUMULATORS` a thread are left out."""
    start = default_config(problem, "depthwise_plane")
    _, pq_pad = plane_sizes(problem)
    fitted = [start]
    for images, channels, num_warps in _DEPTHWISE_PLANE_BASE:
        images = min(images, pow2_at_least(problem.n, 16))
        channels = min(channels, pow2_at_least(problem.k, 1))
        if images * channels * pq_pad <= MAX_BANDED_ACCUMULATORS * 32 * num_warps:
            fitted.append(replace(start, block_m=images, block_n=channels, num_warps=num_warps, num_stages=1))
    return list(dict.fromkeys(fitted))


# depthwise_halo (tile rows, tile columns, warps), each with 1, 2 and 4 channels a thread: the
# list session 12's tuning raced on an H200 (its winners were 4x8 and 8x8 tiles on one warp).
_DEPTHWISE_HALO_BASE: tuple[tuple[int, int, int], ...] = ((8, 8, 1), (4, 8, 1), (8, 16, 1), (8, 8, 2))


def depthwise_window_candidates(problem: ConvProblem, limits: DeviceLimits | None = None) -> list[LaunchConfig]:
    """depthwise_window tiles: the default; where a tile of the output's width fits
    (:func:`image_fits`), such tiles in strips of 2, 4 and 7 rows and of the whole output;
    for filters past 3x3 at row stride and dilation 1, strips of tiles of 7 rows (at least R - 1)
    and 14 by 4, 7 and 8 columns and of 28 by 7 (at most the output's size); one input row a
    step, the default's warps. Each compiles in seconds (the ramps and a step unrolled): a short
    list."""
    start = default_config(problem, "depthwise_window")
    configs = [start]
    if image_fits(problem):  # tiles of the output's width, compiled for the image
        for strip in (2, 4, 7, problem.out_h):
            configs.append(depthwise_window_config(problem, min(strip, problem.out_h), problem.out_w, start.num_warps))
    if window_strips(problem) and problem.r * problem.s > 9:  # strips of tiles
        for rows, widths in ((7, (4, 7, 8)), (14, (4, 7, 8)), (28, (7,))):
            strip = max(min(rows, problem.out_h), problem.r - 1)
            for width in widths:
                configs.append(depthwise_window_config(problem, strip, min(width, problem.out_w), start.num_warps))
    return list(dict.fromkeys(configs))


def depthwise_halo_candidates(problem: ConvProblem, limits: DeviceLimits | None = None) -> list[LaunchConfig]:
    """Fitted, de-duplicated depthwise_halo configs: ``block_m`` pixels ``block_k`` wide,
    ``block_n`` channels over ``num_warps`` warps; tiles wider or taller than the output
    (rounded up), channel blocks past C rounded up and configs whose halo and filter pass the
    kernel's shared-memory bound are left out."""
    start = default_config(problem, "depthwise_halo")
    fitted = [start]
    for rows, columns, warps in _DEPTHWISE_HALO_BASE:
        rows = min(rows, pow2_at_least(problem.out_h, 4))
        columns = min(columns, pow2_at_least(problem.out_w, 4))
        for vec in (1, 2, 4):
            channels = 32 * warps * vec
            config = replace(start, block_m=rows * columns, block_n=channels, block_k=columns, num_warps=warps,
                             num_stages=1)
            if (channels <= pow2_at_least(problem.c, 32) and channels <= 32 * 16 // problem.itemsize
                    and halo_tiling(problem, config).shared_bytes(problem) <= MAX_HALO_SHARED_BYTES):
                fitted.append(config)
    return list(dict.fromkeys(fitted))


def implicit_gemm_frame_candidates(problem: ConvProblem, limits: DeviceLimits | None = None) -> list[LaunchConfig]:
    """implicit_gemm_frame tiles: the default, then the tiles of session 45's probe (H200,
    benchmarks/probe_frame.py) that won or came within 5% of the best on a ResNet-50 row, and
    two with room for a stride's four phase frames (32-channel steps, or 64 rows), each where
    it fits the frame and shared memory (the default too: on frames wider than 128 columns,
    which the heuristics do not send here, its 256-row tile may not)."""
    configs = [default_config(problem, "implicit_gemm_frame")]
    for block_m, block_n, block_k, warps, stages in ((128, 64, 64, 4, 8), (128, 128, 64, 4, 6), (256, 64, 64, 8, 6),
                                                     (128, 128, 32, 4, 8), (64, 128, 64, 4, 8), (128, 128, 32, 4, 6),
                                                     (64, 128, 64, 4, 6)):
        configs.append(LaunchConfig(block_m, block_n, block_k, 8, warps, stages))
    return list(dict.fromkeys(c for c in configs if frame_tiling_or_none(problem, c) is not None))


def grouped_frame_candidates(problem: ConvProblem, limits: DeviceLimits | None = None) -> list[LaunchConfig]:
    """grouped_frame tiles: the default, then 256 rows on 8 warps, 128 rows at 9 and 12 weight
    stages, 64 rows (session 55's probe: each best or within 10% on a ResNeXt row; session 60's:
    9 weight stages the best of 6 to 27, 12 within 2% on 128 rows), one merged group wide, each
    with stages dropped until the frames and the weight ring fit."""
    start = default_config(problem, "grouped_frame")
    merged, sub_groups = gemm_problem(problem, "grouped_frame"), grouped_ws_sub_groups(problem)
    fitted = []
    for block_m, warps, stages in ((start.block_m, start.num_warps, start.num_stages), (256, 8, 9), (128, 4, 9),
                                   (128, 4, 12), (64, 4, 9)):
        config = fit_frame_stages(merged, replace(start, block_m=block_m, num_warps=warps, num_stages=stages),
                                  sub_groups)
        if frame_tiling_or_none(merged, config, sub_groups) is not None:
            fitted.append(config)
    return list(dict.fromkeys(fitted))


def grouped_halo_candidates(problem: ConvProblem, limits: DeviceLimits | None = None) -> list[LaunchConfig]:
    """grouped_halo tiles: the default, then 64, 128 and 256 frame rows, 4 warps, the fewest
    groups merged and (for C/g = 32) 32 channels, 2 and 4 walking programs an SM (one item a
    program never won: session 29's probe, every ResNeXt row), in the order of how often they
    won that probe (the candidate list is cut at 12 across the algorithms: only the first two or
    three of these get timed); configs past the kernel's shared-memory bound are left out."""
    start = default_config(problem, "grouped_halo")
    fitted = [start]
    # 256 rows at 4 an SM: c128 hw56/1 46.1-46.5 us against 48.6-48.9 at 128 (calls 4-6); 128 rows
    # at 2 an SM: c512 hw28/2 23.8 / 23.7 against 24.4 / 24.7 at 4 (calls 3, 5) (H200, session 29).
    # 128 rows at 4 an SM second: the default at stride 2, and within 2% of 256 rows at stride 1
    # (session 43), whichever the default is.
    for block_m, persistent in ((256, 4), (128, 4), (128, 2), (64, 4), (256, 2), (64, 2)):
        config = replace(start, block_m=block_m, persistent=persistent)
        if grouped_halo_tiling(problem, config).fits(problem):
            fitted.append(config)
    return list(dict.fromkeys(fitted))


# Candidate generator per algorithm name. An algorithm missing here races with its
# heuristic config only.
GENERATORS: dict[str, Callable[[ConvProblem, DeviceLimits], list[LaunchConfig]]] = {
    "implicit_gemm": implicit_gemm_candidates,
    # The TMA GEMM has the same tiles and shared-memory ring as the implicit GEMM.
    "gemm_1x1": gemm_1x1_candidates,
    "gemm_1x1_nchw": gemm_1x1_nchw_candidates,
    "tma_rows": tma_rows_candidates,
    "implicit_gemm_ws": implicit_gemm_ws_candidates,
    "gemm_1x1_ws": gemm_1x1_ws_candidates,
    "grouped_gemm": grouped_gemm_candidates,
    "grouped_gemm_ws": grouped_gemm_ws_candidates,
    "grouped_frame": grouped_frame_candidates,
    "grouped_halo": grouped_halo_candidates,
    "implicit_gemm_frame": implicit_gemm_frame_candidates,
    "im2row": im2row_candidates,
    "im2row_ws": im2row_ws_candidates,
    "staged_nhwc": staged_nhwc_candidates,
    "depthwise": depthwise_candidates,
    "depthwise_rows": depthwise_rows_candidates,
    "depthwise_halo": depthwise_halo_candidates,
    "depthwise_window": depthwise_window_candidates,
    "depthwise_toeplitz": depthwise_toeplitz_candidates,
    "dense_toeplitz": dense_toeplitz_candidates,
    "depthwise_plane": depthwise_plane_candidates,
    "direct_rows": direct_rows_candidates,
    "direct": direct_candidates,
}


def is_thin(problem: ConvProblem) -> bool:
    """Few channels per group on either side: a tensor-core tile is mostly padding."""
    return min(problem.c_per_group, problem.k_per_group) <= MIN_TENSOR_CORE_DIM


def algorithms_to_try(problem: ConvProblem) -> list[str]:
    """The algorithms worth measuring on ``problem``, the heuristics' choice first: every
    one that supports it, except a GEMM whose smallest tile would be under 1/16 useful,
    ``direct`` (the general CUDA-core kernel) unless the problem is thin, and
    ``staged_nhwc`` for fewer than 16 channels a group, ``depthwise_toeplitz`` for
    filters narrower than 5 columns, ``tma_rows`` for output rows under 48 pixels, and
    ``dense_toeplitz`` and ``direct_rows`` for 16 input channels or more, ``depthwise_window`` for
    filters of at most 9 taps over outputs too large for a tile of their width (:func:`image_fits`). On depthwise problems ``direct`` and ``depthwise`` both
    race: each wins some shapes on an H200."""
    first = choose_algorithm(problem)
    names = [first]
    for name, algorithm in ALGORITHMS.items():
        if name == first or algorithm.teaching or algorithm.unsupported_reason(problem) is not None:
            continue
        if (name in ("implicit_gemm", "grouped_gemm", "im2row", "im2row_ws", "staged_nhwc", "gemm_1x1_nchw")
                and gemm_useful_fraction(problem, name) < 1 / 16):
            continue
        if name == "direct" and not is_thin(problem):
            continue
        if name == "staged_nhwc" and problem.c_per_group < MIN_TENSOR_CORE_DIM:
            continue  # few channels: its GEMM gathers (s, c) slices anyway; im2row unrolls them
        if name == "depthwise_toeplitz" and problem.s < TOEPLITZ_MIN_WIDTH:
            continue  # a narrow filter fills too little of the band: S/JK useful
        if name == "depthwise_window" and problem.r * problem.s <= 9 and not image_fits(problem):
            continue  # it lost every 3x3 row it was measured on in strips of tiles (session 25), and
            # compiles for seconds; its tiles of the image's width won the small outputs (session 47)
        if name == "tma_rows" and problem.out_w < TMA_ROWS_MIN_RACE_WIDTH:
            continue  # most of each 64-pixel row segment would be past the row's end
        if name in ("dense_toeplitz", "direct_rows") and problem.c >= MIN_TENSOR_CORE_DIM:
            continue  # bands pay for few input channels; with more, a tap's slice fills a tensor-core step,
            # and direct_rows's multiply-adds (C*R*S an output on the CUDA cores) outgrow a GEMM's
        names.append(name)
    return names


def candidates(
    problem: ConvProblem,
    limits: DeviceLimits | None = None,
    max_candidates: int = DEFAULT_MAX_CANDIDATES,
) -> list[tuple[str, LaunchConfig]]:
    """(algorithm, config) pairs to measure on ``problem``: the heuristics' choice first,
    then the others, the algorithms taking turns so that a cut list keeps each of them."""
    limits = limits or DeviceLimits()
    default_name = choose_algorithm(problem)
    chosen: list[tuple[str, LaunchConfig]] = [(default_name, default_config(problem, default_name))]
    ranked = []
    for name in algorithms_to_try(problem):
        generate = GENERATORS.get(name)
        configs = generate(problem, limits) if generate is not None else [default_config(problem, name)]
        ranked.append([(name, config) for config in configs])
    for rank in range(max((len(lst) for lst in ranked), default=0)):
        for lst in ranked:
            if rank < len(lst) and lst[rank] not in chosen:
                chosen.append(lst[rank])
    return chosen[: max(1, max_candidates)]
