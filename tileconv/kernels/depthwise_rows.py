"""3x3 depthwise convolution streaming output rows (groups = C, stride 1 or 2 down the rows).

The 2D-tile depthwise kernel (:mod:`.depthwise`) loads, for each of its output pixels,
all nine taps' inputs: nine tile loads per output tile, most of them hits in L1, but each
a full set of addresses, masks and load instructions. Here a program owns a strip of
``BLOCK_P`` output rows by ``BLOCK_Q`` columns by ``BLOCK_C`` channels and walks the strip's
``BLOCK_P + 2`` input rows once, top to bottom. Each input row is loaded as three
column-shifted tiles (the filter's three columns) and feeds the three output rows it
touches, whose partial sums live in registers:

    input row i:  out[p0 + i - 2] += row_i (x) w[2, :]   -> complete: stored
                  out[p0 + i - 1] += row_i (x) w[1, :]
                  out[p0 + i]      = row_i (x) w[0, :]     (a new partial sum)

so a strip costs three tile loads per input row instead of nine per output row (an sm_90
compile of a 16x64 tile: 17 instructions an output against the 2D kernel's 46). At row
stride 2 an input row feeds one output row (odd rows, filter row 1) or two (even rows:
filter row 2 of one, row 0 of the next): each step takes two input rows and completes one
output row, six tile loads an output row instead of nine. Filter 3x3, dilation 1; any column
stride, padding, channel multiplier, layout and the fused epilogue.

Nothing else hides a row's load latency in a loop without a tensor-core dot (Triton's
pipeliner streams loads that feed dots), so with ``PREFETCH`` the next step's input tiles
are loaded before this step's multiply-adds, one step ahead, in registers. The nine
weight vectors stay in registers for the whole strip (72 at 8 channels a thread): reloading
them from L1 every row lost on all ten 3x3 rows of the depthwise suite (H200, session 10,
benchmarks/probe.py rows: 0-20% slower), though it freed 26 registers.
"""

import triton
import triton.language as tl

from .common import store_output_tile


@triton.jit
def _filter_row(w_chan, r, stride_wr, stride_ws, mask_k):
    """Filter row r's three weight vectors, as fp32 [1, BLOCK_C]."""
    w_row = w_chan + r * stride_wr
    w0 = tl.load(w_row, mask=mask_k, other=0.0).to(tl.float32)[None, :]
    w1 = tl.load(w_row + stride_ws, mask=mask_k, other=0.0).to(tl.float32)[None, :]
    w2 = tl.load(w_row + 2 * stride_ws, mask=mask_k, other=0.0).to(tl.float32)[None, :]
    return w0, w1, w2


@triton.jit
def _input_row(x_img, top, i, H, stride_xh, x_cols0, x_cols1, x_cols2, ok0, ok1, ok2, x_chan, mask_k,
               ROWS: tl.constexpr, INT64: tl.constexpr):
    """The three column-shifted [BLOCK_Q, BLOCK_C] tiles of the strip's input row i, input row
    ``top + i``, as stored (zeros above and below the input, and past the strip's ROWS rows)."""
    ih = top + i
    if INT64:
        ih = ih.to(tl.int64)
    inside = (ih >= 0) & (ih < H) & (i < ROWS)
    x_row = x_img + ih * stride_xh
    x0 = tl.load((x_row + x_cols0)[:, None] + x_chan, mask=(ok0 & inside)[:, None] & mask_k[None, :], other=0.0)
    x1 = tl.load((x_row + x_cols1)[:, None] + x_chan, mask=(ok1 & inside)[:, None] & mask_k[None, :], other=0.0)
    x2 = tl.load((x_row + x_cols2)[:, None] + x_chan, mask=(ok2 & inside)[:, None] & mask_k[None, :], other=0.0)
    return x0, x1, x2


@triton.jit(do_not_specialize=["N", "H", "W", "P", "Q", "stride_h", "stride_w", "pad_h", "pad_w", "dil_h", "dil_w"])
def conv2d_depthwise_rows_kernel(
    x_ptr, w_ptr, out_ptr, bias_ptr, res_ptr,  # as in conv2d_depthwise_kernel
    N, H, W, P, Q, K,
    stride_h, stride_w, pad_h, pad_w, dil_h, dil_w,  # dil_h = dil_w = 1 (the launcher's rule)
    stride_xn, stride_xc, stride_xh, stride_xw,
    stride_wk, stride_wc, stride_wr, stride_ws,
    stride_on, stride_ok, stride_op, stride_oq,
    stride_rn, stride_rk, stride_rp, stride_rq,
    alpha, beta,
    R: tl.constexpr, S: tl.constexpr,  # 3 and 3
    MULTIPLIER: tl.constexpr,
    ACTIVATION: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_RESIDUAL: tl.constexpr,
    BLOCK_P: tl.constexpr,  # output rows per program (the strip)
    BLOCK_Q: tl.constexpr,  # output columns per program
    BLOCK_C: tl.constexpr,  # output channels per program
    INT64: tl.constexpr,
    STRIDE_H: tl.constexpr = 1,  # the row stride, 1 or 2 (stride_h)
    PREFETCH: tl.constexpr = True,  # load the next input row(s) before this one's multiply-adds
):
    tl.static_assert(R == 3 and S == 3, "depthwise_rows computes 3x3 filters")
    tl.static_assert(STRIDE_H == 1 or STRIDE_H == 2, "depthwise_rows streams rows at stride 1 or 2")
    pid = tl.program_id(0)
    tiles_q = tl.cdiv(Q, BLOCK_Q)
    strips = tl.cdiv(P, BLOCK_P)
    n = pid // (strips * tiles_q)
    rest = pid % (strips * tiles_q)
    p0 = (rest // tiles_q) * BLOCK_P
    q_idx = (rest % tiles_q) * BLOCK_Q + tl.arange(0, BLOCK_Q)
    k_idx = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    if INT64:
        n = n.to(tl.int64)
        q_idx = q_idx.to(tl.int64)
        k_idx = k_idx.to(tl.int64)
    n_idx = tl.zeros_like(q_idx) + n
    mask_q = q_idx < Q
    mask_k = k_idx < K
    x_img = x_ptr + n * stride_xn
    x_chan = ((k_idx // MULTIPLIER) * stride_xc)[None, :]
    w_chan = w_ptr + k_idx * stride_wk

    # The filter's nine weight vectors, loaded once for the whole strip.
    w00, w01, w02 = _filter_row(w_chan, 0, stride_wr, stride_ws, mask_k)
    w10, w11, w12 = _filter_row(w_chan, 1, stride_wr, stride_ws, mask_k)
    w20, w21, w22 = _filter_row(w_chan, 2, stride_wr, stride_ws, mask_k)

    # The three input columns of each output column, and whether they lie inside the input.
    iw0 = q_idx * stride_w - pad_w
    iw1 = iw0 + 1
    iw2 = iw0 + 2
    ok0 = mask_q & (iw0 >= 0) & (iw0 < W)
    ok1 = mask_q & (iw1 >= 0) & (iw1 < W)
    ok2 = mask_q & (iw2 >= 0) & (iw2 < W)
    x_cols0 = iw0 * stride_xw
    x_cols1 = iw1 * stride_xw
    x_cols2 = iw2 * stride_xw

    top = p0 * STRIDE_H - pad_h  # the strip's first input row
    if STRIDE_H == 1:
        older = tl.zeros((BLOCK_Q, BLOCK_C), dtype=tl.float32)  # output row p0 + i - 2: two rows in
        newer = tl.zeros((BLOCK_Q, BLOCK_C), dtype=tl.float32)  # output row p0 + i - 1: one row in
        if PREFETCH:
            n0, n1, n2 = _input_row(x_img, top, 0, H, stride_xh, x_cols0, x_cols1, x_cols2, ok0, ok1, ok2,
                                    x_chan, mask_k, BLOCK_P + 2, INT64)
        for i in range(0, BLOCK_P + 2):
            if PREFETCH:
                x0, x1, x2 = n0, n1, n2
                n0, n1, n2 = _input_row(x_img, top, i + 1, H, stride_xh, x_cols0, x_cols1, x_cols2,
                                        ok0, ok1, ok2, x_chan, mask_k, BLOCK_P + 2, INT64)
            else:
                x0, x1, x2 = _input_row(x_img, top, i, H, stride_xh, x_cols0, x_cols1, x_cols2,
                                        ok0, ok1, ok2, x_chan, mask_k, BLOCK_P + 2, INT64)
            x0 = x0.to(tl.float32)
            x1 = x1.to(tl.float32)
            x2 = x2.to(tl.float32)
            done = older + x0 * w20 + x1 * w21 + x2 * w22
            p = p0 + i - 2
            store_output_tile(
                done, out_ptr, bias_ptr, res_ptr, n_idx, tl.zeros_like(q_idx) + p, q_idx,
                mask_q & (i >= 2) & (p < P), k_idx, mask_k,
                stride_on, stride_ok, stride_op, stride_oq, stride_rn, stride_rk, stride_rp, stride_rq,
                alpha, beta, ACTIVATION, HAS_BIAS, HAS_RESIDUAL,
            )
            older = newer + x0 * w10 + x1 * w11 + x2 * w12
            newer = x0 * w00 + x1 * w01 + x2 * w02
    else:
        # Row stride 2: output row p reads input rows 2p, 2p + 1, 2p + 2 of the strip, and row
        # 2p + 2 is also row 0 of output p + 1. Each step takes two new input rows and completes
        # one output row; ``carry`` is the next output row's filter-row-0 sum.
        x0, x1, x2 = _input_row(x_img, top, 0, H, stride_xh, x_cols0, x_cols1, x_cols2, ok0, ok1, ok2,
                                x_chan, mask_k, 2 * BLOCK_P + 1, INT64)
        carry = x0.to(tl.float32) * w00 + x1.to(tl.float32) * w01 + x2.to(tl.float32) * w02
        if PREFETCH:
            a0, a1, a2 = _input_row(x_img, top, 1, H, stride_xh, x_cols0, x_cols1, x_cols2, ok0, ok1, ok2,
                                    x_chan, mask_k, 2 * BLOCK_P + 1, INT64)
            b0, b1, b2 = _input_row(x_img, top, 2, H, stride_xh, x_cols0, x_cols1, x_cols2, ok0, ok1, ok2,
                                    x_chan, mask_k, 2 * BLOCK_P + 1, INT64)
        for j in range(0, BLOCK_P):
            if PREFETCH:
                m0, m1, m2, y0, y1, y2 = a0, a1, a2, b0, b1, b2
                a0, a1, a2 = _input_row(x_img, top, 2 * j + 3, H, stride_xh, x_cols0, x_cols1, x_cols2,
                                        ok0, ok1, ok2, x_chan, mask_k, 2 * BLOCK_P + 1, INT64)
                b0, b1, b2 = _input_row(x_img, top, 2 * j + 4, H, stride_xh, x_cols0, x_cols1, x_cols2,
                                        ok0, ok1, ok2, x_chan, mask_k, 2 * BLOCK_P + 1, INT64)
            else:
                m0, m1, m2 = _input_row(x_img, top, 2 * j + 1, H, stride_xh, x_cols0, x_cols1, x_cols2,
                                        ok0, ok1, ok2, x_chan, mask_k, 2 * BLOCK_P + 1, INT64)
                y0, y1, y2 = _input_row(x_img, top, 2 * j + 2, H, stride_xh, x_cols0, x_cols1, x_cols2,
                                        ok0, ok1, ok2, x_chan, mask_k, 2 * BLOCK_P + 1, INT64)
            y0 = y0.to(tl.float32)
            y1 = y1.to(tl.float32)
            y2 = y2.to(tl.float32)
            done = (carry + m0.to(tl.float32) * w10 + m1.to(tl.float32) * w11 + m2.to(tl.float32) * w12
                    + y0 * w20 + y1 * w21 + y2 * w22)
            p = p0 + j
            store_output_tile(
                done, out_ptr, bias_ptr, res_ptr, n_idx, tl.zeros_like(q_idx) + p, q_idx,
                mask_q & (p < P), k_idx, mask_k,
                stride_on, stride_ok, stride_op, stride_oq, stride_rn, stride_rk, stride_rp, stride_rq,
                alpha, beta, ACTIVATION, HAS_BIAS, HAS_RESIDUAL,
            )
            carry = y0 * w00 + y1 * w01 + y2 * w02
