"""tileconv's kernels and the registry that names them.

Each algorithm is a Triton kernel plus its launcher, in a module of its own:

- ``implicit_gemm`` (:mod:`.implicit_gemm`): tensor-core implicit GEMM, every problem.
- ``gemm_1x1`` (:mod:`.gemm_1x1`): unpadded 1x1 NHWC convolutions as a TMA-fed GEMM (strided
  ones over boxes of the strided view).
- ``gemm_1x1_ws`` (:mod:`.implicit_gemm_ws`): Hopper only (Gluon): gemm_1x1's operands copied by a
  one-warp TMA loader into the warp-specialized kernel's ring.
- ``tma_rows`` (:mod:`.implicit_gemm_tma`): stride-1 NHWC convolutions, each tile a segment
  of an output row, both operands by TMA (the padding halo is the copy engine's zero fill).
- ``implicit_gemm_ws`` (:mod:`.implicit_gemm_ws`): Hopper only (Gluon): the implicit GEMM
  warp-specialized, a loader warpgroup gathering tiles into a shared-memory ring for the
  MMA warps, one program an SM.
- ``implicit_gemm_frame`` (:mod:`.implicit_gemm_frame`): Hopper only (Gluon): dense convolutions
  whose tiles are whole output rows; each channel block's input frame (at stride 2, one frame
  per stride phase) copied once by TMA, every tap's A operand a shifted view of one read by
  wgmma from shared memory.
- ``gemm_1x1_nchw`` (:mod:`.gemm_1x1_nchw`): 1x1 stride-1 NCHW convolutions as one GEMM
  per image over its contiguous pixels.
- ``im2row`` (:mod:`.im2row`): few input channels (the stems): each filter row's columns
  unrolled into channels by one copy, then the implicit GEMM with 16-byte loads.
- ``im2row_ws`` (:mod:`.im2row`, :mod:`.implicit_gemm_ws`): Hopper only (Gluon): im2row's copy,
  then implicit_gemm_ws over it (with ``resident`` configs, the whole unrolled weight held in
  shared memory by every program).
- ``staged_nhwc`` (:mod:`.staged`): a non-channels_last (NCHW) input copied into
  channels_last by one transposing kernel, then the implicit GEMM with 16-byte loads.
- ``grouped_gemm`` (:mod:`.launch`): the implicit GEMM over several groups merged into
  one, with a block-diagonal weight, for grouped convolutions with thin groups.
- ``grouped_gemm_ws`` (:mod:`.launch`, :mod:`.implicit_gemm_ws`): Hopper only (Gluon): grouped_gemm's
  merged groups (128 bytes of input channels a merged group) on implicit_gemm_ws's kernel, one
  merged group a tile, a tile with a non-finite input redone group by group.
- ``grouped_frame`` (:mod:`.launch`, :mod:`.implicit_gemm_frame`): Hopper only (Gluon): the same
  merged groups on implicit_gemm_frame's kernel, one merged group a tile: its channels copied as
  frames by TMA once a tile, every tap a view of them; the non-finite redo as grouped_gemm_ws's.
- ``grouped_halo`` (:mod:`.grouped_halo`): Gluon (sm_80 and newer): grouped convolution with
  thin groups on the tensor cores, each input pixel staged in shared memory once a program and
  every tap a shifted view of it (strided: of one of the frame's phases).
- ``depthwise`` (:mod:`.depthwise`): CUDA-core depthwise convolution, any multiplier.
- ``depthwise_halo`` (:mod:`.depthwise_halo`): Gluon (sm_80 and newer): depthwise convolution
  from a shared-memory halo, each input element copied once a program, every tap read from
  shared memory without masks or address arithmetic.
- ``depthwise_window`` (:mod:`.depthwise_window`): CUDA-core depthwise convolution with each
  thread's input window in registers (one channel a thread, the tile unrolled): each input
  value loaded and converted once, then fed to up to R*S multiply-adds; over small images,
  compiled for the image, every tap on padding left out.
- ``depthwise_rows`` (:mod:`.depthwise_rows`): 3x3 depthwise streaming output rows, each
  input row loaded once and reused for the three output rows it touches.
- ``depthwise_toeplitz`` (:mod:`.depthwise_toeplitz`): depthwise convolution with large
  filters on the tensor cores, each filter row a banded (Toeplitz) GEMM per channel.
- ``depthwise_plane`` (:mod:`.depthwise_plane`): depthwise convolution over small planes (7x7)
  on the tensor cores, each channel's whole convolution one GEMM with a plane-to-plane map.
- ``dense_toeplitz`` (:mod:`.dense_toeplitz`): dense convolutions with few input channels
  on the tensor cores, each filter row a banded (Toeplitz) GEMM over a row segment of a
  zero-bordered channels_last copy of the input.
- ``direct_rows`` (:mod:`.direct_rows`): CUDA-core direct convolution of dense problems with
  few output channels (the seed's C = K = 6), each thread every output channel of a few
  columns of an output row.
- ``direct`` (:mod:`.direct`): CUDA-core direct convolution for depthwise, grouped and
  few-channel problems.
- ``ladder0_direct`` .. ``ladder3_tensor_core`` (:mod:`.ladder`): the seed's step-by-step
  implicit GEMM, for teaching and the step chart (``teaching=True``: never dispatched to
  or tuned).

The gradients have a registry of their own, ``BACKWARD_ALGORITHMS`` (:mod:`.backward`):
``implicit_gemm`` (:mod:`.dgrad`, :mod:`.wgrad`), ``depthwise`` and ``aten`` (PyTorch's).

Launch choices are data (:class:`LaunchConfig`, :class:`BackwardConfig`), so that tests can pin them to reach
every code path and the tuning cache can store them. Who picks the algorithm and the
config is :mod:`tileconv.dispatch`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..problem import ConvProblem
from .backward import BACKWARD_ALGORITHMS, BackwardAlgorithm, get_backward_algorithm
from .config import BackwardConfig, LaunchConfig
from .ladder import (
    launch_ladder0_direct,
    launch_ladder1_implicit_gemm,
    launch_ladder2_tiled,
    launch_ladder3_tensor_core,
)
from .launch import (
    dense_toeplitz_unsupported_reason,
    depthwise_halo_unsupported_reason,
    depthwise_plane_unsupported_reason,
    depthwise_rows_unsupported_reason,
    depthwise_toeplitz_unsupported_reason,
    depthwise_unsupported_reason,
    depthwise_window_unsupported_reason,
    direct_rows_unsupported_reason,
    gemm_1x1_nchw_unsupported_reason,
    gemm_1x1_unsupported_reason,
    gemm_1x1_ws_unsupported_reason,
    group_pack_factor,
    grouped_frame_unsupported_reason,
    grouped_gemm_ws_unsupported_reason,
    grouped_halo_unsupported_reason,
    im2row_unsupported_reason,
    im2row_ws_unsupported_reason,
    implicit_gemm_frame_unsupported_reason,
    implicit_gemm_ws_unsupported_reason,
    launch_dense_toeplitz,
    launch_depthwise,
    launch_depthwise_halo,
    launch_depthwise_plane,
    launch_depthwise_rows,
    launch_depthwise_toeplitz,
    launch_depthwise_window,
    launch_direct,
    launch_direct_rows,
    launch_gemm_1x1,
    launch_gemm_1x1_nchw,
    launch_gemm_1x1_ws,
    launch_grouped_frame,
    launch_grouped_gemm,
    launch_grouped_gemm_ws,
    launch_grouped_halo,
    launch_im2row,
    launch_im2row_ws,
    launch_implicit_gemm,
    launch_implicit_gemm_frame,
    launch_implicit_gemm_ws,
    launch_staged_nhwc,
    launch_tma_rows,
    staged_nhwc_unsupported_reason,
    tma_rows_unsupported_reason,
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
    # A step of the seed's ladder (kernels/ladder.py): correct but slow by design; auto
    # dispatch never picks it and tuning never races it; only a forced algo runs it.
    teaching: bool = False


def _always(problem: ConvProblem) -> str | None:
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
    "implicit_gemm_ws": Algorithm(
        "implicit_gemm_ws",
        "Hopper implicit GEMM, warp-specialized (Gluon): loader warps gather into a ring, MMA warps consume it",
        launch_implicit_gemm_ws,
        implicit_gemm_ws_unsupported_reason,
    ),
    "implicit_gemm_frame": Algorithm(
        "implicit_gemm_frame",
        "Hopper implicit GEMM (Gluon): each channel block's input frame (one a stride phase) copied once "
        "by TMA, every tap's operand a shifted view of one",
        launch_implicit_gemm_frame,
        implicit_gemm_frame_unsupported_reason,
    ),
    "gemm_1x1": Algorithm(
        "gemm_1x1",
        "unpadded 1x1 NHWC convolution (strided: over the strided view) as a GEMM fed by bulk tensor copies (TMA)",
        launch_gemm_1x1,
        gemm_1x1_unsupported_reason,
    ),
    "gemm_1x1_ws": Algorithm(
        "gemm_1x1_ws",
        "gemm_1x1 warp-specialized (Gluon, Hopper): a one-warp TMA loader fills a ring, MMA warps consume it",
        launch_gemm_1x1_ws,
        gemm_1x1_ws_unsupported_reason,
    ),
    "tma_rows": Algorithm(
        "tma_rows",
        "stride-1 NHWC implicit GEMM over output-row segments, both operands by bulk tensor copies (TMA)",
        launch_tma_rows,
        tma_rows_unsupported_reason,
    ),
    "gemm_1x1_nchw": Algorithm(
        "gemm_1x1_nchw",
        "1x1 stride-1 NCHW convolution as one GEMM per image over its contiguous pixels",
        launch_gemm_1x1_nchw,
        gemm_1x1_nchw_unsupported_reason,
    ),
    "im2row": Algorithm(
        "im2row",
        "few input channels: filter columns unrolled into channels (one copy), then the implicit GEMM",
        launch_im2row,
        im2row_unsupported_reason,
    ),
    "im2row_ws": Algorithm(
        "im2row_ws",
        "few input channels on Hopper: im2row's copy, then the warp-specialized implicit GEMM (weight held)",
        launch_im2row_ws,
        im2row_ws_unsupported_reason,
    ),
    "staged_nhwc": Algorithm(
        "staged_nhwc",
        "NCHW input copied into channels_last (one transposing copy), then the implicit GEMM",
        launch_staged_nhwc,
        staged_nhwc_unsupported_reason,
    ),
    "grouped_gemm": Algorithm(
        "grouped_gemm",
        "implicit GEMM over merged groups with a block-diagonal weight (thin groups)",
        launch_grouped_gemm,
        _grouped_only,
    ),
    "grouped_gemm_ws": Algorithm(
        "grouped_gemm_ws",
        "grouped_gemm on Hopper (Gluon): groups merged into 128-byte pixel rows, implicit_gemm_ws's "
        "warp-specialized kernel one merged group a tile",
        launch_grouped_gemm_ws,
        grouped_gemm_ws_unsupported_reason,
    ),
    "grouped_frame": Algorithm(
        "grouped_frame",
        "grouped_gemm_ws's merged groups on Hopper (Gluon) through implicit_gemm_frame's kernel: a merged "
        "group's channels copied as frames by TMA once a tile, every tap a view of them",
        launch_grouped_frame,
        grouped_frame_unsupported_reason,
    ),
    "grouped_halo": Algorithm(
        "grouped_halo",
        "grouped convolution, thin groups merged on the tensor cores (Gluon): each input pixel staged "
        "in shared memory once, every tap a shifted view of it (strided: of one of the frame's phases)",
        launch_grouped_halo,
        grouped_halo_unsupported_reason,
    ),
    "depthwise": Algorithm(
        "depthwise",
        "CUDA-core depthwise convolution over 2D pixel tiles (groups = C)",
        launch_depthwise,
        depthwise_unsupported_reason,
    ),
    "depthwise_halo": Algorithm(
        "depthwise_halo",
        "depthwise convolution from a shared-memory halo (Gluon, cp.async): each tap a shared-memory read, no masks",
        launch_depthwise_halo,
        depthwise_halo_unsupported_reason,
    ),
    "depthwise_window": Algorithm(
        "depthwise_window",
        "CUDA-core depthwise convolution with each thread's input window in registers (the tile unrolled)",
        launch_depthwise_window,
        depthwise_window_unsupported_reason,
    ),
    "depthwise_rows": Algorithm(
        "depthwise_rows",
        "CUDA-core 3x3 depthwise convolution streaming output rows (each input row loaded once a strip)",
        launch_depthwise_rows,
        depthwise_rows_unsupported_reason,
    ),
    "depthwise_toeplitz": Algorithm(
        "depthwise_toeplitz",
        "tensor-core depthwise convolution for large filters: each filter row a banded (Toeplitz) GEMM per channel",
        launch_depthwise_toeplitz,
        depthwise_toeplitz_unsupported_reason,
    ),
    "depthwise_plane": Algorithm(
        "depthwise_plane",
        "tensor-core depthwise convolution over small planes: each channel one GEMM with a plane-to-plane map",
        launch_depthwise_plane,
        depthwise_plane_unsupported_reason,
    ),
    "dense_toeplitz": Algorithm(
        "dense_toeplitz",
        "tensor-core dense convolution for few input channels: each filter row a banded (Toeplitz) GEMM over input row segments",
        launch_dense_toeplitz,
        dense_toeplitz_unsupported_reason,
    ),
    "direct_rows": Algorithm(
        "direct_rows",
        "CUDA-core direct convolution for few output channels: a thread holds all of them for a few columns of a row",
        launch_direct_rows,
        direct_rows_unsupported_reason,
    ),
    "direct": Algorithm(
        "direct",
        "CUDA-core direct convolution: depthwise, grouped, few channels",
        launch_direct,
        _always,
    ),
    # The seed's ladder, in step order (the production implicit_gemm is the last step).
    "ladder0_direct": Algorithm(
        "ladder0_direct",
        "ladder step 0: one output per lane, direct loops over C, R, S (CUDA cores)",
        launch_ladder0_direct,
        _always,
        teaching=True,
    ),
    "ladder1_implicit_gemm": Algorithm(
        "ladder1_implicit_gemm",
        "ladder step 1: one output per lane, one flat loop over (c, r, s) (CUDA cores)",
        launch_ladder1_implicit_gemm,
        _always,
        teaching=True,
    ),
    "ladder2_tiled": Algorithm(
        "ladder2_tiled",
        "ladder step 2: output tiles, 2D K-slices reduced by fp32 multiply-add (CUDA cores)",
        launch_ladder2_tiled,
        _always,
        teaching=True,
    ),
    "ladder3_tensor_core": Algorithm(
        "ladder3_tensor_core",
        "ladder step 3: the tiles through tl.dot (tensor cores), not pipelined",
        launch_ladder3_tensor_core,
        _always,
        teaching=True,
    ),
}


def supported_algorithms(problem: ConvProblem) -> list[str]:
    """Names of the algorithms that can compute ``problem``, in registry order."""
    return [name for name, algo in ALGORITHMS.items() if algo.unsupported_reason(problem) is None]


def get_algorithm(name: str) -> Algorithm:
    if name not in ALGORITHMS:
        raise ValueError(f"algo={name!r} is not a tileconv algorithm; known: {', '.join(ALGORITHMS)}")
    return ALGORITHMS[name]


__all__ = [
    "ALGORITHMS", "Algorithm", "BACKWARD_ALGORITHMS", "BackwardAlgorithm", "BackwardConfig", "LaunchConfig",
    "get_algorithm", "get_backward_algorithm", "supported_algorithms",
]
