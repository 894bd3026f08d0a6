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

**Strides.** At stride (U, V) the padded frame splits into U*V *phase frames*: phase (a, b)
holds the frame pixels (i*U + a, j*V + b), FWP = Q + ((S-1)*dil_w) // V columns wide. Output
(p, q) sits at m = p*FWP + q of every phase, and its tap (r, s) reads phase
((r*dil_h) % U, (s*dil_w) % V) at m + ((r*dil_h) // U)*FWP + (s*dil_w) // V: again a shifted
view, of one of the phases the program stages side by side (``PR`` rows each). A stride-2 3x3
stages four phases, about 4.5 input rows an output where stride 1 stages two.

**The staged frame's layout** (:func:`frame_layout`). *Planar*: channels in planes of eight,
each frame row 16 bytes a plane, so the eight rows of an ldmatrix matrix are 128 contiguous
bytes from any starting row: no bank conflicts (rows of 32 bytes put rows four apart on the
same banks: 2-way conflicts, half of session 29's shared-load wavefronts by Nsight Compute).
The planes' offset is one bit of a linear layout, so each plane takes a power of two of rows
(both buffers'); *packed* (a row's channels together) where that padding would cost a program
an SM (the launcher's choice: :func:`tileconv.kernels.launch.grouped_halo_tiling`). Measured
(session 29, H200): planar 1.03x-1.06x on the stride-1 ResNeXt rows; packed kept on the stride-2
ones (planar's 70 KB against 45 ran three programs an SM for four: 0.79x-0.84x).

The taps are ``mma_v2`` products (m16n8k16, A from shared memory through ldmatrix, fp32
accumulators): ``PACK`` groups merged into CM = PACK*C/g input and KM = PACK*K/g output
channels, the weight block-diagonal per tap ((G/PACK, R, S, CM, KM) in memory, see
:func:`tileconv.kernels.weights.grouped_tap_weight`), its B operands loaded into registers once
a program where they fit (``WEIGHT_REGISTERS``: a 3x3 of 16x16 blocks is 36 registers a thread),
else read from shared memory every tap. The zeros cost tensor-core work, not bytes.

A program keeps one merged group and walks runs of frame rows (``persistent`` programs an SM in
the launcher), the next run's copies in flight while this one's taps run: one run a program left
each program waiting on its own copies (ResNeXt c128 hw56 on an H200, session 28: 60.7 us, four
walking programs an SM 44.4). What bounds it then (Nsight Compute, session 29) is latency: 12 to
16 warps an SM, one eligible warp in 0.65 on average, a third of the stalls on shared memory
(short scoreboard), the L1/shared pipe 59%-70% busy, L2 at 42%-47%, DRAM at 12%-21%. Neither the
instruction count nor the copies are it (session 43, H200): the frame width made a compile-time
constant (a third fewer instructions an item) gained 2%-11% by row, and staging whole output rows
by the copy engine (one TMA box a plane, commit 4e325d4, reverted) ran no faster than cp.async.

Non-finite inputs: a zero weight times an infinite input of a *neighbouring* group is NaN, which
the convolution does not have. A tile whose sum is not finite everywhere (rare: an input that
is infinite or NaN, or an overflow) is redone group by group from a copy holding only that
group's channels, made in the other buffer (the next run's rows, in flight there, are copied
again afterwards), keeping each output column from its own group's pass; finite tiles pay one
reduction over their accumulators.

    out[n, k, p, q] = sum_{r, s, c} x[n, g*C/g + c, p - pad_h + r*dil_h, q - pad_w + s*dil_w]
                      * w[k, c, r, s],   g = k // (K/g)

Any stride (the staged phases bound it through shared memory), channels_last input and
output, fp16 or bf16, CM a multiple of 16 and KM of 8 (powers of two). Gluon kernels compile
only for a GPU: under Triton's interpreter this algorithm is unsupported (the launcher's
reason says so) and its tests run on the GPU; CI compiles it for sm_90 (``benchmarks/sass.py``).
"""

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy, mma_v2

from .common import apply_activation


@gluon.constexpr_function
def frame_layout(rows, channels, plane_rows):
    """The shared layout of a [rows, channels] view of the staged frame.

    ``plane_rows`` > 0 (planar): channels in planes of eight (16 bytes of a 16-bit type), plane
    h holding channels 8h..8h+7 of every frame row at a 16-byte pitch from row h*plane_rows on
    (a power of two at least both buffers' rows). Eight consecutive rows of one plane are 128
    contiguous bytes, so ldmatrix reads them without bank conflicts from whatever row a tap's
    view starts at. ``plane_rows`` = 0 (packed): a frame row's channels together, rows of 32 or
    64 bytes, where rows four or two apart share banks (ldmatrix's 2- or 4-way conflicts) but
    the frame takes no power-of-two padding."""
    rows, channels, plane_rows = int(rows), int(channels), int(plane_rows)
    if plane_rows == 0:
        bases = [[0, 1 << b] for b in range(channels.bit_length() - 1)]
        return gl.SharedLinearLayout(bases + [[1 << b, 0] for b in range(rows.bit_length() - 1)])
    bases = [[0, 1], [0, 2], [0, 4]] + [[1 << b, 0] for b in range(rows.bit_length() - 1)]
    bases += [[0, 0]] * (plane_rows.bit_length() - rows.bit_length())  # the rows past the view
    bases += [[0, 8 << b] for b in range((channels // 8).bit_length() - 1)]
    return gl.SharedLinearLayout(bases)


@gluon.constexpr_function
def filter_layout(km):
    """The shared layout of one tap's [CM, KM] weight block (16-bit, output channels contiguous),
    XOR-swizzled by 16-byte chunks so that ldmatrix's eight rows of a B matrix (eight input
    channels of one 16-byte column) fall on eight different bank groups: unswizzled, rows of
    KM = 32 (64 bytes) put rows two apart on the same banks (4-way conflicts), KM = 16 2-way.
    Rows of ``per_phase`` share a phase (as many rows as fill 128 bytes), ``max_phase`` the
    16-byte chunks a row holds (at most eight)."""
    km = int(km)
    return gl.SwizzledSharedLayout(8, max(1, 64 // km), max(1, min(8, km // 8)), [1, 0])


@gluon.constexpr_function
def frame_shape(rows, channels, plane_rows):
    """The staged frame's allocation, [frame rows, channels a row]: both buffers' ``rows`` of
    ``channels``, or (``plane_rows`` > 0) the planes' rows of eight channels (see frame_layout)."""
    rows, channels, plane_rows = int(rows), int(channels), int(plane_rows)
    return [plane_rows * (channels // 8), 8] if plane_rows else [2 * rows, channels]


@gluon.jit
def _frame_taps(rows, base, w_taps, w_regs, acc, FWP, PR: gl.constexpr, U: gl.constexpr, V: gl.constexpr,
                DIL_H: gl.constexpr, DIL_W: gl.constexpr, R: gl.constexpr, S: gl.constexpr,
                BLOCK_M: gl.constexpr, CM: gl.constexpr, ADOT: gl.constexpr, BDOT: gl.constexpr,
                PLANE: gl.constexpr, WEIGHT_REGISTERS: gl.constexpr):
    """acc + the sum over the taps of (frame rows from the tap's offset) @ (the tap's weight):
    ``rows`` holds the staged phase frames from row ``base`` (``PR`` rows each, phase (a, b) the
    (a*V + b)-th), one row per frame index; tap (r, s) reads phase ((r*DIL_H) % U, (s*DIL_W) % V)
    from ((r*DIL_H) // U)*FWP + (s*DIL_W) // V rows on. The weights from ``w_regs`` (a tuple of B
    operands) where WEIGHT_REGISTERS, else from shared memory (``w_taps``)."""
    for r in gl.static_range(R):
        for s in gl.static_range(S):
            start = (((r * DIL_H) % U) * V + (s * DIL_W) % V) * PR + (s * DIL_W) // V
            a_view = rows.index(base + start + ((r * DIL_H) // U) * FWP)._reinterpret(rows.dtype, [BLOCK_M, CM], PLANE)
            if WEIGHT_REGISTERS:
                acc = mma_v2(a_view.load(ADOT), w_regs[r * S + s], acc)
            else:
                acc = mma_v2(a_view.load(ADOT), w_taps.index(r * S + s).load(BDOT), acc)
    return acc


@gluon.jit
def _stage_item(frame, base, x_ptr, n, block, cx, H, W, FWP, pad_h, pad_w, stride_xn, stride_xh, stride_xw,
                BLOCK_M: gl.constexpr, PR: gl.constexpr, U: gl.constexpr, V: gl.constexpr, CHUNKS: gl.constexpr,
                CHUNK: gl.constexpr, XL: gl.constexpr, CHUNK_PLANE: gl.constexpr, COPY_VEC: gl.constexpr,
                INT64: gl.constexpr):
    """Start the copies of an item (image ``n``, phase-frame rows from
    m0 = ``block`` * BLOCK_M): rows [m0, m0 + PR) of each of the U*V phase frames into
    ``frame``'s rows from ``base`` on (phase (a, b)'s from base + (a*V + b)*PR on), by 16-byte
    cp.async copies, zeros where the frame is padding. Phase frame (a, b)'s row i, column j is
    padded-frame pixel (i*U + a, j*V + b)."""
    if INT64:
        n = n.to(gl.int64)
    x_img = x_ptr + gl.multiple_of(n * stride_xn, COPY_VEC)
    m0 = block * BLOCK_M
    for chunk in gl.static_range(CHUNKS):
        v = chunk * CHUNK + gl.arange(0, CHUNK, layout=gl.SliceLayout(1, XL))
        phase = v // PR
        f = m0 + v - phase * PR
        ih = (f // FWP) * U + phase // V - pad_h
        iw = (f % FWP) * V + phase % V - pad_w
        inside = (phase < U * V) & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
        if INT64:
            ih = ih.to(gl.int64)
        x_offs = gl.multiple_of(ih * stride_xh + iw * stride_xw, COPY_VEC)[:, None] + cx[None, :]
        dest = frame.index(base + chunk * CHUNK)._reinterpret(frame.dtype, [CHUNK, cx.shape[0]], CHUNK_PLANE)
        async_copy.async_copy_global_to_shared(dest, x_img + x_offs, mask=inside[:, None] & (cx >= 0)[None, :])
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
    ITEMS,  # (image, block of phase-frame rows) pairs: N * cdiv(P * FWP, BLOCK_M)
    pad_h, pad_w,
    stride_xn, stride_xh, stride_xw,
    stride_on, stride_ok, stride_op, stride_oq,
    stride_rn, stride_rk, stride_rp, stride_rq,
    alpha, beta,
    R: gl.constexpr, S: gl.constexpr,
    U: gl.constexpr, V: gl.constexpr,  # stride
    FWP: gl.constexpr,  # phase-frame width: Q + ((S-1)*dil_w) // V (a constant: the frame index's divisions by it
    # become multiplications)
    DIL_H: gl.constexpr, DIL_W: gl.constexpr,
    ACTIVATION: gl.constexpr, HAS_BIAS: gl.constexpr, HAS_RESIDUAL: gl.constexpr,
    SUB_C: gl.constexpr, SUB_K: gl.constexpr,  # channels of one group: C/g in, K/g out
    PACK: gl.constexpr,  # groups merged into one program's channels
    BLOCK_M: gl.constexpr,  # frame rows (outputs) an item
    PR: gl.constexpr,  # rows staged of each phase frame: BLOCK_M + the taps' reach in it
    ROWS: gl.constexpr,  # staged rows a buffer: CHUNK * chunks >= U*V*PR
    PLANE_ROWS: gl.constexpr,  # planar frame: rows an 8-channel plane (a power of two >= 2 * ROWS); 0: packed
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
    # The staged frame, planar (PLANE_ROWS > 0) or packed (see frame_layout); a view of any
    # shape from any frame row by index(row)._reinterpret.
    PLANE: gl.constexpr = frame_layout(BLOCK_M, CM, PLANE_ROWS)
    CHUNK_PLANE: gl.constexpr = frame_layout(CHUNK, CM, PLANE_ROWS)
    ROW: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [0])
    FILTER: gl.constexpr = filter_layout(KM)
    CHUNKS: gl.constexpr = ROWS // CHUNK

    # A program keeps one merged group (its filter loaded once) and walks the items
    # (image, block of frame rows) pid // GROUP_BLOCKS, + programs / GROUP_BLOCKS, ...; the grid is
    # a multiple of GROUP_BLOCKS, and neighbouring programs read the same pixels' other channels.
    pid = gl.program_id(0)
    gm = pid % GROUP_BLOCKS
    step = gl.num_programs(0) // GROUP_BLOCKS
    first = pid // GROUP_BLOCKS
    blocks = gl.cdiv(P * FWP, BLOCK_M)  # frame-row blocks an image
    # Item = n * blocks + block; the walk steps (n, block) by (step // blocks, step % blocks) with a
    # carry, so that the loop divides by no runtime value (a division is ~35 instructions).
    n_step = step // blocks
    block_step = step % blocks
    n_item = first // blocks
    block_item = first % blocks

    # Two buffers of staged rows: the next item's copies fly while this one's taps run.
    # (buffer b's row j: frame row b*ROWS + j)
    frame = gl.allocate_shared_memory(x_ptr.dtype.element_ty, frame_shape(ROWS, CM, PLANE_ROWS), ROW)
    cx = gm * CM + gl.arange(0, CM, layout=gl.SliceLayout(0, XL))
    cx = gl.max_contiguous(gl.multiple_of(cx, COPY_VEC), COPY_VEC)
    if first < ITEMS:
        _stage_item(frame, 0, x_ptr, n_item, block_item, cx, H, W, FWP, pad_h, pad_w, stride_xn, stride_xh,
                    stride_xw, BLOCK_M, PR, U, V, CHUNKS, CHUNK, XL, CHUNK_PLANE, COPY_VEC, INT64)

    # The filter, while the copies fly: R*S block-diagonal [CM, KM] matrices.
    w_taps = gl.allocate_shared_memory(w_ptr.dtype.element_ty, [R * S, CM, KM], FILTER)
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
    i = 0
    for item in range(first, ITEMS, step):
        nxt = item + step
        block_nxt = block_item + block_step
        carry = (block_nxt >= blocks).to(gl.int32)
        block_nxt -= carry * blocks
        n_nxt = n_item + n_step + carry
        cur = i % 2
        async_copy.wait_group(0)  # this item's rows (the one group in flight)
        # One barrier an item: every thread's copies (and the filter's stores) are in before any
        # thread reads them, and every thread is done with the other buffer (the last item's taps)
        # before the next item's rows go there.
        gl.thread_barrier()
        if nxt < ITEMS:
            _stage_item(frame, (1 - cur) * ROWS, x_ptr, n_nxt, block_nxt, cx, H, W, FWP, pad_h, pad_w, stride_xn,
                        stride_xh, stride_xw, BLOCK_M, PR, U, V, CHUNKS, CHUNK, XL, CHUNK_PLANE, COPY_VEC, INT64)

        acc = _frame_taps(frame, cur * ROWS, w_taps, w_regs, gl.zeros([BLOCK_M, KM], gl.float32, MMA),
                          FWP, PR, U, V, DIL_H, DIL_W, R, S, BLOCK_M, CM, ADOT, BDOT, PLANE, WEIGHT_REGISTERS)

        if PACK > 1:
            # A neighbouring group's infinite or NaN input meets this group's zero weights: redo the
            # item group by group from a copy holding that group's channels alone, made in the other
            # buffer (the next item's rows, copied there already, are copied again afterwards).
            # The test: acc * 0 is 0 where acc is finite and NaN where it is not, and a sum with a NaN
            # in it is NaN (a float reduction: about half the instructions of counting them).
            if gl.sum(gl.sum(acc * 0.0, axis=1), axis=0) != 0.0:
                async_copy.wait_group(0)
                gl.thread_barrier()  # no copy into the other buffer is in flight
                col_group = gl.arange(0, CM, layout=gl.SliceLayout(0, XL)) // SUB_C
                out_group = gl.arange(0, KM, layout=gl.SliceLayout(0, MMA)) // SUB_K
                redone = gl.zeros([BLOCK_M, KM], gl.float32, MMA)
                for g in gl.static_range(PACK):
                    for chunk in gl.static_range(CHUNKS):
                        v = frame.index(cur * ROWS + chunk * CHUNK)._reinterpret(
                            frame.dtype, [CHUNK, CM], CHUNK_PLANE).load(XL)
                        frame.index((1 - cur) * ROWS + chunk * CHUNK)._reinterpret(
                            frame.dtype, [CHUNK, CM], CHUNK_PLANE).store(gl.where((col_group == g)[None, :], v, 0.0))
                    gl.thread_barrier()
                    part = _frame_taps(frame, (1 - cur) * ROWS, w_taps, w_regs,
                                       gl.zeros([BLOCK_M, KM], gl.float32, MMA), FWP, PR, U, V,
                                       DIL_H, DIL_W, R, S, BLOCK_M, CM, ADOT, BDOT, PLANE, WEIGHT_REGISTERS)
                    redone = gl.where((out_group == g)[None, :], part, redone)
                    gl.thread_barrier()  # this group's reads are done before the next one's stores
                acc = redone
                if nxt < ITEMS:
                    _stage_item(frame, (1 - cur) * ROWS, x_ptr, n_nxt, block_nxt, cx, H, W, FWP, pad_h, pad_w,
                                stride_xn, stride_xh, stride_xw, BLOCK_M, PR, U, V, CHUNKS, CHUNK, XL, CHUNK_PLANE,
                                COPY_VEC, INT64)

        # The fused epilogue, in common.epilogue_at's order: + bias, + residual, activation.
        n = n_item
        f = block_item * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, MMA))
        p = f // FWP
        q = f % FWP
        if INT64:
            n = n.to(gl.int64)
            p = p.to(gl.int64)
        ok = ((p < P) & (q < Q))[:, None] & (k_out >= 0)[None, :]
        if HAS_BIAS:
            acc += bias[None, :]
        if HAS_RESIDUAL:
            res_offs = n * stride_rn + (p * stride_rp + q * stride_rq)[:, None] + (k_out * stride_rk)[None, :]
            acc += gl.load(res_ptr + res_offs, mask=ok, other=0.0).to(gl.float32)
        # ReLU folded into a 16-bit output's conversion (common.apply_activation).
        acc = apply_activation(acc, ACTIVATION, alpha, beta, out_ptr.dtype.element_ty.primitive_bitwidth == 16)
        out_offs = n * stride_on + (p * stride_op + q * stride_oq)[:, None] + (k_out * stride_ok)[None, :]
        gl.store(out_ptr + out_offs, acc.to(out_ptr.dtype.element_ty), mask=ok)
        n_item = n_nxt
        block_item = block_nxt
        i += 1
