"""Which algorithm and launch config a problem gets when nothing has been tuned for it.

The rules are deliberately few; each says why. ``tileconv tune`` measures candidates and
its winners (in :mod:`tileconv.dispatch.cache`) override everything here.
"""

from __future__ import annotations

import math
from dataclasses import replace

import triton

from .._runtime import BLOCK_SHARED_RESERVE, DEFAULT_SM_SHARED_BYTES, INTERPRET, cdiv, pow2_at_least
from ..kernels import BackwardConfig, LaunchConfig
from ..kernels.backward import BACKWARD_ALGORITHMS
from ..kernels.config import WS_GATHER, WS_TMA
from ..kernels.ladder import LADDER, ladder_config
from ..kernels.launch import (
    GROUPED_HALO_WALKERS,
    MAX_DENSE_TOEPLITZ_COLUMNS,
    MAX_DENSE_TOEPLITZ_VALUES,
    MAX_HALO_SHARED_BYTES,
    dense_toeplitz_tiling,
    dense_toeplitz_unsupported_reason,
    depthwise_halo_unsupported_reason,
    depthwise_plane_unsupported_reason,
    depthwise_toeplitz_unsupported_reason,
    depthwise_window_unsupported_reason,
    direct_rows_block_k,
    direct_rows_can_pair,
    direct_rows_unsupported_reason,
    frame_columns,
    frame_tiling,
    gemm_1x1_nchw_unsupported_reason,
    gemm_1x1_unsupported_reason,
    gemm_1x1_ws_unsupported_reason,
    group_pack_factor,
    grouped_frame_unsupported_reason,
    grouped_gemm_ws_unsupported_reason,
    grouped_halo_frame_width,
    grouped_halo_smallest,
    grouped_halo_tiling,
    grouped_halo_unsupported_reason,
    grouped_ws_merged,
    grouped_ws_sub_groups,
    halo_tiling,
    im2row_unsupported_reason,
    im2row_ws_unsupported_reason,
    image_fits,
    implicit_gemm_frame_unsupported_reason,
    implicit_gemm_ws_unsupported_reason,
    staged_nhwc_unsupported_reason,
    tma_rows_unsupported_reason,
    toeplitz_reach,
    window_grid,
    window_strips,
    ws_tma_store_bytes,
)
from ..kernels.wgrad import wgrad_depthwise_row_tiles
from ..kernels.wgrad_columns import columns_wgrad_unsupported_reason, row_columns
from ..kernels.wgrad_halo import MAX_ACCUMULATORS, fills_the_gpu, wgrad_halo_tiling
from ..kernels.wgrad_toeplitz import toeplitz_wgrad_columns
from ..kernels.wgrad_ws import (
    input_by_tma,
    input_is_pixel_matrix,
    slice_tiles_fit,
    wgrad_ws_unsupported_reason,
)
from ..problem import ConvProblem

# A tensor-core tile needs >= 16 along N and along each tap's channel slice; below that a
# GEMM tile is mostly zero padding and the CUDA cores do the work with less waste.
MIN_TENSOR_CORE_DIM = 16
# The banded kernels' fp32 accumulators (dense_toeplitz: rows x columns x channels;
# depthwise_plane: images x channels x output pixels): at most this many a thread. sm_90
# compiles (bias, residual and activation in the epilogue) took 96-137 registers with 32 and
# 228-255 with 64 (the epilogue's address tiles; dense_toeplitz's 64x256 tile at 4 warps spilled).
MAX_BANDED_ACCUMULATORS = 32
# depthwise_plane's plane maps hold every (input pixel, output pixel) pair: with fewer taps
# than a 5x5 filter most of a map is zeros the CUDA-core kernels never multiply.
PLANE_MIN_TAPS = 25
# Hopper has 132 SMs (H100/H200 SXM); a grid under this many tiles leaves SMs idle.
SM_COUNT_HINT = 132


WINDOW_MIN_TAPS = 25  # depthwise_window by default above this many taps (measured: 7x7 won, 3x3 lost)
# depthwise_window's strips of a 7x7 filter: 168 registers a thread, 12 one-warp programs an SM.
WINDOW_WARPS_PER_SM = 12


def choose_algorithm(problem: ConvProblem) -> str:
    """One input channel per group (depthwise): 'depthwise_toeplitz' for large filters,
    'depthwise_window' at stride 1 over channels_last for filters of 26 to 49 taps,
    'depthwise_halo' on a GPU at stride 1 (multiplier 1, channels_last, filters up to 7x7),
    'depthwise_plane' for 5x5-and-up filters over planes of at most 64 pixels, else
    'depthwise' (3x3 and smaller, outputs 14 wide and up) or 'direct'. Thin groups that
    merge into a tensor-core tile: on Hopper, 16-bit, up to 3x3, 4 to 16 channels a group, strided
    inputs 28 wide and up (:func:`grouped_frame_pays`) 'grouped_frame'; on Hopper at stride 2 with 8 to 16
    channels a group (16-bit, up to 3x3; narrower inputs) 'grouped_gemm_ws'; 'grouped_halo' on a GPU at strides up to 2 (4 to 16 channels a group,
    up to 3x3), else 'grouped_gemm'. Dense with few channels on both sides:
    'direct_rows' in float32, else 'dense_toeplitz' ('direct' where neither can run). Dense with few input channels and
    enough output channels for a tensor-core tile (the stems): 'im2row'. NCHW rules:
    'gemm_1x1_nchw', 'staged_nhwc'. On Hopper, strided unpadded 1x1 filters, and 16-bit stride-1
    ones over many channels to narrow outputs (:func:`ws_1x1_pays`): 'gemm_1x1_ws';
    filters whose frame fits the output's width (:func:`frame_pays`: stride 1, and stride 2 on outputs
    at most 16 wide): 'implicit_gemm_frame';
    narrow outputs: 'implicit_gemm_ws'. Everything else: 'implicit_gemm'."""
    if problem.c_per_group == 1:
        # Measured on an H200 (2026-11-22, fp16 NHWC, batch 32): the 2D-tile depthwise
        # kernel won at 14 <= output width <= 28 with small filters (c384 hw14 3x3: 15.7 us
        # against direct's 44.4), the flat-tile direct kernel elsewhere (c32 hw112: 40.9
        # against 76.8; 31x31: 2294 against 3200); since the 2D kernel's taps are unrolled
        # (session 9) it wins the wider 3x3 outputs too (session 10, below).
        # depthwise_toeplitz (banded GEMMs on the tensor cores, one channel a program) won
        # the 27x27 and 31x31 rows by 3.1x-4.6x over the best CUDA-core kernel (c128 hw56
        # 31x31: 427 us against direct's 1973; cuDNN 8204); it lost at 13x13 on a 7-wide
        # output (16-column tiles mostly padding) and on 7x7.
        if (problem.r * problem.s >= 15 * 15 and problem.out_w >= 14
                and depthwise_toeplitz_unsupported_reason(problem) is None):
            return "depthwise_toeplitz"
        # depthwise_plane (a channel's whole convolution one GEMM over planes of at most 64
        # pixels; 2026-11-23 session 10, H200, fp16 batch 32, benchmarks/probe.py plane, cuDNN
        # beside it): 7x7 c768 hw7 16.2 us NHWC / 15.3 us NCHW against the CUDA-core kernels'
        # 28.4 / 35.2 (cuDNN 21.9 / 52.1); 13x13 c1024 hw7 16.4 / 16.8 against 83.1 / 148.3
        # (cuDNN 398.9 / 68.9). A 3x3 filter fills too little of the plane map: 16.4 us against
        # direct's 8.7 on c960 hw7.
        # depthwise_halo (Gluon: the input halo in shared memory once a program, the taps read from
        # it), stride 1. Session 12, H200, fp16 NHWC batch 32, tuned bench beside cuDNN (`record.sh
        # halo`, the filter in registers): it won every stride-1 row up to 7x7 (3x3 c32 hw112 25.0 us
        # against the 2D kernel's 32.0, c144 hw56 34.0 against 43.3 in the probe; 7x7 c96 hw56 73.8
        # against direct's 122.0 in the probe, cuDNN 73.6; c768 hw7 16.7 against depthwise_plane's
        # 20.3) and lost the stride-2 3x3 rows to the 2D kernel (c576 hw14/2 9.7 against 11.2, c192
        # hw28/2 10.5 against 11.0, c96 hw112/2 39.3 against 39.8; tied c144 hw56/2).
        # depthwise_window (input rows streamed through registers, one channel a thread), stride 1,
        # filters of more than 25 taps (session 25, H200, fp16 NHWC batch 32, benchmarks/
        # probe_window.py, CUDA-graph replays beside cuDNN and the heuristics' halo kernel): the
        # four ConvNeXt 7x7 rows at strips of 7 rows, 7 columns (then 4 on a 7-wide output; 7 since
        # session 26's skip of the ramps' padding rows, see depthwise_window_config): c96 hw56
        # 41.8 us against the halo's 44.7 (cuDNN 73.4), c192 hw28 23.6 / 31.8 (46.4), c384 hw14
        # 14.7 / 19.4 (26.6), c768 hw7 11.6 / 14.4 (21.4). It lost every stride-1 3x3 row to the
        # halo kernel (c384 hw14 17.4 against 10.5 us): the taps there are too few to pay for
        # its loads' masks. Over small images (session 47, H200, fp16 NHWC batch 32,
        # benchmarks/probe_image.py, beside cuDNN and the halo kernel), with tiles of the output's
        # width compiled for the image (no masks, no multiply-adds on padding) in strips of 4 output
        # rows, it won the stride-1 3x3 rows over 7x7 and 14x14 outputs: c960 hw7 7.3 us against the
        # halo's 8.4 (cuDNN 9.9), c576 hw14 11.3 / 12.4 (12.8), c384 hw14 9.9 / 10.3 (12.3); it lost at
        # stride 2.
        if (problem.stride == (1, 1) and problem.dilation == (1, 1) and problem.layout == "nhwc"
                and (problem.r * problem.s > WINDOW_MIN_TAPS or image_fits(problem))
                and depthwise_window_unsupported_reason(problem) is None):
            return "depthwise_window"
        if problem.stride == (1, 1) and depthwise_halo_unsupported_reason(problem) is None:
            return "depthwise_halo"
        if problem.r * problem.s >= PLANE_MIN_TAPS and depthwise_plane_unsupported_reason(problem) is None:
            return "depthwise_plane"
        # Session 10 (H200, fp16 NHWC, batch 32): on the outputs wider than 28 the 2D kernel with
        # 8x8-pixel, 32-channel tiles (tuning's pick) beat the direct kernel's default: c32 hw112/1
        # 32.1 us against 33.3, c96 hw112/2 39.8 against 46.3, c144 hw56/1 43.0 against 50.6.
        depthwise = problem.groups == problem.c and problem.out_w >= 14 and problem.r * problem.s <= 9
        return "depthwise" if depthwise else "direct"
    # grouped_frame first, on the rows it won (see GROUPED_FRAME_MIN_STRIDED_WIDTH's measurements).
    if grouped_frame_pays(problem):
        return "grouped_frame"
    # grouped_halo (Gluon: each input pixel staged in shared memory once, the taps shifted views
    # of it, or of the stride's phase frames), strides up to 2, 4 to 16 channels a group, filters
    # up to 3x3 (H200, fp16 NHWC batch 32, benchmarks/probe_grouped.py, CUDA-graph replays beside
    # cuDNN). Session 28, stride 1: ResNeXt c128 hw56 44.4 us against grouped_gemm's 55.9 (cuDNN
    # 60.7), c512 hw14 18.4 against implicit_gemm's 22.1 (22.8), c256 hw28 30.2 against 30.5
    # (36.9); it lost c1024 hw7 (32 channels a group: 33.8 against 12.8). Session 29, stride 2:
    # c256 hw56/2 37.6 against grouped_gemm's 42.2 (39.5), c512 hw28/2 24.4 against
    # implicit_gemm's 26.9 (24.3).
    # Stride 2 on Hopper, 8 to 16 channels a group: grouped_gemm_ws (groups merged into 128-byte
    # pixel rows on the warp-specialized implicit GEMM) beat grouped_halo's staged phase frames
    # (session 54, H200, benchmarks/probe_grouped.py --ws-merged, CUDA-graph replays): c512 hw28/2
    # 20.7 us against 24.1 (cuDNN 24.3), c256 hw56/2 34.2 against 36.2 (39.4); the bench, heuristics:
    # 21.1 and 35.6 us (24.1 and 35.8 in session 53). At 32 channels a group (c1024 hw14/2) it tied
    # the implicit GEMM (tuning: 14.8 against 14.7 us), and it lost every stride-1 row (c512 hw14
    # 18.9 against grouped_halo's 15.8, c1024 hw7 13.4 against implicit_gemm's 12.8).
    if (problem.groups > 1 and max(problem.stride) == 2 and 8 <= problem.c_per_group <= 16
            and problem.r * problem.s <= 9 and problem.itemsize == 2
            and grouped_gemm_ws_unsupported_reason(problem) is None):
        return "grouped_gemm_ws"
    if (problem.groups > 1 and max(problem.stride) <= 2 and 4 <= problem.c_per_group <= 16
            and problem.r * problem.s <= 9 and grouped_halo_unsupported_reason(problem) is None):
        return "grouped_halo"
    if problem.groups > 1 and min(problem.c_per_group, problem.k_per_group) < MIN_TENSOR_CORE_DIM:
        if group_pack_factor(problem) > 1:
            return "grouped_gemm"
    if problem.groups == 1 and max(problem.c, problem.k) < MIN_TENSOR_CORE_DIM:
        # Few channels on both sides (the seed's C = K = 6): an implicit GEMM's tile is mostly
        # padding (seed003 untuned on it, H200 2026-11-23: 357 us fp16 NHWC, 602 us fp32 NCHW;
        # cuDNN 133 / 248). The banded GEMM over row segments (session 10, H200, benchmarks/
        # probe.py toeplitz): 29.0 us fp16 NHWC, 31.4 fp16 NCHW, 77.0 strict fp32 NCHW against
        # the direct kernel's 132.9 / 138.1 / 138.3. The direct kernel where it cannot run.
        # In float32 the banded GEMM pays three TF32 products a step (strict) or 4-byte operands
        # (TF32): direct_rows, on the FMA units, took 43.5 us on seed003 in strict fp32 NCHW and
        # 53.8 in NHWC against dense_toeplitz's 77.2 / 64.7 (TF32 NCHW: 58.9), and lost in fp16
        # (49.9 against 24.1 us) (session 24, H200, benchmarks/probe.py rows6).
        if problem.itemsize == 4 and direct_rows_unsupported_reason(problem) is None:
            return "direct_rows"
        if dense_toeplitz_unsupported_reason(problem) is None:
            return "dense_toeplitz"
        return "direct"
    if (problem.c < MIN_TENSOR_CORE_DIM and problem.k >= MIN_TENSOR_CORE_DIM
            and im2row_unsupported_reason(problem) is None):
        return "im2row_ws" if im2row_ws_pays(problem) else "im2row"
    if problem.stride != (1, 1) and gemm_1x1_ws_unsupported_reason(problem) is None:
        return "gemm_1x1_ws"  # strided 1x1 on Hopper: see GEMM_1X1_WS_PINGPONG
    if ws_1x1_pays(problem):
        return "gemm_1x1_ws"  # deep, narrow stride-1 1x1 on Hopper: see WS_1X1_MIN_CHANNELS
    if frame_pays(problem):
        return "implicit_gemm_frame"
    if ws_pays(problem):
        return "implicit_gemm_ws"
    if tma_rows_fits(problem):
        return "tma_rows"
    if nchw_gemm_fits(problem):
        return "gemm_1x1_nchw"
    if staging_pays(problem):
        return "staged_nhwc"
    # 1x1 stride-1 NHWC convolutions are plain GEMMs: the TMA kernel. Measured on an H200
    # (2026-11-22, fp16): one tile a program, it won only large GEMMs (M = K = 4096 at
    # C = 1024 / 4096: 62.8 / 203 us against the implicit GEMM's 100 / 324). Its persistent
    # form (2026-11-23, benchmarks/probe_tma.py r50) won all twelve of ResNet-50's 1x1 stride-1
    # rows over the implicit GEMM, fp16 and TF32 (fp16 0.60x-0.83x of cuDNN -> 0.77x-1.11x;
    # TF32 0.48x-1.07x -> 0.84x-1.23x), most with 128x128 tiles, 4 warps, 4 stages.
    if (gemm_1x1_unsupported_reason(problem) is None and problem.stride == (1, 1)
            and (problem.itemsize == 2 or problem.allow_tf32)):
        return "gemm_1x1"
    return "implicit_gemm"


# implicit_gemm_ws (warp-specialized, Gluon) against the heuristics' kernel, H200, batch 32,
# NHWC (2026-11-23 session 11, benchmarks/probe.py ws, cuDNN beside it). fp16: seed000 (14 wide)
# 182.6 us against the implicit GEMM's 236.5 (cuDNN 173.6); ResNet-50 3x3/1 at 7 wide 32.7
# against 35.6, 14 wide 29.3 against 29.9, 28 wide 28.4 against 27.9, 56 wide 36.5 against
# 34.2; 3x3/2 to 14 wide 27.0 against 30.0, to 28 wide 29.9 against 29.3; 1x1/2 to 28 wide
# 24.6 against 31.6; 1x1/1 c2048 at 7 wide 15.1 against gemm_1x1's 17.9; it lost the wide rows
# (seed001 hw128 80.7 against tma_rows's 66.3, the VAE's 46.3 against 36.0). TF32: seed000 353.8
# against 480.1, 7 wide 60.3 against 79.7, 14 wide 49.5 against 53.2, 3x3/2 to 14 wide 49.0
# against 54.4, c2048 1x1 at 7 wide 26.7 against 30.3; it lost at 28 and 56 wide.
# Session 20: its loader's step cut from 335 to 78 instructions (the loader had been the
# bottleneck: Nsight Compute found the MMA warps waiting on the ring). Tuning then (40 candidates,
# H200, batch 32) chose it for every 3x3 row up to 28 wide, fp16 and TF32: c128 hw28 3x3/1 24.9 us
# against the implicit GEMM's 27.6 (TF32 41.6 against 48.2), c128 hw56 3x3/2 (28 wide out) 27.9
# against 28.1 (TF32 47.5 against 50.3), c256 hw14 3x3/1 23.3 against 28.3 (TF32 39.6 against
# 50.5); at 56 wide it still lost (c64 hw56 3x3/1 36.3 against 31.6: K = 64, half its N tile),
# and gemm_1x1 kept the stride-1 1x1 rows from 14 wide up.
WS_MAX_WIDTH = 28
WS_MAX_1X1_WIDTH = 7


# gemm_1x1_ws on ResNet-50's strided 1x1 rows (H200, batch 32, NHWC, 2026-11-24 session 19, tuning
# with 40 candidates a row): it won five of the six fp16 and TF32 rows or came within 3% of the
# winner (fp16 c256 hw56 k512/2 23.1 us against implicit_gemm_ws's 24.8, c1024 hw14 k2048/2 19.5;
# TF32 44.3 against implicit_gemm's 47.9 and gemm_1x1's 46.0), the ping-pong 128x128 tile at 4
# stages on four of them.
GEMM_1X1_WS_PINGPONG = LaunchConfig(block_m=128, block_n=128, block_k=64, num_warps=4, num_stages=4, pingpong=1)


# implicit_gemm_frame (one input frame a channel block, every tap a view of it; H200, session 45,
# benchmarks/probe_frame.py, CUDA-graph replays beside cuDNN and the dispatch of then, fp16 NHWC):
# ResNet-50's stride-1 3x3 rows at batch 32, c64 hw56 k64 21.1 us at 128x64x64 (cuDNN 31.0,
# implicit_gemm 34.4), c128 hw28 k128 20.2 at 128x128x64 (25.4, implicit_gemm_ws 23.5), c256 hw14
# k256 19.0 at 128x128x64 (26.2, 22.4). It lost where the frame is mostly columns no output
# stores (c512 hw7: 16 columns for 7 outputs, 29.2 against 24.5; seed001's 64-wide rows, 128
# columns for 66) and on seed000 (K = 512: 193.5 against implicit_gemm_ws's 128x256 172.3).
FRAME_MAX_WASTE = 1.15  # frame columns over the columns outputs read, at most
FRAME_MAX_K = 256
# At stride 2 (the stride's four phase frames a stage, each tap a view of one; H200, session 50,
# benchmarks/probe_frame.py --stride 2, beside the dispatch's implicit_gemm_ws and cuDNN in one
# run): ResNet-50's 3x3/2 rows at batch 32 on 64x128x64 tiles with 8 weight stages (the best of
# ten tiles on each; 128-row tiles fit only with 32-channel steps, 25.6-32.4 us): c512 hw14 k512
# 19.7 us against 24.2 (cuDNN 30.9), c256 hw28 k256 21.7 against 22.5 (25.5), c128 hw56 k128 25.0
# against 24.9 (26.5). The phase frames pay where the output rows are short (the gathered tiles
# span many of them), whatever K.
FRAME_STRIDED_MAX_WIDTH = 16


def frame_pays(problem: ConvProblem) -> bool:
    """Whether ``problem`` should run on ``implicit_gemm_frame``: the kernel can take it, its
    frame wastes at most :data:`FRAME_MAX_WASTE` of its columns, and at stride 1 K at most
    :data:`FRAME_MAX_K` and C at least 64, at stride 2 outputs at most
    :data:`FRAME_STRIDED_MAX_WIDTH` wide (the rows it won; see the measurements above)."""
    if implicit_gemm_frame_unsupported_reason(problem) is not None or problem.r * problem.s == 1:
        return False
    read, width = frame_columns(problem)
    if width > FRAME_MAX_WASTE * read or frame_tiling_or_none(problem, frame_config(problem)) is None:
        return False
    if problem.stride != (1, 1):
        return problem.out_w <= FRAME_STRIDED_MAX_WIDTH
    return problem.k <= FRAME_MAX_K and problem.c >= 64


# grouped_frame (grouped_gemm_ws's merged groups, 64 channels of 16 bits, through the frame kernel;
# H200, session 55, benchmarks/probe_frame.py --grouped, CUDA-graph replays beside cuDNN and the
# dispatch of then, every output checked): it won the rows read from 56-wide inputs, c128 hw56/1 39.0
# us at 256 rows on 8 warps (6 weight stages) against grouped_halo's 44.1 (128 rows: 44.3; cuDNN 60.8),
# c256 hw56/2 32.9 at 128 rows (6 stages) against grouped_gemm_ws's 35.3 (cuDNN 39.3); it tied on c256
# hw28/1 (26.0 against grouped_halo's 26.0) and c512 hw28/2 (21.8 against 21.5) and lost c512 hw14/1
# (17.0 against grouped_halo's 15.7, an earlier call), c1024 hw14/2 (16.4 against implicit_gemm's 14.9)
# and c1024 hw7/1 (17.6 against 13.3). Its dense stand-ins (the same tiles over a dense C = K = 64 input, contiguous
# 128-byte pixels) had been faster on the narrow rows (c512 hw14/1 14.8 us): a merged group's frames are
# 128 bytes of each pixel's C*2, a strided copy.
# Session 59 (H200, grouped_frame's variants beside cuDNN in one process, do_bench medians, every output
# checked: results/nvidia-h200_probe_grouped_frame_variants_session59.json): with a merged tile's block-diagonal weight multiplied as its diagonal blocks
# (launch.frame_sub_blocks) it took the narrower stride-1 rows too: c256 hw28/1 21.6 us against
# grouped_halo's 26.0 (cuDNN 37.1), c512 hw14/1 13.3 against 15.3 (23.7), c128 hw56/1 32.6 (61.0); at
# stride 2 it still lost c512 hw28/2 (22.3 against grouped_gemm_ws's 21.0).
# Session 60 (H200, a weight-stage sweep beside cuDNN in one process, do_bench medians of 2 rounds,
# every output checked: results/nvidia-h200_probe_grouped_frame_stages_session60.json): with the
# weight ring counted at the diagonal blocks' size (2 KB a stage on ResNeXt's thin groups, not the
# whole tile's 8), nine weight stages (a 3x3 tile's taps) were the best of 6, 9, 12, 18 and 27 on
# every row: c128 hw56/1 256 rows 33.0 -> 31.8 us (cuDNN 61.2), c256 hw56/2 128 rows 30.7 (8 stages)
# -> 27.8 (39.6), c256 hw28/1 21.9 -> 21.7, c512 hw14/1 14.1 -> 13.7, and c512 hw28/2 17.8 against
# grouped_gemm_ws's 20.9 (24.4): grouped_frame takes the strided rows from 28-wide inputs too. The
# 32-channel c1024 rows stay on the implicit GEMM (14.6 against 11.8 us, 15.7 against 14.4).
GROUPED_FRAME_MAX_CHANNELS = 16
GROUPED_FRAME_MIN_STRIDED_WIDTH = 28
GROUPED_FRAME_WEIGHT_STAGES = 9


def grouped_frame_pays(problem: ConvProblem) -> bool:
    """Whether a grouped ``problem`` should run on ``grouped_frame`` untuned: 16-bit, 4 to
    :data:`GROUPED_FRAME_MAX_CHANNELS` channels a group, filters up to 3x3, strided inputs at least
    :data:`GROUPED_FRAME_MIN_STRIDED_WIDTH` wide, a frame that wastes at most :data:`FRAME_MAX_WASTE`
    of its columns, and one the kernel can run (a Hopper GPU, strides up to 2)."""
    strided_narrow = problem.stride != (1, 1) and problem.w < GROUPED_FRAME_MIN_STRIDED_WIDTH
    if (problem.groups == 1 or problem.itemsize != 2 or problem.r * problem.s > 9
            or not 4 <= problem.c_per_group <= GROUPED_FRAME_MAX_CHANNELS or strided_narrow
            or grouped_frame_unsupported_reason(problem) is not None):
        return False
    read, width = frame_columns(problem)
    return width <= FRAME_MAX_WASTE * read


def grouped_frame_config(problem: ConvProblem) -> LaunchConfig:
    """grouped_frame's tile, one merged group wide (its K/groups: the launcher's rule), with
    :data:`GROUPED_FRAME_WEIGHT_STAGES` weight stages or as many as fit: at stride 1, 256 rows on 8
    warps; else (or where that does not fit) 128 rows on 4 warps (at a stride the phase frames take
    the room), then 64; the merged group's channels in steps of 64, then 32 (sessions 55 and 60,
    above). Where no tile fits (long filter reaches), the last tried: the launcher's reason refuses
    such problems."""
    merged = grouped_ws_merged(problem)
    tiles = ([(256, 8)] if problem.stride == (1, 1) else []) + [(128, 4), (64, 4)]
    return first_fitting_frame_tile(merged, [
        LaunchConfig(block_m, merged.k_per_group, block_k, 8, warps, GROUPED_FRAME_WEIGHT_STAGES)
        for block_k in dict.fromkeys((64 if merged.c_per_group % 64 == 0 else 32, 32))
        for block_m, warps in tiles], grouped_ws_sub_groups(problem))


def first_fitting_frame_tile(problem: ConvProblem, configs: list[LaunchConfig],
                             sub_groups: tuple[int, int] = (0, 0)) -> LaunchConfig:
    """The first of ``configs``, each with weight stages dropped until it fits (:func:`fit_frame_stages`),
    whose frames and weight ring fit ``problem`` (grouped_frame's merged problem: its ``sub_groups``);
    the last tried where none does (the frame kernels' support rule refuses a problem no tile fits)."""
    for config in configs:
        config = fit_frame_stages(problem, config, sub_groups)
        if frame_tiling_or_none(problem, config, sub_groups) is not None:
            return config
    return config


def fit_frame_stages(problem: ConvProblem, config: LaunchConfig, sub_groups: tuple[int, int] = (0, 0)) -> LaunchConfig:
    """``config`` with weight stages dropped (down to 2) until the frame kernel's frames and ring
    fit ``problem``'s (:func:`frame_tiling`; grouped_frame's merged problem: its ``sub_groups``);
    at 2 stages whether they fit or not."""
    while config.num_stages > 2 and frame_tiling_or_none(problem, config, sub_groups) is None:
        config = replace(config, num_stages=config.num_stages - 1)
    return config


def frame_config(problem: ConvProblem) -> LaunchConfig:
    """implicit_gemm_frame's tile: 128 rows on 4 warps (256 on 8 where the frame is wider than
    128 columns), 64 output channels (8 weight stages) where K is at most 64, else 128 (6 stages),
    64-channel steps where they divide C, else 32 (the probe's winners, above); at a stride (its
    phase frames take twice a stage's rows and more), 64 rows by 128 channels with 8 weight
    stages."""
    block_k = 64 if problem.c % 64 == 0 else 32
    if problem.stride != (1, 1):
        return LaunchConfig(64, 128, block_k, 8, 4, 8)
    block_m, warps = (256, 8) if frame_columns(problem)[1] > 128 else (128, 4)
    block_n, stages = (64, 8) if problem.k <= 64 else (128, 6)
    return LaunchConfig(block_m, block_n, block_k, 8, warps, stages)


def fitted_frame_config(problem: ConvProblem) -> LaunchConfig:
    """implicit_gemm_frame's default tile: :func:`frame_config`'s (the tile :func:`frame_pays` judges),
    else, where its frames and ring do not fit, fewer weight stages, 128 and 64 rows, then 64 wide
    in 32-channel steps (long dilated filters: a forced run once raised a ValueError)."""
    preferred = frame_config(problem)
    fw = frame_columns(problem)[1]
    smaller = [replace(preferred, block_m=rows, num_warps=4) for rows in (128, 64) if fw <= rows < preferred.block_m]
    return first_fitting_frame_tile(problem, [preferred, *smaller,
                                              *(replace(c, block_n=64, block_k=32) for c in (preferred, *smaller))])


def frame_tiling_or_none(problem: ConvProblem, config: LaunchConfig, sub_groups: tuple[int, int] = (0, 0)):
    """:func:`frame_tiling`, or None where ``config`` does not fit ``problem``."""
    try:
        return frame_tiling(problem, config, sub_groups)
    except ValueError:
        return None


# gemm_1x1_ws on ResNet-50's stride-1 1x1 rows (H200, fp16 NHWC, batch 32): of the seven such rows
# with at least 256 input channels and an output at most 28 wide, `tune --suite resnet50` chose it
# with the tile :func:`_ws_config` gives on six, in sessions 51 and 52 alike (session 52's tuning,
# heuristics of then against tuned: c2048 hw7 k512 on implicit_gemm_ws 14.9 us against 13.2 at 64x128
# x 8; c512 hw7 k2048 implicit_gemm_ws 14.7 / 13.3 at 128x128 x 6; gemm_1x1 against it: c1024 hw14
# k512 19.7 / 17.3 at 64x128 x 8, c1024 hw14 k256 13.9 / 13.4, c256 hw14 k1024 13.3 / 13.1, c512 hw28
# k256 20.8 / 19.3 at 128x128 x 6); on the seventh, c512 hw28 k128, it chose implicit_gemm_ws with
# that tile (16.3-16.9 us), where gemm_1x1_ws's took 16.7 (session 51's probe_ring_depth) and 16.5
# (session 52's untuned bench) against gemm_1x1's 17.3-17.4. On the 56-wide rows gemm_1x1 won; with
# 128 channels or fewer the tuner's tile was not _ws_config's; TF32 was not measured.
WS_1X1_MIN_CHANNELS = 256
WS_1X1_MAX_WIDTH = 28


def ws_1x1_pays(problem: ConvProblem) -> bool:
    """Whether a stride-1 problem should run on ``gemm_1x1_ws`` untuned: one it can run (an
    unpadded 1x1 over channels_last, on a Hopper GPU), 16-bit, at least :data:`WS_1X1_MIN_CHANNELS`
    input channels, an output at most :data:`WS_1X1_MAX_WIDTH` wide."""
    return (problem.stride == (1, 1) and problem.itemsize == 2 and problem.c >= WS_1X1_MIN_CHANNELS
            and problem.out_w <= WS_1X1_MAX_WIDTH and gemm_1x1_ws_unsupported_reason(problem) is None)


def ws_pays(problem: ConvProblem) -> bool:
    """Whether ``problem`` should run on ``implicit_gemm_ws`` (a Hopper GPU, outside the
    interpreter): outputs at most :data:`WS_MAX_WIDTH` wide (1x1 stride-1 filters only at
    :data:`WS_MAX_1X1_WIDTH` and under, the one such row measured), and 16-bit strided 1x1 filters."""
    if implicit_gemm_ws_unsupported_reason(problem) is not None:
        return False
    one_by_one = problem.r * problem.s == 1
    if one_by_one and problem.stride == (1, 1):
        return problem.out_w <= WS_MAX_1X1_WIDTH
    return problem.out_w <= WS_MAX_WIDTH or (one_by_one and problem.itemsize == 2)


def _ws_config(problem: ConvProblem) -> LaunchConfig:
    """implicit_gemm_ws's tile, from the probe above: 128x256 on 8 warps where there are at
    least two waves of them (seed000, the 1x1/2 rows); 64x128 on 4 warps where 128x128 tiles
    would not fill half the SMs (the 7-wide rows) or would leave a last wave under half full
    (session 20's tuning: the 28-wide 3x3 rows, 196 tiles on 132 SMs); else 128x128 on 4 warps.
    The one-warpgroup tiles take 192 KB of ring (8 and 6 stages): session 35's tuning (H200,
    candidates._WS_BASE) chose those depths on all eight ResNet-50 rows it gave this kernel,
    over the 5 and 4 stages of before (c128 hw56 3x3/2 27.6 -> 24.0 us, c512 hw7 3x3 25.3 -> 24.0).
    Channel blocks of 64 (16-bit) or 32 (float32), halved by the launcher until they divide C."""
    block_k = 64 if problem.itemsize == 2 else 32
    tiles_128 = triton.cdiv(problem.gemm_m, 128) * triton.cdiv(problem.k, 128)
    if problem.k >= 256 and triton.cdiv(problem.gemm_m, 128) * triton.cdiv(problem.k, 256) >= 2 * SM_COUNT_HINT:
        return LaunchConfig(block_m=128, block_n=256, block_k=block_k, num_warps=8,
                            num_stages=4 if problem.itemsize == 2 else 3)
    waves, last = divmod(tiles_128, SM_COUNT_HINT)
    if tiles_128 < SM_COUNT_HINT // 2 or (waves >= 1 and 0 < last < SM_COUNT_HINT // 2):
        return LaunchConfig(block_m=64, block_n=128, block_k=block_k, num_warps=4, num_stages=8)
    return LaunchConfig(block_m=128, block_n=128, block_k=block_k, num_warps=4, num_stages=6)


# im2row_ws's GEMM over the unrolled copy: 256 rows on 8 warps, every program holding the whole
# unrolled weight (its N slice: R x unrolled channels x block_n), only the copy's tiles in the
# ring. H200, session 51 (the ResNet-50 stem at batch 32, CUDA-graph replays, cold L2): the copy
# 20.9 us, then 256x64 x 8 stages held 50 us, 128x64 x 8 held 52, 128x64 x 8 in the ring 62, 256x64
# x 6 in the ring 60; im2row's Triton GEMM 56 (im2row 76.7 us in all, im2row_ws 70.8, cuDNN 93.5).
IM2ROW_WS_CONFIG = LaunchConfig(block_m=256, block_n=64, block_k=32, num_warps=8, num_stages=8, resident=1)
# Unrolled channels from which im2row_ws is chosen untuned, in 16-bit types: the stem's 32 is what
# was measured; neither a 16-channel step (3x3 filters over 3 channels) nor TF32 was.
IM2ROW_WS_MIN_CHANNELS = 32


def im2row_ws_config(unrolled: ConvProblem) -> LaunchConfig:
    """:data:`IM2ROW_WS_CONFIG` for ``unrolled`` (:meth:`ConvProblem.columns_as_channels`): 128
    output channels wide where K is over 64, the ring as deep as leaves room for the held weight
    and the TMA-store epilogue's buffers (down to 2 stages); where even that does not fit, the
    weight in the ring (implicit_gemm_ws's own tile)."""
    config = replace(IM2ROW_WS_CONFIG, block_n=64 if unrolled.k <= 64 else 128,
                     block_k=min(IM2ROW_WS_CONFIG.block_k, unrolled.c))
    budget = DEFAULT_SM_SHARED_BYTES - BLOCK_SHARED_RESERVE
    while config.num_stages > 2 and ws_tma_store_bytes(unrolled, config, config.block_k) > budget:
        config = replace(config, num_stages=config.num_stages - 1)
    return config if ws_tma_store_bytes(unrolled, config, config.block_k) <= budget else _ws_config(unrolled)


def im2row_ws_pays(problem: ConvProblem) -> bool:
    """Whether the heuristics take im2row_ws over im2row (:data:`IM2ROW_WS_CONFIG`): on Hopper,
    16-bit, with :data:`IM2ROW_WS_MIN_CHANNELS` unrolled channels or more."""
    return (problem.itemsize == 2 and problem.unrolled_channels >= IM2ROW_WS_MIN_CHANNELS
            and im2row_ws_unsupported_reason(problem) is None)


# tma_rows tiles output rows in segments of 64 or 128 pixels: rows narrower than that waste
# the rest of the segment. Measured on an H200 (2026-11-23, benchmarks/probe_tma.py, NHWC,
# best config of each against cuDNN): with 64-pixel rows and wider, fp16 and TF32, 3x3 filters,
# K >= 128, the persistent form won the VAE's rows (fp16 0.69x-0.88x on the implicit GEMM ->
# 1.00x-1.27x; TF32 0.62x-0.71x -> 0.88x-1.07x) and the seed's C = 64 rows (fp16 0.64x-1.14x
# -> 1.05x-1.25x); it lost the fp16 C = 32 rows at 64 pixels (1.32x / 1.04x against the
# implicit GEMM's 1.78x / 1.27x: 4 reduction steps a tile, too few for its pipeline) and the
# 56-wide ResNet-50 row (0.88x against 0.93x: 56/64 of each segment useful).
TMA_ROWS_MIN_WIDTH = 64
TMA_ROWS_MIN_K = 128


def tma_rows_fits(problem: ConvProblem) -> bool:
    """Whether a stride-1 NHWC problem should run on ``tma_rows``: rows at least
    :data:`TMA_ROWS_MIN_WIDTH` pixels wide, a filter with taps, K >= :data:`TMA_ROWS_MIN_K`,
    for 16-bit types C >= 64 unless rows are 128 wide; float32 with TF32 allowed only."""
    if tma_rows_unsupported_reason(problem) is not None or problem.r * problem.s == 1:
        return False
    if problem.out_w < TMA_ROWS_MIN_WIDTH or problem.k < TMA_ROWS_MIN_K:
        return False
    if problem.itemsize == 4:  # TF32 measured; strict fp32 (3xTF32) not, it stays on the implicit GEMM
        return problem.allow_tf32
    return problem.c >= 64 or problem.out_w >= 2 * TMA_ROWS_MIN_WIDTH


# staged_nhwc copies an NCHW input into channels_last (one read and one write of it) so that
# the GEMM's loads become 16-byte runs. Estimated from H200 runs (2026-11-22/23: ResNet-50's
# layers in fp16 NCHW, in NHWC, and the copy at ~3.4 TB/s): the copy pays where the GEMM
# does at least this many FLOPs per input element per byte of it (2*K*R*S / (U*V) per
# element: 3x3 layers, deep 1x1 layers) and loses on wide, shallow 1x1 layers
# (c256 hw56 k64: 24 us of GEMM behind a 30 us copy). Then measured (H200, 2026-11-23):
# resnet50 fp16 NCHW 0.72x -> 0.99x cuDNN with this rule, and tuning agreed with it on 22
# of the 23 layers (16 of the 17 it stages); with gemm_1x1_nchw taking the shallow 1x1
# layers, 1.10x.
STAGING_FLOPS_PER_INPUT_BYTE = 256


def nchw_gemm_fits(problem: ConvProblem) -> bool:
    """Whether a 1x1 stride-1 NCHW problem should run as one GEMM per image
    (``gemm_1x1_nchw``): tensor-core-sized channels, and each channel's pixel row a
    multiple of 16 bytes, so that its loads and stores are 16 bytes wide (ResNet-50's
    56x56 and 28x28 layers; its 14x14 and 7x7 ones are not, and stage instead). 16-bit
    types only: wgmma reads a pixel-major A operand for them, not for TF32, and tuning on
    an H200 (2026-11-23) picked it for all 7 of ResNet-50's fp16 layers this rule takes
    (their rows 0.54x-0.78x cuDNN -> 0.74x-1.16x) but for 2 of the 10 TF32 ones it would."""
    return (problem.itemsize == 2 and gemm_1x1_nchw_unsupported_reason(problem) is None
            and problem.c >= MIN_TENSOR_CORE_DIM
            and problem.k >= MIN_TENSOR_CORE_DIM and problem.h * problem.w * problem.itemsize % 16 == 0)


def staging_pays(problem: ConvProblem) -> bool:
    """Whether a dense NCHW problem should run on a channels_last copy of its input
    (``staged_nhwc``): enough channels for tensor-core slices, and enough FLOPs per input
    element to hide the copy."""
    if (staged_nhwc_unsupported_reason(problem) is not None or problem.c_per_group < MIN_TENSOR_CORE_DIM
            or problem.k_per_group < MIN_TENSOR_CORE_DIM):
        return False
    flops_per_element = 2 * problem.k_per_group * problem.r * problem.s / (problem.stride[0] * problem.stride[1])
    return flops_per_element >= STAGING_FLOPS_PER_INPUT_BYTE * problem.itemsize


def slice_length(problem: ConvProblem, fuse_sc: int) -> int:
    """Length of one reduction slice that block_k steps through: the group's channels, or
    filter-row x channels when (s, c) are fused."""
    return problem.c_per_group * (problem.s if fuse_sc else 1)


def reduction_steps(problem: ConvProblem, fuse_sc: int, block_k: int) -> int:
    """Main-loop steps of one implicit-GEMM tile. Pipeline stages past steps + 1 only hold
    shared memory that could host another block (a 1x1 layer with C = 64 has one step)."""
    taps = problem.r if fuse_sc else problem.r * problem.s
    return taps * triton.cdiv(slice_length(problem, fuse_sc), block_k)


def _pow2_between(value: int, low: int, high: int) -> int:
    return max(low, min(high, triton.next_power_of_2(max(value, 1))))


def default_config(problem: ConvProblem, algorithm: str) -> LaunchConfig:
    """A sound config for ``algorithm`` on ``problem`` without measuring."""
    if algorithm in LADDER:  # teaching kernels: one fixed config each
        return ladder_config(problem, algorithm)
    if algorithm == "grouped_gemm":  # the GEMM runs on the merged groups
        problem = replace(problem, groups=problem.groups // group_pack_factor(problem))
    if algorithm == "im2row":  # the GEMM runs on the unrolled problem
        problem, algorithm = problem.columns_as_channels(), "implicit_gemm"
    if algorithm == "im2row_ws":
        return im2row_ws_config(problem.columns_as_channels())
    if algorithm == "staged_nhwc":  # the GEMM runs on the channels_last copy
        problem, algorithm = problem.staged_channels_last(), "implicit_gemm"
    # Few channels per group: reduce over (filter column, channel) so that a K-slice is
    # not mostly padding (the 7x7 stem's 3 channels, the seed's 6).
    fuse_sc = int(problem.c_per_group < MIN_TENSOR_CORE_DIM and problem.s > 1)
    if algorithm == "depthwise":
        return _depthwise_config(problem)
    if algorithm == "depthwise_rows":
        return _depthwise_rows_config(problem)
    if algorithm == "depthwise_toeplitz":
        return _depthwise_toeplitz_config(problem)
    if algorithm == "tma_rows":
        return _tma_rows_config(problem)
    if algorithm == "implicit_gemm_ws" or (algorithm == "gemm_1x1_ws" and problem.stride == (1, 1)):
        return _ws_config(problem)
    if algorithm == "implicit_gemm_frame":
        return fitted_frame_config(problem)
    if algorithm == "gemm_1x1_ws":
        return replace(GEMM_1X1_WS_PINGPONG, block_k=64 if problem.itemsize == 2 else 32)
    if algorithm == "dense_toeplitz":
        return _dense_toeplitz_config(problem)
    if algorithm == "depthwise_plane":
        return _depthwise_plane_config(problem)
    if algorithm == "direct_rows":
        return direct_rows_config(problem)
    if algorithm == "depthwise_halo":
        return _depthwise_halo_config(problem)
    if algorithm == "depthwise_window":
        return depthwise_window_config(problem)
    if algorithm == "grouped_halo":
        return _grouped_halo_config(problem)
    if algorithm == "grouped_gemm_ws":
        return _grouped_ws_config(problem)
    if algorithm == "grouped_frame":
        return grouped_frame_config(problem)
    if algorithm == "gemm_1x1" and not INTERPRET and not (
            problem.c >= 1024 and problem.k >= 1024 and problem.gemm_m >= 4096 and problem.itemsize == 2):
        # The persistent form on ResNet-50's 1x1 rows (see choose_algorithm): 128x128 tiles,
        # 128x64 for K <= 64, 4 warps, 4 stages (3 in float32: forced through `verify --algo
        # gemm_1x1` on an H200, session 19, three TF32 problems with K = 68 to 88 compiled to
        # 262,176 bytes of shared memory at 4 stages, over the 232,448 a block may have: the ring's
        # 128 KB and as much again for the epilogue). Large GEMMs keep the implicit GEMM's tiles, one a
        # program, as measured.
        return LaunchConfig(block_m=128, block_n=64 if problem.k <= 64 else 128,
                            block_k=_pow2_between(problem.c, 16, 64 if problem.itemsize == 2 else 32),
                            group_m=8, num_warps=4, num_stages=4 if problem.itemsize == 2 else 3, persistent=1)
    if INTERPRET:
        # The interpreter's cost is per program and per loop step: few, large tiles.
        if algorithm == "direct":
            return LaunchConfig(block_m=64, block_n=_pow2_between(problem.k, 4, 32), num_warps=1)
        return LaunchConfig(
            block_m=32, block_n=_pow2_between(problem.gemm_n, 16, 32),
            block_k=_pow2_between(slice_length(problem, fuse_sc), 16, 32),
            num_warps=1, num_stages=1, fuse_sc=fuse_sc,
        )
    if algorithm == "direct":
        # Channels are the contiguous axis in NHWC: a wide channel tile gives wide loads.
        block_n = _pow2_between(problem.k, 8, 64 if problem.layout == "nhwc" else 16)
        return LaunchConfig(block_m=128 if block_n <= 16 else 64, block_n=block_n, num_warps=4, num_stages=1)
    # Implicit GEMM. Measured on an H200 (dev probe, 2026-11-22): 128x256 tiles won on
    # seed000 (K=512), 128x128 on the VAE's K=512 at hw64, BN = K for K <= 128.
    wide = problem.itemsize == 2
    block_k = _pow2_between(slice_length(problem, fuse_sc), 16, 64 if wide else 32)
    block_n = _pow2_between(problem.gemm_n, 16, 128)
    block_m = 128
    tiles = triton.cdiv(problem.gemm_m, block_m) * triton.cdiv(problem.gemm_n, block_n) * problem.groups
    if wide and problem.gemm_n >= 256 and tiles >= 4 * SM_COUNT_HINT:
        block_n = 256
    if tiles < SM_COUNT_HINT:  # too few tiles to fill the GPU: narrower ones
        block_m = 64
    # Measured on an H200 (2026-11-22): 256x128 tiles (8 warps, 3 stages) won on seed000,
    # the VAE's hw128 layer, the 1x1 GEMM sweep and most ResNet-50 layers with K >= 128,
    # C*R*S >= 128 and at least ~0.7 of a wave of them (90 tiles on 132 SMs); with fewer
    # tiles, or K = 64 or C = 64, they lost (r50 c64 3x3: 100.9 us against 40.0).
    big_tiles = triton.cdiv(problem.gemm_m, 256) * triton.cdiv(problem.gemm_n, 128) * problem.groups
    if wide and problem.gemm_n >= 128 and problem.gemm_k >= 128 and big_tiles >= 90 and not fuse_sc:
        return LaunchConfig(block_m=256, block_n=128, block_k=block_k, group_m=8, num_warps=8, num_stages=3)
    num_warps = 8 if block_m * block_n >= 128 * 128 else 4
    if problem.uses_tf32 and problem.layout == "nhwc" and block_m * block_n <= 128 * 128:
        # TF32 128x128 tiles over a channels_last input at 8 warps have their wgmma serialized
        # by ptxas (C7515, found offline by benchmarks/audit.py: "non wgmma instructions
        # defining accumulator registers"); at 4 warps they are not (254 registers, the same two
        # CTAs an SM). On wgrad's tiles, where ptxas said the same of 8 warps, 4 won tuning by
        # 1.15x-1.26x (H200, session 4). Over NCHW input 8 warps are not serialized, and 4 take
        # all 255 registers: unchanged there. Not measured yet.
        num_warps = 4
    stages = 3 if block_n >= 256 or not wide else 4
    stages = max(2, min(stages, reduction_steps(problem, fuse_sc, block_k) + 1))
    return LaunchConfig(block_m=block_m, block_n=block_n, block_k=block_k, group_m=8,
                        num_warps=num_warps, num_stages=stages, fuse_sc=fuse_sc)


def _depthwise_config(problem: ConvProblem) -> LaunchConfig:
    """Pixel tile block_m = (block_m / block_k) rows x block_k columns, block_n channels.
    NHWC: 64 channels (128 bytes of fp16) per pixel; NCHW: 32-pixel rows along W."""
    if INTERPRET:
        return LaunchConfig(block_m=32, block_n=_pow2_between(problem.k, 4, 16), block_k=8, num_warps=1)
    if problem.layout == "nhwc":
        if problem.out_w > 28:  # tuning's pick on the three such rows of the depthwise suite (session 10)
            return LaunchConfig(block_m=64, block_n=_pow2_between(problem.k, 8, 32), block_k=8, num_warps=4,
                                num_stages=1)
        block_n = _pow2_between(problem.k, 8, 64)
        width = _pow2_between(problem.out_w, 4, 16)
        return LaunchConfig(block_m=max(2048 // block_n, width), block_n=block_n, block_k=width,
                            num_warps=4, num_stages=1)
    width = _pow2_between(problem.out_w, 8, 32)
    return LaunchConfig(block_m=max(128, width), block_n=8, block_k=width, num_warps=4, num_stages=1)


def _depthwise_rows_config(problem: ConvProblem) -> LaunchConfig:
    """Strips of block_k output rows x block_m columns x block_n channels, the next input row
    loaded ahead (num_stages 2): NHWC tiles as wide in channels as the 2D kernel's, NCHW tiles
    wide in columns (the contiguous axis there). Tune races it against ``depthwise`` and
    ``direct``; on an H200 (session 10, fp16 NHWC) it won three of the ten 3x3 rows, with
    tiles of 16x32x8, 8x64x16 and 8x128x8 (8 warps), by 1-6% in benchmarks/probe.py rows."""
    if INTERPRET:
        return LaunchConfig(block_m=_pow2_between(problem.out_w, 4, 16), block_n=_pow2_between(problem.k, 4, 16),
                            block_k=4, num_warps=1, num_stages=2)
    if problem.layout == "nhwc":
        return LaunchConfig(block_m=_pow2_between(problem.out_w, 8, 16), block_n=_pow2_between(problem.k, 8, 64),
                            block_k=8, num_warps=4, num_stages=2)
    return LaunchConfig(block_m=_pow2_between(problem.out_w, 16, 64), block_n=_pow2_between(problem.k, 4, 8),
                        block_k=8, num_warps=4, num_stages=2)


def _depthwise_toeplitz_config(problem: ConvProblem) -> LaunchConfig:
    """One channel a program (2D wgmma GEMMs over zero-bordered NCHW planes), 64 output rows,
    32 output columns where they read at most 64 input columns (filters up to 33 wide at
    stride 1), else 16; 3 stages. Tuning on an H200 (2026-11-23) picked 64x1x32, 4 warps,
    3 stages for all three 27x27 / 31x31 rows."""
    if INTERPRET:
        return LaunchConfig(block_m=16, block_n=_pow2_between(problem.k, 2, 4), block_k=16, num_warps=1, num_stages=1)
    block_q = 32 if problem.out_w > 16 and toeplitz_reach(problem, 32) <= 64 else 16
    return LaunchConfig(block_m=64, block_n=1, block_k=block_q, num_warps=4, num_stages=3)


DIRECT_ROWS_ACCUMULATORS = 32  # direct_rows's default fp32 accumulators a thread (channels x columns)


def direct_rows_config(problem: ConvProblem, columns_per_thread: int | None = None, num_warps: int = 4,
                       rows: int | None = None) -> LaunchConfig:
    """direct_rows's tile: ``block_m`` output columns (``columns_per_thread`` a thread, by
    default as many as keep all of K's channels within DIRECT_ROWS_ACCUMULATORS, e.g. 4 for
    the seed's 8-channel tile) on ``num_warps`` warps, ``block_k`` = ``rows`` output rows a
    program; ``block_n`` records the channel tile (all of K, not a choice). Narrow outputs
    take fewer warps, then fewer columns a thread. By default two rows, computed as a pair,
    over NCHW input where the rows allow pairs (unit stride and dilation), else one. seed003
    in strict fp32 (H200, session 24): NCHW (with the launcher's float32 register cap) a pair
    of 4-column rows on 4 warps 43.5 us, one row of 4 columns 50.0, of 8 columns on 2 warps
    46.7, two rows one after the other 83.9 (cuDNN 248); channels_last (no cap) one row of 4
    columns 56.6, the pair 67.4."""
    block_k = direct_rows_block_k(problem)
    if rows is None:
        rows = 2 if problem.layout == "nchw" and direct_rows_can_pair(problem) else 1
    per_thread = columns_per_thread or max(1, DIRECT_ROWS_ACCUMULATORS // block_k)
    narrow = pow2_at_least(problem.out_w, 16 if INTERPRET else 32)
    if INTERPRET:  # the interpreter pays per program: one warp, the row's width
        per_thread, num_warps = 1, 1
    block_m = 32 * num_warps * per_thread
    while block_m > narrow and num_warps > 1:
        num_warps //= 2
        block_m //= 2
    block_m = min(block_m, narrow)
    return LaunchConfig(block_m=block_m, block_n=block_k, block_k=rows, group_m=1, num_warps=num_warps, num_stages=1)


def _depthwise_plane_config(problem: ConvProblem) -> LaunchConfig:
    """``block_m`` images x ``block_n`` channels: in channels_last 4 channels a program (8
    bytes a pixel; a batched GEMM over them), in NCHW one (its planes contiguous; a 2D GEMM);
    up to 32 images (at least 16, a tensor-core tile), so that at batch 32 each channel's plane
    map is read once. Tuning on an H200 (session 10, fp16 NHWC, batch 32) kept 32x4 w8 for
    both 7-wide rows of the depthwise suite (7x7 c768, 13x13 c1024)."""
    images = _pow2_between(problem.n, 16, 32)
    if INTERPRET:
        return LaunchConfig(block_m=16, block_n=_pow2_between(problem.k, 1, 4), num_warps=1, num_stages=1)
    if problem.layout == "nhwc":  # 8 warps: 32 fp32 accumulators a thread (an sm_90 compile: 135 registers)
        return LaunchConfig(block_m=images, block_n=4, num_warps=8, num_stages=1)
    return LaunchConfig(block_m=images, block_n=1, num_warps=4, num_stages=1)


def depthwise_window_config(problem: ConvProblem, strip: int | None = None, tile_w: int | None = None,
                            num_warps: int | None = None, rows_a_step: int = 1) -> LaunchConfig:
    """depthwise_window's tile: a strip of ``block_m`` output rows (default: 7, or the output's
    height if smaller, doubled while the programs still fill a wave of WINDOW_WARPS_PER_SM warps
    an SM, at least R - 1) by ``block_k`` columns (default: 7, at most the
    width), ``rows_a_step`` input rows a loop step (``num_stages``), one channel a thread over
    ``num_warps`` warps (default: the most of 1, 2, 4 whose 32-channel blocks divide K, else 1).
    7-column tiles and one row a step won or tied on all four ConvNeXt 7x7 rows on an H200
    (session 25: strips of 7 and 14, 4, 7 and 8 columns, 1 and 2 rows a step raced; session 48,
    once the steady rows' loads lost their masks, strips of 7 to 56 rows); on 7-wide
    outputs 4 columns won until the ramps skipped their padding rows (session 26: c768 hw7 11.7
    us on 7 columns against 12.8 on 4). Where the image fits a tile of the output's width
    (launch.image_fits) and the rows are strided or dilated, or the filter has at most
    WINDOW_MIN_TAPS taps: strips of 4 rows of the whole width, compiled for the image (session 47:
    they beat 1, 2, 7 and 14 rows on the 3x3 rows over 7x7 and 14x14; a 7x7 filter over 7x7
    keeps the 7x7 tile, there the whole image, 8.9 us against 9.1 in strips of 4)."""
    # Tiles of the output's width, compiled for the image (in strips of 4 rows): where the rows
    # are strided or dilated (nothing else runs them) and for filters of up to WINDOW_MIN_TAPS.
    image = image_fits(problem) and (not window_strips(problem) or problem.r * problem.s <= WINDOW_MIN_TAPS)
    if tile_w is None:
        tile_w = problem.out_w if image else min(7, problem.out_w)
    if num_warps is None:
        num_warps = max(w for w in (1, 2, 4) if w == 1 or problem.k % (32 * w) == 0)
    if strip is None and image:
        strip = min(4, problem.out_h)
    elif strip is None:
        # Strips of 7 rows, doubled while the warps still fill one wave (session 48, H200: 28 rows on
        # c96 hw56, 14 on c192 hw28, 7 on c384 hw14, each ~0.97 of a wave; the next height up or
        # down 1.06x-1.21x slower): a taller strip spends fewer loads a multiply-add on its ramps.
        def warps(rows: int) -> int:
            programs, channel_blocks = window_grid(problem, rows, tile_w, 32 * num_warps)
            return programs * channel_blocks * num_warps
        strip = min(7, problem.out_h)
        while strip * 2 <= problem.out_h and warps(strip * 2) >= 0.9 * SM_COUNT_HINT * WINDOW_WARPS_PER_SM:
            strip *= 2
        strip = max(strip, problem.r - 1)
    return LaunchConfig(block_m=strip, block_n=32 * num_warps, block_k=tile_w, num_warps=num_warps,
                        num_stages=rows_a_step)


def _grouped_ws_config(problem: ConvProblem) -> LaunchConfig:
    """grouped_gemm_ws's tile: 128 rows by one merged group (its K/groups: the launcher's rule),
    a tap's merged channels a step (64 in 16-bit types); eight stages, one program an SM where the
    tiles make two waves or more, else four stages and two programs an SM (session 54's probe, H200:
    c1024 hw14/2, 208 tiles, 15.4 -> 14.1 us; c512 hw28/2, 392 tiles, 20.7 at 8 stages, 23.2 at 4 x 2)."""
    merged = grouped_ws_merged(problem)
    tiles = triton.cdiv(problem.gemm_m, 128) * merged.groups
    block_k = _pow2_between(merged.c_per_group, 8, 64 if problem.itemsize == 2 else 32)
    if tiles >= 2 * SM_COUNT_HINT:
        return LaunchConfig(block_m=128, block_n=merged.k_per_group, block_k=block_k, num_warps=4, num_stages=8)
    return LaunchConfig(block_m=128, block_n=merged.k_per_group, block_k=block_k, num_warps=4, num_stages=4,
                        persistent=2)


def _grouped_halo_config(problem: ConvProblem) -> LaunchConfig:
    """The fewest groups merged that fill a 16-channel step (C/g = 4: four), 4 warps, four walking
    programs an SM (session 28, H200: one item a program was 1.2x-1.6x slower,
    benchmarks/probe_grouped.py). At stride 1, 256 frame rows where an image has more than 128:
    session 43's three A/B calls on the H200 timed them 0.96x-0.98x of 128 rows' time on ResNeXt
    c128 hw56/1 (41.9-42.3 against 43.1-45.6 us) and c512 hw14/1 (15.2-15.5 against 15.8-16.3),
    1.01x-1.02x on c256 hw28/1, and tuning chose them on the first two. Otherwise 128 rows (64 where
    an image has fewer): the best or within 3% of it on the stride-2 rows (session 29; 256 rows
    1.12x slower on c256 hw56/2 in session 43). 64 rows where neither fits the kernel's shared
    memory (the phases of a stride past 2, a long dilated reach; the smallest tile fits wherever
    the kernel runs)."""
    smallest = replace(grouped_halo_smallest(problem), persistent=GROUPED_HALO_WALKERS)
    frame = problem.out_h * grouped_halo_frame_width(problem)
    rows = 256 if problem.stride == (1, 1) and frame > 128 else 128
    for block_m in (rows, 128):
        config = replace(smallest, block_m=block_m)
        if frame > 64 and grouped_halo_tiling(problem, config).fits(problem):
            return config
    return smallest


def _depthwise_halo_config(problem: ConvProblem) -> LaunchConfig:
    """One warp a program. Filters of more than 9 taps: 8x8-pixel tiles (8 wide at most the
    output's width, rounded up to a power of two, at least 4) at one channel a thread, the
    kernel's 8-pixel steps (the 7x7 filter in registers: 49 values a thread). Else 4x8 tiles
    (4x4 on outputs of at most 4 columns), 8x8 on 3x3 outputs of 28 columns and up with 64
    channels and more, and 4 channels a thread from 384 channels, 2 from 192, else 1. Halved
    until the halo (and the filter, where it is not in registers) fit the kernel's shared-memory
    bound. Tuning's winners on an H200 (fp16 NHWC batch 32): 3x3 (session 12) c32 hw112 4x8 x1,
    c144 hw56 8x8 x1, c192 hw28 8x8 x2, c384 / c576 hw14 and c960 hw7 4x8 x4; 7x7 (session 22,
    after session 14's 8-pixel steps, which only one channel a thread takes) 8x8 x1 on every
    ConvNeXt row: c96 hw56 44.5 us, c192 hw28 31.6 (against 42.9 on 4x8 x2, the rule before),
    c384 hw14 19.3 (25.0 on 4x8 x2), c768 hw7 14.7 (16.9 on 4x8 x4)."""
    width = _pow2_between(problem.out_w, 4, 8)
    if problem.r * problem.s > 9:
        rows, vec = 8, 1
    else:
        rows = 8 if problem.out_w >= 28 and problem.c >= 64 and width == 8 else 4
        vec = 4 if problem.c >= 384 else 2 if problem.c >= 192 else 1
    config = LaunchConfig(block_m=rows * width, block_n=32 * vec, block_k=width, num_warps=1, num_stages=1)
    while halo_tiling(problem, config).shared_bytes(problem) > MAX_HALO_SHARED_BYTES and config.block_n > 32:
        config = replace(config, block_n=config.block_n // 2)
    while halo_tiling(problem, config).shared_bytes(problem) > MAX_HALO_SHARED_BYTES and config.block_m > 16:
        config = replace(config, block_m=config.block_m // 2, block_k=min(config.block_k, config.block_m // 4))
    return config


def _dense_toeplitz_config(problem: ConvProblem) -> LaunchConfig:
    """``block_m`` output rows x ``block_k`` output columns x ``block_n`` output channels: all
    of K up to 16 channels (else 32) a program, and as many columns as keep the GEMM's N
    (columns x channels) within 64 (32 for float32), at least enough that a column block's
    segment starts 16 bytes after the last (an aligned asynchronous copy), within the
    kernel's band size; 4 stages. The fastest of the candidates on seed003 (H200, session 10,
    benchmarks/probe.py toeplitz): fp16 NHWC 64 rows on 4 warps (24.4 us with the rows read in
    place; 128 rows on 8 warps 30.3 us, and 29.0 against 30.2 with the copy), strict fp32 NCHW
    128 rows on 8 warps, 4 columns (77.0 us; 8 columns 98.3 us: three TF32 products a step)."""
    block_kc = problem.k if problem.k <= 16 else 32
    per_column = problem.stride[1] * problem.c * problem.itemsize  # bytes a segment moves per column
    aligned = 16 // math.gcd(16, per_column)  # the fewest columns that keep segments 16-byte aligned
    widest = 64 if problem.itemsize == 2 else 32
    block_q = max(aligned, 1 << ((widest // block_kc).bit_length() - 1))

    def tiling(columns: int):  # the launcher's own sizes for a tile of these columns
        return dense_toeplitz_tiling(problem, LaunchConfig(block_m=16, block_n=block_kc, block_k=columns))

    while block_q > 1 and (tiling(block_q).block_nn > MAX_DENSE_TOEPLITZ_COLUMNS
                           or tiling(block_q).span * problem.c > MAX_DENSE_TOEPLITZ_VALUES):
        block_q //= 2
    if INTERPRET:
        return LaunchConfig(block_m=16, block_n=min(block_kc, 8), block_k=min(block_q, 4), num_warps=1, num_stages=1)
    # At most MAX_BANDED_ACCUMULATORS a thread: more warps, then fewer rows, for a wide N (the
    # stem's 32 channels x 4 columns). With 64 a thread (128 rows x 64 on 4 warps) an sm_90
    # compile of the seed's tile took all 255 registers (the epilogue's address tiles); with 32, 124.
    rows, num_warps = (64, 4) if problem.itemsize == 2 else (128, 8)
    block_nn = tiling(block_q).block_nn
    while rows * block_nn > MAX_BANDED_ACCUMULATORS * 32 * num_warps:
        if num_warps < 8:
            num_warps *= 2
        else:
            rows //= 2
    return LaunchConfig(block_m=rows, block_n=block_kc, block_k=block_q, num_warps=num_warps, num_stages=4)


def _tma_rows_config(problem: ConvProblem) -> LaunchConfig:
    """Row segments of 128 pixels (64 for rows under 128), the persistent form; the tuned
    winners of benchmarks/probe_tma.py on an H200 (2026-11-23): fp16 128x256x64 w8 s3 for
    K >= 256 and 128x128x64 w4 s4 below (64x256x64 w8 s4 / 64x128x64 w4 s5 on 64-pixel
    rows), half the depth and one more stage for C = 32; TF32 128x128x32 w4 s4 (64x128x32
    w4 s5). Under the interpreter: small tiles, still persistent (three programs walk the
    tiles there)."""
    block_k = _pow2_between(problem.c, 16, 64 if problem.itemsize == 2 else 32)
    if INTERPRET:
        return LaunchConfig(block_m=16, block_n=_pow2_between(problem.k, 16, 32), block_k=min(block_k, 32),
                            num_warps=1, num_stages=1, persistent=1)
    block_m = 128 if problem.out_w >= 128 else 64
    block_n = _pow2_between(problem.k, 16, 128)  # no wider than K
    if problem.itemsize == 4:
        return LaunchConfig(block_m=block_m, block_n=block_n, block_k=block_k, num_warps=4,
                            num_stages=4 if block_m == 128 else 5, persistent=1)
    if block_k < 64:
        return LaunchConfig(block_m=block_m, block_n=block_n, block_k=block_k, num_warps=4, num_stages=5, persistent=1)
    wide_n = problem.k >= 256
    stages = (3 if block_m == 128 else 4) if wide_n else (4 if block_m == 128 else 5)
    return LaunchConfig(block_m=block_m, block_n=256 if wide_n else block_n, block_k=block_k,
                        num_warps=8 if wide_n else 4, num_stages=stages, persistent=1)


# --------------------------------------------------------------------- backward
# Depthwise filters of this many taps and more take the Toeplitz wgrad (tensor cores) on
# outputs at least this wide (H200, this session: RepLKNet's 31x31 at 56 and 28 wide 3.3x and
# 2.6x faster than the CUDA-core kernel, 27x27 at 14 wide 1.2x; the 13x13 at 7 wide 1.6x
# slower, its band mostly padding).
TOEPLITZ_WGRAD_MIN_TAPS = 50
TOEPLITZ_WGRAD_MIN_WIDTH = 14


def grid_dgrad_config(forward: ConvProblem) -> LaunchConfig:
    """gemm_1x1's tile on the 'grid' dgrad route (:func:`tileconv.dispatch.dgrad_route`: a
    strided 1x1's dgrad, each tile also writing the zeros of the U*V - 1 pixels around each of
    its own): the forward problem's default with 64 x 128 tiles, not persistent (the view is no
    matrix for the copy engine's stores). H200, ResNet-50's three 1x1/2 dgrads: 64 x 128 the
    fastest of four tiles on each (31.6 / 24.4 / 19.8 us), ahead of the forward problem's own
    tuned tile (32.7 / 27.7 / 20.5: tuned with a dense output); benchmarks/probe_strided_dgrad.py."""
    return replace(default_config(forward, "gemm_1x1"), block_m=64, block_n=128, persistent=0)


# The sub-pixel dgrad multiplies U*V*T_h*T_w taps a cell where the phases read R*S: at most twice that.
SUBPIXEL_MIN_TAP_USE = 0.5


def prefers_subpixel_dgrad(problem: ConvProblem, forward: ConvProblem) -> bool:
    """Whether a strided dgrad runs as the sub-pixel forward convolution ``forward``
    (:meth:`~tileconv.problem.ConvProblem.dgrad_as_subpixel_forward`) rather than on the phase
    kernel: where at least :data:`SUBPIXEL_MIN_TAP_USE` of the taps it multiplies are the
    filter's (its T_h x T_w filter spans every phase's reach, zero where a phase reads no tap:
    a 3x3/2 uses 9 of 16, a 7x7/2 49 of 64; a 2x2/4 would use 4 of 64). The phase kernel
    gathers each dy tile once a phase, each tile's reduction only its phase's taps (1 to 4 on
    a 3x3/2: short pipelines); the sub-pixel convolution gathers it once for all phases, on
    the forward's kernels and tuning. H200, ResNet-50, both routes tuned
    (benchmarks/probe_subpixel_dgrad.py): the stem 541 -> 126 us, the 3x3/2 rows c128 hw56 44.5
    -> 42.8, c256 hw28 39.3 -> 37.3, c512 hw14 43.7 -> 34.9."""
    phases = problem.stride[0] * problem.stride[1]
    return problem.r * problem.s >= SUBPIXEL_MIN_TAP_USE * phases * forward.r * forward.s


def choose_backward_algorithm(problem: ConvProblem) -> str:
    """Depthwise (groups = C): filters of :data:`TOEPLITZ_WGRAD_MIN_TAPS` taps and more on
    outputs :data:`TOEPLITZ_WGRAD_MIN_WIDTH` wide and up (RepLKNet's 31x31s and 27x27)
    'depthwise_toeplitz' (the wgrad on the tensor cores); else 'depthwise_halo' where it runs
    (its wgrad from shared-memory halos: on a GPU, multiplier 1, channels_last, filter rows of
    up to 49 taps; a 13x13 on 7x7 outputs a filter row a program); else the CUDA-core
    'depthwise' kernels. Dense convolutions whose input pixel is shorter than one 16-byte copy
    (C * itemsize < 16: the stems) 'im2row' (its wgrad reads each filter row's S x C values as
    one run of a channel-padded copy). Everything else 'implicit_gemm'."""
    if not problem.is_depthwise:
        if problem.c * problem.itemsize < 16 and columns_wgrad_unsupported_reason(problem) is None:
            return "im2row"
        return "implicit_gemm"
    if (problem.r * problem.s >= TOEPLITZ_WGRAD_MIN_TAPS and problem.out_w >= TOEPLITZ_WGRAD_MIN_WIDTH
            and BACKWARD_ALGORITHMS["depthwise_toeplitz"].unsupported_reason(problem) is None):
        return "depthwise_toeplitz"
    if BACKWARD_ALGORITHMS["depthwise_halo"].unsupported_reason(problem) is None:
        return "depthwise_halo"
    return "depthwise"


# The halo wgrad's shared memory a one-warp program: four programs an SM (H100/H200: 228 KB).
HALO_WGRAD_SHARED_BUDGET = 56 * 1024


def _halo_wgrad_config(problem: ConvProblem) -> BackwardConfig:
    """The halo wgrad's tile (:mod:`tileconv.kernels.wgrad_halo`): one warp over 64 channels
    (2 a thread: one 4-byte shared-memory load feeds two multiply-adds) where that pads C by
    at most an eighth and the filter has at most 25 taps, else 32 (a 7x7 at 64 took 255
    registers, and lost to 32 on three of four ConvNeXt rows, H200), single-buffered; the largest
    of 8x8, 4x8 and 4x4 pixels whose halo and dy tile fit :data:`HALO_WGRAD_SHARED_BUDGET`; all the
    filter's rows a program where that fills the GPU at one tile a split (or the filter has
    at most 3 rows), else the most rows that do (or one); split-K left to the launcher."""
    block_n = 64 if (cdiv(problem.c, 64) * 64 * 8 <= problem.c * 9 and problem.r * problem.s <= 25) else 32
    # Filter rows a program: all, or (their accumulators past the registers: 13x13 and up) the
    # most that divide R and fit.
    fitting = [d for d in range(problem.r, 0, -1)
               if problem.r % d == 0 and d * problem.s * (block_n // 32) <= MAX_ACCUMULATORS]
    config = BackwardConfig(block_m=16, block_n=block_n, block_k=4, split_k=0, num_warps=1, num_stages=1,
                            tap_rows=0 if fitting[0] == problem.r else fitting[0])
    for block_m, block_k in ((64, 8), (32, 8)):
        candidate = replace(config, block_m=block_m, block_k=block_k)
        if wgrad_halo_tiling(problem, candidate).shared_bytes(problem) <= HALO_WGRAD_SHARED_BUDGET:
            config = candidate
            break
    # A small image (ConvNeXt's 7x7 at 7x7 and 14x14) has too few tiles to fill the GPU with
    # every filter row a program: fewer rows a program, the most that still fill it (filters of
    # more than 3 rows; the 3x3 rows measured no worse with all three).
    if problem.r <= 3:
        return config
    for rows in fitting:
        candidate = replace(config, tap_rows=0 if rows == problem.r else rows)
        if fills_the_gpu(problem, candidate):
            return candidate
    return candidate


def columns_wgrad_config(problem: ConvProblem) -> BackwardConfig:
    """The columns wgrad's tile (:mod:`tileconv.kernels.wgrad_columns`): up to 64 output
    channels by 64 of the filter rows' unrolled columns (or one filter row, if wider), 64
    pixels a step (32 in float32: twice the bytes) over three stages, 4 warps; split-K left to
    the launcher. H200, fp16 channels_last, batch 32 (``benchmarks/probe_columns_wgrad.py``):
    ResNet-50's 7x7/2 stem 83.8 us at 64x64 (two filter rows a tile), 115.8 at 64x256 (all
    seven), cuDNN 155.9; MobileNet's and ConvNeXt's stems, VGG's first layer fastest at 64
    columns too. Under the interpreter: 32 x 32 tiles (or one filter row) of 16 pixels."""
    row = row_columns(problem)
    if INTERPRET:
        return BackwardConfig(block_m=_pow2_between(problem.k, 16, 32),
                              block_n=max(row, 16, min(32, pow2_at_least(row * problem.r))),
                              block_k=16, num_warps=1, num_stages=1)
    block_n = max(row, 16, min(64, pow2_at_least(row * problem.r, 16)))
    return BackwardConfig(block_m=_pow2_between(problem.k, 16, 64), block_n=block_n,
                          block_k=64 if problem.itemsize == 2 else 32, num_warps=4, num_stages=3)


def _toeplitz_wgrad_config(problem: ConvProblem) -> BackwardConfig:
    """The Toeplitz wgrad's launch (:mod:`tileconv.kernels.wgrad_toeplitz`): ``block_k`` input
    columns a step (64 where a row reads 64 or more, else 32), 2 warps over a 32x32 filter
    tile and more, 1 on 16x16 (and under the interpreter), 3 stages; split-K left to the
    launcher. (H200, this session's probe of the nested-loop form: 64 columns and 2 warps
    each beat 32 and 4 on the 31x31 rows, 1 warp the 13x13.)"""
    steps = 64 if toeplitz_wgrad_columns(problem) >= 64 else 32
    small = max(problem.r, problem.s) <= 16
    warps = 1 if INTERPRET or small else 2
    return BackwardConfig(block_m=pow2_at_least(problem.r, 16), block_n=pow2_at_least(problem.s, 16), block_k=steps,
                          split_k=0, num_warps=warps, num_stages=1 if INTERPRET else 3)


# The warp-specialized wgrad (kernels/wgrad_ws.py) gathering its input, on a strided filter with
# taps, from this many input channels: at C = 64 (ResNet-50's c64 hw56 3x3) a four-stage ring
# lost to the Triton kernel (H200: 51.4 against 48.7 us).
WS_WGRAD_MIN_CHANNELS = 128


def ws_wgrad_runs(problem: ConvProblem) -> bool:
    """Whether the warp-specialized wgrad can run ``problem`` (a Hopper GPU, 16-bit,
    channels_last, groups 1) and should: wherever the copy engine could read its input
    (:func:`~tileconv.kernels.wgrad_ws.input_by_tma`: stride 1, or a 1x1 unpadded filter;
    every such ResNet-50 row went faster than on the Triton kernel, H200, session 39), and
    on strided filters with taps from :data:`WS_WGRAD_MIN_CHANNELS` channels."""
    if wgrad_ws_unsupported_reason(problem) is not None:
        return False
    return input_by_tma(problem) or (problem.r * problem.s > 1 and problem.c >= WS_WGRAD_MIN_CHANNELS)


# The ws wgrad's 192-channel tile (three MMA warpgroups), gathered: see ws_wgrad_config.
WS_WGRAD_SLICED = BackwardConfig(block_m=192, block_n=128, block_k=64, num_warps=4, num_stages=5, ws=WS_GATHER)


def ws_wgrad_config(problem: ConvProblem) -> BackwardConfig:
    """The warp-specialized wgrad's tile, as measured on ResNet-50's rows (H200, session 39,
    ``benchmarks/probe_wgrad_tma.py``; split-K is left to the launcher: one wave):

    - a 1x1 stride-1 filter (the input a matrix): 64x128, eight stages of 64 pixels, the input
      by TMA (the fastest of seven tiles on 10 of 12 rows, within 3% on the other two);
    - a 1x1 strided one: 128x128, six stages, the input by TMA in boxes of output rows (c1024
      hw14 k2048/2 19.5 us against 28.7 gathered at 256x128);
    - K <= 64 (c64 hw56 3x3): 64x128, eight stages, gathered (30.3 us; 128-row tiles are half
      empty, 55; boxes of rows 38.0);
    - 128x128 tiles past half the SMs (c512 hw7 3x3 and c512 hw14 3x3/2: 144): 192x128 on three
      MMA warpgroups where K fills them (:func:`~tileconv.kernels.wgrad_ws.slice_tiles_fit`; 108
      tiles), 64 pixels a step over five stages, gathered (session 41: 24.8-24.9 us against 29.2-29.7
      at 256x128, 26.9 by TMA; cuDNN 22.5-22.8); else 256x128 on two warpgroups, 32 pixels a step
      over six stages, gathered (29.4 us, 31.9 by TMA);
    - other stride-1 filters: 128x128, six stages, by TMA (c128 hw28 3x3 24.1 us, c256 hw14 3x3
      26.4); strided ones: 128x128, six stages, gathered (session 41: c256 hw28 3x3/2 26.6 us
      against 27.6 at four; c128 hw56 3x3/2 28.1 at both; wider tiles 27.9-43.1)."""
    tma_rows = BackwardConfig(block_m=128, block_n=128, block_k=64, num_warps=4, num_stages=6, ws=WS_TMA)
    if input_is_pixel_matrix(problem):
        return BackwardConfig(block_m=64, block_n=128, block_k=64, num_warps=4, num_stages=8, ws=WS_TMA)
    if problem.r * problem.s == 1 and input_by_tma(problem):
        return tma_rows
    if problem.k <= 64:
        return BackwardConfig(block_m=64, block_n=128, block_k=64, num_warps=4, num_stages=8, ws=WS_GATHER)
    tiles = cdiv(problem.k, 128) * (problem.c * problem.r * problem.s // 128)
    if tiles >= 66:
        if slice_tiles_fit(problem.k):
            return WS_WGRAD_SLICED
        return BackwardConfig(block_m=256, block_n=128, block_k=32, num_warps=8, num_stages=6, ws=WS_GATHER)
    if input_by_tma(problem):
        return tma_rows
    return BackwardConfig(block_m=128, block_n=128, block_k=64, num_warps=4, num_stages=6, ws=WS_GATHER)


def default_backward_config(problem: ConvProblem, algorithm: str, gradient: str) -> BackwardConfig:
    """A sound config for ``gradient`` ('dgrad' or 'wgrad') of ``algorithm``: tile shapes
    follow the forward's (same operand widths); wgrad's column tile stays inside one tap
    where C/g allows. On an H200, ``tune --pass bwd`` beat these by 1.24x-1.27x (geometric
    mean, ResNet-50): the winners are often 4-warp tiles, and wgrad's 8-warp tiles have their
    wgmma serialised by ptxas (C7515; see benchmarks/NOTES.md)."""
    if gradient not in ("dgrad", "wgrad"):
        raise ValueError(f"gradient={gradient!r} must be 'dgrad' or 'wgrad'")
    wide = problem.itemsize == 2
    if algorithm == "depthwise_halo":
        if gradient == "wgrad":
            return _halo_wgrad_config(problem)
        algorithm = "depthwise"  # the same dgrad kernels
    if algorithm == "depthwise_toeplitz":
        if gradient == "wgrad":
            return _toeplitz_wgrad_config(problem)
        algorithm = "depthwise"
    if algorithm == "im2row":
        if gradient == "wgrad":
            return columns_wgrad_config(problem)
        algorithm = "implicit_gemm"  # the same dgrad kernels
    if algorithm == "depthwise":
        if INTERPRET:
            return BackwardConfig(block_m=32, block_n=_pow2_between(problem.k, 4, 16), num_warps=1, num_stages=1)
        if gradient == "wgrad":
            # Channel blocks of the largest power of two up to 32 that divides K (no ragged last
            # block: c144 takes 16), 16 in NCHW (whose pixels are contiguous), x row pixels such that
            # the accumulators of a filter row's taps (S rounded up to a power of two) come to
            # 4096 for 3x3 and smaller filters, else 8192 (32 or 64 registers a thread). Tuning
            # on an H200 (session 13) kept this on 13 of the depthwise suite's 18 rows.
            widest = 32 if problem.layout == "nhwc" else 16
            block_n = min(widest, problem.k & -problem.k)
            if block_n < 8:
                block_n = _pow2_between(problem.k, 8, widest)
            taps = _pow2_between(problem.s, 1, 64)
            block_m = (4096 if problem.s <= 3 else 8192) // (taps * block_n)
            if wgrad_depthwise_row_tiles(problem):  # tiles inside one output row: no wider than it
                block_m = min(block_m, _pow2_between(problem.out_w, 4, 256))
            return BackwardConfig(block_m=max(4, min(block_m, 256)), block_n=block_n, num_warps=4, num_stages=1)
        block_n = _pow2_between(problem.c, 8, 64 if problem.layout == "nhwc" else 16)
        return BackwardConfig(block_m=128 if block_n <= 16 else 64, block_n=block_n, num_warps=4, num_stages=1)
    if gradient == "dgrad":  # pixels x input channels, reduction over K/g
        if INTERPRET:
            return BackwardConfig(block_m=32, block_n=_pow2_between(problem.c_per_group, 16, 32),
                                  block_k=_pow2_between(problem.k_per_group, 16, 32), num_warps=1, num_stages=1)
        block_n = _pow2_between(problem.c_per_group, 16, 128)
        block_k = _pow2_between(problem.k_per_group, 16, 64 if wide else 32)
        return BackwardConfig(block_m=128, block_n=block_n, block_k=block_k,
                              num_warps=8 if block_n >= 128 else 4, num_stages=3 if not wide else 4)
    if ws_wgrad_runs(problem):
        return ws_wgrad_config(problem)
    return triton_wgrad_config(problem)


def triton_wgrad_config(problem: ConvProblem) -> BackwardConfig:
    """The Triton wgrad kernel's tile (:mod:`tileconv.kernels.wgrad`): K/g x (r, s, c) columns,
    the reduction over pixels."""
    wide = problem.itemsize == 2
    columns = problem.c_per_group * problem.r * problem.s
    if INTERPRET:
        return BackwardConfig(block_m=_pow2_between(problem.k_per_group, 16, 32),
                              block_n=_pow2_between(columns, 16, 32), block_k=32, num_warps=1, num_stages=1)
    block_m = _pow2_between(problem.k_per_group, 16, 128)
    block_n = _pow2_between(columns, 16, 128)
    taps = problem.r * problem.s > 1
    if taps and problem.c_per_group % 16 == 0:
        # A column tile inside one tap (the kernel's TAP_TILE case): the widest power of two
        # up to 128 that divides C/g.
        block_n = min(128, problem.c_per_group & -problem.c_per_group)
    # 8 warps for 128x128 tiles of 1x1 filters only: with taps, 4 warps won all six 3x3
    # ResNet-50 rows' tuning on an H200 (1.15x-1.26x over 8), whose wgmmas ptxas serialises.
    big = block_m * block_n >= 128 * 128
    return BackwardConfig(block_m=block_m, block_n=block_n, block_k=64 if wide else 32,
                          num_warps=8 if big and not taps else 4, num_stages=3)
