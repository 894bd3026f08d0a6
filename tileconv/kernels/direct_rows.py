"""Direct convolution of dense few-channel problems on the CUDA cores, over output row segments.

The seed's part 4 problem (C = 6 input and K = 6 output channels, a 6x6 filter over a
768x512 image, SEEDS.md) does 216 multiply-adds an output and has too few channels for a
tensor-core tile: its GEMM's N would be 6 of wgmma's 8 and its reduction a gather of 4-byte
values 24 bytes apart. In strict fp32 the tensor cores' error-compensated TF32 pays three
products for each one; cuDNN runs such problems on the FMA units.

Each program here owns BLOCK_Q consecutive output columns of one output row, for every
output channel at once: an accumulator tile of (all K, padded to BLOCK_K) x BLOCK_Q in fp32
registers, each thread holding all K channels of a few columns. At every tap (c, r, s) it
loads the BLOCK_Q input values that the columns read (one row segment, shifted by the tap)
and the K weights of the tap, and adds their outer product: each input value loaded feeds
K multiply-adds without leaving the thread, the row segment's address is the tap's constant
offset from the column's, and without padding no tap is masked. A program steps through
BLOCK_P output rows, so its filter taps' weights stay in L1 between rows; at a unit row
stride and dilation it takes them two at a time (PAIR), each input row loaded once for both.

Float32 (strict or TF32 problems alike: it computes in IEEE fp32), any layout (the loads go
through strides), stride, padding and dilation; groups = 1, K <= 16.
"""

import triton
import triton.language as tl

from .common import store_output_tile


# Sizes are not specialised (one compile serves many images); strides and dilations are, so
# that a unit step makes a tap's offset from the column's address a constant of the load.
@triton.jit(do_not_specialize=["N", "H", "W", "P", "Q", "pad_h", "pad_w"])
def conv2d_direct_rows_kernel(
    x_ptr,  # input  [N, C, H, W] through strides stride_xn.. (any layout)
    w_ptr,  # weight (C, R, S, BLOCK_K) contiguous, zeros past K (padded_channel_minor_weight)
    out_ptr,  # output [N, K, P, Q] through strides stride_on..
    bias_ptr,  # bias [K] (read only if HAS_BIAS)
    res_ptr,  # residual [N, K, P, Q] (read only if HAS_RESIDUAL)
    N, H, W, P, Q, K, C,
    stride_h, stride_w, pad_h, pad_w, dil_h, dil_w,
    stride_xn, stride_xc, stride_xh, stride_xw,
    stride_on, stride_ok, stride_op, stride_oq,
    stride_rn, stride_rk, stride_rp, stride_rq,
    alpha, beta,
    R: tl.constexpr, S: tl.constexpr,  # filter size (the taps unrolled)
    ACTIVATION: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_RESIDUAL: tl.constexpr,
    BLOCK_Q: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_P: tl.constexpr,
    INT64: tl.constexpr,
    PADDED: tl.constexpr,  # a tap may fall in the padding (else only the last tile's columns are masked)
    PAIR: tl.constexpr,  # output rows two at a time (unit row stride and dilation, BLOCK_P even)
):
    # One axis over (image, row block, column block), columns fastest: neighbouring programs
    # read the same input rows.
    pid = tl.program_id(0)
    tiles_q = tl.cdiv(Q, BLOCK_Q)
    tiles_p = tl.cdiv(P, BLOCK_P)
    pid_q = pid % tiles_q
    pid_p = (pid // tiles_q) % tiles_p
    n = pid // (tiles_q * tiles_p)
    offs_q = pid_q * BLOCK_Q + tl.arange(0, BLOCK_Q)
    if INT64:  # offsets within an image, and the image's, may pass 2**31
        n = n.to(tl.int64)
        offs_q = offs_q.to(tl.int64)
    offs_k = tl.arange(0, BLOCK_K)
    mask_q = offs_q < Q
    mask_k = offs_k < K
    if PADDED:
        iw0 = offs_q * stride_w - pad_w
    else:  # the last tile's columns past Q read column Q-1's inputs (never stored): no masks
        iw0 = tl.minimum(offs_q, Q - 1) * stride_w
    # The columns' addresses at tap (0, 0); a tap (r, s) is a scalar offset from them (a
    # constant where the strides are 1: the load's immediate), added to the pointers, not to
    # the 32-bit column indices (whose sign extension would keep it out of the load).
    x_cols = x_ptr + n * stride_xn + iw0 * stride_xw
    w_taps = w_ptr + offs_k  # + ((c*R + r)*S + s)*BLOCK_K: aligned vectors, a constant step a tap
    if PAIR:
        # Rows two at a time: along a unit row stride and dilation output rows p and p+1 read
        # input rows p .. p+R, so each input row segment loaded feeds both (R+1 rows loaded for
        # 2R row-taps).
        for pp in range(0, BLOCK_P, 2):
            p = pid_p * BLOCK_P + pp
            if INT64:
                p = p.to(tl.int64)
            if p < P:
                ih0 = p - pad_h
                acc0 = tl.zeros((BLOCK_K, BLOCK_Q), dtype=tl.float32)
                acc1 = tl.zeros((BLOCK_K, BLOCK_Q), dtype=tl.float32)
                x_chan = x_cols
                w_chan = w_taps
                for _c in range(0, C):
                    for j in tl.static_range(R + 1):
                        ih = ih0 + j
                        if not PADDED:  # the second row past P (a tail) reads row H-1, never stored
                            ih = tl.minimum(ih, H - 1)
                        x_row = x_chan + ih * stride_xh
                        for s in tl.static_range(S):
                            xv = _row_tap(x_row, ih, iw0, mask_q, H, W, s, dil_w, stride_xw, PADDED)[None, :]
                            if j < R:
                                acc0 += tl.load(w_chan + (j * S + s) * BLOCK_K)[:, None] * xv
                            if j >= 1:
                                acc1 += tl.load(w_chan + ((j - 1) * S + s) * BLOCK_K)[:, None] * xv
                    x_chan += stride_xc
                    w_chan += R * S * BLOCK_K
                store_output_tile(
                    tl.trans(acc0), out_ptr, bias_ptr, res_ptr, n, p, offs_q, mask_q, offs_k, mask_k,
                    stride_on, stride_ok, stride_op, stride_oq, stride_rn, stride_rk, stride_rp, stride_rq,
                    alpha, beta, ACTIVATION, HAS_BIAS, HAS_RESIDUAL,
                )
                store_output_tile(
                    tl.trans(acc1), out_ptr, bias_ptr, res_ptr, n, p + 1, offs_q, mask_q & (p + 1 < P), offs_k,
                    mask_k, stride_on, stride_ok, stride_op, stride_oq, stride_rn, stride_rk, stride_rp, stride_rq,
                    alpha, beta, ACTIVATION, HAS_BIAS, HAS_RESIDUAL,
                )
    else:
        for pp in range(0, BLOCK_P):
            p = pid_p * BLOCK_P + pp
            if INT64:
                p = p.to(tl.int64)
            if p < P:
                ih0 = p * stride_h - pad_h
                acc = tl.zeros((BLOCK_K, BLOCK_Q), dtype=tl.float32)
                x_chan = x_cols  # the pointers move a channel a step (64-bit: no index overflow)
                w_chan = w_taps
                for _c in range(0, C):
                    for r in tl.static_range(R):
                        ih = ih0 + r * dil_h
                        x_row = x_chan + ih * stride_xh
                        for s in tl.static_range(S):
                            xv = _row_tap(x_row, ih, iw0, mask_q, H, W, s, dil_w, stride_xw, PADDED)
                            acc += tl.load(w_chan + (r * S + s) * BLOCK_K)[:, None] * xv[None, :]
                    x_chan += stride_xc
                    w_chan += R * S * BLOCK_K
                store_output_tile(
                    tl.trans(acc), out_ptr, bias_ptr, res_ptr, n, p, offs_q, mask_q, offs_k, mask_k,
                    stride_on, stride_ok, stride_op, stride_oq, stride_rn, stride_rk, stride_rp, stride_rq,
                    alpha, beta, ACTIVATION, HAS_BIAS, HAS_RESIDUAL,
                )


@triton.jit
def _row_tap(x_row, ih, iw0, mask_q, H, W, s: tl.constexpr, dil_w, stride_xw, PADDED: tl.constexpr):
    """The columns' inputs at filter column ``s`` of input row ``ih`` (``x_row`` its columns'
    addresses at tap 0): zeros in the padding where there is padding, else no masks (every
    tap of a column q < Q is inside the input)."""
    if PADDED:
        iw = iw0 + s * dil_w
        ok = mask_q & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
        return tl.load(x_row + s * dil_w * stride_xw, mask=ok, other=0.0)
    return tl.load(x_row + s * dil_w * stride_xw)
