"""Depthwise weight gradient from shared-memory halos (Gluon): every tap's accumulator in
registers, each input element copied from memory once a tile.

    dw[c, 0, r, s] = sum_{n, p, q} dy[n, c, p, q] * x[n, c, p*U - pad_h + r*dil_h, q*V - pad_w + s*dil_w]

The CUDA-core kernel of :mod:`.wgrad` (``conv2d_wgrad_depthwise_kernel``) gathers each
tap's input from global memory: per (pixel, tap) an address, a bounds mask and a
conversion, about five instructions a multiply-add in the sm_90 SASS (a 3x3 ran 0.55x-1.05x
cuDNN on an H200, a 7x7 0.42x-0.58x; benchmarks/NOTES.md, session 13). Triton's tensors
cannot give a thread a run of pixels whose registers it indexes by tap.

This is the forward's :mod:`.depthwise_halo` turned around. A program owns ``BLOCK_C``
channels (``VEC`` a thread, the warps side by side), ``TAP_ROWS`` rows of the filter (all
of them, or fewer where a small image has too few tiles to fill the GPU) and one split of
the output tiles
(``TILE_H`` x ``TILE_W`` pixels of one image). For each tile it copies the input halo
(HH x WW pixels, zero-filled outside the image: the padding) and the tile's dy into shared
memory by 16-byte cp.async, the next tile's copies in flight while this one is summed (two
buffers). Then, pixel by pixel, dy is read and converted once, and each tap (r, s) reads one
halo row at an offset known at compile time from the pixel's base and adds dy * x to its
own accumulator: R*S register vectors, a tuple carried through the loops, written once as
fp32 partial sums at the end. The pixel loops stop at the image's edge (P, Q), so a pixel
past it is never summed: dy's padding never multiplies an input element (0 * inf would be
NaN where the reference has none).

Channel multiplier 1 (groups = C = K), channels_last dy and input, C a multiple of 16 bytes
of channels; filter size, stride and dilation are compile-time constants (one compile each),
at most :data:`MAX_TAPS` taps a program (the accumulators' registers: a 13x13 or 27x27 filter
runs a filter row a program). Gluon kernels compile only for
a GPU: under Triton's interpreter the launcher uses the CUDA-core kernel instead and CI
compiles this one for sm_90 (``benchmarks/sass.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy

from .._runtime import cdiv, pow2_at_least, programmatic_launch
from ..problem import ConvProblem
from .common import signal_dependents
from .config import BackwardConfig, needs_int64
from .fast_launch import launch
from .fast_launch import workspace as scratch
from .launch import describable, halo_pixel_tile, window
from .wgrad import splits_within_input_bytes, sum_splits

# The accumulators: TAP_ROWS*S*VEC fp32 registers a thread (a 7x7 at 2 channels a thread: 98).
MAX_TAPS = 49
MAX_ACCUMULATORS = 98
# Two halos and two dy tiles a program; at least two one-warp programs an SM.
MAX_SHARED_BYTES = 96 * 1024
COPY_CHUNK = 16  # halo pixels a copy batch (a power of two: shared-memory views)
# Split-K: one wave of programs, as many an SM as its shared memory and registers hold
# (H100/H200: 132 SMs, 227 KB of shared memory and 64K registers an SM, at most 16 programs
# counted), each split at least this many tiles (H200, this session: four tiles a split left
# 14x14 and 28x28 images a few warps an SM, 1.3x-2.9x slower than smaller splits).
_SMS = 132
_SM_SHARED_BYTES = 227 * 1024
_SM_REGISTERS = 64 * 1024
_MAX_RESIDENT = 16
MIN_TILES_PER_SPLIT = 1
# The partial sums' traffic (written, then read by the finish kernel) up to this many times
# the inputs' own bytes: a small image's few tiles need every split they can get.
PARTIAL_SUM_FACTOR = 4


@gluon.jit
def _tile_origin(tile, tiles_img, tiles_q, TILE_H: gl.constexpr, TILE_W: gl.constexpr):
    """(image, first output row, first output column) of output tile ``tile``."""
    return tile // tiles_img, (tile % tiles_img) // tiles_q * TILE_H, (tile % tiles_q) * TILE_W


@gluon.jit
def _copy_tile(x_ptr, dy_ptr, halo, dy_tile, buf, tile, live, tiles_img, tiles_q, H, W, P, Q, c_end, cx,
               pad_h, pad_w, stride_xn, stride_xh, stride_xw, stride_dn, stride_dp, stride_dq,
               U: gl.constexpr, V: gl.constexpr, HH: gl.constexpr, WW: gl.constexpr,
               TILE_H: gl.constexpr, TILE_W: gl.constexpr, CHUNK: gl.constexpr, CHUNKS: gl.constexpr,
               COPY_VEC: gl.constexpr, XL: gl.constexpr, INT64: gl.constexpr):
    """Issue the cp.async copies of output tile ``tile`` into buffer ``buf``: its input halo
    (zeros outside the image and past C) and its dy (zeros past the image's edge); none if
    not ``live`` (a tile past the split)."""
    n, p0, q0 = _tile_origin(tile, tiles_img, tiles_q, TILE_H, TILE_W)
    if INT64:
        n = n.to(gl.int64)
    x_img = x_ptr + gl.multiple_of(n * stride_xn, COPY_VEC)  # image strides: multiples of 16 bytes
    dy_img = dy_ptr + gl.multiple_of(n * stride_dn, COPY_VEC)
    mask_c = (cx < c_end)[None, :]
    for chunk in gl.static_range(CHUNKS):
        pix = chunk * CHUNK + gl.arange(0, CHUNK, layout=gl.SliceLayout(1, XL))
        ih = p0 * U - pad_h + pix // WW
        iw = q0 * V - pad_w + pix % WW
        inside = live & (pix < HH * WW) & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
        if INT64:
            ih = ih.to(gl.int64)
        # Pixel strides are multiples of 16 bytes (the launcher's condition): 16-byte copies.
        offs = gl.multiple_of(ih * stride_xh + iw * stride_xw, COPY_VEC)[:, None] + cx[None, :]
        async_copy.async_copy_global_to_shared(halo.index(buf * CHUNKS + chunk), x_img + offs,
                                               mask=inside[:, None] & mask_c)
    pix = gl.arange(0, TILE_H * TILE_W, layout=gl.SliceLayout(1, XL))
    p = p0 + pix // TILE_W
    q = q0 + pix % TILE_W
    inside = live & (p < P) & (q < Q)
    if INT64:
        p = p.to(gl.int64)
    offs = gl.multiple_of(p * stride_dp + q * stride_dq, COPY_VEC)[:, None] + cx[None, :]
    async_copy.async_copy_global_to_shared(dy_tile.index(buf), dy_img + offs, mask=inside[:, None] & mask_c)
    async_copy.commit_group()


@gluon.jit
def conv2d_wgrad_depthwise_halo_kernel(
    dy_ptr,  # upstream gradient [N, C, P, Q], channels_last
    x_ptr,  # input [N, C, H, W], channels_last
    out_ptr,  # fp32 partial sums [SPLIT, C, R*S] through stride_os, stride_oc (taps contiguous) (written)
    H, W, P, Q, C,
    pad_h, pad_w,
    stride_dn, stride_dp, stride_dq,
    stride_xn, stride_xh, stride_xw,
    stride_os, stride_oc,
    TILES,  # N * tiles a image
    TILES_PER_SPLIT,
    S: gl.constexpr,  # filter columns (its rows: TAP_ROWS a program)
    U: gl.constexpr, V: gl.constexpr,  # stride
    DIL_H: gl.constexpr, DIL_W: gl.constexpr,
    TILE_H: gl.constexpr, TILE_W: gl.constexpr,  # TILE_W a multiple of UNROLL
    BLOCK_C: gl.constexpr,  # VEC * 32 * NUM_WARPS: the warps split the channels
    VEC: gl.constexpr,  # channels a thread
    UNROLL: gl.constexpr,  # pixels of a row a step; divides Q (the row loops stop at the edge)
    CHUNK: gl.constexpr,  # halo pixels a copy (a power of two)
    COPY_VEC: gl.constexpr,  # channels in 16 bytes
    NUM_WARPS: gl.constexpr,
    BUFFERS: gl.constexpr,  # 2: the next tile's copies fly while this one is summed; 1: half the shared memory
    TAP_ROWS: gl.constexpr,  # filter rows a program (divides R): rows r0.. of grid axis 2
    INT64: gl.constexpr,
    SIGNAL_DEPENDENTS: gl.constexpr,  # the split sums follow programmatically (:func:`.wgrad.sum_splits`)
):
    if SIGNAL_DEPENDENTS:
        signal_dependents()
    HH: gl.constexpr = (TILE_H - 1) * U + (TAP_ROWS - 1) * DIL_H + 1
    WW: gl.constexpr = (TILE_W - 1) * V + (S - 1) * DIL_W + 1
    CHUNKS: gl.constexpr = (HH * WW + CHUNK - 1) // CHUNK
    TILE: gl.constexpr = TILE_H * TILE_W
    # One pixel's channels: each thread VEC of them, the warps side by side.
    CL: gl.constexpr = gl.BlockedLayout([VEC], [32], [NUM_WARPS], [0])
    # The copies: 16 bytes a thread, a warp's threads over a pixel's channels then pixels.
    TPW_C: gl.constexpr = BLOCK_C // COPY_VEC
    XL: gl.constexpr = gl.BlockedLayout([1, COPY_VEC], [32 // TPW_C, TPW_C], [NUM_WARPS, 1], [1, 0])
    PLANE: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [1, 0])  # no swizzle: rows read at any index
    ROW: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [0])
    DTYPE: gl.constexpr = x_ptr.dtype.element_ty

    split = gl.program_id(0)
    c0 = gl.program_id(1) * BLOCK_C
    r0 = gl.program_id(2) * TAP_ROWS
    # The halo starts at filter row r0's input row: as if the top padding were r0*dil_h less.
    pad_h = pad_h - r0 * DIL_H
    tiles_q = gl.cdiv(Q, TILE_W)
    tiles_img = gl.cdiv(P, TILE_H) * tiles_q
    first = split * TILES_PER_SPLIT
    count = gl.minimum(TILES_PER_SPLIT, TILES - first)

    # BUFFERS of each: halo pixel (hh, ww) of buffer b at row b*CHUNKS*CHUNK + hh*WW + ww.
    halo = gl.allocate_shared_memory(DTYPE, [BUFFERS * CHUNKS, CHUNK, BLOCK_C], PLANE)
    dy_tile = gl.allocate_shared_memory(DTYPE, [BUFFERS, TILE, BLOCK_C], PLANE)
    cx = c0 + gl.arange(0, BLOCK_C, layout=gl.SliceLayout(0, XL))
    if INT64:
        cx = cx.to(gl.int64)
    cx = gl.max_contiguous(gl.multiple_of(cx, COPY_VEC), COPY_VEC)  # 16-byte aligned runs
    # C as a whole number of 16-byte groups (the launcher's condition), so that the channel mask
    # is constant over each group whatever divisibility C was specialised with.
    c_end = (C // COPY_VEC) * COPY_VEC

    # With two buffers, the first two tiles' copies (a tile past the split is not copied: its
    # mask is all off).
    for b in gl.static_range(BUFFERS if BUFFERS > 1 else 0):
        _copy_tile(x_ptr, dy_ptr, halo, dy_tile, b, first + b, b < count, tiles_img, tiles_q, H, W, P, Q, c_end, cx,
                   pad_h, pad_w, stride_xn, stride_xh, stride_xw, stride_dn, stride_dp, stride_dq,
                   U, V, HH, WW, TILE_H, TILE_W, CHUNK, CHUNKS, COPY_VEC, XL, INT64)

    halo_rows = halo._reinterpret(DTYPE, [BUFFERS * CHUNKS * CHUNK, BLOCK_C], ROW)
    dy_rows = dy_tile._reinterpret(DTYPE, [BUFFERS * TILE, BLOCK_C], ROW)
    accs = ()
    for _t in gl.static_range(TAP_ROWS * S):
        accs = accs + (gl.zeros([BLOCK_C], gl.float32, CL),)
    for i in range(count):
        buf = i % BUFFERS
        tile = first + i
        _, p0, q0 = _tile_origin(tile, tiles_img, tiles_q, TILE_H, TILE_W)
        if BUFFERS == 1:  # copy this tile now and wait for it (other programs hide the wait)
            _copy_tile(x_ptr, dy_ptr, halo, dy_tile, 0, tile, True, tiles_img, tiles_q, H, W, P, Q, c_end, cx,
                       pad_h, pad_w, stride_xn, stride_xh, stride_xw, stride_dn, stride_dp, stride_dq,
                       U, V, HH, WW, TILE_H, TILE_W, CHUNK, CHUNKS, COPY_VEC, XL, INT64)
            async_copy.wait_group(0)
        else:
            async_copy.wait_group(1)  # this tile's copies are in (the next tile's may still fly)
        gl.thread_barrier()
        halo_base = buf * (CHUNKS * CHUNK)
        dy_base = buf * TILE
        # Only the tile's pixels inside the output (Q a multiple of UNROLL: no partial step).
        rows = gl.minimum(TILE_H, P - p0)
        columns = gl.minimum(TILE_W, Q - q0)
        for pl in range(rows):
            for ql in range(0, columns, UNROLL):
                for j in gl.static_range(UNROLL):
                    d = dy_rows.index(dy_base + pl * TILE_W + ql + j).load(CL).to(gl.float32)
                    base = halo_base + pl * U * WW + (ql + j) * V
                    new = ()
                    for r in gl.static_range(TAP_ROWS):
                        for s in gl.static_range(S):
                            xv = halo_rows.index(base + (r * DIL_H * WW + s * DIL_W)).load(CL).to(gl.float32)
                            new = new + (accs[r * S + s] + d * xv,)
                    accs = new
        gl.thread_barrier()  # every thread is done with this buffer before it is refilled
        if BUFFERS > 1:  # the tile after next, into the buffer just read
            _copy_tile(x_ptr, dy_ptr, halo, dy_tile, buf, tile + 2, i + 2 < count, tiles_img, tiles_q, H, W, P, Q,
                       c_end, cx, pad_h, pad_w, stride_xn, stride_xh, stride_xw, stride_dn, stride_dp, stride_dq,
                       U, V, HH, WW, TILE_H, TILE_W, CHUNK, CHUNKS, COPY_VEC, XL, INT64)
    async_copy.wait_group(0)

    c_idx = c0 + gl.arange(0, BLOCK_C, layout=CL)
    mask_c = c_idx < C
    if INT64:
        c_idx = c_idx.to(gl.int64)
    out = out_ptr + split * stride_os + c_idx * stride_oc + r0 * S
    for t in gl.static_range(TAP_ROWS * S):
        gl.store(out + t, accs[t], mask=mask_c)


# ------------------------------------------------------------------------- launcher
@dataclass(frozen=True)
class WgradHaloTiling:
    """The tile of a :class:`BackwardConfig` on this kernel: ``block_m`` output pixels
    ``block_k`` wide, ``block_n`` channels over ``num_warps`` warps (``vec`` a thread)."""

    tile_h: int
    tile_w: int
    block_c: int
    vec: int
    unroll: int
    halo_pixels: int
    chunk: int
    buffers: int  # 2: double-buffered copies; 1: one halo and dy tile
    tap_rows: int  # filter rows a program

    def tiles(self, problem: ConvProblem) -> int:
        """The output tiles over every image: the reduction the splits share."""
        return problem.n * cdiv(problem.out_h, self.tile_h) * cdiv(problem.out_w, self.tile_w)

    def shared_bytes(self, problem: ConvProblem) -> int:
        """The halos (whole copy chunks) and dy tiles, in the input's dtype."""
        halo = cdiv(self.halo_pixels, self.chunk) * self.chunk
        return self.buffers * (halo + self.tile_h * self.tile_w) * self.block_c * problem.itemsize


def wgrad_halo_tiling(problem: ConvProblem, config: BackwardConfig) -> WgradHaloTiling:
    """:class:`WgradHaloTiling` of ``config`` (``num_stages``: the buffers, 1 or 2); a
    ``ValueError`` naming the field if it cannot describe this kernel's tile."""
    if config.num_stages not in (1, 2):
        raise ValueError(f"config num_stages={config.num_stages}: the halo wgrad has 1 or 2 buffers")
    tile_h, tile_w, vec = halo_pixel_tile(config, problem.itemsize, "the halo wgrad")
    tap_rows = config.tap_rows or problem.r
    if problem.r % tap_rows:
        raise ValueError(f"config tap_rows={config.tap_rows}: it must divide the filter's {problem.r} rows")
    if tap_rows * problem.s * vec > MAX_ACCUMULATORS:
        raise ValueError(f"config block_n={config.block_n}, num_warps={config.num_warps}: {vec} channels a thread "
                         f"times {tap_rows * problem.s} taps is more than {MAX_ACCUMULATORS} accumulators")
    halo = (window(tile_h, problem.stride[0], tap_rows, problem.dilation[0])
            * window(tile_w, problem.stride[1], problem.s, problem.dilation[1]))
    # The widest step of at most 4 pixels that divides both the tile's width and Q.
    unroll = 1
    while unroll < 4 and tile_w % (2 * unroll) == 0 and problem.out_w % (2 * unroll) == 0:
        unroll *= 2
    return WgradHaloTiling(tile_h, tile_w, config.block_n, vec, unroll,
                           halo, min(COPY_CHUNK, pow2_at_least(halo)), config.num_stages, tap_rows)


def wgrad_halo_unsupported_reason(problem: ConvProblem) -> str | None:
    """Why :func:`launch_wgrad_depthwise_halo` cannot run ``problem`` (None if it can); the
    GPU (cp.async) is the caller's question."""
    if not problem.is_depthwise or problem.k != problem.c:
        return "it needs groups == C == K (channel multiplier 1)"
    if problem.layout != "nhwc":
        return "its copies take 16-byte channel segments: it needs channels_last"
    if problem.c % (16 // problem.itemsize):
        return f"its copies take 16-byte channel segments: it needs C a multiple of {16 // problem.itemsize}"
    if problem.s > MAX_TAPS:
        return f"its taps' accumulators are registers: filter rows of at most {MAX_TAPS} taps"
    smallest = wgrad_halo_tiling(problem, BackwardConfig(block_m=16, block_n=32, block_k=4, num_warps=1,
                                                         num_stages=1, tap_rows=1))
    if smallest.shared_bytes(problem) > MAX_SHARED_BYTES:
        return (f"a 4x4-pixel tile's halo of one filter row ({smallest.halo_pixels} pixels) needs more than "
                f"{MAX_SHARED_BYTES // 1024} KB of shared memory (stride {problem.stride}, dilation {problem.dilation})")
    return None


def resident_programs(problem: ConvProblem, config: BackwardConfig) -> int:
    """About how many programs of ``config`` an SM holds at once: its shared memory (and 1 KB
    reserved a program) and registers (estimated: ~40 a thread beside the accumulators, a
    second register for every other one; sm_90 compiles gave 63 for a 3x3 at one channel a
    thread, 121 for a 7x7, 255 for a 7x7 at two), at most :data:`_MAX_RESIDENT`."""
    return _resident(problem, wgrad_halo_tiling(problem, config), config.num_warps)


def _resident(problem: ConvProblem, tiling: WgradHaloTiling, num_warps: int) -> int:
    registers = min(255, 40 + 2 * tiling.tap_rows * problem.s * tiling.vec) * 32 * num_warps
    return max(1, min(_MAX_RESIDENT, _SM_SHARED_BYTES // (tiling.shared_bytes(problem) + 1024),
                      _SM_REGISTERS // registers))


def fills_the_gpu(problem: ConvProblem, config: BackwardConfig) -> bool:
    """Whether ``config`` has a program for every resident slot of the GPU at one tile a split
    (:func:`resident_programs` on each SM): else its filter rows are better split."""
    tiling = wgrad_halo_tiling(problem, config)
    programs = tiling.tiles(problem) * cdiv(problem.c, tiling.block_c) * (problem.r // tiling.tap_rows)
    return programs >= _SMS * _resident(problem, tiling, config.num_warps)


def halo_wgrad_split(problem: ConvProblem, config: BackwardConfig) -> tuple[int, int]:
    """(tiles a split, splits) of ``config`` on ``problem``: ``config.split_k`` splits if
    given, else one wave of programs with the channel blocks (:func:`resident_programs` an
    SM), each split at least :data:`MIN_TILES_PER_SPLIT` tiles (its prologue and partial sums
    amortised) and the partial sums' traffic within the inputs' bytes."""
    return _split(problem, wgrad_halo_tiling(problem, config), config)


def _split(problem: ConvProblem, tiling: WgradHaloTiling, config: BackwardConfig) -> tuple[int, int]:
    tiles = tiling.tiles(problem)
    if config.split_k > 0:
        wanted = config.split_k
    else:
        blocks = cdiv(problem.c, tiling.block_c) * (problem.r // tiling.tap_rows)
        wanted = min(cdiv(_SMS * _resident(problem, tiling, config.num_warps), blocks),
                     max(1, tiles // MIN_TILES_PER_SPLIT), PARTIAL_SUM_FACTOR * splits_within_input_bytes(problem))
    per_split = cdiv(tiles, max(1, min(wanted, tiles)))
    return per_split, cdiv(tiles, per_split)


def launch_wgrad_depthwise_halo(
    problem: ConvProblem, grad: torch.Tensor, x: torch.Tensor, grad_weight: torch.Tensor,
    config: BackwardConfig,
) -> int:
    """``grad_weight`` = the depthwise wgrad of ``grad`` and ``x`` by
    :func:`conv2d_wgrad_depthwise_halo_kernel`: fp32 partial sums a split, summed by
    :func:`.wgrad.sum_splits`. A tensor the 16-byte copies cannot read (channels not
    contiguous, a stride or its start not a multiple of 16 bytes: a sliced view) is copied
    to channels_last first. Returns the number of splits."""
    tiling = wgrad_halo_tiling(problem, config)
    if tiling.shared_bytes(problem) > MAX_SHARED_BYTES:
        raise ValueError(f"config {config}: the halo wgrad's buffers need {tiling.shared_bytes(problem)} bytes of "
                         f"shared memory, more than {MAX_SHARED_BYTES}")
    if not describable(grad.permute(0, 2, 3, 1), problem.itemsize):
        grad = grad.contiguous(memory_format=torch.channels_last)
    if not describable(x.permute(0, 2, 3, 1), problem.itemsize):
        x = x.contiguous(memory_format=torch.channels_last)
    per_split, split = _split(problem, tiling, config)
    # [split, C, 1, R, S]: taps contiguous, as wgrad_finish_kernel reads (C/g = 1).
    out = scratch((split, problem.k, 1, problem.r, problem.s), torch.float32, grad_weight.device)
    launch(conv2d_wgrad_depthwise_halo_kernel, (split, cdiv(problem.c, tiling.block_c), problem.r // tiling.tap_rows),
        grad, x, out, problem.h, problem.w, problem.out_h, problem.out_w, problem.c,
        problem.padding[0], problem.padding[1],
        grad.stride(0), grad.stride(2), grad.stride(3), x.stride(0), x.stride(2), x.stride(3),
        out.stride(0), out.stride(1), tiling.tiles(problem), per_split,
        S=problem.s, U=problem.stride[0], V=problem.stride[1],
        DIL_H=problem.dilation[0], DIL_W=problem.dilation[1],
        TILE_H=tiling.tile_h, TILE_W=tiling.tile_w, BLOCK_C=tiling.block_c, VEC=tiling.vec, UNROLL=tiling.unroll,
        CHUNK=tiling.chunk, COPY_VEC=16 // problem.itemsize, NUM_WARPS=config.num_warps, BUFFERS=tiling.buffers,
        TAP_ROWS=tiling.tap_rows,
        INT64=needs_int64(problem), SIGNAL_DEPENDENTS=programmatic_launch(grad.device), num_warps=config.num_warps,
    )
    sum_splits(problem, out, grad_weight, split)
    return split
