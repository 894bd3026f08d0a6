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
- the **MMA partition** (``num_warps`` warps) waits for each stage and issues the
  asynchronous wgmma with both operands in shared memory: dy's tile read transposed
  (channels x pixels) and the input tile as it lies (pixels x channels). Both operands have
  the reduction (pixels) as their outer dimension, which wgmma takes for 16-bit types only:
  float32 stays on :mod:`.wgrad`.

One tile (BLOCK_M output channels x BLOCK_N columns of one tap) and one split of the pixels
a program; the partial sums go to a [split, K, C*R*S] fp32 workspace in the tile's own
column order, or with one split straight into a gradient whose columns lie evenly spaced
(a channels_last weight's: :func:`~tileconv.kernels.wgrad.split_output`). Gluon kernels
compile only for a GPU: under the interpreter the launcher's
:func:`wgrad_ws_unsupported_reason` says so, the tests run it on a GPU and CI compiles it
for sm_90 (``benchmarks/sass.py``).
"""

from __future__ import annotations

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

from .._runtime import INT32_LIMIT, cdiv, sm_count
from ..problem import ConvProblem
from .common import advance_pixels, output_pixels, pixel_steps
from .config import BackwardConfig, needs_int64
from .fast_launch import launch, semaphores
from .fast_launch import workspace as scratch
from .launch import (
    _GLUON_DTYPES,
    WS_LOADER_REGS,
    WS_LOADER_WARPS,
    WS_MAX_REGS,
    _ws_machine_reason,
    describable,
    ws_block_k,
)
from .wgrad import _chunk, launch_wgrad_implicit_gemm, split_output, sum_splits


@gluon.jit
def _program_iterations(pid, TILES, STEPS, CHUNK_STEPS, PROGRAMS, STREAM_K: gl.constexpr):
    """The program's run of global iterations [first, last), iteration = tile * STEPS + step
    (int64). Split-K: tile ``pid % TILES``, its ``pid // TILES``-th run of CHUNK_STEPS steps.
    Stream-K: the ``pid``-th of PROGRAMS even shares of all TILES * STEPS iterations, which
    may end one tile and start the next."""
    pid = pid.to(gl.int64)
    if STREAM_K:
        total = TILES.to(gl.int64) * STEPS
        first = pid * total // PROGRAMS
        last = (pid + 1) * total // PROGRAMS
    else:
        tile = pid % TILES
        tile_first = tile * STEPS
        first = tile_first + (pid // TILES) * CHUNK_STEPS
        last = gl.minimum(first + CHUNK_STEPS, tile_first + STEPS)
    return first, last


@gluon.jit
def _segment(first, last, seg, STEPS):
    """The program's ``seg``-th segment: (tile, lo, hi), steps [lo, hi) of one tile (int32)."""
    tile = first // STEPS + seg
    lo = gl.maximum(first - tile * STEPS, 0)
    hi = gl.minimum(last - tile * STEPS, STEPS)
    return tile.to(gl.int32), lo.to(gl.int32), hi.to(gl.int32)


@gluon.jit
def _segments(first, last, STEPS):
    """How many tiles the program's iterations [first, last) touch."""
    return gl.where(last > first, (last - 1) // STEPS - first // STEPS + 1, 0).to(gl.int32)


@gluon.jit
def _wgrad_loader(
    dy_desc, x_ptr, a_bufs, b_bufs, ready, empty,
    L, H, W, P, Q, C, K, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, S,
    stride_xn, stride_xh, stride_xw,
    TILES, STEPS, CHUNK_STEPS, PROGRAMS,
    BLOCK_M: gl.constexpr, BLOCK_K: gl.constexpr, BLOCK_N: gl.constexpr, VEC: gl.constexpr,
    LOADER_WARPS: gl.constexpr, INT64: gl.constexpr, STREAM_K: gl.constexpr,
):
    """Fill the ring with the program's pixel steps, segment by segment: for each step dy's
    [BLOCK_K, BLOCK_M] box at (pixel, k0) by TMA, and the input's pixels of the tile's tap
    (r, s), channels c0 onwards, by cp.async, where the tile's column col0 = (r*S + s)*C + c0."""
    # Four threads along a row of the input tile, BLOCK_N / 4 channels (several 16-byte copies) each:
    # a row's pixel arithmetic, which every thread on the row repeats, is then shared by few threads
    # (sixteen threads a row of 128 channels: 359 sm_90 SASS instructions a loader step; four: 131).
    layout: gl.constexpr = gl.BlockedLayout([1, BLOCK_N // 4], [8, 4], [LOADER_WARPS, 1], [1, 0])
    STAGES: gl.constexpr = a_bufs.type.shape[0]
    num_m = gl.cdiv(K, BLOCK_M)
    offs_pix = gl.arange(0, BLOCK_K, layout=gl.SliceLayout(1, layout))
    offs_c = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, layout))
    step_n, step_p, step_q = pixel_steps(BLOCK_K, P, Q)
    first, last = _program_iterations(gl.program_id(0), TILES, STEPS, CHUNK_STEPS, PROGRAMS, STREAM_K)
    i = 0  # the ring's step count, across segments
    for seg in range(_segments(first, last, STEPS)):
        tile, lo, hi = _segment(first, last, seg, STEPS)
        k0 = (tile % num_m) * BLOCK_M
        col0 = (tile // num_m) * BLOCK_N
        tap = col0 // C
        c0 = col0 - tap * C
        r = tap // S
        s = tap - r * S
        start = lo * BLOCK_K
        m = start + offs_pix
        if INT64:
            m = m.to(gl.int64)
        # Each lane's pixel (n, p, q), decoded once a segment, then moved BLOCK_K pixels a step with carries.
        n, p, q, _, _ = output_pixels(m, P, Q, 1, 1, 0, 0)
        # The tap's place in the input, relative to each pixel's (p*U - pad_h, q*V - pad_w).
        dh = r * dil_h - pad_h
        dw = s * dil_w - pad_w
        chan_ptrs = x_ptr + c0 + offs_c
        for j in range(hi - lo):
            ih = p * stride_h + dh
            iw = q * stride_w + dw
            inside = (m < L) & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
            # Every row starts 16 bytes aligned (C and the strides are multiples of VEC: the launcher's condition).
            row = gl.multiple_of(n * stride_xn + ih * stride_xh + iw * stride_xw, VEC)
            stage = i % STAGES
            mbarrier.wait(empty.index(stage), ((i // STAGES) & 1) ^ 1)  # the MMA warps are done with it
            bar = ready.index(stage)
            mbarrier.expect(bar, dy_desc.block_type.nbytes)
            # Pixels past the last (L) are outside dy: the copy engine writes zeros there.
            tma.async_copy_global_to_shared(dy_desc, [start + j * BLOCK_K, k0], bar, a_bufs.index(stage))
            async_copy.async_copy_global_to_shared(b_bufs.index(stage), chan_ptrs[None, :] + row[:, None],
                                                   mask=inside[:, None])
            async_copy.mbarrier_arrive(bar, increment_count=False)
            m += BLOCK_K
            n, p, q = advance_pixels(n, p, q, step_n, step_p, step_q, P, Q)
            i += 1


@gluon.jit
def _partial_slot(q, tile_first, total, PROGRAMS):
    """Where program q keeps its partial sums of the tile whose first step is ``tile_first``:
    slot 0 if the tile is the program's first segment, else slot 1 (its last)."""
    return q * 2 + gl.where(q * total // PROGRAMS >= tile_first, 0, 1)


@gluon.jit
def _chunk_partial(chunk_ptrs, q, q1, tile_first, total, PROGRAMS, TILE: gl.constexpr):
    """Program q's partial sums at ``chunk_ptrs`` (zero past the tile's last program, q1)."""
    slot = _partial_slot(gl.minimum(q, q1), tile_first, total, PROGRAMS)
    return gl.load(chunk_ptrs + slot * TILE, mask=q <= q1, other=0.0, cache_modifier=".cg")  # (L2: other SMs')


@gluon.jit
def _sum_stream_k_partials(part_ptr, out_ptr, K, tile, k0, col0, STEPS, PROGRAMS, total,
                           stride_ok, stride_ot,
                           BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, NUM_WARPS: gl.constexpr,
                           RED_TPW_N: gl.constexpr):
    """The tile's last-arriving program: add the partial sums of every program that took part
    in the tile, in program order (a fixed order: deterministic), and write the tile. The
    tile goes by CHUNK rows; each chunk's partials are loaded four at a time (independent
    loads, in flight at once: a load a partial in turn would wait a memory latency each)."""
    CHUNK: gl.constexpr = 32  # rows a round (16 values a thread a partial at 128 columns, 8 warps)
    layout: gl.constexpr = gl.BlockedLayout([1, 4], [32 // RED_TPW_N, RED_TPW_N], [NUM_WARPS, 1], [1, 0])
    tile_first = tile.to(gl.int64) * STEPS
    q0 = ((tile_first + 1) * PROGRAMS - 1) // total  # the program holding the tile's first step
    q1 = ((tile_first + STEPS) * PROGRAMS - 1) // total  # ... and its last
    rows = gl.arange(0, CHUNK, layout=gl.SliceLayout(1, layout))
    cols = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, layout))
    offs = rows[:, None] * BLOCK_N + cols[None, :]
    for chunk in gl.static_range(BLOCK_M // CHUNK):
        chunk_ptrs = part_ptr + chunk * CHUNK * BLOCK_N + offs
        acc = gl.zeros([CHUNK, BLOCK_N], gl.float32, layout=layout)
        for qf in range(q0, q1 + 1, 4):  # four partials' loads in flight at once, then added in order
            a = _chunk_partial(chunk_ptrs, qf, q1, tile_first, total, PROGRAMS, BLOCK_M * BLOCK_N)
            b = _chunk_partial(chunk_ptrs, qf + 1, q1, tile_first, total, PROGRAMS, BLOCK_M * BLOCK_N)
            c = _chunk_partial(chunk_ptrs, qf + 2, q1, tile_first, total, PROGRAMS, BLOCK_M * BLOCK_N)
            d = _chunk_partial(chunk_ptrs, qf + 3, q1, tile_first, total, PROGRAMS, BLOCK_M * BLOCK_N)
            acc = acc + a + b + c + d
        offs_k = k0 + chunk * CHUNK + rows
        ptrs = out_ptr + (offs_k * stride_ok)[:, None] + ((col0 + cols) * stride_ot)[None, :]
        gl.store(ptrs, acc.to(out_ptr.dtype.element_ty), mask=(offs_k < K)[:, None])


@gluon.jit
def _wgrad_mma(
    a_bufs, b_bufs, ready, empty, out_ptr, part_ptr, count_ptr, K,
    TILES, STEPS, CHUNK_STEPS, PROGRAMS,
    stride_os, stride_ok, stride_ot,
    BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, NUM_WARPS: gl.constexpr, STREAM_K: gl.constexpr,
    RED_TPW_N: gl.constexpr,
):
    """Consume the ring (asynchronous wgmma, one in flight: dy's tile transposed times the
    input's) segment by segment, and finish each segment's tile:

    - split-K: the fp32 partial sums of this split, or the gradient itself at one split;
    - stream-K: a whole tile straight into the gradient; a tile shared with other programs as
      fp32 partial sums in this program's slot, then an arrival on the tile's counter, and the
      last of its programs to arrive adds them all up (:func:`_sum_stream_k_partials`) and
      sets the counter back to zero for the next launch."""
    STAGES: gl.constexpr = a_bufs.type.shape[0]
    mma_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[NUM_WARPS, 1],
                                                        instr_shape=[16, BLOCK_N, 16])
    num_m = gl.cdiv(K, BLOCK_M)
    pid = gl.program_id(0)
    first, last = _program_iterations(pid, TILES, STEPS, CHUNK_STEPS, PROGRAMS, STREAM_K)
    rows = gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, mma_layout))
    cols = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, mma_layout))
    i = 0  # the ring's step count, across segments
    for seg in range(_segments(first, last, STEPS)):
        tile, lo, hi = _segment(first, last, seg, STEPS)
        acc = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, layout=mma_layout)
        for _step in range(hi - lo):
            stage = i % STAGES
            mbarrier.wait(ready.index(stage), (i // STAGES) & 1)
            fence_async_shared()  # the loader's cp.async writes, seen by wgmma (the async proxy)
            acc = warpgroup_mma(a_bufs.index(stage).permute((1, 0)), b_bufs.index(stage), acc, is_async=True)
            acc = warpgroup_mma_wait(num_outstanding=1, deps=(acc,))
            # The previous step's wgmma has finished reading its stage: hand it back.
            mbarrier.arrive(empty.index((i + STAGES - 1) % STAGES), pred=i > 0)
            i += 1
        acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))
        k0 = (tile % num_m) * BLOCK_M
        col0 = (tile // num_m) * BLOCK_N
        offs_k = k0 + rows
        # Stored from the MMA's own layout (8-byte stores of two columns): a layout conversion would
        # take a shared-memory scratch as large as the tile (128 KB for 256x128), on top of the ring.
        ptrs = out_ptr + (offs_k * stride_ok)[:, None] + ((col0 + cols) * stride_ot)[None, :]
        if STREAM_K:
            if (lo == 0) & (hi == STEPS):  # the whole tile here
                gl.store(ptrs, acc.to(out_ptr.dtype.element_ty), mask=(offs_k < K)[:, None])
            else:
                slot = (seg > 0).to(gl.int64)  # 0: the program's first segment; 1: its last
                part = part_ptr + (pid.to(gl.int64) * 2 + slot) * (BLOCK_M * BLOCK_N)  # (_partial_slot's rule)
                gl.store(part + rows[:, None] * BLOCK_N + cols[None, :], acc)
                # Every MMA warp's partial sums stored, then one release-acquire arrival for all of
                # them; the barrier that hands its count to every thread orders their loads after it.
                gl.thread_barrier()
                arrived = gl.atomic_add(count_ptr + tile, 1, sem="acq_rel", scope="gpu")
                total = TILES.to(gl.int64) * STEPS
                tile_first = tile.to(gl.int64) * STEPS
                others = ((tile_first + STEPS) * PROGRAMS - 1) // total - ((tile_first + 1) * PROGRAMS - 1) // total
                if arrived == others:
                    gl.store(count_ptr + tile, 0)
                    _sum_stream_k_partials(part_ptr, out_ptr, K, tile, k0, col0, STEPS, PROGRAMS, total,
                                           stride_ok, stride_ot, BLOCK_M, BLOCK_N, NUM_WARPS, RED_TPW_N)
        else:
            split = pid // TILES
            gl.store(ptrs + split.to(gl.int64) * stride_os, acc.to(out_ptr.dtype.element_ty),
                     mask=(offs_k < K)[:, None])  # fp32 sums, or the gradient


# The work-sharing counts stay runtime values: a count of 1 would otherwise become a constant,
# and the schedule's int64 arithmetic converts them.
@gluon.jit(do_not_specialize=["TILES", "STEPS", "CHUNK_STEPS", "PROGRAMS"])
def conv2d_wgrad_ws_kernel(
    dy_desc,  # TensorDescriptor over dy as (N*P*Q, K), block (BLOCK_K, BLOCK_M)
    x_ptr,  # input, channels contiguous (channels_last), through stride_xn, stride_xh, stride_xw
    out_ptr,  # [SPLIT, K, C*R*S] fp32 partial sums, columns t = (r, s, c), or the gradient itself (written)
    part_ptr,  # stream-K: fp32 [PROGRAMS, 2, BLOCK_M, BLOCK_N], each program's partial tiles (scratch)
    count_ptr,  # stream-K: int32 [TILES] arrival counters, zero before and after the launch
    L, H, W, P, Q, C, K,  # L = N*P*Q pixels
    stride_h, stride_w, pad_h, pad_w, dil_h, dil_w,
    stride_xn, stride_xh, stride_xw,
    stride_os, stride_ok, stride_ot,
    S, TILES, STEPS, CHUNK_STEPS, PROGRAMS,  # STEPS: pixel steps a tile; CHUNK_STEPS: a split's (split-K)
    BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr,
    STAGES: gl.constexpr, LOADER_WARPS: gl.constexpr, LOADER_REGS: gl.constexpr,
    NUM_WARPS: gl.constexpr, INT64: gl.constexpr, STREAM_K: gl.constexpr, RED_TPW_N: gl.constexpr,
):
    dtype: gl.constexpr = dy_desc.dtype
    VEC: gl.constexpr = 128 // dtype.primitive_bitwidth  # 16 bytes of channels a copy
    b_layout: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BLOCK_K, BLOCK_N], dtype)
    a_bufs = gl.allocate_shared_memory(dtype, [STAGES, BLOCK_K, BLOCK_M], dy_desc.layout)
    b_bufs = gl.allocate_shared_memory(dtype, [STAGES, BLOCK_K, BLOCK_N], b_layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        # Ready: every loader thread's cp.async arrival, plus the TMA's byte count (one arrival).
        mbarrier.init(ready.index(i), count=LOADER_WARPS * 32 + 1)
        mbarrier.init(empty.index(i), count=1)
    # Split-K's program order: tiles fastest, so that the programs running at once share a
    # split's pixels. Stream-K's: consecutive programs take consecutive runs of a tile's steps.
    gl.warp_specialize([
        (_wgrad_mma, (a_bufs, b_bufs, ready, empty, out_ptr, part_ptr, count_ptr, K,
                      TILES, STEPS, CHUNK_STEPS, PROGRAMS, stride_os, stride_ok, stride_ot,
                      BLOCK_M, BLOCK_N, NUM_WARPS, STREAM_K, RED_TPW_N)),
        (_wgrad_loader, (dy_desc, x_ptr, a_bufs, b_bufs, ready, empty, L, H, W, P, Q, C, K,
                         stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, S, stride_xn, stride_xh, stride_xw,
                         TILES, STEPS, CHUNK_STEPS, PROGRAMS, BLOCK_M, BLOCK_K, BLOCK_N, VEC, LOADER_WARPS,
                         INT64, STREAM_K)),
    ], [LOADER_WARPS], [LOADER_REGS])


# The loader warpgroup, its registers and the MMA warps' are the forward implicit_gemm_ws's
# (launch.WS_LOADER_WARPS, WS_LOADER_REGS, WS_MAX_REGS: sm_90 compiles without spills).
WGRAD_WS_MIN_COLUMNS = 64  # the narrowest column tile: 64 channels of one tap
WGRAD_WS_MIN_STEPS = 16  # a split's pixel steps at least: the ring's fill and the epilogue amortised
WGRAD_SK_MIN_STEPS = 4  # a stream-K program's steps at least (where there are fewer steps than slots)
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


def stream_k_programs(tiles: int, steps: int, slots: int, requested: int = 0) -> int:
    """Programs of a stream-K launch over ``tiles`` tiles of ``steps`` pixel steps each, where
    ``slots`` programs run at once: one wave (``requested`` > 0 pins the count, as tests do),
    each program at least :data:`WGRAD_SK_MIN_STEPS` steps, never more programs than steps (an
    empty program would never arrive at its tile's counter)."""
    total = tiles * steps
    wanted = requested if requested > 0 else min(slots, max(1, total // WGRAD_SK_MIN_STEPS))
    return max(1, min(wanted, total))


def launch_wgrad_ws(
    problem: ConvProblem, grad: torch.Tensor, x: torch.Tensor, grad_weight: torch.Tensor,
    config: BackwardConfig,
):
    """``grad_weight`` (K, C, R, S) = wgrad of ``grad`` and ``x`` on :func:`conv2d_wgrad_ws_kernel`:
    ``config.block_m`` output channels x ``block_n`` channels of one tap a tile, ``block_k``
    pixels a step through a ring of ``num_stages``, ``num_warps`` MMA warps. The pixels are
    shared out in one of two ways:

    - split-K: ``split_k`` splits of every tile's pixels (0: :func:`ws_split`, one wave of
      programs), their fp32 partial sums added up by a second launch (one split over a
      channels_last or 1x1 gradient: written directly);
    - ``config.stream_k``: one wave of programs (``split_k`` > 0 pins their number:
      :func:`stream_k_programs`) takes equal runs of all the tiles' steps, so that no SM idles
      for want of a whole tile; a tile shared by several programs is added up by the last of
      them to finish it, in the same launch, in a fixed order (deterministic).

    A gradient or input that the copy engine cannot address as it needs (not dense
    channels_last, a sliced view) runs on the implicit_gemm wgrad instead, with the same result.
    Returns the splits (split-K) or the programs (stream-K)."""
    reason = wgrad_ws_unsupported_reason(problem)
    if reason is not None:
        raise ValueError(f"config ws=1: the warp-specialized wgrad cannot compute {problem.describe()}: {reason}")
    if config.num_warps not in WS_MAX_REGS:
        raise ValueError(f"config num_warps={config.num_warps}: the warp-specialized wgrad runs 4 or 8 MMA warps")
    if config.block_m not in (64, 128, 256) or config.block_k not in (32, 64, 128):
        raise ValueError(f"config {config}: the warp-specialized wgrad takes block_m 64, 128 or 256 and block_k "
                         "32, 64 or 128")
    dy2d = grad.permute(0, 2, 3, 1).reshape(problem.gemm_m, problem.k)  # a view where grad is channels_last
    if not (grad.permute(0, 2, 3, 1).is_contiguous() and describable(dy2d, problem.itemsize)
            and describable(x.permute(0, 2, 3, 1), problem.itemsize)):
        return launch_wgrad_implicit_gemm(problem, grad, x, grad_weight, config)  # (split-K, whatever stream_k says)
    block_n = ws_block_k(problem, min(config.block_n, 256))  # channels of one tap: halved until it divides C
    columns = problem.c * problem.r * problem.s
    tiles = cdiv(problem.k, config.block_m) * (columns // block_n)
    steps = cdiv(problem.gemm_m, config.block_k)  # a tile's pixel steps
    slots = sm_count(grad.device) * ws_resident(config)
    if config.stream_k:
        programs = stream_k_programs(tiles, steps, slots, config.split_k)
        split, chunk_steps = 1, steps
    else:
        split = ws_split(problem.gemm_m, config.block_k, tiles, slots, config.split_k)
        chunk, split = _chunk(problem.gemm_m, split, config.block_k)
        programs, chunk_steps = tiles * split, chunk // config.block_k
    dtype = _GLUON_DTYPES[problem.dtype]
    dy_block = [config.block_k, config.block_m]
    dy_desc = GluonTensorDescriptor.from_tensor(dy2d, dy_block, gl.NVMMASharedLayout.get_default_for(dy_block, dtype))
    out, out_strides, summed = split_output(problem, grad_weight, split)
    if config.stream_k:  # each program's partial tiles (its first and last segment), the tiles' counters
        partials = scratch((programs, 2, config.block_m, block_n), torch.float32, grad.device)
        counters = semaphores(tiles, grad.device)
    else:
        partials = counters = out  # (not read)
    launch(conv2d_wgrad_ws_kernel, (programs,),
           dy_desc, x, out, partials, counters,
           problem.gemm_m, problem.h, problem.w, problem.out_h, problem.out_w, problem.c, problem.k,
           problem.stride[0], problem.stride[1], problem.padding[0], problem.padding[1],
           problem.dilation[0], problem.dilation[1], x.stride(0), x.stride(2), x.stride(3), *out_strides,
           problem.s, tiles, steps, chunk_steps, programs,
           BLOCK_M=config.block_m, BLOCK_N=block_n, BLOCK_K=config.block_k, STAGES=config.num_stages,
           LOADER_WARPS=WS_LOADER_WARPS, LOADER_REGS=WS_LOADER_REGS, NUM_WARPS=config.num_warps,
           INT64=needs_int64(problem), STREAM_K=bool(config.stream_k), RED_TPW_N=min(32, block_n // 4),
           num_warps=config.num_warps, maxnreg=WS_MAX_REGS[config.num_warps])
    if summed:
        sum_splits(problem, out, grad_weight, split)
    return programs if config.stream_k else split
