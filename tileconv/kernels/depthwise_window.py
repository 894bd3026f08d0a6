"""Depthwise convolution streaming input rows through registers, on the CUDA cores.

A depthwise filter of R x S taps does R*S multiply-adds an output and nothing else: the
7x7 (ConvNeXt) rows are bound by the instructions the multiply-adds take, not by memory.
The shared-memory halo kernel (:mod:`.depthwise_halo`) spends about 1.6 instructions a
multiply-add (a shared-memory load and a conversion shared by a few taps, then the FMA) and
its one-warp programs each hold a halo, so the shared memory bounds the warps an SM runs.

Here every thread owns one channel (``BLOCK_C`` channels a program) of a strip of
``STRIP`` output rows by ``TILE_W`` output columns of one image, the filter's R*S weights of
its channel in registers as fp32. It walks the strip's input rows top to bottom, each row
loaded once (one [BLOCK_C, WIN_PAD] load: the ``(TILE_W-1)*V + (S-1)*dil_w + 1`` columns the
tile reads, converted to fp32 once) and added into the R output rows it touches:

    input row i:  out[i - R + 1] += row_i (x) w[R-1, :]   -> complete: epilogue, stored
                  ...
                  out[i]          = row_i (x) w[0, :]     (a new partial sum)

so every loaded value feeds R*S multiply-adds without another load or conversion, and only
the partial sums of the R output rows in flight (plus the filter and two input rows) are
live: R * TILE_W accumulators a thread. The first and last R - 1 input rows of a strip (its
ramps, unrolled) add only into the output rows inside it: no multiply-add is spent on rows
another strip computes, and a ramp row outside the input (the top strip's first rows, the
bottom strip's last: padding) branches past its multiply-adds. In between, a loop step takes
``ROWS_A_STEP`` input rows, unrolled (the shifts between the rows' partial sums are register
renaming inside a step; the R - 1 carried ones move once a step). Each input row is loaded a
row ahead of its multiply-adds. The columns are split out of a row, and an output row put
back together, by halving (tl.split / tl.join: register renaming, each thread holding its
channel's whole row).

A load's address is the row's pointer plus the column's constant offset (``X_STRIDE_W``, the
input's column stride, is a compile-time value: the load instruction's immediate). The
padding is the loads' masks: one unsigned compare a column (negative coordinates wrap past
W) and one a row, and only where the geometry needs them (``INSIDE``, launch.window_inside:
the window columns inside the input in every tile take no column mask, and where every
strip's steady rows are inside the input the steady steps load rows clamped, with no row
mask; on a 7x7 strip of 28 rows over 56x56 that took the kernel from 53.7 us to 35.9). No
shared memory, no barriers: occupancy is the registers'.

    out[n, k, p, q] = sum_{r, s} x[n, k // m, p - pad_h + r, q*V - pad_w + s*dil_w] * w[k, 0, r, s]

Row stride and row dilation 1; any column stride and dilation, channel multiplier m, layout
(channels_last reads a warp's 32 channels of a pixel as one segment; other layouts are
correct but uncoalesced) and the fused epilogue.

Small images (``IMAGE``, :func:`_image`): where a tile spans the output's width and the
image's multiply-adds fit an unrolled program (launch.MAX_IMAGE_MULTIPLY_ADDS), the image's
geometry (H, W, P, Q, padding) is compiled in and each strip of output rows is traced in its
own branch: every tap that lands on padding is left out when the code is traced (no masks,
no multiply-adds on zeros), any row stride and dilation. A thread makes its output rows one
by one, each from the converted input rows it reads (held in registers, each converted once),
the input rows loaded a few rows ahead. On a 7x7 filter over 7x7 (ConvNeXt's last stage) the
strips' 3,944 instructions a program become 1,976, its multiply-adds 2,401 become 1,369.
"""

import triton
import triton.language as tl

from .common import apply_activation


@triton.jit
def _columns(v, B: tl.constexpr, N: tl.constexpr):
    """The N columns of ``v`` [B, N] (N a power of two) as a tuple of [B] tensors, in order:
    halved into even and odd columns, log2(N) times (register renaming where a thread holds
    its row of ``v``)."""
    if N == 1:
        parts = (tl.reshape(v, [B]),)
    else:
        parts = (v,)
        for level in tl.static_range(N.bit_length() - 1):
            evens = ()
            odds = ()
            for i in tl.static_range(len(parts)):
                if N >> level == 2:
                    a, b = tl.split(parts[i])
                else:
                    a, b = tl.split(tl.reshape(parts[i], [B, N >> (level + 1), 2]))
                evens = evens + (a,)
                odds = odds + (b,)
            parts = evens + odds  # column c at c: the evens' halves hold c mod 2^(level+1) < 2^level
    return parts


@triton.jit
def _stack(cols, B: tl.constexpr, N: tl.constexpr):
    """:func:`_columns` undone: a tuple of N [B] tensors as one [B, N] tensor."""
    if N == 1:
        parts = (tl.reshape(cols[0], [B, 1]),)
    else:
        parts = cols
        for level in tl.static_range(N.bit_length() - 1):
            merged = ()
            for i in tl.static_range(N >> (level + 1)):  # half the parts
                merged = merged + (tl.reshape(tl.join(parts[i], parts[i + (N >> (level + 1))]), [B, 2 << level]),)
            parts = merged
    return parts[0]


@triton.jit
def _inside(i, n):
    """0 <= i < n in one compare: a negative ``i`` wraps past ``n`` unsigned."""
    return i.to(tl.uint32, bitcast=True) < n.to(tl.uint32)


@triton.jit
def _input_row(x_win, ih, H, stride_xh, win_ok, CLAMP: tl.constexpr, INT64: tl.constexpr):
    """Input row ``ih`` of the window as stored: zeros outside the input, or (CLAMP) row ``ih``
    clamped into the input, no row mask (the caller reads it only where ``ih`` is inside)."""
    if CLAMP:
        ih = tl.minimum(tl.maximum(ih, 0), H - 1)
        ok = win_ok
    else:
        ok = win_ok & _inside(ih, H)
    if INT64:
        ih = ih.to(tl.int64)
    return tl.load(x_win + ih * stride_xh, mask=ok, other=0.0)


# The channel strides are not specialised: were a unit channel stride known, Triton would lay
# a row's [channels, columns] loads and stores out several channels a thread (its coalescing
# rule) and shuffle them through shared memory into the one-channel-a-thread tiles.
@triton.jit(do_not_specialize=["H", "W", "P", "Q", "pad_h", "pad_w", "stride_xc", "stride_wk", "stride_ok", "stride_rk"])
def conv2d_depthwise_window_kernel(
    x_ptr,  # input [N, C, H, W] through strides (stride_xw as the constexpr X_STRIDE_W)
    w_ptr,  # weight [K, 1, R, S]: stride_wk, then the constexpr tap strides
    out_ptr,  # output [N, K, P, Q]
    bias_ptr,  # bias [K] (read only if HAS_BIAS)
    res_ptr,  # residual [N, K, P, Q] (read only if HAS_RESIDUAL)
    H, W, P, Q, K,
    pad_h, pad_w,
    stride_xn, stride_xc, stride_xh,
    stride_wk,
    stride_on, stride_ok, stride_op, stride_oq,
    stride_rn, stride_rk, stride_rp, stride_rq,
    alpha, beta,
    X_STRIDE_W: tl.constexpr,  # the input's column stride (an immediate offset of every load)
    W_STRIDE_R: tl.constexpr, W_STRIDE_S: tl.constexpr,  # the weight's tap strides (immediates too)
    R: tl.constexpr, S: tl.constexpr,
    U: tl.constexpr, V: tl.constexpr,  # row and column stride (rows: 1, except for a tile of the whole image)
    DIL_H: tl.constexpr, DIL_W: tl.constexpr,  # row and column dilation (rows: likewise)
    MULTIPLIER: tl.constexpr,  # K // C: output channel k reads input channel k // MULTIPLIER
    ACTIVATION: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_RESIDUAL: tl.constexpr,
    STRIP: tl.constexpr,  # output rows a program (at least R - 1)
    TILE_W: tl.constexpr,  # output columns a program (any number)
    ROWS_A_STEP: tl.constexpr,  # input rows a loop step (unrolled)
    BLOCK_C: tl.constexpr,  # channels a program (32 * num_warps: one a thread)
    WIN_W: tl.constexpr,  # the input columns the tile reads: (TILE_W-1)*V + (S-1)*DIL_W + 1 (launch.window)
    WIN_PAD: tl.constexpr,  # WIN_W to a power of two
    OUT_PAD: tl.constexpr,  # TILE_W to a power of two
    TAPS_PAD: tl.constexpr,  # R * S to a power of two
    EVEN_K: tl.constexpr,  # K a multiple of BLOCK_C: no channel masks on the input rows
    INT64: tl.constexpr,
    INSIDE: tl.constexpr = None,  # strips: (COL_LO, COL_HI, CLAMP), launch.window_inside
    IMAGE: tl.constexpr = None,  # tiles of the image's width: (H, W, P, Q, pad_h, pad_w, W to a power of two,
    # input rows loaded ahead) as compile-time values, each strip compiled (_image); None: _strips
):
    # One axis over (image, strip, tile column), columns fastest: neighbouring programs share
    # input rows in L2.
    pid = tl.program_id(0)
    tiles_q = tl.cdiv(Q, TILE_W)
    tiles_pq = tl.cdiv(P, STRIP) * tiles_q
    n = pid // tiles_pq
    p0 = (pid % tiles_pq) // tiles_q * STRIP
    q0 = (pid % tiles_q) * TILE_W
    k_idx = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    if INT64:
        n = n.to(tl.int64)
        k_idx = k_idx.to(tl.int64)
    mask_k = k_idx < K

    # The filter as fp32 registers: one [BLOCK_C, TAPS_PAD] load, then a [BLOCK_C, 1] column a tap.
    t_idx = tl.arange(0, TAPS_PAD)
    w_offs = (t_idx // S) * W_STRIDE_R + (t_idx % S) * W_STRIDE_S
    w_all = tl.load(w_ptr + (k_idx * stride_wk)[:, None] + w_offs[None, :],
                    mask=mask_k[:, None] & (t_idx < R * S)[None, :], other=0.0).to(tl.float32)
    w_cols = _columns(w_all, BLOCK_C, TAPS_PAD)
    if HAS_BIAS:
        bias = tl.load(bias_ptr + k_idx, mask=mask_k, other=0.0).to(tl.float32)[:, None]
    else:
        bias = 0.0

    if IMAGE is not None:  # the tile spans the image's width: its geometry is compile-time
        x_img = x_ptr + n * stride_xn + (k_idx // MULTIPLIER) * stride_xc
        out_tile, res_tile, q_ok = _output_rows(out_ptr, res_ptr, n, k_idx, mask_k, 0, IMAGE[3], stride_on, stride_ok,
                                                stride_oq, stride_rn, stride_rk, stride_rq, TILE_W, OUT_PAD, INT64)
        # The strips of output rows are compiled one by one (a uniform branch picks the program's).
        for g in tl.static_range(tl.constexpr((IMAGE[2] + STRIP - 1) // STRIP)):
            if p0 == g * STRIP:
                _image(x_img, stride_xh, mask_k, w_cols, bias, P, out_tile, res_tile, q_ok, stride_op, stride_rp,
                       alpha, beta, tl.constexpr(g * STRIP), tl.constexpr(min(IMAGE[2], (g + 1) * STRIP)), IMAGE,
                       X_STRIDE_W, R, S, U, V, DIL_H, DIL_W, BLOCK_C, OUT_PAD, EVEN_K, ACTIVATION, HAS_RESIDUAL,
                       INT64)
    else:
        taps = ()
        for t in tl.static_range(R * S):
            taps = taps + (w_cols[t][:, None],)
        _strips(x_ptr, out_ptr, res_ptr, n, p0, q0, k_idx, mask_k, taps, bias, H, W, P, Q, pad_h, pad_w,
                stride_xn, stride_xc, stride_xh, stride_on, stride_ok, stride_op, stride_oq,
                stride_rn, stride_rk, stride_rp, stride_rq, alpha, beta, X_STRIDE_W, R, S, V, DIL_W, MULTIPLIER,
                ACTIVATION, HAS_RESIDUAL, STRIP, TILE_W, ROWS_A_STEP, BLOCK_C, WIN_W, WIN_PAD, OUT_PAD,
                EVEN_K, INSIDE, INT64)


@triton.jit
def _output_rows(out_ptr, res_ptr, n, k_idx, mask_k, q0, Q, stride_on, stride_ok, stride_oq, stride_rn, stride_rk,
                 stride_rq, TILE_W: tl.constexpr, OUT_PAD: tl.constexpr, INT64: tl.constexpr):
    """A tile's output row 0 as [BLOCK_C, OUT_PAD] pointers into the output and the residual
    (columns q0 .. q0 + OUT_PAD - 1; add the row's offset), and the mask of its columns that
    are in the tile and the output (``Q`` a compile-time value where the image's is)."""
    q_idx = q0 + tl.arange(0, OUT_PAD)
    q_ok = mask_k[:, None] & ((tl.arange(0, OUT_PAD) < TILE_W) & (q_idx < Q))[None, :]
    if INT64:
        q_idx = q_idx.to(tl.int64)
    out_tile = out_ptr + n * stride_on + (k_idx * stride_ok)[:, None] + (q_idx * stride_oq)[None, :]
    res_tile = res_ptr + n * stride_rn + (k_idx * stride_rk)[:, None] + (q_idx * stride_rq)[None, :]
    return out_tile, res_tile, q_ok


@triton.constexpr_function
def _image_plan(p, P_LO, P_HI, H, R, U, DIL_H, PAD_H):
    """The input rows :func:`_image` reads for output rows P_LO .. P_HI - 1, FIRST .. END - 1,
    and (p in that range) for output row p: the first input row converted for it, the rows
    converted once it is made, the first input row held before it, the first held after. Rows
    are converted in order when an output row first reads them, and dropped once no output row
    from p on reads them. Returns (FIRST, END) for p = None, else the four."""
    first = min(H, max(0, P_LO * U - PAD_H))
    end = max(first, min(H, (P_HI - 1) * U - PAD_H + (R - 1) * DIL_H + 1))
    if p is None:
        return first, end
    converted, held_lo = first, first
    for row in range(P_LO, p + 1):
        top = row * U - PAD_H  # the input row of filter row 0
        before, held_before = converted, held_lo
        converted = max(converted, min(end, max(first, top + (R - 1) * DIL_H + 1)))
        held_lo = max(held_lo, min(max(top, first), converted))
    return before, converted, held_before, held_lo


@triton.jit
def _image(x_img, stride_xh, mask_k, w_cols, bias, P, out_tile, res_tile, q_ok, stride_op, stride_rp, alpha, beta,
           P_LO: tl.constexpr, P_HI: tl.constexpr, IMAGE: tl.constexpr, X_STRIDE_W: tl.constexpr, R: tl.constexpr,
           S: tl.constexpr, U: tl.constexpr, V: tl.constexpr, DIL_H: tl.constexpr, DIL_W: tl.constexpr,
           BLOCK_C: tl.constexpr, OUT_PAD: tl.constexpr, EVEN_K: tl.constexpr, ACTIVATION: tl.constexpr,
           HAS_RESIDUAL: tl.constexpr, INT64: tl.constexpr):
    """Output rows P_LO .. P_HI - 1 of one image (``x_img``: its channels' pointers, [BLOCK_C])
    whose geometry ``IMAGE`` is known to the compiler, all columns, output row by output row:
    every tap that lands on padding is left out when the code is traced (no masks, no
    multiply-adds on zeros: a 7x7 filter over a 7x7 image pads 57% of its taps), and each input
    row is loaded once, ``AHEAD`` rows before it is needed, and converted once, when the first
    output row that reads it is made."""
    W: tl.constexpr = IMAGE[1]
    W_PAD: tl.constexpr = IMAGE[6]
    SPAN: tl.constexpr = _image_plan(None, P_LO, P_HI, IMAGE[0], R, U, DIL_H, IMAGE[4])
    FIRST: tl.constexpr = SPAN[0]
    END: tl.constexpr = SPAN[1]
    cols = tl.arange(0, W_PAD)
    row_ok = (cols < W)[None, :]
    if not EVEN_K:
        row_ok = row_ok & mask_k[:, None]
    x_rows = x_img[:, None] + (cols * X_STRIDE_W)[None, :]
    row_stride = stride_xh
    if INT64:
        row_stride = tl.full([], 1, tl.int64) * stride_xh  # stride_xh may be a specialised 1
    raw = ()  # the input rows loaded and not yet converted, in order
    for i in tl.static_range(FIRST, tl.constexpr(min(END, FIRST + IMAGE[7]))):
        raw = raw + (tl.load(x_rows + i * row_stride, mask=row_ok, other=0.0),)
    held = ()  # the converted input rows still read: W_PAD [BLOCK_C] columns each
    for p in tl.static_range(P_LO, P_HI):
        raw, held = _image_row(raw, held, p, x_rows, row_stride, row_ok, w_cols, bias, P, out_tile, res_tile, q_ok,
                               stride_op, stride_rp, alpha, beta, P_LO, P_HI, tl.constexpr(END), IMAGE, R, S, U,
                               V, DIL_H, DIL_W, BLOCK_C, OUT_PAD, ACTIVATION, HAS_RESIDUAL, INT64)


@triton.jit
def _image_row(raw, held, p: tl.constexpr, x_rows, row_stride, row_ok, w_cols, bias, P, out_tile, res_tile, q_ok,
               stride_op, stride_rp, alpha, beta, P_LO: tl.constexpr, P_HI: tl.constexpr, END: tl.constexpr,
               IMAGE: tl.constexpr, R: tl.constexpr,
               S: tl.constexpr, U: tl.constexpr, V: tl.constexpr, DIL_H: tl.constexpr, DIL_W: tl.constexpr,
               BLOCK_C: tl.constexpr, OUT_PAD: tl.constexpr,
               ACTIVATION: tl.constexpr, HAS_RESIDUAL: tl.constexpr, INT64: tl.constexpr):
    """Output row ``p`` of :func:`_image`: the input rows it is the first to read converted
    (``raw``'s first, each loading the row AHEAD further on, before END), those it is past dropped from
    ``held``, its sums over the taps inside the image, the epilogue. Returns ``raw`` and ``held``."""
    H: tl.constexpr = IMAGE[0]
    W: tl.constexpr = IMAGE[1]
    Q: tl.constexpr = IMAGE[3]
    TOP: tl.constexpr = p * U - IMAGE[4]  # the input row of filter row 0
    PAD_W: tl.constexpr = IMAGE[5]
    W_PAD: tl.constexpr = IMAGE[6]
    AHEAD: tl.constexpr = IMAGE[7]
    ROW_PLAN: tl.constexpr = _image_plan(p, P_LO, P_HI, H, R, U, DIL_H, IMAGE[4])
    FIRST: tl.constexpr = ROW_PLAN[0]
    HELD_LO: tl.constexpr = ROW_PLAN[3]
    for i in tl.static_range(tl.constexpr(ROW_PLAN[1] - ROW_PLAN[0])):
        held = held + (_columns(raw[0].to(tl.float32), BLOCK_C, W_PAD),)
        rest = ()
        for j in tl.static_range(1, len(raw)):
            rest = rest + (raw[j],)
        if FIRST + i + AHEAD < END:
            rest = rest + (tl.load(x_rows + (FIRST + i + AHEAD) * row_stride, mask=row_ok, other=0.0),)
        raw = rest
    for _d in tl.static_range(tl.constexpr(ROW_PLAN[3] - ROW_PLAN[2])):
        rest = ()
        for j in tl.static_range(1, len(held)):
            rest = rest + (held[j],)
        held = rest
    sums = ()
    for q in tl.static_range(OUT_PAD):
        acc = tl.zeros([BLOCK_C], dtype=tl.float32)
        if q < Q:
            for r in tl.static_range(R):
                if TOP + r * DIL_H >= 0:
                    if TOP + r * DIL_H < H:
                        for s in tl.static_range(S):
                            if q * V - PAD_W + s * DIL_W >= 0:
                                if q * V - PAD_W + s * DIL_W < W:
                                    acc += (held[TOP + r * DIL_H - HELD_LO][q * V - PAD_W + s * DIL_W]
                                            * w_cols[r * S + s])
        sums = sums + (acc,)
    _finish(_stack(sums, BLOCK_C, OUT_PAD), tl.full([], p, tl.int32), P, out_tile, res_tile, q_ok, bias,
            stride_op, stride_rp, alpha, beta, ACTIVATION, HAS_RESIDUAL, out_tile.dtype.element_ty, INT64)
    return raw, held


@triton.jit
def _strips(x_ptr, out_ptr, res_ptr, n, p0, q0, k_idx, mask_k, taps, bias, H, W, P, Q, pad_h, pad_w,
            stride_xn, stride_xc, stride_xh, stride_on, stride_ok, stride_op, stride_oq,
            stride_rn, stride_rk, stride_rp, stride_rq, alpha, beta, X_STRIDE_W: tl.constexpr, R: tl.constexpr,
            S: tl.constexpr, V: tl.constexpr, DIL_W: tl.constexpr, MULTIPLIER: tl.constexpr,
            ACTIVATION: tl.constexpr, HAS_RESIDUAL: tl.constexpr, STRIP: tl.constexpr, TILE_W: tl.constexpr,
            ROWS_A_STEP: tl.constexpr, BLOCK_C: tl.constexpr, WIN_W: tl.constexpr, WIN_PAD: tl.constexpr,
            OUT_PAD: tl.constexpr, EVEN_K: tl.constexpr, INSIDE: tl.constexpr, INT64: tl.constexpr):
    """The strip of output rows p0 .. p0 + STRIP - 1, columns q0 .. q0 + TILE_W - 1 (the module's
    scheme): its input rows streamed top to bottom through the ramps and the steady loop."""
    iw0 = q0 * V - pad_w
    # Row and column indices stay 32-bit (the masks compare them unsigned); where offsets may pass
    # 2**31 they are widened where they meet their strides (a stride may be a specialised 1).
    col0 = iw0
    if INT64:
        col0 = col0.to(tl.int64)
    # Inside the input: one unsigned compare a column (negative coordinates wrap past W), except
    # for window columns COL_LO .. COL_HI - 1, inside in every tile (INSIDE, from the launcher:
    # their loads take no column mask); the channels' mask only where K is not a whole number of
    # blocks. Rows: one compare each, except for the loads the steady steps make where CLAMP (the
    # steady rows are inside the input in every strip; the ramp down's first row, loaded by the
    # last steady step, is loaded clamped and read only if inside).
    COL_LO: tl.constexpr = INSIDE[0]
    COL_HI: tl.constexpr = INSIDE[1]
    CLAMP: tl.constexpr = INSIDE[2]
    cols = tl.arange(0, WIN_PAD)
    win_ok = ((cols < WIN_W) & (((cols >= COL_LO) & (cols < COL_HI)) | _inside(iw0 + cols, W)))[None, :]
    if not EVEN_K:
        win_ok = win_ok & mask_k[:, None]
    x_win = (x_ptr + n * stride_xn + col0 * X_STRIDE_W + ((k_idx // MULTIPLIER) * stride_xc)[:, None]
             + (cols * X_STRIDE_W)[None, :])
    out_tile, res_tile, q_ok = _output_rows(out_ptr, res_ptr, n, k_idx, mask_k, q0, Q, stride_on, stride_ok,
                                            stride_oq, stride_rn, stride_rk, stride_rq, TILE_W, OUT_PAD, INT64)
    # Slot k of the window holds the partial sums of output row i-R+1+k (relative to p0) before
    # input row i, which adds its filter row R-1-k there. Rows above and below the strip take no
    # multiply-adds: the first R-1 input rows (the ramp up) reach only slots R-1-i and up, the
    # last R-1 (the ramp down) only the slots above the strip's end; in between (the steady
    # rows, a runtime loop) every slot is inside the strip, and slot 0 completes at every row.
    zero = tl.zeros([BLOCK_C, OUT_PAD], dtype=tl.float32)
    pending = ()
    for _k in tl.static_range(R - 1):
        pending = pending + (zero,)
    # Each input row is loaded one row ahead of its multiply-adds (the loop's steps are separate
    # blocks to the scheduler, so without this every step would wait out its first load).
    ih0 = p0 - pad_h
    ahead = _input_row(x_win, ih0, H, stride_xh, win_ok, False, INT64)
    for i in tl.static_range(R - 1):  # the ramp up: slot 0 is a row above the strip, not stored
        pending, ahead = _step(pending, ahead, ih0 + i + 1, p0 + i - R + 1, R - 1 - i, R - 1, True, False, True,
                               x_win, H, stride_xh, win_ok, CLAMP, taps, zero, P, out_tile, res_tile, q_ok, bias,
                               stride_op, stride_rp, alpha, beta, R, S, V, DIL_W, TILE_W, BLOCK_C, WIN_PAD,
                               OUT_PAD, ACTIVATION, HAS_RESIDUAL, INT64)
    STEADY: tl.constexpr = STRIP - R + 1  # input rows R-1 .. STRIP-1
    for i0 in range(R - 1, R - 1 + STEADY // ROWS_A_STEP * ROWS_A_STEP, ROWS_A_STEP):
        for j in tl.static_range(ROWS_A_STEP):
            pending, ahead = _step(pending, ahead, ih0 + i0 + j + 1, p0 + i0 + j - R + 1, 0, R - 1, True, True,
                                   False, x_win, H, stride_xh, win_ok, CLAMP, taps, zero, P, out_tile, res_tile, q_ok,
                                   bias, stride_op, stride_rp, alpha, beta, R, S, V, DIL_W, TILE_W, BLOCK_C, WIN_PAD,
                                   OUT_PAD, ACTIVATION, HAS_RESIDUAL, INT64)
    for j in tl.static_range(STEADY % ROWS_A_STEP):  # the steady rows a whole step does not cover
        i = R - 1 + STEADY // ROWS_A_STEP * ROWS_A_STEP + j
        pending, ahead = _step(pending, ahead, ih0 + i + 1, p0 + i - R + 1, 0, R - 1, True, True, False,
                               x_win, H, stride_xh, win_ok, CLAMP, taps, zero, P, out_tile, res_tile, q_ok, bias,
                               stride_op, stride_rp, alpha, beta, R, S, V, DIL_W, TILE_W, BLOCK_C, WIN_PAD,
                               OUT_PAD, ACTIVATION, HAS_RESIDUAL, INT64)
    for e in tl.static_range(R - 1):  # the ramp down: input row STRIP + e, nothing left to load after it
        pending, ahead = _step(pending, ahead, ih0 + STRIP + e + 1, p0 + STRIP + e - R + 1, 0, R - 2 - e, e < R - 2,
                               True, True, x_win, H, stride_xh, win_ok, CLAMP, taps, zero, P, out_tile, res_tile, q_ok,
                               bias, stride_op, stride_rp, alpha, beta, R, S, V, DIL_W, TILE_W, BLOCK_C, WIN_PAD,
                               OUT_PAD, ACTIVATION, HAS_RESIDUAL, INT64)


@triton.jit
def _step(pending, row, ih_next, p, FIRST: tl.constexpr, LAST: tl.constexpr, LOAD_NEXT: tl.constexpr,
          STORE: tl.constexpr, SKIP: tl.constexpr, x_win, H, stride_xh, win_ok, CLAMP: tl.constexpr, taps, zero, P,
          out_tile, res_tile, q_ok, bias, stride_op, stride_rp, alpha, beta, R: tl.constexpr, S: tl.constexpr, V: tl.constexpr,
          DIL_W: tl.constexpr, TILE_W: tl.constexpr, BLOCK_C: tl.constexpr, WIN_PAD: tl.constexpr,
          OUT_PAD: tl.constexpr, ACTIVATION: tl.constexpr, HAS_RESIDUAL: tl.constexpr, INT64: tl.constexpr):
    """One input row of the strip: input row ``ih_next`` loaded ahead (if LOAD_NEXT), ``row``
    added into window slots FIRST..LAST (:func:`_feed`), slot 0 (output row ``p``, complete)
    through the epilogue into the output (if STORE). Where SKIP (the ramps), ``row`` (input row
    ``ih_next - 1``) branches past its multiply-adds if it lies outside the input (it is zeros):
    a quarter of a 7x7 tile's multiply-adds on a 7x7 image. The steady rows (inside the input
    on the shapes measured) take no branch: the compiler hoists no load across one. Returns the
    R-1 slots left and the row loaded ahead."""
    if LOAD_NEXT:
        if SKIP:  # a ramp's load: masked by row (loaded clamped, the ramps ran 1.2x slower: session 48)
            ahead = _input_row(x_win, ih_next, H, stride_xh, win_ok, False, INT64)
        else:  # a steady step's: row ih_next is a steady row or the first of the ramp down (SKIP)
            ahead = _input_row(x_win, ih_next, H, stride_xh, win_ok, CLAMP, INT64)
    else:
        ahead = row
    if SKIP:
        if _inside(ih_next - 1, H):
            slots = _feed(pending, row, taps, zero, FIRST, LAST, R, S, V, DIL_W, TILE_W, BLOCK_C, WIN_PAD, OUT_PAD)
        else:
            slots = pending + (zero,)  # slot R-1 starts from zero
    else:
        slots = _feed(pending, row, taps, zero, FIRST, LAST, R, S, V, DIL_W, TILE_W, BLOCK_C, WIN_PAD, OUT_PAD)
    if STORE:
        _finish(slots[0], p, P, out_tile, res_tile, q_ok, bias, stride_op, stride_rp, alpha, beta,
                ACTIVATION, HAS_RESIDUAL, out_tile.dtype.element_ty, INT64)
    rest = ()  # the window one input row further down
    for k in tl.static_range(1, R):
        rest = rest + (slots[k],)
    return rest, ahead


@triton.jit
def _feed(pending, row, taps, zero, FIRST: tl.constexpr, LAST: tl.constexpr, R: tl.constexpr, S: tl.constexpr,
          V: tl.constexpr, DIL_W: tl.constexpr, TILE_W: tl.constexpr, BLOCK_C: tl.constexpr, WIN_PAD: tl.constexpr,
          OUT_PAD: tl.constexpr):
    """Input row ``row`` (as loaded, [BLOCK_C, WIN_PAD]) added into window slots FIRST..LAST:
    slot k (``pending[k]``; slot R-1 starts from zero) takes filter row R-1-k. Returns the R
    slots."""
    columns = _columns(row.to(tl.float32), BLOCK_C, WIN_PAD)
    # Filter column s's view of the row: at output column ql, input column ql*V + s*DIL_W.
    shifted = ()
    for s in tl.static_range(S):
        picked = ()
        for ql in tl.static_range(OUT_PAD):
            picked = picked + (columns[min(ql, TILE_W - 1) * V + s * DIL_W],)
        shifted = shifted + (_stack(picked, BLOCK_C, OUT_PAD),)
    updated = ()
    for k in tl.static_range(R):
        if k < R - 1:
            acc = pending[k]
        else:
            acc = zero
        if k >= FIRST and k <= LAST:
            for s in tl.static_range(S):
                acc += shifted[s] * taps[(R - 1 - k) * S + s]
        updated = updated + (acc,)
    return updated


@triton.jit
def _finish(acc, p, P, out_tile, res_tile, q_ok, bias, stride_op, stride_rp, alpha, beta,
            ACTIVATION: tl.constexpr, HAS_RESIDUAL: tl.constexpr, OUT_DTYPE: tl.constexpr, INT64: tl.constexpr):
    """Output row ``p`` (``acc``, complete) through the fused epilogue (common.epilogue_at's
    order: + bias, + residual, activation) into the output."""
    ok = q_ok & (p < P)
    if INT64:
        p = p.to(tl.int64)
    out = acc + bias
    if HAS_RESIDUAL:
        out += tl.load(res_tile + p * stride_rp, mask=ok, other=0.0).to(tl.float32)
    # ReLU folded into a 16-bit output's conversion (common.apply_activation).
    out = apply_activation(out, ACTIVATION, alpha, beta, OUT_DTYPE.primitive_bitwidth == 16)
    tl.store(out_tile + p * stride_op, out.to(OUT_DTYPE), mask=ok)
