"""3x3 depthwise convolution streaming output rows (groups = C, stride 1 down the rows).

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

so a strip costs three tile loads per input row instead of nine per output row. Filter
3x3, stride 1 and dilation 1 down the rows (the rolling sums assume consecutive rows);
any column stride, padding, channel multiplier, layout and the fused epilogue.
"""

import triton
import triton.language as tl

from .common import store_output_tile


@triton.jit
def _row_taps(x_row, x_cols0, x_cols1, x_cols2, ok0, ok1, ok2, x_chan, mask_k):
    """The three column-shifted [BLOCK_Q, BLOCK_C] tiles of one input row, as fp32."""
    x0 = tl.load((x_row + x_cols0)[:, None] + x_chan, mask=ok0[:, None] & mask_k[None, :], other=0.0)
    x1 = tl.load((x_row + x_cols1)[:, None] + x_chan, mask=ok1[:, None] & mask_k[None, :], other=0.0)
    x2 = tl.load((x_row + x_cols2)[:, None] + x_chan, mask=ok2[:, None] & mask_k[None, :], other=0.0)
    return x0.to(tl.float32), x1.to(tl.float32), x2.to(tl.float32)


@triton.jit(do_not_specialize=["N", "H", "W", "P", "Q", "stride_h", "stride_w", "pad_h", "pad_w", "dil_h", "dil_w"])
def conv2d_depthwise_rows_kernel(
    x_ptr, w_ptr, out_ptr, bias_ptr, res_ptr,  # as in conv2d_depthwise_kernel
    N, H, W, P, Q, K,
    stride_h, stride_w, pad_h, pad_w, dil_h, dil_w,  # stride_h = dil_h = dil_w = 1 (the launcher's rule)
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
):
    tl.static_assert(R == 3 and S == 3, "depthwise_rows computes 3x3 filters")
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
    w00 = tl.load(w_chan, mask=mask_k, other=0.0).to(tl.float32)[None, :]
    w01 = tl.load(w_chan + stride_ws, mask=mask_k, other=0.0).to(tl.float32)[None, :]
    w02 = tl.load(w_chan + 2 * stride_ws, mask=mask_k, other=0.0).to(tl.float32)[None, :]
    w10 = tl.load(w_chan + stride_wr, mask=mask_k, other=0.0).to(tl.float32)[None, :]
    w11 = tl.load(w_chan + stride_wr + stride_ws, mask=mask_k, other=0.0).to(tl.float32)[None, :]
    w12 = tl.load(w_chan + stride_wr + 2 * stride_ws, mask=mask_k, other=0.0).to(tl.float32)[None, :]
    w20 = tl.load(w_chan + 2 * stride_wr, mask=mask_k, other=0.0).to(tl.float32)[None, :]
    w21 = tl.load(w_chan + 2 * stride_wr + stride_ws, mask=mask_k, other=0.0).to(tl.float32)[None, :]
    w22 = tl.load(w_chan + 2 * stride_wr + 2 * stride_ws, mask=mask_k, other=0.0).to(tl.float32)[None, :]

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

    older = tl.zeros((BLOCK_Q, BLOCK_C), dtype=tl.float32)  # output row p0 + i - 2: two rows in
    newer = tl.zeros((BLOCK_Q, BLOCK_C), dtype=tl.float32)  # output row p0 + i - 1: one row in
    for i in range(0, BLOCK_P + 2):
        ih = p0 - pad_h + i
        if INT64:
            ih = ih.to(tl.int64)
        inside = (ih >= 0) & (ih < H)
        x0, x1, x2 = _row_taps(x_img + ih * stride_xh, x_cols0, x_cols1, x_cols2,
                               ok0 & inside, ok1 & inside, ok2 & inside, x_chan, mask_k)
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
