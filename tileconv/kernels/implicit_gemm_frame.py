"""Dense convolution on Hopper as an implicit GEMM whose A operand is read from staged input
frames by every filter tap (Gluon, warp-specialized).

The gathering implicit GEMMs (:mod:`.implicit_gemm_ws`) bring a fresh A tile into the SM for
each of the R*S taps: nine tiles through L2 for a 3x3 filter, where each SM takes operands in
at about 30 bytes a clock whatever the kernel (session 35, H200); ResNet-50's stride-1 3x3 rows
sit at a third of the GEMM ceiling there, cuDNN's with them.

Here a tile is ``TP`` whole output rows of one image in a frame ``FW`` pixels wide (FW the
output width plus the filter's reach, rounded up to a power of two; BLOCK_M = TP * FW). Output
(p0 + i, q) is the tile's row m = i*FW + q. At stride 1 its tap (r, s) reads input pixel
(p0 - pad_h + i + r*dil_h, q - pad_w + s*dil_w), which is row m + r*dil_h*FW + s*dil_w of the
*frame*: the input rows p0 - pad_h .. p0 - pad_h + TP + (R-1)*dil_h - 1, columns -pad_w ..
FW - pad_w - 1, copied by TMA as [1, rows, FW, BLOCK_K] boxes of the NHWC input (the zero fill
past the image is the padding). Each tap's A operand is then a [BLOCK_M, BLOCK_K] view of the
frame starting at that row: the wgmma reads it straight from shared memory. The tensor cores
take a 128-byte-swizzled operand's swizzle phase from its address, so a view may start at any
row (H200, session 45: ``benchmarks/probe_wgmma_rows.py``, every start row right, TMA-written
and thread-written frames). The frame's rows q >= Q of each output row are computed and never
stored (the TMA store clips them); rows past the frame's end, read only by those, are slack.

**Strides.** At stride (U, V) tap (r, s) of output (p, q) reads input row (p + d)*U + a and
column (q + e)*V + b (a, b the remainders of r*dil_h - pad_h and s*dil_w - pad_w by the stride,
d, e the quotients): pixel (p + d, q + e) of the input's *phase* (a, b), its rows a::U and
columns b::V. A stage holds a frame of each phase the taps read (four for a 3x3 filter at
stride 2), copied through a descriptor over that phase's strided view, and each tap's A
operand is again a shifted view of one of them. The launcher's :func:`.launch.frame_tiling`
plans it all (the phases' rows, columns, boxes and places in the stage, each tap's view row)
and hands the plan to the kernel as constexpr tuples; at stride 1 the one phase is the input.

Per channel block of BLOCK_K: the frames into the SM and R*S weight tiles, against R*S A tiles
and R*S weight tiles for the gathering kernels. Frames and weight tiles have rings of their own
(``FSTAGES``, ``BSTAGES``): a one-warp loader (bulk copies only) fills both, the MMA warps
wait for a frame stage, then for each tap's weight tile, keep one wgmma in flight and hand back
each stage once the wgmma after it has been waited for. The epilogue (bias, activation) runs in
the accumulator's layout and the tile leaves by TMA stores of a [1, TP, FW, 64] box of the NHWC
output. Channels_last fp16 or bf16, strides whose taps read at most four phases (up to 2), any
dilation and padding, C a multiple of BLOCK_K, K a multiple of 8, no residual.

**Groups** (``GROUPED``: grouped_frame, :func:`.launch.launch_grouped_frame`): N tile g is group g
(BLOCK_N = K/groups), its frames that group's C/groups channels (the copies' channel coordinate
offset by g * C/groups), the weight rows (K, R*S*C/groups) as for a dense problem. grouped_frame
merges thin groups into 128 bytes of channels with a block-diagonal weight (grouped_gemm_ws's
merge). Where a tile reduces over its merged group's channels in one block, that weight is
multiplied as its ``SUBS`` diagonal blocks of max(16, C/g) input channels (16: the narrowest
16-bit wgmma), one wgmma and one accumulator each, and the loader copies only those blocks
(:func:`.launch.frame_sub_blocks`, :func:`.weights.diagonal_blocks_weight`): ResNeXt's 4-channel
groups issue a quarter of the whole tile's tensor-core work. Where a block holds more than one
group (or the whole tile is multiplied), a tile whose sums are not all finite is recomputed group
by group on the CUDA cores before its epilogue (``SUB_C``, ``SUB_K``:
:func:`.implicit_gemm_ws.redo_pixels`): an infinity times a neighbour's zero weight is NaN.
"""

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)

from .common import apply_activation, load_bias, swizzle_tile
from .implicit_gemm_ws import _column_halves, any_nonfinite, redo_pixels


@gluon.constexpr_function
def _total(values):
    """The sum of a constexpr tuple (the phases' rows: a stage's bytes)."""
    return sum(values)


@gluon.jit
def _phase_boxes(x_desc, frames, first, bar, n, row, col, c0, ROWS: gl.constexpr, FW: gl.constexpr):
    """One phase frame's copies: ROWS phase rows from phase row ``row`` and column ``col`` of
    image ``n``'s phase, channels ``c0`` on, in boxes of the descriptor's rows, into the frame
    stage's rows from ``first``."""
    PIECE_ROWS: gl.constexpr = x_desc.block_type.shape[1]
    for j in gl.static_range(ROWS // PIECE_ROWS):
        box = frames.index(first + j * PIECE_ROWS * FW)._reinterpret(
            x_desc.dtype, x_desc.block_type.shape, x_desc.layout)
        tma.async_copy_global_to_shared(x_desc, [n, row + j * PIECE_ROWS, col, c0], bar, box)


@gluon.jit
def _tap_product(view, b, acc, SUBS: gl.constexpr, LAG: gl.constexpr):
    """One tap's products added to ``acc`` (asynchronous wgmma; the taps LAG and more before it waited for):
    A the frame ``view`` [BLOCK_M, BLOCK_K], B the weight tile ``b`` [BLOCK_N, BLOCK_K]. With
    ``SUBS`` > 1 (merged groups) ``acc`` is a tuple of SUBS [BLOCK_M, BLOCK_N / SUBS] sums, ``b``
    the block-diagonal weight's SUBS diagonal blocks side by side down its rows ([BLOCK_N, KS]:
    :func:`.weights.diagonal_blocks_weight`), and block j multiplies channels j*KS .. of the view:
    SUBS-fold less tensor-core work and weight bytes, the same shared-memory reads of A."""
    if SUBS == 1:
        acc = warpgroup_mma(view, b.permute((1, 0)), acc, is_async=True)
        return warpgroup_mma_wait(num_outstanding=LAG, deps=(acc,))
    else:
        KS: gl.constexpr = b.type.shape[1]
        NS: gl.constexpr = b.type.shape[0] // SUBS
        for j in gl.static_range(SUBS):
            block = b.slice(j * NS, NS, dim=0)
            product = warpgroup_mma(view.slice(j * KS, KS, dim=1), block.permute((1, 0)), acc[j], is_async=True)
            acc = acc[:j] + (product,) + acc[j + 1:]
        return warpgroup_mma_wait(num_outstanding=LAG * SUBS, deps=acc)


@gluon.jit
def _beside(left, right):
    """[rows, 2 * columns] from two [rows, columns] tiles (the inverse of ``_column_halves``)."""
    ROWS: gl.constexpr = left.shape[0]
    COLS: gl.constexpr = left.shape[1]
    return gl.reshape(gl.permute(gl.join(left, right), (0, 2, 1)), [ROWS, 2 * COLS])


@gluon.jit
def _column_blocks(x, PARTS: gl.constexpr, layout: gl.constexpr):
    """``x``'s PARTS (2 or 4) column blocks, left to right, each in ``layout``."""
    gl.static_assert(PARTS == 2 or PARTS == 4, "two or four column blocks")
    left, right = _column_halves(x)
    if PARTS == 2:
        return (gl.convert_layout(left, layout), gl.convert_layout(right, layout))
    else:
        a, b = _column_halves(left)
        c, d = _column_halves(right)
        return (gl.convert_layout(a, layout), gl.convert_layout(b, layout),
                gl.convert_layout(c, layout), gl.convert_layout(d, layout))


@gluon.jit
def _columns_joined(parts, layout: gl.constexpr):
    """The tile whose column blocks are ``parts`` (2 or 4, left to right), in ``layout``."""
    gl.static_assert(len(parts) == 2 or len(parts) == 4, "two or four column blocks")
    if len(parts) == 2:
        return gl.convert_layout(_beside(parts[0], parts[1]), layout)
    else:
        return gl.convert_layout(_beside(_beside(parts[0], parts[1]), _beside(parts[2], parts[3])), layout)


@gluon.jit
def _frame_loader(
    x_desc0, x_desc1, x_desc2, x_desc3, w_desc, frames, b_bufs, f_ready, f_empty, b_ready, b_empty,
    num_m, num_n, tiles_p, C,
    TP: gl.constexpr, FW: gl.constexpr, FROWS: gl.constexpr,
    PHASE_ROW: gl.constexpr, PHASE_COL: gl.constexpr, PHASE_ROWS: gl.constexpr, PHASE_BASE: gl.constexpr,
    TAPS: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr, GROUP_M: gl.constexpr,
    GROUPED: gl.constexpr,
):
    """For every tile and channel block of this program: the frame of each stride phase (boxes
    of a power of two phase rows) into the next frame stage, then the R*S taps' weight tiles
    into the weight ring. ``GROUPED``: N tile g is group g, its frames group g's C channels."""
    FSTAGES: gl.constexpr = f_ready.type.shape[0]
    BSTAGES: gl.constexpr = b_ready.type.shape[0]
    PHASES: gl.constexpr = len(PHASE_ROW)
    f_bytes: gl.constexpr = _total(PHASE_ROWS) * FW * BLOCK_K * x_desc0.dtype.primitive_bitwidth // 8
    WK: gl.constexpr = w_desc.block_type.shape[1]  # a weight tile's columns: BLOCK_K, or one diagonal block's
    fit = 0
    bit = 0
    for tile in range(gl.program_id(0), num_m * num_n, gl.num_programs(0)):
        pid_m, pid_n = swizzle_tile(tile, num_m, num_n, GROUP_M)
        n = pid_m // tiles_p
        p0 = (pid_m % tiles_p) * TP
        group_c = pid_n * C if GROUPED else 0  # the tile's first input channel
        for c0 in range(0, C, BLOCK_K):
            fs = fit % FSTAGES
            mbarrier.wait(f_empty.index(fs), ((fit // FSTAGES) & 1) ^ 1)
            bar = f_ready.index(fs)
            mbarrier.expect(bar, f_bytes)
            for k in gl.static_range(PHASES):  # (k is a compile-time index: one branch compiled a phase)
                first = fs * FROWS + PHASE_BASE[k]
                if k == 0:
                    _phase_boxes(x_desc0, frames, first, bar, n, p0 + PHASE_ROW[k], PHASE_COL[k], group_c + c0,
                                 gl.constexpr(PHASE_ROWS[k]), FW)
                elif k == 1:
                    _phase_boxes(x_desc1, frames, first, bar, n, p0 + PHASE_ROW[k], PHASE_COL[k], group_c + c0,
                                 gl.constexpr(PHASE_ROWS[k]), FW)
                elif k == 2:
                    _phase_boxes(x_desc2, frames, first, bar, n, p0 + PHASE_ROW[k], PHASE_COL[k], group_c + c0,
                                 gl.constexpr(PHASE_ROWS[k]), FW)
                else:
                    _phase_boxes(x_desc3, frames, first, bar, n, p0 + PHASE_ROW[k], PHASE_COL[k], group_c + c0,
                                 gl.constexpr(PHASE_ROWS[k]), FW)
            fit += 1
            for t in gl.static_range(TAPS):
                bs = bit % BSTAGES
                mbarrier.wait(b_empty.index(bs), ((bit // BSTAGES) & 1) ^ 1)
                bbar = b_ready.index(bs)
                mbarrier.expect(bbar, w_desc.block_type.nbytes)
                tma.async_copy_global_to_shared(w_desc, [pid_n * BLOCK_N, t * C + c0 if WK == BLOCK_K else t * WK],
                                                bbar, b_bufs.index(bs))
                bit += 1


@gluon.jit
def _frame_mma(
    frames, b_bufs, f_ready, f_empty, b_ready, b_empty, out_desc, epi, bias_ptr,
    num_m, num_n, tiles_p, C, K, alpha, beta,
    ACTIVATION: gl.constexpr, HAS_BIAS: gl.constexpr,
    TP: gl.constexpr, FW: gl.constexpr, FROWS: gl.constexpr, TAP_ROWS: gl.constexpr,
    BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr, GROUP_M: gl.constexpr,
    NUM_WARPS: gl.constexpr,
    redo, P, Q, SUB_C: gl.constexpr, SUB_K: gl.constexpr,  # merged groups (SUB_K > 0): the non-finite redo
    SUBS: gl.constexpr,  # wgmmas a tap: the block-diagonal tile's diagonal blocks (1: the whole tile)
    SUB_LAG: gl.constexpr,  # taps in flight where SUBS > 1
):
    """Each tile: for each channel block, its frames and the R*S tap products (wgmma, A a view of
    the stage from the tap's row ``TAP_ROWS[t]``; one tap in flight, or ``SUB_LAG`` of the short
    diagonal-block wgmmas, :func:`_tap_product`), then the epilogue and the TMA stores. With
    merged groups (``SUB_K`` > 0) whose zeros enter the products (``REDO``) a tile with a sum that
    is not finite is first recomputed group by group (:func:`.implicit_gemm_ws.redo_pixels`): an
    infinite or NaN input times the block-diagonal weight's zeros would put NaN in the merged
    neighbours' columns."""
    FSTAGES: gl.constexpr = f_ready.type.shape[0]
    BSTAGES: gl.constexpr = b_ready.type.shape[0]
    EPI_N: gl.constexpr = epi.type.shape[2]
    CHUNKS: gl.constexpr = BLOCK_N // EPI_N
    gl.static_assert(CHUNKS == 1 or CHUNKS == 2, "a tile is stored in one or two 64-column chunks")
    dtype: gl.constexpr = frames.dtype
    a_layout: gl.constexpr = frames.type.layout
    mma_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[NUM_WARPS, 1],
                                                        instr_shape=[16, BLOCK_N, 16])
    sub_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[NUM_WARPS, 1],
                                                        instr_shape=[16, BLOCK_N // SUBS, 16])
    # The merged groups' zeros enter the products (and with them an infinity's NaN) only where a
    # sub-block holds more than one group.
    REDO: gl.constexpr = SUB_K > 0 and BLOCK_K // SUBS > SUB_C
    # Taps in flight: a diagonal block's wgmma is short (64x16x16 for ResNeXt's thin groups), so
    # SUB_LAG taps' are kept going where a tap has SUBS > 1 of them (and the filter more taps).
    LAG: gl.constexpr = SUB_LAG if SUBS > 1 and len(TAP_ROWS) >= SUB_LAG else 1
    fit = 0
    bit = 0
    stored = 0  # chunks stored so far: the two epilogue buffers alternate over them
    for tile in range(gl.program_id(0), num_m * num_n, gl.num_programs(0)):
        pid_m, pid_n = swizzle_tile(tile, num_m, num_n, GROUP_M)
        n = pid_m // tiles_p
        p0 = (pid_m % tiles_p) * TP
        # The bias read before the tile's reduction, its latency behind the wgmmas' (read in the
        # epilogue, each tile waited for it after its last wgmma: bias + ReLU over plain, H200,
        # session 57: grouped_frame c256 hw56/2 1.058x -> 1.009x, ResNet-50 c256 hw28 3x3/2 1.053x
        # -> 1.024x), and the sums started from it, so that no add is left between the last wgmma
        # and the stores (added there, its BLOCK_M * BLOCK_N / threads FADDs were the rest of
        # grouped_frame c128 hw56/1's 1.033x). The redo recomputes the sums without it and adds it.
        offs_b = pid_n * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, mma_layout))
        bias = load_bias(bias_ptr, offs_b, offs_b < K, HAS_BIAS)
        acc = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, layout=mma_layout)
        if HAS_BIAS:
            acc += bias
        if SUBS > 1:
            acc = _column_blocks(acc, SUBS, sub_layout)
        for kb in range(C // BLOCK_K):
            fs = fit % FSTAGES
            mbarrier.wait(f_ready.index(fs), (fit // FSTAGES) & 1)
            for t in gl.static_range(len(TAP_ROWS)):
                bs = bit % BSTAGES
                mbarrier.wait(b_ready.index(bs), (bit // BSTAGES) & 1)
                view = frames.index(fs * FROWS + TAP_ROWS[t])._reinterpret(dtype, [BLOCK_M, BLOCK_K], a_layout)
                acc = _tap_product(view, b_bufs.index(bs), acc, SUBS, LAG)
                # The tap LAG before this one has finished: its weight stage is free, and its
                # frame too where it was the frame's last tap (this is one of a frame's first LAG).
                if t < LAG:
                    mbarrier.arrive(b_empty.index((bit + BSTAGES - LAG) % BSTAGES), pred=kb > 0)
                    if t == LAG - 1:
                        mbarrier.arrive(f_empty.index((fit + FSTAGES - 1) % FSTAGES), pred=kb > 0)
                else:
                    mbarrier.arrive(b_empty.index((bit + BSTAGES - LAG) % BSTAGES))
                bit += 1
            fit += 1
        if SUBS == 1:
            acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))
        else:
            acc = _columns_joined(warpgroup_mma_wait(num_outstanding=0, deps=acc), mma_layout)
        for i in gl.static_range(LAG):
            mbarrier.arrive(b_empty.index((bit + BSTAGES - 1 - i) % BSTAGES))
        mbarrier.arrive(f_empty.index((fit + FSTAGES - 1) % FSTAGES))
        if REDO:
            if any_nonfinite(acc):
                # Row m = i*FW + q of the tile is output (p0 + i, q) of image n (q >= Q: none).
                rows = gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, mma_layout)).to(gl.int64)
                p = p0 + rows // FW
                q = rows % FW
                acc = redo_pixels(redo, pid_n, n.to(gl.int64), p * redo[5] - redo[7], q * redo[6] - redo[8],
                                  (p < P) & (q < Q), mma_layout, BLOCK_M, BLOCK_N, SUB_C, SUB_K)
                if HAS_BIAS:
                    acc += bias

        # ReLU as the NaN-propagating max, which ptxas folds into the conversion below (F2FP.RELU)
        # where the select took two instructions an element on the tile's critical path (session
        # 57, after the bias read ahead: grouped_frame c128 hw56/1 1.070x -> 1.033x of plain,
        # ResNet-50 c64 hw56 3x3 1.087x -> 1.024x).
        acc = apply_activation(acc, ACTIVATION, alpha, beta, FOLD_RELU=True)
        out = acc.to(out_desc.dtype)
        if CHUNKS == 1:
            chunks = (out,)
        else:
            chunks = _column_halves(out)
        for j in gl.static_range(CHUNKS):
            tma.store_wait(1)  # this buffer's copy before last has read it
            buf = epi.index(stored % 2)
            buf.store(chunks[j])
            fence_async_shared()
            box = buf._reinterpret(out_desc.dtype, out_desc.block_type.shape, out_desc.layout)
            tma.async_copy_shared_to_global(out_desc, [n, p0, 0, pid_n * BLOCK_N + j * EPI_N], box)
            stored += 1
    tma.store_wait(0)


@gluon.jit
def conv2d_frame_kernel(
    x_desc0, x_desc1, x_desc2, x_desc3,  # the stride phases of the NHWC input (N, H, W, C) (rows a::U,
                                         # columns b::V), block (1, box rows, FW, BLOCK_K); stand-ins past the phases
    w_desc,  # the weight as (K, R*S*C) ((r, s, c) order), block (BLOCK_N, BLOCK_K)
    out_desc,  # the NHWC output (N, P, Q, K), block (1, TP, FW, EPI_N)
    bias_ptr,  # bias [K] (read only if HAS_BIAS)
    num_m, num_n, tiles_p,  # M tiles (N * tiles_p), N tiles, tiles down an image's output rows
    C, K, alpha, beta,  # C: the channels a tile reduces over (GROUPED: a group's)
    x_ptr, w_ptr,  # (SUB_K > 0: the redo's operands) the NHWC input and the (K, R*S*C) weight matrix w_desc reads
    H, W, P, Q, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, R, S, stride_xn, stride_xh, stride_xw,
    ACTIVATION: gl.constexpr, HAS_BIAS: gl.constexpr,
    TP: gl.constexpr, FW: gl.constexpr,  # output rows a tile, frame width (BLOCK_M = TP * FW)
    FROWS: gl.constexpr,  # a frame stage's rows: the phases' rows times FW, plus slack for the last taps' views
    PHASE_ROW: gl.constexpr, PHASE_COL: gl.constexpr,  # each phase frame's first phase row (past the tile's
                                                       # first output row) and column (negative: padding)
    PHASE_ROWS: gl.constexpr, PHASE_BASE: gl.constexpr,  # its phase rows, its first row in a stage
    TAP_ROWS: gl.constexpr,  # each tap's A view: its first row in a stage ((r, s) order)
    SWIZZLE: gl.constexpr,  # the operands' shared-memory swizzle (bytes): BLOCK_K's row
    BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr, GROUP_M: gl.constexpr,
    FSTAGES: gl.constexpr, BSTAGES: gl.constexpr, NUM_WARPS: gl.constexpr, LOADER_REGS: gl.constexpr,
    GROUPED: gl.constexpr,  # groups > 1: N tile g is group g (BLOCK_N = K/groups), its frames group g's C channels
    SUB_C: gl.constexpr, SUB_K: gl.constexpr,  # 0, or the channels of the groups merged into each group
    SUBS: gl.constexpr,  # wgmmas a tap (merged groups, :func:`.launch.frame_sub_blocks`; 1: one over the whole tile)
    SUB_LAG: gl.constexpr,  # taps whose wgmmas are in flight where SUBS > 1
):
    dtype: gl.constexpr = w_desc.dtype
    a_layout: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=SWIZZLE, element_bitwidth=dtype.primitive_bitwidth,
                                                  rank=2)
    frames = gl.allocate_shared_memory(dtype, [FSTAGES * FROWS, 1, BLOCK_K], a_layout)
    b_bufs = gl.allocate_shared_memory(dtype, [BSTAGES, BLOCK_N, w_desc.block_type.shape[1]], w_desc.layout)
    EPI_N: gl.constexpr = out_desc.block_type.shape[3]
    epi_layout: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=EPI_N * dtype.primitive_bitwidth // 8,
                                                    element_bitwidth=dtype.primitive_bitwidth, rank=2)
    epi = gl.allocate_shared_memory(dtype, [2, BLOCK_M, EPI_N], epi_layout)
    f_ready = gl.allocate_shared_memory(gl.int64, [FSTAGES, 1], mbarrier.MBarrierLayout())
    f_empty = gl.allocate_shared_memory(gl.int64, [FSTAGES, 1], mbarrier.MBarrierLayout())
    b_ready = gl.allocate_shared_memory(gl.int64, [BSTAGES, 1], mbarrier.MBarrierLayout())
    b_empty = gl.allocate_shared_memory(gl.int64, [BSTAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(FSTAGES):
        mbarrier.init(f_ready.index(i), count=1)
        mbarrier.init(f_empty.index(i), count=1)
    for i in gl.static_range(BSTAGES):
        mbarrier.init(b_ready.index(i), count=1)
        mbarrier.init(b_empty.index(i), count=1)
    redo = (x_ptr, w_ptr, H, W, C, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, R, S, stride_xn, stride_xh,
            stride_xw)
    gl.warp_specialize([
        (_frame_mma, (frames, b_bufs, f_ready, f_empty, b_ready, b_empty, out_desc, epi, bias_ptr,
                      num_m, num_n, tiles_p, C, K, alpha, beta, ACTIVATION, HAS_BIAS,
                      TP, FW, FROWS, TAP_ROWS, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, NUM_WARPS,
                      redo, P, Q, SUB_C, SUB_K, SUBS, SUB_LAG)),
        (_frame_loader, (x_desc0, x_desc1, x_desc2, x_desc3, w_desc, frames, b_bufs, f_ready, f_empty, b_ready,
                         b_empty, num_m, num_n, tiles_p, C, TP, FW, FROWS, PHASE_ROW, PHASE_COL,
                         PHASE_ROWS, PHASE_BASE, len(TAP_ROWS), BLOCK_N, BLOCK_K, GROUP_M, GROUPED)),
    ], [1], [LOADER_REGS])
