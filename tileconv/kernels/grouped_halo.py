"""Grouped convolution with thin groups on the tensor cores, each input pixel staged in shared
memory once a program and read there by every tap (Gluon).

ResNeXt's 3x3 convolutions have 4 to 32 channels a group. The implicit GEMM over merged groups
(``grouped_gemm``: a block-diagonal weight makes several thin groups one tensor-core tile)
gathers a fresh A tile from global memory for each of the R*S taps: nine times the input
through L2 for a 3x3 filter (Nsight Compute, session 22, on an H200: ResNeXt c128 hw56 at 50%
of L2's throughput and 11% of DRAM's, 54 us where the bytes alone need about 13).

Here a program owns ``BLOCK_M`` consecutive outputs of one image in the *padded frame*: the
input with its zero padding, FW = W + pad_left + pad_right pixels wide. Output (p, q) sits at
frame index m = p*FW + q, and at stride 1 its tap (r, s) reads frame index
m + r*dil_h*FW + s*dil_w: every tap's A tile is the same ``BLOCK_M`` frame rows shifted by a
constant. So the program copies frame rows [m0, m0 + BLOCK_M + halo) of one merged group's
``CM`` channels into shared memory once (16-byte cp.async copies, zero-filled in the padding:
no masks afterwards), and each tap's A operand is a view of that buffer starting at the tap's
row: ``index(offset)`` gives the row at any offset, reinterpreted as a [BLOCK_M, CM] matrix
(Triton 3.6's ``slice`` subviews must start at multiples of their length; an index may start
anywhere). The columns q >= Q of each frame row are outputs of no pixel: computed and never
stored ((S-1)*dil_w of every FW, 4% on a 56-wide output, 22% on a 7-wide one).

The taps are ``mma_v2`` products (m16n8k16, A from shared memory through ldmatrix, fp32
accumulators): ``PACK`` groups merged into CM = PACK*C/g input and KM = PACK*K/g output
channels, the weight block-diagonal per tap ((G/PACK, R, S, CM, KM) in memory, see
:func:`tileconv.kernels.weights.grouped_tap_weight`), its B operands loaded into registers once
a program where they fit (``WEIGHT_REGISTERS``: a 3x3 of 16x16 blocks is 36 registers a thread),
else read from shared memory every tap. The zeros cost tensor-core work, not bytes.

A program keeps one merged group and walks runs of frame rows (``persistent`` programs an SM in
the launcher), the next run's copies in flight while this one's taps run: one run a program left
each program waiting on its own copies (ResNeXt c128 hw56 on an H200, session 28: 60.7 us, four
walking programs an SM 44.4). What bounds it then is shared memory (Nsight Compute: 75% of the
L1/shared pipe; 32-byte rows give ``ldmatrix`` 2-way bank conflicts, 64-byte ones 4-way).

Non-finite inputs: a zero weight times an infinite input of a *neighbouring* group is NaN, which
the convolution does not have. A tile whose sum is not finite everywhere (rare: an input that
is infinite or NaN, or an overflow) is redone group by group from a second buffer holding only
that group's channels, keeping each output column from its own group's pass; finite tiles pay
one reduction over their accumulators.

    out[n, k, p, q] = sum_{r, s, c} x[n, g*C/g + c, p - pad_h + r*dil_h, q - pad_w + s*dil_w]
                      * w[k, c, r, s],   g = k // (K/g)

Stride 1, channels_last input and output, fp16 or bf16, CM a multiple of 16 and KM of 8
(powers of two). Gluon kernels compile only for a GPU: under Triton's interpreter this
algorithm is unsupported (the launcher's reason says so) and its tests run on the GPU; CI
compiles it for sm_90 (``benchmarks/sass.py``).
"""

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy, mma_v2

from .common import apply_activation


@gluon.jit
def _frame_taps(rows, base, w_taps, w_regs, acc, tap_step, DIL_W: gl.constexpr, R: gl.constexpr,
                S: gl.constexpr, BLOCK_M: gl.constexpr, CM: gl.constexpr, ADOT: gl.constexpr,
                BDOT: gl.constexpr, PLANE: gl.constexpr, WEIGHT_REGISTERS: gl.constexpr):
    """acc + the sum over the taps of (frame rows from the tap's offset) @ (the tap's weight):
    ``rows`` holds the staged frame from row ``base``, one row per frame index; tap (r, s) starts
    r*tap_step + s*DIL_W rows on. The weights from ``w_regs`` (a tuple of B operands) where
    WEIGHT_REGISTERS, else from shared memory (``w_taps``)."""
    for r in gl.static_range(R):
        for s in gl.static_range(S):
            a_view = rows.index(base + r * tap_step + s * DIL_W)._reinterpret(rows.dtype, [BLOCK_M, CM], PLANE)
            if WEIGHT_REGISTERS:
                acc = mma_v2(a_view.load(ADOT), w_regs[r * S + s], acc)
            else:
                acc = mma_v2(a_view.load(ADOT), w_taps.index(r * S + s).load(BDOT), acc)
    return acc


@gluon.jit
def _stage_rows(buffer, first_chunk, x_img, cx, m0, H, W, FW, pad_h, pad_w, stride_xh, stride_xw,
                CHUNKS: gl.constexpr, CHUNK: gl.constexpr, XL: gl.constexpr, COPY_VEC: gl.constexpr,
                INT64: gl.constexpr):
    """Start the copies of frame rows [m0, m0 + CHUNKS*CHUNK) of one image into ``buffer``'s
    chunks from ``first_chunk`` on ([.., CHUNK, CM]): 16-byte cp.async copies, zeros where the
    frame is padding."""
    for chunk in gl.static_range(CHUNKS):
        f = m0 + chunk * CHUNK + gl.arange(0, CHUNK, layout=gl.SliceLayout(1, XL))
        ih = f // FW - pad_h
        iw = f % FW - pad_w
        inside = (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
        if INT64:
            ih = ih.to(gl.int64)
        x_offs = gl.multiple_of(ih * stride_xh + iw * stride_xw, COPY_VEC)[:, None] + cx[None, :]
        async_copy.async_copy_global_to_shared(buffer.index(first_chunk + chunk), x_img + x_offs,
                                               mask=inside[:, None] & (cx >= 0)[None, :])
    async_copy.commit_group()


@gluon.jit
def conv2d_grouped_halo_kernel(
    x_ptr,  # input [N, C, H, W], channels_last (stride_xc == 1)
    w_ptr,  # weight (G/PACK, R, S, CM, KM), contiguous: block-diagonal per tap
    out_ptr,  # output [N, K, P, Q]
    bias_ptr,  # bias [K] (read only if HAS_BIAS)
    res_ptr,  # residual [N, K, P, Q] (read only if HAS_RESIDUAL)
    H, W, P, Q,
    GROUP_BLOCKS,  # merged groups: G / PACK
    FW,  # frame width: W + pad_left + pad_right = Q + (S-1)*dil_w
    ITEMS,  # (image, block of frame rows) pairs: N * cdiv(P * FW, BLOCK_M)
    pad_h, pad_w,
    stride_xn, stride_xh, stride_xw,
    stride_on, stride_ok, stride_op, stride_oq,
    stride_rn, stride_rk, stride_rp, stride_rq,
    alpha, beta,
    R: gl.constexpr, S: gl.constexpr,
    DIL_H: gl.constexpr, DIL_W: gl.constexpr,
    ACTIVATION: gl.constexpr, HAS_BIAS: gl.constexpr, HAS_RESIDUAL: gl.constexpr,
    SUB_C: gl.constexpr, SUB_K: gl.constexpr,  # channels of one group: C/g in, K/g out
    PACK: gl.constexpr,  # groups merged into one program's channels
    BLOCK_M: gl.constexpr,  # frame rows (outputs) an item
    ROWS: gl.constexpr,  # staged frame rows: CHUNK * chunks >= BLOCK_M + the taps' reach
    CHUNK: gl.constexpr,  # frame rows a copy batch (a power of two)
    COPY_VEC: gl.constexpr,  # channels in 16 bytes
    NUM_WARPS: gl.constexpr,
    WEIGHT_REGISTERS: gl.constexpr,  # the filter's B operands held in registers across items
    INT64: gl.constexpr,
):
    CM: gl.constexpr = PACK * SUB_C
    KM: gl.constexpr = PACK * SUB_K
    MMA: gl.constexpr = gl.NVMMADistributedLayout(version=[2, 0], warps_per_cta=[NUM_WARPS, 1],
                                                  instr_shape=[16, 8])
    ADOT: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=MMA, k_width=2)
    BDOT: gl.constexpr = gl.DotOperandLayout(operand_index=1, parent=MMA, k_width=2)
    # The copies: 16 bytes a thread, a warp's threads over a row's channels, then rows.
    TPW_C: gl.constexpr = CM // COPY_VEC
    XL: gl.constexpr = gl.BlockedLayout([1, COPY_VEC], [32 // TPW_C, TPW_C], [NUM_WARPS, 1], [1, 0])
    TPW_K: gl.constexpr = KM // 8  # KM <= 64: at most 8 threads along a row
    WL: gl.constexpr = gl.BlockedLayout([1, 8], [32 // TPW_K, TPW_K], [NUM_WARPS, 1], [1, 0])
    PLANE: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [1, 0])  # no swizzle: a view may start at any row
    ROW: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [0])
    CHUNKS: gl.constexpr = ROWS // CHUNK

    # A program keeps one merged group (its filter loaded once) and walks the items
    # (image, block of frame rows) pid // GROUP_BLOCKS, + programs / GROUP_BLOCKS, ...; the grid is
    # a multiple of GROUP_BLOCKS, and neighbouring programs read the same pixels' other channels.
    pid = gl.program_id(0)
    gm = pid % GROUP_BLOCKS
    step = gl.num_programs(0) // GROUP_BLOCKS
    first = pid // GROUP_BLOCKS
    blocks = gl.cdiv(P * FW, BLOCK_M)  # frame-row blocks an image

    # Two buffers of staged rows: the next item's copies fly while this one's taps run.
    halo = gl.allocate_shared_memory(x_ptr.dtype.element_ty, [2 * CHUNKS, CHUNK, CM], PLANE)
    frame = halo._reinterpret(x_ptr.dtype.element_ty, [2 * ROWS, CM], ROW)  # buffer b's row j: b*ROWS + j
    cx = gm * CM + gl.arange(0, CM, layout=gl.SliceLayout(0, XL))
    cx = gl.max_contiguous(gl.multiple_of(cx, COPY_VEC), COPY_VEC)
    if first < ITEMS:
        n0 = first // blocks
        if INT64:
            n0 = n0.to(gl.int64)
        _stage_rows(halo, 0, x_ptr + gl.multiple_of(n0 * stride_xn, COPY_VEC), cx,
                    (first % blocks) * BLOCK_M, H, W, FW, pad_h, pad_w, stride_xh, stride_xw,
                    CHUNKS, CHUNK, XL, COPY_VEC, INT64)

    # The filter, while the copies fly: R*S block-diagonal [CM, KM] matrices.
    w_taps = gl.allocate_shared_memory(w_ptr.dtype.element_ty, [R * S, CM, KM], PLANE)
    wc = gl.arange(0, CM, layout=gl.SliceLayout(1, WL))
    wk = gl.arange(0, KM, layout=gl.SliceLayout(0, WL))
    w_block = w_ptr + gm * (R * S * CM * KM)
    for t in gl.static_range(R * S):
        w_taps.index(t).store(gl.load(w_block + t * (CM * KM) + wc[:, None] * KM + wk[None, :]))
    w_regs = ()
    if WEIGHT_REGISTERS:
        gl.thread_barrier()  # the filter's stores are in
        for t in gl.static_range(R * S):
            w_regs = w_regs + (w_taps.index(t).load(BDOT),)
    k_out = gm * KM + gl.arange(0, KM, layout=gl.SliceLayout(0, MMA))  # this program's output channels
    if INT64:
        k_out = k_out.to(gl.int64)
    if HAS_BIAS:
        bias = gl.load(bias_ptr + k_out).to(gl.float32)
    if PACK > 1:
        alone = gl.allocate_shared_memory(x_ptr.dtype.element_ty, [CHUNKS, CHUNK, CM], PLANE)
    tap_step = DIL_H * FW

    i = 0
    for item in range(first, ITEMS, step):
        nxt = item + step
        if nxt < ITEMS:  # the next item's rows into the other buffer (its last reads ended at the barrier below)
            n1 = nxt // blocks
            if INT64:
                n1 = n1.to(gl.int64)
            _stage_rows(halo, ((i + 1) % 2) * CHUNKS,
                        x_ptr + gl.multiple_of(n1 * stride_xn, COPY_VEC), cx, (nxt % blocks) * BLOCK_M,
                        H, W, FW, pad_h, pad_w, stride_xh, stride_xw, CHUNKS, CHUNK, XL, COPY_VEC, INT64)
            async_copy.wait_group(1)
        else:
            async_copy.wait_group(0)
        gl.thread_barrier()  # every thread's copies (and the filter's stores) are in before any thread reads them

        acc = _frame_taps(frame, (i % 2) * ROWS, w_taps, w_regs, gl.zeros([BLOCK_M, KM], gl.float32, MMA),
                          tap_step, DIL_W, R, S, BLOCK_M, CM, ADOT, BDOT, PLANE, WEIGHT_REGISTERS)

        if PACK > 1:
            # A neighbouring group's infinite or NaN input meets this group's zero weights: redo the
            # item group by group from a copy holding that group's channels alone.
            # (A count of them: an integer reduction, as grouped_gemm's guard.)
            if gl.sum(gl.sum(gl.where(gl.abs(acc) < float("inf"), 0, 1), axis=1), axis=0) > 0:
                col_group = gl.arange(0, CM, layout=gl.SliceLayout(0, XL)) // SUB_C
                out_group = gl.arange(0, KM, layout=gl.SliceLayout(0, MMA)) // SUB_K
                redone = gl.zeros([BLOCK_M, KM], gl.float32, MMA)
                for g in gl.static_range(PACK):
                    for chunk in gl.static_range(CHUNKS):
                        v = halo.index((i % 2) * CHUNKS + chunk).load(XL)
                        alone.index(chunk).store(gl.where((col_group == g)[None, :], v, 0.0))
                    gl.thread_barrier()
                    part = _frame_taps(alone._reinterpret(x_ptr.dtype.element_ty, [ROWS, CM], ROW), 0, w_taps,
                                       w_regs, gl.zeros([BLOCK_M, KM], gl.float32, MMA), tap_step,
                                       DIL_W, R, S, BLOCK_M, CM, ADOT, BDOT, PLANE, WEIGHT_REGISTERS)
                    redone = gl.where((out_group == g)[None, :], part, redone)
                    gl.thread_barrier()  # this group's reads are done before the next one's stores
                acc = redone

        # The fused epilogue, in common.epilogue_at's order: + bias, + residual, activation.
        n = item // blocks
        f = (item % blocks) * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, MMA))
        p = f // FW
        q = f % FW
        if INT64:
            n = n.to(gl.int64)
            p = p.to(gl.int64)
        ok = ((p < P) & (q < Q))[:, None] & (k_out >= 0)[None, :]
        if HAS_BIAS:
            acc += bias[None, :]
        if HAS_RESIDUAL:
            res_offs = n * stride_rn + (p * stride_rp + q * stride_rq)[:, None] + (k_out * stride_rk)[None, :]
            acc += gl.load(res_ptr + res_offs, mask=ok, other=0.0).to(gl.float32)
        acc = apply_activation(acc, ACTIVATION, alpha, beta)
        out_offs = n * stride_on + (p * stride_op + q * stride_oq)[:, None] + (k_out * stride_ok)[None, :]
        gl.store(out_ptr + out_offs, acc.to(out_ptr.dtype.element_ty), mask=ok)
        gl.thread_barrier()  # this buffer's reads are done before the next item's copies refill it
        i += 1
