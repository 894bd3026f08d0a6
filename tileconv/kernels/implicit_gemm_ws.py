"""Hopper implicit GEMM with warp specialization (Gluon): loader warps gather, MMA warps multiply.

The Triton implicit GEMM (:mod:`.implicit_gemm`) has every warp do everything in turn: compute
the A tile's gather addresses and masks, issue its cp.async copies, wait, issue the wgmma
steps, wait. On Hopper that kernel is latency-bound (Nsight Compute, sixth session: one CTA
an SM, issue slots 32% busy): the address work of the next step and the MMA of this one
share the same instruction streams. This kernel splits them, as cuDNN's and CUTLASS's Hopper
convolutions do:

- a **loader partition** (``LOADER_WARPS`` warps, few registers) walks the same tiles and
  reduction steps and, for each step, waits for a free stage of the shared-memory ring,
  gathers the A tile (BLOCK_M output pixels x BLOCK_K channels of one filter tap: 16-byte
  cp.async copies, zero-filled outside the image, the padding) and copies the weight tile
  by TMA (a 2D box of the (K, R*S*C) weight matrix). Each loader thread signals the stage's
  mbarrier when its copies land (``cp.async.mbarrier.arrive.noinc``), the TMA its bytes.
- the **MMA partition** (the default one, ``num_warps`` warps: one or two warpgroups) waits
  for each stage, issues the asynchronous wgmma with both operands in shared memory, keeps
  one in flight, frees the stage before it, and runs the fused epilogue at the end of each
  tile while the loader is already filling the ring with the next tile's operands.
- or two MMA partitions of one warpgroup each (``CONSUMERS = 2``, CUTLASS's "ping-pong"):
  they take the program's tiles in turn, so that one's main loop keeps the tensor cores busy
  while the other runs its epilogue.
- or (gemm_1x1_ws, ``SLICES = 3``) three MMA partitions of one warpgroup each on one tile of
  BLOCK_M = 192 rows, each its own 64 (CUTLASS's "cooperative" form, three ways): a tile size
  no single power-of-two accumulator has, which covers some ResNet-50 GEMMs in one exact wave
  of 132 SMs (c1024 hw14 k512: 33 x 4 tiles of 192x128, against 98 of 128x256).

- or (both kernels, ``RESIDENT``) the weight slice of a program's output channels held in shared
  memory for the program's whole life (BLOCK_N x R*S*C, in BLOCK_K chunks): the programs are
  dealt out over the N slices (the grid a multiple of their count, each program walking M tiles
  of its own slice), the loader copies the slice once, chunk by chunk beside the first tile's A
  tiles, and the ring carries only A. It pays where the weight is a large share of each step's
  bytes and small enough to hold: im2row_ws's unrolled stem (64 x 7 x 32, 28 KB: its GEMM 62 ->
  50 us on an H200); on ResNet-50's 1x1 GEMMs (128 x 512, 128 KB) it measured no gain (session 51).

- or (``GROUPED``, implicit_gemm_ws only: grouped_gemm_ws) a grouped convolution one group a tile:
  BLOCK_N = K/groups output channels, so N tile g is group g, its A tiles gathered from input
  channels g*C/g on and its B tiles from the (K, R*S*C/g) weight's rows of group g. Its launcher
  merges thin groups first (``SUB_C``, ``SUB_K``: the channels of the groups in each merged one,
  the weight block-diagonal), so that a gathered pixel row is a whole 128-byte line (a 16-channel
  group's is 32 bytes, and the copies' cost goes by the lines they visit: H200, session 54); a tile
  whose sums are not all finite (an Inf or NaN input, spread by the zeros between merged groups)
  is recomputed group by group in the MMA partition before its epilogue (:func:`_redo_by_group`).

The grid is persistent (one program an SM, or two: ``config.persistent``), the tiles in grouped order (with ``RESIDENT``,
slice by slice). Gluon kernels compile only for a GPU: under Triton's interpreter this
algorithm is unsupported (the launcher's ``implicit_gemm_ws_unsupported_reason`` says so) and
its tests run on the GPU; CI compiles it for sm_90 (``benchmarks/sass.py``).
"""

import triton.language as tl
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

from .common import epilogue_at, output_pixels, store_output_tile, swizzle_tile, tile_origin, tile_pixels


@gluon.jit
def _tile_coords(tile, num_m, num_n, GROUP_M: gl.constexpr, RESIDENT: gl.constexpr):
    """Tile ``tile``'s (pid_m, pid_n): grouped order; or, with ``RESIDENT``, row-major (a
    program's tiles, ``num_programs`` apart, a multiple of ``num_n``, all share its N slice)."""
    if RESIDENT:
        pid_m = tile // num_n
        pid_n = tile % num_n
    else:
        pid_m, pid_n = swizzle_tile(tile, num_m, num_n, GROUP_M)
    return pid_m, pid_n


@gluon.jit
def _loader_partition(
    x_ptr, w_desc, a_bufs, b_bufs, ready, empty, held,
    M, H, W, C, K, P, Q, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, R, S,
    stride_xn, stride_xh, stride_xw,
    BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr, GROUP_M: gl.constexpr,
    VEC: gl.constexpr, LOADER_WARPS: gl.constexpr, INT64: gl.constexpr,
    RESIDENT: gl.constexpr, GROUPED: gl.constexpr,
):
    """Fill the ring: for every tile and reduction step of this program, one stage.

    The loader is this kernel's bottleneck where the reduction is long (Nsight Compute, session 20:
    ResNet-50's c256 hw14 3x3 in TF32, the MMA warps waiting on the ring half the time while the
    loader warps issued without pause), so its step does as little as it can: the steps are walked
    as nested loops (filter row, filter column, channel block: no division), a tile's row pointers
    are formed once and moved by a scalar, each row's validity (the padding) is decided once a
    tap; a step is then a pointer increment and one 16-byte copy per row.

    With ``RESIDENT`` the weight tiles go once, in the program's first tile, into ``b_bufs[i]``
    (counted on ``held[i]``) and stay; the ring carries the A tiles alone."""
    TPW_K: gl.constexpr = BLOCK_K // VEC  # threads along a row of the A tile, VEC channels (16 bytes) each
    layout: gl.constexpr = gl.BlockedLayout([1, VEC], [32 // TPW_K, TPW_K], [LOADER_WARPS, 1], [1, 0])
    STAGES: gl.constexpr = a_bufs.type.shape[0]
    num_m = gl.cdiv(M, BLOCK_M)
    num_n = gl.cdiv(K, BLOCK_N)
    offs_c = gl.arange(0, BLOCK_K, layout=gl.SliceLayout(0, layout))
    # A filter row's and a filter column's move through the input (int64 where indices may pass 2**31).
    if INT64:  # (to_tensor: a dilation of 1 arrives as a constexpr)
        row_step = gl.to_tensor(dil_h).to(gl.int64) * stride_xh
        col_step = gl.to_tensor(dil_w).to(gl.int64) * stride_xw
    else:
        row_step = dil_h * stride_xh
        col_step = dil_w * stride_xw
    steps = R * S * (C // BLOCK_K)  # a tile's reduction steps
    it = 0
    for tile in range(gl.program_id(0), num_m * num_n, gl.num_programs(0)):
        pid_m, pid_n = _tile_coords(tile, num_m, num_n, GROUP_M, RESIDENT)
        offs_m = pid_m * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, layout))
        if INT64:
            offs_m = offs_m.to(gl.int64)
        n, _, _, ih0, iw0 = output_pixels(offs_m, P, Q, stride_h, stride_w, pad_h, pad_w)
        in_m = offs_m < M
        # Every row starts 16 bytes aligned (C and the strides are multiples of VEC: the launcher's condition).
        row_offs = gl.multiple_of(n * stride_xn + ih0 * stride_xh + iw0 * stride_xw, VEC)
        tap_row_ptrs = x_ptr + row_offs[:, None] + offs_c[None, :]  # tap (0, 0), channel 0
        if GROUPED:  # N tile pid_n is group pid_n: its C input channels start at pid_n * C
            tap_row_ptrs += pid_n * C
        w_col = 0  # the weight matrix's column of this step: (r*S + s)*C + c0
        for r in range(R):
            ih = ih0 + r * dil_h
            row_inside = in_m & (ih >= 0) & (ih < H)
            ptrs = tap_row_ptrs
            for s in range(S):
                iw = iw0 + s * dil_w
                inside = (row_inside & (iw >= 0) & (iw < W))[:, None]
                for c0 in range(0, C, BLOCK_K):
                    stage = it % STAGES
                    mbarrier.wait(empty.index(stage), ((it // STAGES) & 1) ^ 1)  # the MMA warps are done with it
                    bar = ready.index(stage)
                    if RESIDENT:
                        if it < steps:  # the program's first tile: weight chunk w_col / BLOCK_K, held from now on
                            chunk = w_col // BLOCK_K
                            mbarrier.expect(held.index(chunk), w_desc.block_type.nbytes)
                            tma.async_copy_global_to_shared(w_desc, [pid_n * BLOCK_N, w_col], held.index(chunk),
                                                            b_bufs.index(chunk))
                    else:
                        mbarrier.expect(bar, w_desc.block_type.nbytes)
                        tma.async_copy_global_to_shared(w_desc, [pid_n * BLOCK_N, w_col], bar, b_bufs.index(stage))
                    async_copy.async_copy_global_to_shared(a_bufs.index(stage), ptrs + c0, mask=inside)
                    async_copy.mbarrier_arrive(bar, increment_count=False)
                    w_col += BLOCK_K
                    it += 1
                ptrs += col_step
            tap_row_ptrs += row_step


@gluon.jit
def _column_halves(x):
    """The left and right halves of a [rows, columns] register tile (columns split at the middle:
    in the wgmma accumulator's layout a register choice, no data moves)."""
    ROWS: gl.constexpr = x.shape[0]
    HALF: gl.constexpr = x.shape[1] // 2
    return gl.split(gl.permute(gl.reshape(x, [ROWS, 2, HALF]), (0, 2, 1)))


@gluon.jit
def _store_tile_tma(out, out_desc, epi, first, row, col, tile_count):
    """Store the finished [BLOCK_M, BLOCK_N] tile ``out`` (the output's dtype, any layout) at
    (``row``, ``col``) of the output matrix by the copy engine, ``EPI_N`` columns at a time
    through the two [BLOCK_M, EPI_N] buffers ``epi.index(first)`` and the next in turn (a row
    slice's own two: ``first`` = 2 * SLICE; a sliced view of ``epi`` along its first dimension
    does not compile where that dimension is not a power of two): each chunk written to shared
    memory, then one bulk copy (rows past M and columns past K clipped by the engine). A buffer
    is written again only once the copy before last has read it (``store_wait(1)``), so the MMA
    warps never wait for a store to land, only for the stores into shared memory. The buffers
    alternate over the program's chunks, not a tile's (``tile_count``: the tiles this consumer
    stored before this one): a one-chunk tile (BLOCK_N = EPI_N) takes the other buffer from the
    tile before it. Taking buffer 0 for every such tile overwrote it while the previous tile's
    copy could still be reading it (wrong outputs on one-step tiles, H200, session 35)."""
    EPI_N: gl.constexpr = epi.type.shape[2]
    CHUNKS: gl.constexpr = out.shape[1] // EPI_N
    gl.static_assert(CHUNKS == 1 or CHUNKS == 2 or CHUNKS == 4, "a tile is stored in 1, 2 or 4 column chunks")
    if CHUNKS == 1:
        chunks = (out,)
    elif CHUNKS == 2:
        chunks = _column_halves(out)
    else:
        left, right = _column_halves(out)
        l0, l1 = _column_halves(left)
        r0, r1 = _column_halves(right)
        chunks = (l0, l1, r0, r1)
    for j in gl.static_range(CHUNKS):
        tma.store_wait(1)  # this buffer's copy before last has read it
        buf = epi.index(first + (tile_count * CHUNKS + j) % 2)
        buf.store(chunks[j])
        fence_async_shared()  # the stores, seen by the copy engine (the async proxy)
        tma.async_copy_shared_to_global(out_desc, [row, col + j * EPI_N], buf)


@gluon.jit
def _epilogue_buffers(out_desc, stand_in_desc, stand_in_buffer, EPI_TMA: gl.constexpr, SLICES: gl.constexpr):
    """The TMA-store epilogue's descriptor and its two column-chunk buffers (see _store_tile_tma)
    for each of the tile's ``SLICES`` MMA partitions (slice j's are buffers 2j and 2j + 1);
    without it, the stand-ins, which the partitions never touch (warp_specialize takes no None
    among its arguments)."""
    desc = stand_in_desc
    epi = stand_in_buffer
    if EPI_TMA:
        desc = out_desc
        epi = gl.allocate_shared_memory(out_desc.dtype,
                                        [2 * SLICES, out_desc.block_type.shape[0], out_desc.block_type.shape[1]],
                                        out_desc.layout)
    return desc, epi


@gluon.jit
def _held_barriers(stand_in, RESIDENT: gl.constexpr):
    """The held weight chunks' barriers (``RESIDENT`` of them, one a chunk); without them the
    stand-in, which the partitions never touch (the shared memory laid out as before them)."""
    held = stand_in
    if RESIDENT:
        held = gl.allocate_shared_memory(gl.int64, [RESIDENT, 1], mbarrier.MBarrierLayout())
    return held


@gluon.jit
def _redo_by_group(redo, pid_m, pid_n, M, P, Q, layout: gl.constexpr, BLOCK_M: gl.constexpr,
                   BLOCK_N: gl.constexpr, SUB_C: gl.constexpr, SUB_K: gl.constexpr, INT64: gl.constexpr):
    """Tile (pid_m, pid_n) of merged group pid_n recomputed on the CUDA cores, each output
    channel from its own group's SUB_C input channels only (:func:`redo_pixels`): the sums of a
    tile whose input holds a NaN or an infinity, which the block-diagonal weight's zeros would
    spread to the merged groups' other channels. Its rows are BLOCK_M consecutive output pixels."""
    stride_h, stride_w, pad_h, pad_w = redo[5], redo[6], redo[7], redo[8]
    offs_m = pid_m * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, layout))
    if INT64:
        offs_m = offs_m.to(gl.int64)
    n, _, _, ih0, iw0 = output_pixels(offs_m, P, Q, stride_h, stride_w, pad_h, pad_w)
    return redo_pixels(redo, pid_n, n, ih0, iw0, offs_m < M, layout, BLOCK_M, BLOCK_N, SUB_C, SUB_K)


@gluon.jit
def _nan_max(a, b):
    """The greater of ``a`` and ``b``, NaN if either is (one FMNMX.NAN)."""
    return gl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@gluon.jit
def any_nonfinite(acc):
    """Whether any of the 2D tile ``acc``'s sums is an infinity or a NaN (the merged groups' redo
    test): the NaN-propagating max of their magnitudes is not below infinity. About one
    instruction a sum (the magnitude is the max's operand modifier), where a 0/1 flag a sum took
    three or four (session 59: a tenth of grouped_frame's stall samples on ResNeXt c128 hw56/1)."""
    return not (gl.reduce(gl.reduce(gl.abs(acc), 1, _nan_max), 0, _nan_max) < float("inf"))


@gluon.jit
def redo_pixels(redo, pid_n, n, ih0, iw0, in_m, layout: gl.constexpr, BLOCK_M: gl.constexpr,
                BLOCK_N: gl.constexpr, SUB_C: gl.constexpr, SUB_K: gl.constexpr):
    """The [BLOCK_M, BLOCK_N] sums of merged group ``pid_n`` at the tile's pixels (image ``n``,
    the window's top-left input pixel ``ih0``, ``iw0``; ``in_m``: the rows that are outputs) on
    the CUDA cores, each output channel from its own group's SUB_C input channels only
    (grouped_gemm's redo, one output column at a time over [BLOCK_M] vectors). ``redo``: (x_ptr,
    w_ptr, H, W, CM, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, R, S, stride_xn, stride_xh,
    stride_xw) with w_ptr the (K, R*S*CM) merged weight matrix. In fp32, in ``layout``."""
    x_ptr, w_ptr, H, W, CM, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, R, S, stride_xn, stride_xh, stride_xw = redo
    cols = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, layout))
    pixel = x_ptr + n * stride_xn + pid_n * CM  # the merged group's first input channel
    acc = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, layout=layout)
    for j in range(BLOCK_N):
        c0 = (j // SUB_K) * SUB_C  # output channel j's own group: its channels in the merged block
        w_row = w_ptr + (pid_n * BLOCK_N + j).to(gl.int64) * (R * S * CM) + c0
        column = gl.zeros([BLOCK_M], gl.float32, layout=gl.SliceLayout(1, layout))
        for r in range(R):
            ih = ih0 + r * dil_h
            for s in range(S):
                iw = iw0 + s * dil_w
                ok = in_m & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
                x_tap = pixel + ih * stride_xh + iw * stride_xw + c0
                w_tap = w_row + (r * S + s) * CM
                for c in range(SUB_C):
                    xv = gl.load(x_tap + c, mask=ok, other=0.0)
                    column += xv.to(gl.float32) * gl.load(w_tap + c).to(gl.float32)
        acc = gl.where(gl.expand_dims(cols, 0) == j, gl.expand_dims(column, 1), acc)
    return acc


@gluon.jit
def _mma_partition(
    a_bufs, b_bufs, ready, empty, turn,
    out_ptr, bias_ptr, res_ptr, out_desc, epi,  # out_desc, epi: the TMA-store epilogue's (EPI_TMA)
    M, K, P, Q, PI, num_m, steps,  # num_m tiles along M, steps a tile; PI: a box grid's rows (BOX_Q > 0)
    stride_on, stride_ok, stride_op, stride_oq,
    fold_k, fold_jump,  # output channel k is stored (k // fold_k) * fold_jump further on (pointer stores)
    stride_rn, stride_rk, stride_rp, stride_rq,
    alpha, beta,
    ACTIVATION: gl.constexpr, HAS_BIAS: gl.constexpr, HAS_RESIDUAL: gl.constexpr,
    BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr, GROUP_M: gl.constexpr,
    MMA_K: gl.constexpr, NUM_WARPS: gl.constexpr, INT64: gl.constexpr,
    CONSUMER: gl.constexpr, CONSUMERS: gl.constexpr,
    BOX_Q: gl.constexpr,  # 0: the M tile is BLOCK_M consecutive output pixels; else a box (common.tile_origin)
    EPI_TMA: gl.constexpr,  # the tile leaves by TMA stores from ``epi`` (no residual, BOX_Q = 0)
    SLICE: gl.constexpr, SLICES: gl.constexpr,  # this partition's rows: slice SLICE of SLICES
    A_BY_CP_ASYNC: gl.constexpr,  # the A tiles arrive by cp.async (else by TMA, as the B tiles)
    held, RESIDENT: gl.constexpr,  # RESIDENT: b_bufs holds the N slice's weight chunks, chunk i on held[i]
    redo, SUB_C: gl.constexpr, SUB_K: gl.constexpr,  # merged groups (SUB_K > 0): see _redo_by_group
):
    """Consume the ring with asynchronous wgmma (one in flight), then the epilogue. With
    ``SLICES`` > 1 each tile's BLOCK_M rows are split among that many MMA partitions, this one
    taking rows SLICE * BLOCK_M / SLICES on: its A operand is the stage's buffer of those rows
    (``a_bufs`` holds SLICES buffers a stage), and a stage is free once every slice has
    released it (the empty barriers count SLICES arrivals). With two
    consumers (ping-pong) this one takes every other tile of the program, ``CONSUMER`` first:
    the loader fills the ring tile after tile, so one consumer's main loop runs while the
    other's epilogue does. Their main loops take turns (``turn``: each waits for the other's
    to end): a ring stage's mbarrier is waited on by phase parity, which tells apart only
    the next fill from the one before, so no consumer may wait for a fill two ahead (the
    first form, without turns, hung on the GPU). With ``RESIDENT`` the B operand of step i is
    the held weight chunk i (landed once: its barrier's first phase), not the stage's."""
    gl.static_assert(not EPI_TMA or (BOX_Q == 0 and CONSUMERS == 1), "TMA stores: pixel-run tiles, one consumer")
    gl.static_assert(SLICES == 1 or (BOX_Q == 0 and CONSUMERS == 1), "row slices: pixel-run tiles, no ping-pong")
    STAGES: gl.constexpr = a_bufs.type.shape[0] // SLICES
    SLICE_M: gl.constexpr = BLOCK_M // SLICES
    mma_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[NUM_WARPS, 1],
                                                        instr_shape=[16, BLOCK_N, MMA_K])
    # The epilogue's layout: each thread 8 consecutive output channels (16-byte fp16 stores).
    out_layout: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [NUM_WARPS, 1], [1, 0])
    num_n = gl.cdiv(K, BLOCK_N)
    first = gl.program_id(0) + CONSUMER * gl.num_programs(0)
    own = 0  # this consumer's tiles so far
    for tile in range(first, num_m * num_n, CONSUMERS * gl.num_programs(0)):
        # The ring position of this tile's first step: the loader walks all the program's tiles.
        it = (tile - gl.program_id(0)) // gl.num_programs(0) * steps
        pid_m, pid_n = _tile_coords(tile, num_m, num_n, GROUP_M, RESIDENT)
        if CONSUMERS == 2:  # my turn: the other consumer's main loop is over (consumer 0 starts)
            mbarrier.wait(turn.index(CONSUMER), (own & 1) ^ (1 - CONSUMER))
        acc = gl.zeros([SLICE_M, BLOCK_N], gl.float32, layout=mma_layout)
        for step in range(steps):
            stage = it % STAGES
            mbarrier.wait(ready.index(stage), (it // STAGES) & 1)
            if A_BY_CP_ASYNC:
                # The loader's cp.async writes (the generic proxy), seen by wgmma (the async proxy).
                # Bulk copies write through the async proxy themselves: their mbarrier's phase is
                # all wgmma needs (CUTLASS's TMA pipelines have no fence there; it costs a
                # MEMBAR.ALL.CTA a step in SASS).
                fence_async_shared()
            # float32 operands multiply as TF32 (the compiler's default precision; strict float32 is
            # not this kernel's: the launcher's condition).
            if RESIDENT:
                mbarrier.wait(held.index(step), 0)  # (at once after the program's first tile)
                acc = warpgroup_mma(a_bufs.index(stage * SLICES + SLICE), b_bufs.index(step).permute((1, 0)), acc,
                                    is_async=True)
            else:
                acc = warpgroup_mma(a_bufs.index(stage * SLICES + SLICE), b_bufs.index(stage).permute((1, 0)), acc,
                                    is_async=True)
            acc = warpgroup_mma_wait(num_outstanding=1, deps=(acc,))
            # The previous step's wgmma has finished reading its stage: hand it back.
            mbarrier.arrive(empty.index((it + STAGES - 1) % STAGES), pred=step > 0)
            it += 1
        acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))
        mbarrier.arrive(empty.index((it + STAGES - 1) % STAGES))
        if CONSUMERS == 2:  # the other consumer's turn
            mbarrier.arrive(turn.index(1 - CONSUMER))
        own += 1
        if SUB_K > 0:
            gl.static_assert(SLICES == 1 and BOX_Q == 0, "merged groups: pixel-run tiles of one partition's rows")
            # A NaN/Inf input times the block-diagonal weight's zeros is NaN in the merged groups'
            # other columns: a tile with any non-finite sum (rare) is redone group by group.
            if any_nonfinite(acc):
                acc = _redo_by_group(redo, pid_m, pid_n, M, P, Q, mma_layout, BLOCK_M, BLOCK_N, SUB_C, SUB_K, INT64)

        offs_k = pid_n * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, out_layout))
        # The tile's channels fold as one (the launcher's condition: BLOCK_N divides fold_k).
        tile_out = out_ptr + (pid_n * BLOCK_N // fold_k).to(gl.int64) * fold_jump
        img, row, col = tile_origin(pid_m, PI, Q, BLOCK_M, BOX_Q)
        row += SLICE * SLICE_M  # (a slice's rows: pixel runs only)
        n, p, q, mask_m = tile_pixels(gl.arange(0, SLICE_M, layout=gl.SliceLayout(1, out_layout)), img, row, col,
                                      M, PI, P, Q, BOX_Q, INT64)
        if HAS_RESIDUAL:  # the residual read in the stores' layout (16 bytes a thread), then the epilogue
            store_output_tile(gl.convert_layout(acc, out_layout), tile_out, bias_ptr, res_ptr, n, p, q, mask_m,
                              offs_k, offs_k < K, stride_on, stride_ok, stride_op, stride_oq, stride_rn, stride_rk,
                              stride_rp, stride_rq, alpha, beta, ACTIVATION, HAS_BIAS, HAS_RESIDUAL)
        else:
            # Bias and activation in the MMA's own layout, the cast before the layout conversion:
            # half the bytes through shared memory while the tensor cores wait (the same values).
            offs_b = pid_n * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, mma_layout))
            acc = epilogue_at(acc, bias_ptr, res_ptr, offs_b, offs_b < K, 0, False, alpha, beta,
                              ACTIVATION, HAS_BIAS, False)
            if EPI_TMA:  # from the MMA layout into shared memory, out by the copy engine
                _store_tile_tma(acc.to(out_desc.dtype), out_desc, epi, 2 * SLICE, row, pid_n * BLOCK_N, own - 1)
            else:
                out = gl.convert_layout(acc.to(out_ptr.dtype.element_ty), out_layout)
                store_output_tile(out, tile_out, bias_ptr, res_ptr, n, p, q, mask_m, offs_k, offs_k < K,
                                  stride_on, stride_ok, stride_op, stride_oq, stride_rn, stride_rk, stride_rp,
                                  stride_rq, alpha, beta, 0, False, False)
    if EPI_TMA:
        tma.store_wait(0)  # the last copies have read shared memory before the program ends


@gluon.jit
def conv2d_implicit_gemm_ws_kernel(
    x_ptr,  # input, any strides with channels contiguous (channels_last)
    w_desc,  # TensorDescriptor over the weight as (K, R*S*C) ((r, s, c) order), block (BLOCK_N, BLOCK_K)
    out_desc,  # None, or (EPI_TMA) a TensorDescriptor over the output as (M, K), block (BLOCK_M, EPI_N)
    out_ptr, bias_ptr, res_ptr,  # output [N, K, P, Q] (strides below), bias [K], residual
    M, H, W, C, K, P, Q,  # M = N*P*Q output pixels; C the channels a group reduces over (GROUPED), K all
    stride_h, stride_w, pad_h, pad_w, dil_h, dil_w,
    stride_xn, stride_xh, stride_xw,  # the input's strides (its channel stride is 1)
    stride_on, stride_ok, stride_op, stride_oq,
    fold_k, fold_jump,  # output channel k lies (k // fold_k) * fold_jump further on (K, 0: no fold)
    stride_rn, stride_rk, stride_rp, stride_rq,
    alpha, beta,
    R, S,
    ACTIVATION: gl.constexpr, HAS_BIAS: gl.constexpr, HAS_RESIDUAL: gl.constexpr,
    BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr, GROUP_M: gl.constexpr,
    STAGES: gl.constexpr,  # depth of the shared-memory ring
    LOADER_WARPS: gl.constexpr, LOADER_REGS: gl.constexpr,  # the loader partition's warps and registers
    MMA_K: gl.constexpr,  # wgmma's depth: 8 for float32 (TF32), 16 for 16-bit types
    NUM_WARPS: gl.constexpr,  # each MMA partition's warps (the kernel's num_warps)
    CONSUMERS: gl.constexpr, CONSUMER_REGS: gl.constexpr,  # 1, or 2 MMA partitions in ping-pong
    INT64: gl.constexpr,
    EPI_TMA: gl.constexpr,  # the TMA-store epilogue (the launcher's choice: no residual, one MMA partition)
    RESIDENT: gl.constexpr,  # 0, or R*S*C/BLOCK_K: the weight chunks a program holds (its N slice for its life)
    GROUPED: gl.constexpr,  # groups > 1: C is a group's input channels, N tile g is group g (BLOCK_N = K/groups)
    w_ptr,  # the weight matrix w_desc describes, for the merged groups' redo (SUB_K > 0)
    SUB_C: gl.constexpr, SUB_K: gl.constexpr,  # 0, or the channels of the groups merged into each group
):
    dtype: gl.constexpr = w_desc.dtype
    VEC: gl.constexpr = 128 // dtype.primitive_bitwidth  # 16 bytes of channels a copy
    B_BUFS: gl.constexpr = RESIDENT if RESIDENT else STAGES
    a_layout: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BLOCK_M, BLOCK_K], dtype)
    a_bufs = gl.allocate_shared_memory(dtype, [STAGES, BLOCK_M, BLOCK_K], a_layout)
    b_bufs = gl.allocate_shared_memory(dtype, [B_BUFS, BLOCK_N, BLOCK_K], w_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    turn = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())  # ping-pong's main-loop turns
    held = _held_barriers(turn, RESIDENT)
    out_tma, epi = _epilogue_buffers(out_desc, w_desc, turn, EPI_TMA, 1)
    for i in gl.static_range(2):
        mbarrier.init(turn.index(i), count=1)
    for i in gl.static_range(STAGES):
        # Ready: every loader thread's cp.async arrival, plus (the weight tile in the ring) the
        # TMA's byte count (one arrival).
        mbarrier.init(ready.index(i), count=LOADER_WARPS * 32 + (0 if RESIDENT else 1))
        mbarrier.init(empty.index(i), count=1)
    for i in gl.static_range(RESIDENT):
        mbarrier.init(held.index(i), count=1)  # the loader's expect; the chunk's bytes complete it

    num_m = gl.cdiv(M, BLOCK_M)
    steps = R * S * (C // BLOCK_K)
    redo = (x_ptr, w_ptr, H, W, C, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, R, S, stride_xn, stride_xh,
            stride_xw)
    # (Partition arguments are written out in each call: a tuple held in a variable would turn
    # the constexprs in it into tensors.)
    if CONSUMERS == 1:
        gl.warp_specialize([
            (_mma_partition, (a_bufs, b_bufs, ready, empty, turn, out_ptr, bias_ptr, res_ptr, out_tma, epi, M, K, P, Q, P, num_m, steps,
                              stride_on, stride_ok, stride_op, stride_oq, fold_k, fold_jump, stride_rn, stride_rk,
                              stride_rp, stride_rq, alpha, beta, ACTIVATION, HAS_BIAS, HAS_RESIDUAL, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M,
                              MMA_K, NUM_WARPS, INT64, 0, 1, 0, EPI_TMA, 0, 1, True, held, RESIDENT, redo, SUB_C, SUB_K)),
            (_loader_partition, (x_ptr, w_desc, a_bufs, b_bufs, ready, empty, held, M, H, W, C, K, P, Q,
                                 stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, R, S, stride_xn, stride_xh, stride_xw,
                                 BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, VEC, LOADER_WARPS, INT64, RESIDENT, GROUPED)),
        ], [LOADER_WARPS], [LOADER_REGS])
    else:
        gl.warp_specialize([
            (_mma_partition, (a_bufs, b_bufs, ready, empty, turn, out_ptr, bias_ptr, res_ptr, out_tma, epi, M, K, P, Q, P, num_m, steps,
                              stride_on, stride_ok, stride_op, stride_oq, fold_k, fold_jump, stride_rn, stride_rk,
                              stride_rp, stride_rq, alpha, beta, ACTIVATION, HAS_BIAS, HAS_RESIDUAL, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M,
                              MMA_K, NUM_WARPS, INT64, 0, 2, 0, EPI_TMA, 0, 1, True, held, RESIDENT, redo, SUB_C, SUB_K)),
            (_loader_partition, (x_ptr, w_desc, a_bufs, b_bufs, ready, empty, held, M, H, W, C, K, P, Q,
                                 stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, R, S, stride_xn, stride_xh, stride_xw,
                                 BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, VEC, LOADER_WARPS, INT64, RESIDENT, GROUPED)),
            (_mma_partition, (a_bufs, b_bufs, ready, empty, turn, out_ptr, bias_ptr, res_ptr, out_tma, epi, M, K, P, Q, P, num_m, steps,
                              stride_on, stride_ok, stride_op, stride_oq, fold_k, fold_jump, stride_rn, stride_rk,
                              stride_rp, stride_rq, alpha, beta, ACTIVATION, HAS_BIAS, HAS_RESIDUAL, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M,
                              MMA_K, NUM_WARPS, INT64, 1, 2, 0, EPI_TMA, 0, 1, True, held, RESIDENT, redo, SUB_C, SUB_K)),
        ], [LOADER_WARPS, NUM_WARPS], [LOADER_REGS, CONSUMER_REGS])


@gluon.jit
def _tma_loader_partition(
    x_desc, w_desc, a_bufs, b_bufs, ready, empty, num_m, num_n, steps, PI, Q,
    BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr, GROUP_M: gl.constexpr,
    BOX_Q: gl.constexpr, SLICES: gl.constexpr, held, RESIDENT: gl.constexpr,
):
    """Fill the ring by bulk copies only (one warp): for every tile and channel step of this
    program, the A box and the weight tile into one stage, both counted on its mbarrier (with
    ``RESIDENT``, the A box alone: the weight chunk of step i goes once, in the program's first
    tile, into ``b_bufs[i]``, counted on ``held[i]``, and stays); with
    ``SLICES`` > 1 (pixel runs only), the tile's A rows as that many boxes of BLOCK_M / SLICES
    rows, one into each of the stage's A buffers (rows past M: the engine's zero fill).
    A strided problem's 4D box lands in the stage's [BLOCK_M, BLOCK_K] buffer as the same
    bytes: the shared layout's swizzle depends on a row's place in the buffer (the box's rows
    flattened), not on the box's shape."""
    STAGES: gl.constexpr = a_bufs.type.shape[0] // SLICES
    SLICE_M: gl.constexpr = BLOCK_M // SLICES
    W_BYTES: gl.constexpr = w_desc.block_type.nbytes
    nbytes: gl.constexpr = SLICES * x_desc.block_type.nbytes + (0 if RESIDENT else W_BYTES)
    it = 0
    for tile in range(gl.program_id(0), num_m * num_n, gl.num_programs(0)):
        pid_m, pid_n = _tile_coords(tile, num_m, num_n, GROUP_M, RESIDENT)
        img, row, col = tile_origin(pid_m, PI, Q, BLOCK_M, BOX_Q)
        for step in range(steps):
            stage = it % STAGES
            mbarrier.wait(empty.index(stage), ((it // STAGES) & 1) ^ 1)  # the MMA warps are done with it
            bar = ready.index(stage)
            if RESIDENT:
                if it < steps:  # the program's first tile: weight chunk ``step``, held from now on
                    mbarrier.expect(held.index(step), W_BYTES)
                    tma.async_copy_global_to_shared(w_desc, [pid_n * BLOCK_N, step * BLOCK_K], held.index(step),
                                                    b_bufs.index(step))
                mbarrier.expect(bar, nbytes)
            else:
                mbarrier.expect(bar, nbytes)
                tma.async_copy_global_to_shared(w_desc, [pid_n * BLOCK_N, step * BLOCK_K], bar, b_bufs.index(stage))
            if BOX_Q == 0:
                for j in gl.static_range(SLICES):
                    tma.async_copy_global_to_shared(x_desc, [row + j * SLICE_M, step * BLOCK_K], bar,
                                                    a_bufs.index(stage * SLICES + j))
            else:
                box = a_bufs.index(stage)._reinterpret(x_desc.dtype, x_desc.block_type.shape, x_desc.layout)
                tma.async_copy_global_to_shared(x_desc, [img, row, col, step * BLOCK_K], bar, box)
            it += 1


@gluon.jit
def conv1x1_ws_kernel(
    x_desc,  # TensorDescriptor over x as (M, C), block (BLOCK_M // SLICES, BLOCK_K); or (BOX_Q > 0) over
             # the strided view as (NI, PI, Q, C), block (1, BLOCK_M // BOX_Q, BOX_Q, BLOCK_K)
    w_desc,  # TensorDescriptor over the weight as (K, C), block (BLOCK_N, BLOCK_K)
    out_desc,  # None, or (EPI_TMA) a TensorDescriptor over the output as (M, K), block (BLOCK_M // SLICES, EPI_N)
    out_ptr, bias_ptr, res_ptr,  # output [N, K, P, Q] (strides below), bias [K], residual
    M, K, C, P, Q, num_m, PI,  # M = N*P*Q; num_m M tiles (the host's count); PI: the box grid's rows (common.tile_origin)
    stride_on, stride_ok, stride_op, stride_oq,
    stride_rn, stride_rk, stride_rp, stride_rq,
    alpha, beta,
    ACTIVATION: gl.constexpr, HAS_BIAS: gl.constexpr, HAS_RESIDUAL: gl.constexpr,
    BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr, GROUP_M: gl.constexpr,
    BOX_Q: gl.constexpr,  # 0: stride 1, x a 2D matrix; else the box's columns
    STAGES: gl.constexpr, LOADER_REGS: gl.constexpr, MMA_K: gl.constexpr, NUM_WARPS: gl.constexpr,
    CONSUMERS: gl.constexpr, CONSUMER_REGS: gl.constexpr, INT64: gl.constexpr,
    EPI_TMA: gl.constexpr,  # the TMA-store epilogue (the launcher's choice: no residual, one MMA partition)
    SLICES: gl.constexpr,  # 1, or 3: MMA partitions sharing each tile's rows (BOX_Q = 0, CONSUMERS = 1)
    RESIDENT: gl.constexpr,  # 0, or cdiv(C, BLOCK_K): the weight chunks a program holds (its N slice; the
                             # grid a multiple of num_n)
):
    """A 1x1 unpadded convolution of any stride, warp-specialized as the kernel above, with
    both operands by bulk copy: a one-warp loader (TMA, zero fill for every tail: C need not
    be a multiple of BLOCK_K), the same MMA partitions and epilogue; with ``RESIDENT``, the
    program's weight slice held in shared memory and only A in the ring."""
    gl.static_assert(SLICES == 1 or SLICES == 3, "a tile's rows go to one MMA partition or three")
    dtype: gl.constexpr = w_desc.dtype
    SLICE_M: gl.constexpr = BLOCK_M // SLICES
    B_BUFS: gl.constexpr = RESIDENT if RESIDENT else STAGES
    a_layout: gl.constexpr = gl.NVMMASharedLayout.get_default_for([SLICE_M, BLOCK_K], dtype)
    a_bufs = gl.allocate_shared_memory(dtype, [STAGES * SLICES, SLICE_M, BLOCK_K], a_layout)
    b_bufs = gl.allocate_shared_memory(dtype, [B_BUFS, BLOCK_N, BLOCK_K], w_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    turn = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    held = _held_barriers(turn, RESIDENT)
    out_tma, epi = _epilogue_buffers(out_desc, w_desc, turn, EPI_TMA, SLICES)
    for i in gl.static_range(2):
        mbarrier.init(turn.index(i), count=1)
    for i in gl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)  # the loader's expect; the copies' bytes complete it
        mbarrier.init(empty.index(i), count=SLICES)  # every slice's MMA partition releases it
    for i in gl.static_range(RESIDENT):
        mbarrier.init(held.index(i), count=1)  # the loader's expect; the chunk's bytes complete it
    num_n = gl.cdiv(K, BLOCK_N)
    steps = gl.cdiv(C, BLOCK_K)
    if SLICES == 3:
        gl.warp_specialize([
            (_mma_partition, (a_bufs, b_bufs, ready, empty, turn, out_ptr, bias_ptr, res_ptr, out_tma, epi, M, K, P, Q, PI, num_m, steps,
                              stride_on, stride_ok, stride_op, stride_oq, K, 0, stride_rn, stride_rk, stride_rp,
                              stride_rq, alpha, beta, ACTIVATION, HAS_BIAS, HAS_RESIDUAL, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M,
                              MMA_K, NUM_WARPS, INT64, 0, 1, BOX_Q, EPI_TMA, 0, 3, False, held, RESIDENT, M, 0, 0)),
            (_tma_loader_partition, (x_desc, w_desc, a_bufs, b_bufs, ready, empty, num_m, num_n, steps, PI, Q,
                                     BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, BOX_Q, SLICES, held, RESIDENT)),
            (_mma_partition, (a_bufs, b_bufs, ready, empty, turn, out_ptr, bias_ptr, res_ptr, out_tma, epi, M, K, P, Q, PI, num_m, steps,
                              stride_on, stride_ok, stride_op, stride_oq, K, 0, stride_rn, stride_rk, stride_rp,
                              stride_rq, alpha, beta, ACTIVATION, HAS_BIAS, HAS_RESIDUAL, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M,
                              MMA_K, NUM_WARPS, INT64, 0, 1, BOX_Q, EPI_TMA, 1, 3, False, held, RESIDENT, M, 0, 0)),
            (_mma_partition, (a_bufs, b_bufs, ready, empty, turn, out_ptr, bias_ptr, res_ptr, out_tma, epi, M, K, P, Q, PI, num_m, steps,
                              stride_on, stride_ok, stride_op, stride_oq, K, 0, stride_rn, stride_rk, stride_rp,
                              stride_rq, alpha, beta, ACTIVATION, HAS_BIAS, HAS_RESIDUAL, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M,
                              MMA_K, NUM_WARPS, INT64, 0, 1, BOX_Q, EPI_TMA, 2, 3, False, held, RESIDENT, M, 0, 0)),
        ], [1, NUM_WARPS, NUM_WARPS], [LOADER_REGS, CONSUMER_REGS, CONSUMER_REGS])
    elif CONSUMERS == 1:
        gl.warp_specialize([
            (_mma_partition, (a_bufs, b_bufs, ready, empty, turn, out_ptr, bias_ptr, res_ptr, out_tma, epi, M, K, P, Q, PI, num_m, steps,
                              stride_on, stride_ok, stride_op, stride_oq, K, 0, stride_rn, stride_rk, stride_rp,
                              stride_rq, alpha, beta, ACTIVATION, HAS_BIAS, HAS_RESIDUAL, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M,
                              MMA_K, NUM_WARPS, INT64, 0, 1, BOX_Q, EPI_TMA, 0, 1, False, held, RESIDENT, M, 0, 0)),
            (_tma_loader_partition, (x_desc, w_desc, a_bufs, b_bufs, ready, empty, num_m, num_n, steps, PI, Q,
                                     BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, BOX_Q, SLICES, held, RESIDENT)),
        ], [1], [LOADER_REGS])
    else:
        gl.warp_specialize([
            (_mma_partition, (a_bufs, b_bufs, ready, empty, turn, out_ptr, bias_ptr, res_ptr, out_tma, epi, M, K, P, Q, PI, num_m, steps,
                              stride_on, stride_ok, stride_op, stride_oq, K, 0, stride_rn, stride_rk, stride_rp,
                              stride_rq, alpha, beta, ACTIVATION, HAS_BIAS, HAS_RESIDUAL, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M,
                              MMA_K, NUM_WARPS, INT64, 0, 2, BOX_Q, EPI_TMA, 0, 1, False, held, RESIDENT, M, 0, 0)),
            (_tma_loader_partition, (x_desc, w_desc, a_bufs, b_bufs, ready, empty, num_m, num_n, steps, PI, Q,
                                     BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, BOX_Q, SLICES, held, RESIDENT)),
            (_mma_partition, (a_bufs, b_bufs, ready, empty, turn, out_ptr, bias_ptr, res_ptr, out_tma, epi, M, K, P, Q, PI, num_m, steps,
                              stride_on, stride_ok, stride_op, stride_oq, K, 0, stride_rn, stride_rk, stride_rp,
                              stride_rq, alpha, beta, ACTIVATION, HAS_BIAS, HAS_RESIDUAL, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M,
                              MMA_K, NUM_WARPS, INT64, 1, 2, BOX_Q, EPI_TMA, 0, 1, False, held, RESIDENT, M, 0, 0)),
        ], [1, NUM_WARPS], [LOADER_REGS, CONSUMER_REGS])
