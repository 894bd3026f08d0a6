"""Hopper weight gradient with warp specialization (Gluon): loader warps gather, MMA warps multiply.

The same GEMM as :mod:`.wgrad` (``dw[k, (r, s, c)] = sum over pixels m of dy[m, k] * x_rs[m, c]``,
the reduction over the N*P*Q output pixels, split-K partial sums summed by
:func:`~tileconv.kernels.wgrad.wgrad_finish_kernel`), written for Hopper as the forward's
:mod:`.implicit_gemm_ws` is:

- a **loader partition** (``LOADER_WARPS`` warps) walks the program's pixel steps and, for
  each, waits for a free stage of the shared-memory ring, copies the dy tile by TMA (a
  [BLOCK_K pixels, BLOCK_M channels] box of dy as the (N*P*Q, K) matrix: a channels_last
  gradient is one) and gathers the input tile of the program's one filter tap (BLOCK_K
  pixels x BLOCK_N channels: 16-byte cp.async copies, zero-filled in the padding). Each
  lane's pixels are decoded once and advanced with carries (no division in the loop).
- or, with ``config.ws`` = :data:`~.config.WS_TMA` where :func:`input_by_tma` allows, a
  **one-warp TMA loader**: the input copied by TMA as dy is, either as the (N*H*W, C) matrix
  of a 1x1 stride-1 problem's output pixels, or in boxes of whole output rows (dy as
  (N, P, Q, K), the input as (N, H, W, C) shifted by the column tile's tap, or as the strided
  view x[:, ::U, ::V] of a 1x1 filter), the padding and ragged box edges the copy engine's
  zero fill. No gather, no proxy fence before the wgmma.
- the **MMA partition** (``num_warps`` warps) waits for each stage and issues the
  asynchronous wgmma with both operands in shared memory: dy's tile read transposed
  (channels x pixels) and the input tile as it lies (pixels x channels). Both operands have
  the reduction (pixels) as their outer dimension, which wgmma takes for 16-bit types only:
  float32 stays on :mod:`.wgrad`.
- or (``BLOCK_M`` = 192, ``SLICES`` = 3) three MMA partitions of one warpgroup each, each on
  64 of the tile's output channels (dy copied as three boxes a stage, the input tile shared):
  the forward gemm_1x1_ws's row slices, a tile size between the powers of two (ResNet-50's
  512 x 4608 GEMM of c512 hw7 3x3: 108 tiles of 192x128 for 132 SMs, against 72 of 256x128).

One tile (BLOCK_M output channels x BLOCK_N columns of one tap) and one split of the pixels
a program; the partial sums go to a [split, K, C*R*S] fp32 workspace in the tile's own
column order, or with one split straight into a gradient whose columns lie evenly spaced
(a channels_last weight's: :func:`~tileconv.kernels.wgrad.split_output`). Gluon kernels
compile only for a GPU: under the interpreter the launcher's
:func:`wgrad_ws_unsupported_reason` says so, the tests run it on a GPU and CI compiles it
for sm_90 (``benchmarks/sass.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor as GluonTensorDescriptor

from .._runtime import INT32_LIMIT, cdiv, programmatic_launch, sm_count
from ..problem import ConvProblem
from .common import advance_pixels, output_pixels, pixel_steps, signal_dependents, tile_origin
from .config import WS_TMA, BackwardConfig, needs_int64
from .fast_launch import launch
from .launch import (
    _GLUON_DTYPES,
    WS_LOADER_REGS,
    WS_LOADER_WARPS,
    WS_MAX_REGS,
    WS_SLICE_MAX_REGS,
    WS_SLICE_REGS,
    WS_SLICE_ROWS,
    WS_TMA_LOADER_REGS,
    _plain_gemm_reason,
    _unpadded_1x1_reason,
    _ws_machine_reason,
    describable,
    pixel_boxes,
    strided_pixel_views,
    ws_block_k,
    ws_slices,
)
from .wgrad import _chunk, launch_wgrad_implicit_gemm, split_output, sum_splits


@gluon.jit
def _wgrad_loader(
    dy_desc, x_ptr, a_bufs, b_bufs, ready, empty,
    L, H, W, P, Q, stride_h, stride_w, dh, dw,
    stride_xn, stride_xh, stride_xw,
    start, steps, k0, c0,
    BLOCK_K: gl.constexpr, BLOCK_N: gl.constexpr, VEC: gl.constexpr, LOADER_WARPS: gl.constexpr,
    INT64: gl.constexpr, SLICE_M: gl.constexpr, SLICES: gl.constexpr,
):
    """Fill the ring with the program's ``steps`` pixel steps from pixel ``start``: dy's
    [BLOCK_K, BLOCK_M] box at (pixel, ``k0``) by TMA (``SLICES`` boxes of BLOCK_M / SLICES
    channels, one into each of the stage's dy buffers), the input's pixels of the column tile's
    tap, at (``dh``, ``dw``) from each output pixel's (p*U, q*V), channels ``c0`` onwards by cp.async."""
    # Four threads along a row of the input tile, BLOCK_N / 4 channels (several 16-byte copies) each:
    # a row's pixel arithmetic, which every thread on the row repeats, is then shared by few threads
    # (sixteen threads a row of 128 channels: 359 sm_90 SASS instructions a loader step; four: 131).
    layout: gl.constexpr = gl.BlockedLayout([1, BLOCK_N // 4], [8, 4], [LOADER_WARPS, 1], [1, 0])
    STAGES: gl.constexpr = a_bufs.type.shape[0] // SLICES
    offs_pix = gl.arange(0, BLOCK_K, layout=gl.SliceLayout(1, layout))
    offs_c = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, layout))
    m = start + offs_pix
    if INT64:
        m = m.to(gl.int64)
    # Each lane's pixel (n, p, q), decoded once, then moved BLOCK_K pixels a step with carries.
    n, p, q, _, _ = output_pixels(m, P, Q, 1, 1, 0, 0)
    step_n, step_p, step_q = pixel_steps(BLOCK_K, P, Q)
    chan_ptrs = x_ptr + c0 + offs_c
    for i in range(steps):
        ih = p * stride_h + dh
        iw = q * stride_w + dw
        inside = (m < L) & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
        # Every row starts 16 bytes aligned (C and the strides are multiples of VEC: the launcher's condition).
        row = gl.multiple_of(n * stride_xn + ih * stride_xh + iw * stride_xw, VEC)
        stage = i % STAGES
        mbarrier.wait(empty.index(stage), ((i // STAGES) & 1) ^ 1)  # the MMA warps are done with it
        bar = ready.index(stage)
        mbarrier.expect(bar, SLICES * dy_desc.block_type.nbytes)
        # Pixels past the last (L), and channels past K, are outside dy: the copy engine writes zeros there.
        for j in gl.static_range(SLICES):
            tma.async_copy_global_to_shared(dy_desc, [start + i * BLOCK_K, k0 + j * SLICE_M], bar,
                                            a_bufs.index(stage * SLICES + j))
        async_copy.async_copy_global_to_shared(b_bufs.index(stage), chan_ptrs[None, :] + row[:, None],
                                               mask=inside[:, None])
        async_copy.mbarrier_arrive(bar, increment_count=False)
        m += BLOCK_K
        n, p, q = advance_pixels(n, p, q, step_n, step_p, step_q, P, Q)


@gluon.jit
def _wgrad_tma_loader(dy_desc, x_desc, a_bufs, b_bufs, ready, empty, start, steps, k0, c0, dh, dw, PI, Q,
                      BLOCK_K: gl.constexpr, BOX_Q: gl.constexpr, SLICE_M: gl.constexpr, SLICES: gl.constexpr):
    """Fill the ring by bulk copies only (one warp), dy's box and the input's into each stage,
    both counted on its mbarrier; pixels outside either tensor are the engine's zero fill (on
    dy's side they make the product zero). BOX_Q = 0 (a 1x1 unpadded stride-1 problem, whose
    input is the (N*H*W, C) matrix of its output pixels): a step is BLOCK_K consecutive pixels
    from pixel ``start``, dy's [BLOCK_K, BLOCK_M] box at (pixel, ``k0``), the input's
    [BLOCK_K, BLOCK_N] at (pixel, ``c0``). BOX_Q > 0: step t is box t of dy's pixel grid (PI
    rows of Q pixels an image, :func:`~.common.tile_origin`), BLOCK_K // BOX_Q output rows of
    BOX_Q pixels, from dy as (N, P, Q, K) and from the input view as (N, H, W, C) (stride 1) or
    x[:, ::U, ::V] (a 1x1 unpadded filter), the tap's offset (``dh``, ``dw``) added to its rows
    and columns (the padding: coordinates outside it). With ``SLICES`` > 1, dy's box is that many
    boxes of BLOCK_M / SLICES channels, one into each of the stage's dy buffers."""
    STAGES: gl.constexpr = a_bufs.type.shape[0] // SLICES
    nbytes: gl.constexpr = SLICES * dy_desc.block_type.nbytes + x_desc.block_type.nbytes
    for i in range(steps):
        stage = i % STAGES
        mbarrier.wait(empty.index(stage), ((i // STAGES) & 1) ^ 1)  # the MMA warps are done with it
        bar = ready.index(stage)
        mbarrier.expect(bar, nbytes)
        if BOX_Q == 0:
            for j in gl.static_range(SLICES):
                tma.async_copy_global_to_shared(dy_desc, [start + i * BLOCK_K, k0 + j * SLICE_M], bar,
                                                a_bufs.index(stage * SLICES + j))
            tma.async_copy_global_to_shared(x_desc, [start + i * BLOCK_K, c0], bar, b_bufs.index(stage))
        else:
            # A box lands in the stage's 2D buffer as the same bytes: the shared layout's swizzle
            # follows a row's place in the buffer (the box's rows flattened), not the box's shape.
            img, row, col = tile_origin(start // BLOCK_K + i, PI, Q, BLOCK_K, BOX_Q)
            for j in gl.static_range(SLICES):
                dy_box = a_bufs.index(stage * SLICES + j)._reinterpret(dy_desc.dtype, dy_desc.block_type.shape,
                                                                       dy_desc.layout)
                tma.async_copy_global_to_shared(dy_desc, [img, row, col, k0 + j * SLICE_M], bar, dy_box)
            x_box = b_bufs.index(stage)._reinterpret(x_desc.dtype, x_desc.block_type.shape, x_desc.layout)
            tma.async_copy_global_to_shared(x_desc, [img, row + dh, col + dw, c0], bar, x_box)


@gluon.jit
def _wgrad_copies(
    dy_desc, x_desc, x_ptr, a_bufs, b_bufs, ready, empty, L, H, W, P, Q, stride_h, stride_w, dh, dw,
    stride_xn, stride_xh, stride_xw, start, steps, k0, c0, PI,
    BLOCK_K: gl.constexpr, BLOCK_N: gl.constexpr, VEC: gl.constexpr, LOADER_WARPS: gl.constexpr,
    INT64: gl.constexpr, X_TMA: gl.constexpr, BOX_Q: gl.constexpr, SLICE_M: gl.constexpr, SLICES: gl.constexpr,
):
    """The loader partition: bulk copies only (``X_TMA``, one warp) or dy by TMA and the input
    gathered (``LOADER_WARPS`` warps)."""
    if X_TMA:
        _wgrad_tma_loader(dy_desc, x_desc, a_bufs, b_bufs, ready, empty, start, steps, k0, c0, dh, dw, PI, Q,
                          BLOCK_K, BOX_Q, SLICE_M, SLICES)
    else:
        _wgrad_loader(dy_desc, x_ptr, a_bufs, b_bufs, ready, empty, L, H, W, P, Q, stride_h, stride_w, dh, dw,
                      stride_xn, stride_xh, stride_xw, start, steps, k0, c0, BLOCK_K, BLOCK_N, VEC,
                      LOADER_WARPS, INT64, SLICE_M, SLICES)


@gluon.jit
def _wgrad_mma(
    a_bufs, b_bufs, ready, empty, ws_ptr, K, steps, split, k0, col0,
    stride_os, stride_ok, stride_ot,
    BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, NUM_WARPS: gl.constexpr, X_TMA: gl.constexpr,
    SLICE: gl.constexpr, SLICES: gl.constexpr,  # this partition's output channels: slice SLICE of SLICES
):
    """Consume the ring (asynchronous wgmma, one in flight: dy's tile transposed times the
    input's), then write the fp32 partial sums of this split. With ``SLICES`` > 1 the tile's
    BLOCK_M output channels are split among that many MMA partitions, this one taking the
    stage's dy buffer of channels SLICE * BLOCK_M / SLICES on (the stage is free once every
    slice has released it: the empty barriers count SLICES arrivals)."""
    STAGES: gl.constexpr = a_bufs.type.shape[0] // SLICES
    SLICE_M: gl.constexpr = BLOCK_M // SLICES
    mma_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[NUM_WARPS, 1],
                                                        instr_shape=[16, BLOCK_N, 16])
    acc = gl.zeros([SLICE_M, BLOCK_N], gl.float32, layout=mma_layout)
    for i in range(steps):
        stage = i % STAGES
        mbarrier.wait(ready.index(stage), (i // STAGES) & 1)
        if not X_TMA:  # (bulk copies write through the async proxy themselves)
            fence_async_shared()  # the loader's cp.async writes, seen by wgmma (the async proxy)
        acc = warpgroup_mma(a_bufs.index(stage * SLICES + SLICE).permute((1, 0)), b_bufs.index(stage), acc,
                            is_async=True)
        acc = warpgroup_mma_wait(num_outstanding=1, deps=(acc,))
        # The previous step's wgmma has finished reading its stage: hand it back.
        mbarrier.arrive(empty.index((i + STAGES - 1) % STAGES), pred=i > 0)
    acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))
    # Stored from the MMA's own layout (8-byte stores of two columns): a layout conversion would
    # take a shared-memory scratch as large as the tile (128 KB for 256x128), on top of the ring.
    offs_k = k0 + SLICE * SLICE_M + gl.arange(0, SLICE_M, layout=gl.SliceLayout(1, mma_layout))
    offs_t = col0 + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, mma_layout))
    ptrs = ws_ptr + split * stride_os + (offs_k * stride_ok)[:, None] + (offs_t * stride_ot)[None, :]
    gl.store(ptrs, acc.to(ws_ptr.dtype.element_ty), mask=(offs_k < K)[:, None])  # fp32 sums, or the gradient


@gluon.jit
def conv2d_wgrad_ws_kernel(
    dy_desc,  # TensorDescriptor over dy as (N*P*Q, K), block (BLOCK_K, BLOCK_M // SLICES); (BOX_Q) as (N, P, Q, K)
    x_desc,  # dy_desc (a stand-in, unread), or (X_TMA) a TensorDescriptor over the input as (N*H*W, C), block (BLOCK_K, BLOCK_N);
             # (BOX_Q) over the input's view as 4D (the loader's docstring), block (1, BLOCK_K // BOX_Q, BOX_Q, BLOCK_N)
    x_ptr,  # input, channels contiguous (channels_last), through stride_xn, stride_xh, stride_xw
    ws_ptr,  # [SPLIT, K, C*R*S] fp32 partial sums, columns t = (r, s, c), or the gradient itself (written)
    L, H, W, P, Q, C, K,  # L = N*P*Q pixels; (BOX_Q) BLOCK_K x the boxes of dy's pixel grid
    stride_h, stride_w, pad_h, pad_w, dil_h, dil_w,
    stride_xn, stride_xh, stride_xw,
    stride_os, stride_ok, stride_ot,
    S, CHUNK, TILES,  # CHUNK: pixels a split, a multiple of BLOCK_K; TILES: K/BLOCK_M x C*R*S/BLOCK_N tiles
    PI,  # (BOX_Q) the box grid's rows an image: P, or N*P where images merge (a 1x1 filter)
    BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr,
    STAGES: gl.constexpr, LOADER_WARPS: gl.constexpr, LOADER_REGS: gl.constexpr,
    NUM_WARPS: gl.constexpr, INT64: gl.constexpr,
    X_TMA: gl.constexpr,  # the input by bulk copies (the launcher's choice: :func:`input_by_tma`)
    BOX_Q: gl.constexpr,  # 0: pixel steps of BLOCK_K consecutive pixels; else boxes of BOX_Q columns (X_TMA)
    SLICES: gl.constexpr,  # 1, or 3: MMA partitions of one warpgroup sharing each tile's BLOCK_M = 192 channels
    SLICE_REGS: gl.constexpr,  # (SLICES = 3) the second and third slices' registers a thread
    SIGNAL_DEPENDENTS: gl.constexpr,  # the split sums follow as a programmatic dependent launch
):
    if SIGNAL_DEPENDENTS:  # (once every program has started: :func:`~tileconv.kernels.wgrad.sum_splits`)
        signal_dependents()
    dtype: gl.constexpr = dy_desc.dtype
    VEC: gl.constexpr = 128 // dtype.primitive_bitwidth  # 16 bytes of channels a copy
    SLICE_M: gl.constexpr = BLOCK_M // SLICES
    a_layout: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BLOCK_K, SLICE_M], dtype)  # (the host's 2D dy)
    b_layout: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BLOCK_K, BLOCK_N], dtype)
    a_bufs = gl.allocate_shared_memory(dtype, [STAGES * SLICES, BLOCK_K, SLICE_M], a_layout)
    b_bufs = gl.allocate_shared_memory(dtype, [STAGES, BLOCK_K, BLOCK_N], b_layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        # Ready: the TMA's byte count (one arrival), plus every loader thread's cp.async arrival.
        mbarrier.init(ready.index(i), count=1 if X_TMA else LOADER_WARPS * 32 + 1)
        mbarrier.init(empty.index(i), count=SLICES)  # every slice's MMA partition releases it

    # Program order: tiles fastest, so that the programs running at once share a split's pixels.
    num_m = gl.cdiv(K, BLOCK_M)
    pid = gl.program_id(0)
    tile = pid % TILES
    split = pid // TILES
    k0 = (tile % num_m) * BLOCK_M
    col0 = (tile // num_m) * BLOCK_N
    start = split * CHUNK
    steps = gl.cdiv(gl.minimum(CHUNK, L - start), BLOCK_K)
    if INT64:  # (start stays 32-bit: the copy engine's coordinates are; the launcher's condition)
        split = split.to(gl.int64)
    tap = col0 // C  # the column tile's filter tap (r, s) and first channel
    c0 = col0 - tap * C
    r = tap // S
    dh = r * dil_h - pad_h  # the tap's place in the input, from each output pixel's (p*U, q*V)
    dw = (tap - r * S) * dil_w - pad_w
    # (Partition arguments are written out in each call, as in implicit_gemm_ws: a tuple held in
    # a variable would turn the constexprs in it into tensors.)
    if SLICES == 3:
        gl.warp_specialize([
            (_wgrad_mma, (a_bufs, b_bufs, ready, empty, ws_ptr, K, steps, split, k0, col0,
                          stride_os, stride_ok, stride_ot, BLOCK_M, BLOCK_N, NUM_WARPS, X_TMA, 0, 3)),
            (_wgrad_copies, (dy_desc, x_desc, x_ptr, a_bufs, b_bufs, ready, empty, L, H, W, P, Q, stride_h, stride_w,
                             dh, dw, stride_xn, stride_xh, stride_xw, start, steps, k0, c0, PI, BLOCK_K, BLOCK_N, VEC,
                             LOADER_WARPS, INT64, X_TMA, BOX_Q, SLICE_M, 3)),
            (_wgrad_mma, (a_bufs, b_bufs, ready, empty, ws_ptr, K, steps, split, k0, col0,
                          stride_os, stride_ok, stride_ot, BLOCK_M, BLOCK_N, NUM_WARPS, X_TMA, 1, 3)),
            (_wgrad_mma, (a_bufs, b_bufs, ready, empty, ws_ptr, K, steps, split, k0, col0,
                          stride_os, stride_ok, stride_ot, BLOCK_M, BLOCK_N, NUM_WARPS, X_TMA, 2, 3)),
        ], [LOADER_WARPS, NUM_WARPS, NUM_WARPS], [LOADER_REGS, SLICE_REGS, SLICE_REGS])
    else:
        gl.warp_specialize([
            (_wgrad_mma, (a_bufs, b_bufs, ready, empty, ws_ptr, K, steps, split, k0, col0,
                          stride_os, stride_ok, stride_ot, BLOCK_M, BLOCK_N, NUM_WARPS, X_TMA, 0, 1)),
            (_wgrad_copies, (dy_desc, x_desc, x_ptr, a_bufs, b_bufs, ready, empty, L, H, W, P, Q, stride_h, stride_w,
                             dh, dw, stride_xn, stride_xh, stride_xw, start, steps, k0, c0, PI, BLOCK_K, BLOCK_N, VEC,
                             LOADER_WARPS, INT64, X_TMA, BOX_Q, SLICE_M, 1)),
        ], [LOADER_WARPS], [LOADER_REGS])


# The loader warpgroup, its registers and the MMA warps' are the forward implicit_gemm_ws's
# (launch.WS_LOADER_WARPS, WS_LOADER_REGS, WS_MAX_REGS: sm_90 compiles without spills).
WGRAD_WS_MIN_COLUMNS = 64  # the narrowest column tile: 64 channels of one tap
WGRAD_WS_MIN_STEPS = 16  # a split's pixel steps at least: the ring's fill and the epilogue amortised
HOPPER_SHARED_BYTES = 228 * 1024


def wgrad_ws_unsupported_reason(problem: ConvProblem) -> str | None:
    """Why :func:`launch_wgrad_ws` cannot compute ``problem``'s weight gradient (None if it can)."""
    if (reason := _ws_machine_reason(problem)) is not None:
        return reason
    if problem.itemsize != 2:
        return ("its wgmma reads both operands with the pixels outermost, which Hopper allows for 16-bit types "
                f"only: {problem.dtype_name} runs on the implicit_gemm wgrad")
    if problem.groups != 1:
        return "it needs groups=1"
    if problem.layout != "nhwc":
        return "it reads dy as an (N*P*Q, K) matrix and gathers 16-byte channel segments: it needs channels_last"
    if problem.c % WGRAD_WS_MIN_COLUMNS:
        return f"its column tiles are channels of one filter tap: it needs C a multiple of {WGRAD_WS_MIN_COLUMNS}"
    if problem.k % 8:
        return "its copy engine reads dy's rows of K channels: it needs K a multiple of 8"
    if problem.gemm_m >= INT32_LIMIT:
        return "its copy engine's coordinates are 32-bit: it needs fewer than 2**31 output pixels"
    return None


def input_by_tma(problem: ConvProblem) -> bool:
    """Whether the loader can copy ``problem``'s input (dense channels_last) by TMA instead of
    gathering it: as the pixel matrix (:func:`input_is_pixel_matrix`), or in boxes of output
    rows, each tap's box the output pixels' shifted by its offset (stride 1; the padding is
    what lies outside the input, which the copy engine fills with zeros), or of the strided
    view x[:, ::U, ::V] (a 1x1 unpadded filter, any stride)."""
    return problem.stride == (1, 1) or _unpadded_1x1_reason(problem) is None


def input_is_pixel_matrix(problem: ConvProblem) -> bool:
    """Whether a dense channels_last input of ``problem`` is the (N*H*W, C) matrix of its output
    pixels, row m the input of output pixel m (a 1x1 filter, stride 1, no padding): with
    :data:`~.config.WS_TMA` the loader copies it by TMA as it does dy (H200, ResNet-50's twelve
    stride-1 1x1 rows, session 39: 1.01x-1.87x faster than the gather at the same tile, four tiles)."""
    return _plain_gemm_reason(problem) is None


@dataclass(frozen=True)
class _TmaOperands:
    """The ws wgrad's operand copies (:func:`_tma_operands`)."""
    dy: GluonTensorDescriptor  # dy as (N*P*Q, K), or (box_q) (N, P, Q, K) / merged (1, N*P, Q, K)
    x: GluonTensorDescriptor | None  # the input's, or None: gathered
    box_q: int  # 0: steps of block_k consecutive pixels; else boxes of this many output columns
    grid_rows: int  # (box_q) the box grid's rows an image (common.tile_origin's PI)
    reduction: int  # the pixels the kernel steps through: N*P*Q, or block_k x the boxes


def _tma_operands(problem: ConvProblem, grad: torch.Tensor, x: torch.Tensor, config: BackwardConfig, block_n: int,
                  slice_m: int, dtype) -> _TmaOperands | None:
    """dy's and the input's descriptors where the loader copies both by TMA (``config.ws`` =
    :data:`~.config.WS_TMA` and :func:`input_by_tma`), else None; dy's boxes ``slice_m``
    channels wide (an MMA partition's: :func:`~.launch.ws_slices`). The pixel matrix: both as
    matrices, steps of ``block_k`` pixels. Otherwise dy as (N, P, Q, K) and the input as
    (N, H, W, C) or the strided view (N, P, Q, C), read in boxes of ``block_k // box_q`` output
    rows of ``box_q`` columns (the output width rounded up to a power of two, at most
    ``block_k``: ragged boxes compute zeros); an unpadded 1x1's images merge into one of N*P
    rows (its input rows are its output rows, and no tap reaches across an image's edge)."""
    dy4d, x4d = grad.permute(0, 2, 3, 1), x.permute(0, 2, 3, 1)
    if not (config.ws == WS_TMA and input_by_tma(problem) and x4d.is_contiguous()):
        return None

    def describe(t: torch.Tensor, block: list[int]) -> GluonTensorDescriptor:
        return GluonTensorDescriptor.from_tensor(t, block, gl.NVMMASharedLayout.get_default_for(block, dtype))

    if input_is_pixel_matrix(problem):
        return _TmaOperands(describe(dy4d.reshape(problem.gemm_m, problem.k), [config.block_k, slice_m]),
                            describe(x4d.reshape(problem.gemm_m, problem.c), [config.block_k, block_n]),
                            0, 1, problem.gemm_m)
    if _unpadded_1x1_reason(problem) is None:  # a strided 1x1 (a padded 1x1's rows are not the input's)
        x4d, dy4d = strided_pixel_views(problem, x, dy4d)
    images, rows = dy4d.shape[0], dy4d.shape[1]
    box_q, box_h, boxes = pixel_boxes(images, rows, problem.out_w, config.block_k)
    if boxes * config.block_k >= INT32_LIMIT:  # (the kernel's pixel offsets are 32-bit)
        return None
    return _TmaOperands(describe(dy4d, [1, box_h, box_q, slice_m]),
                        describe(x4d, [1, box_h, box_q, block_n]), box_q, rows, boxes * config.block_k)


def slice_tiles_fit(k: int) -> bool:
    """Whether 192-channel tiles (three MMA warpgroups: :func:`~.launch.ws_slices`) cover ``k``
    output channels with at most an eighth of their rows empty (K = 512: 3 tiles, 64 rows empty;
    K = 256 would leave half of its second tile empty)."""
    return (-k) % (3 * WS_SLICE_ROWS) <= k // 8


def ws_resident(config: BackwardConfig) -> int:
    """Programs of ``config`` that fit an SM's shared memory (228 KB on Hopper) at once: 1 or 2."""
    ring = config.num_stages * config.block_k * (config.block_m + config.block_n) * 2
    return max(1, min(2, HOPPER_SHARED_BYTES // (ring + 2048)))


def ws_split(reduction: int, block_k: int, tiles: int, slots: int, requested: int = 0) -> int:
    """Splits of the ``reduction`` pixels for ``tiles`` tiles where ``slots`` programs run at
    once (SMs x :func:`ws_resident`; ``requested`` > 0 is obeyed). The grid is kept to one
    wave: the most splits that fit beside the tiles, each at least
    :data:`WGRAD_WS_MIN_STEPS` steps. A second, partial wave would double the time of the
    first (ResNet-50's c512 hw7 3x3 on 144 128x128 tiles and two splits: 288 programs, three
    rounds); more splits also cost partial sums (4 bytes an element a split, written and read)."""
    if requested > 0:
        return max(1, min(requested, cdiv(reduction, block_k)))
    most = max(1, reduction // (WGRAD_WS_MIN_STEPS * block_k))
    return max(1, min(most, slots // max(tiles, 1)))


def launch_wgrad_ws(
    problem: ConvProblem, grad: torch.Tensor, x: torch.Tensor, grad_weight: torch.Tensor,
    config: BackwardConfig,
):
    """``grad_weight`` (K, C, R, S) = wgrad of ``grad`` and ``x`` on :func:`conv2d_wgrad_ws_kernel`:
    ``config.block_m`` output channels x ``block_n`` channels of one tap a tile, ``block_k``
    pixels a step through a ring of ``num_stages``, ``num_warps`` MMA warps (``block_m`` = 192:
    three MMA warpgroups of 64 channels, ``num_warps`` 4 and ``block_n`` at most 128), ``split_k``
    splits of the pixels (0: :func:`ws_split`, one wave of programs), ``config.ws``
    :data:`~.config.WS_TMA`: the input by TMA where :func:`input_by_tma` allows. A gradient or
    input that the copy engine cannot address as it needs (not dense channels_last, a sliced
    view) runs on the implicit_gemm wgrad instead, with the same result."""
    if config.num_warps not in WS_MAX_REGS:
        raise ValueError(f"config num_warps={config.num_warps}: the warp-specialized wgrad runs 4 or 8 MMA warps")
    if config.block_m not in (64, 128, 192, 256) or config.block_k not in (32, 64, 128):
        raise ValueError(f"config {config}: the warp-specialized wgrad takes block_m 64, 128, 192 or 256 and "
                         "block_k 32, 64 or 128")
    slices = ws_slices(config)
    if slices > 1 and (config.num_warps != 4 or config.block_n > 128):
        raise ValueError(f"config {config}: a 192-channel tile is three MMA warpgroups of 64 channels (num_warps 4) "
                         "whose accumulators hold at most 128 columns (block_n <= 128)")
    reason = wgrad_ws_unsupported_reason(problem)
    if reason is not None:
        raise ValueError(f"config ws=1: the warp-specialized wgrad cannot compute {problem.describe()}: {reason}")
    dy2d = grad.permute(0, 2, 3, 1).reshape(problem.gemm_m, problem.k)  # a view where grad is channels_last
    if not (grad.permute(0, 2, 3, 1).is_contiguous() and describable(dy2d, problem.itemsize)
            and describable(x.permute(0, 2, 3, 1), problem.itemsize)):
        # (a 192-channel tile is the slices'; the Triton kernel takes powers of two)
        fallback = replace(config, block_m=128) if slices > 1 else config
        return launch_wgrad_implicit_gemm(problem, grad, x, grad_weight, fallback)
    block_n = ws_block_k(problem, min(config.block_n, 256))  # channels of one tap: halved until it divides C
    columns = problem.c * problem.r * problem.s
    tiles = cdiv(problem.k, config.block_m) * (columns // block_n)
    dtype = _GLUON_DTYPES[problem.dtype]
    slice_m = config.block_m // slices  # dy's channels a box: an MMA partition's
    copies = _tma_operands(problem, grad, x, config, block_n, slice_m, dtype)
    if copies is None:  # the input gathered: dy by TMA as the (N*P*Q, K) matrix
        dy_block = [config.block_k, slice_m]
        dy_desc = GluonTensorDescriptor.from_tensor(dy2d, dy_block, gl.NVMMASharedLayout.get_default_for(dy_block, dtype))
        copies = _TmaOperands(dy_desc, None, 0, 1, problem.gemm_m)
    split = ws_split(copies.reduction, config.block_k, tiles, sm_count(grad.device) * ws_resident(config),
                     config.split_k)
    chunk, split = _chunk(copies.reduction, split, config.block_k)
    out, out_strides, summed = split_output(problem, grad_weight, split)
    launch(conv2d_wgrad_ws_kernel, (tiles * split,),
           copies.dy, copies.dy if copies.x is None else copies.x, x, out, copies.reduction, problem.h, problem.w, problem.out_h, problem.out_w,
           problem.c, problem.k, problem.stride[0], problem.stride[1], problem.padding[0], problem.padding[1],
           problem.dilation[0], problem.dilation[1], x.stride(0), x.stride(2), x.stride(3), *out_strides,
           problem.s, chunk, tiles, copies.grid_rows,
           BLOCK_M=config.block_m, BLOCK_N=block_n, BLOCK_K=config.block_k, STAGES=config.num_stages,
           LOADER_WARPS=1 if copies.x is not None else WS_LOADER_WARPS,
           LOADER_REGS=WS_TMA_LOADER_REGS if copies.x is not None else WS_LOADER_REGS,
           NUM_WARPS=config.num_warps, INT64=needs_int64(problem), X_TMA=copies.x is not None, BOX_Q=copies.box_q,
           SLICES=slices, SLICE_REGS=WS_SLICE_REGS, SIGNAL_DEPENDENTS=summed and programmatic_launch(grad.device),
           num_warps=config.num_warps,
           maxnreg=WS_SLICE_MAX_REGS if slices > 1 else WS_MAX_REGS[config.num_warps])
    if summed:
        sum_splits(problem, out, grad_weight, split)
    return split
