"""Depthwise convolution (groups = C, K = multiplier * C) on the CUDA cores.

Each output channel k reads one input channel, k // MULTIPLIER, so the work per output
is R*S multiply-adds: far too little for a tensor-core tile, and the problem is bound by
memory traffic for small filters. Each program owns a BLOCK_P x BLOCK_Q tile of output
pixels of one image and BLOCK_C channels, and walks the R x S taps; the shifted input
windows of neighbouring taps overlap, so after the first tap they come from L1, and
DRAM sees each input element about once. In NHWC the channel block is contiguous (wide
vector loads); in NCHW the BLOCK_Q pixels of a row are.

    out[n, k, p, q] = sum_{r, s} x[n, k // MULT, p*U - pad_h + r*dil_h, q*V - pad_w + s*dil_w] * w[k, 0, r, s]
"""

import triton
import triton.language as tl

from .common import load_bias, store_output_tile


@triton.jit
def _depthwise_tap(acc, x_row, x_chan, w_row, row_ok, iw0, mask_k, W, s, dil_w, stride_xw, stride_ws):
    """acc + the tile's tap s of one filter row: each pixel's input under the tap (0 in the
    padding) times each channel's weight."""
    iw = iw0 + s * dil_w
    ok = row_ok & (iw >= 0) & (iw < W)
    xv = tl.load((x_row + iw * stride_xw)[:, None] + x_chan, mask=ok[:, None] & mask_k[None, :], other=0.0)
    wv = tl.load(w_row + s * stride_ws, mask=mask_k, other=0.0)
    return acc + xv.to(tl.float32) * wv.to(tl.float32)[None, :]


@triton.jit
def _depthwise_row(acc, x_img, x_chan, w_chan, ih0, iw0, mask_m, mask_k, H, W, r, S,
                   dil_h, dil_w, stride_xh, stride_xw, stride_wr, stride_ws, UNROLL_S: tl.constexpr):
    """acc + the tile's taps along filter row r (unrolled when UNROLL_S is the row's length)."""
    ih = ih0 + r * dil_h
    row_ok = mask_m & (ih >= 0) & (ih < H)
    x_row = x_img + ih * stride_xh
    w_row = w_chan + r * stride_wr
    if UNROLL_S > 0:
        for s in tl.static_range(UNROLL_S):
            acc = _depthwise_tap(acc, x_row, x_chan, w_row, row_ok, iw0, mask_k, W, s, dil_w, stride_xw, stride_ws)
    else:
        for s in range(0, S):
            acc = _depthwise_tap(acc, x_row, x_chan, w_row, row_ok, iw0, mask_k, W, s, dil_w, stride_xw, stride_ws)
    return acc


# Spatial sizes and geometry are not specialised, so one compiled kernel serves many
# shapes (first calls stay fast). Strides and channel counts are: their divisibility
# decides whether loads, masks and stores can be 16 bytes wide.
@triton.jit(do_not_specialize=["N", "H", "W", "P", "Q", "stride_h", "stride_w", "pad_h", "pad_w", "dil_h", "dil_w", "R", "S"])
def conv2d_depthwise_kernel(
    x_ptr,  # input  [N, C, H, W] through strides stride_xn.. (any layout)
    w_ptr,  # weight [K, 1, R, S] through strides stride_wk..
    out_ptr,  # output [N, K, P, Q] through strides stride_on..
    bias_ptr,  # bias [K] (read only if HAS_BIAS)
    res_ptr,  # residual [N, K, P, Q] (read only if HAS_RESIDUAL)
    N, H, W, P, Q, K,
    stride_h, stride_w, pad_h, pad_w, dil_h, dil_w,
    stride_xn, stride_xc, stride_xh, stride_xw,
    stride_wk, stride_wc, stride_wr, stride_ws,
    stride_on, stride_ok, stride_op, stride_oq,
    stride_rn, stride_rk, stride_rp, stride_rq,
    alpha, beta,
    R, S,  # filter size
    MULTIPLIER: tl.constexpr,  # K / C: output channels per input channel
    ACTIVATION: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_RESIDUAL: tl.constexpr,
    BLOCK_P: tl.constexpr, BLOCK_Q: tl.constexpr, BLOCK_C: tl.constexpr,
    INT64: tl.constexpr,
    # R and S as compile-time loop bounds (0: a runtime loop), for small filters: the taps
    # unrolled, so their loads are independent instructions the compiler can issue together
    # rather than one tap's latency after another's (see kernels.launch.unrolled_taps).
    UNROLL_R: tl.constexpr = 0, UNROLL_S: tl.constexpr = 0,
    FOLD_RELU: tl.constexpr = False,  # ReLU folded into the output's conversion (common.apply_activation)
):
    pid_pixels = tl.program_id(0)
    pid_c = tl.program_id(1)
    tiles_q = tl.cdiv(Q, BLOCK_Q)
    tiles_p = tl.cdiv(P, BLOCK_P)
    n = pid_pixels // (tiles_p * tiles_q)
    tile = pid_pixels % (tiles_p * tiles_q)
    offs = tl.arange(0, BLOCK_P * BLOCK_Q)
    p_idx = (tile // tiles_q) * BLOCK_P + offs // BLOCK_Q
    q_idx = (tile % tiles_q) * BLOCK_Q + offs % BLOCK_Q
    k_idx = pid_c * BLOCK_C + tl.arange(0, BLOCK_C)
    n_idx = tl.zeros_like(offs) + n
    if INT64:
        n_idx = n_idx.to(tl.int64)
        k_idx = k_idx.to(tl.int64)
        p_idx = p_idx.to(tl.int64)
        q_idx = q_idx.to(tl.int64)
    mask_m = (p_idx < P) & (q_idx < Q)
    mask_k = k_idx < K
    x_img = x_ptr + n_idx * stride_xn
    x_chan = ((k_idx // MULTIPLIER) * stride_xc)[None, :]
    w_chan = w_ptr + k_idx * stride_wk
    ih0 = p_idx * stride_h - pad_h
    iw0 = q_idx * stride_w - pad_w

    acc = tl.zeros((BLOCK_P * BLOCK_Q, BLOCK_C), dtype=tl.float32)
    if UNROLL_R > 0:
        # The bias read first (into the zeroed sums). Read in the epilogue, ptxas spread the bias +
        # ReLU variant's tile loads among its multiply-adds (106 registers, a memory latency after
        # another; 1.28x-1.37x the time of the plain kernel on the stride-2 rows, session 48, H200);
        # read first, that variant compiles as the plain one does (offline sm_90: 23 of its 28 loads
        # ahead of the first FFMA, 124-125 registers).
        if HAS_BIAS:
            acc += load_bias(bias_ptr, k_idx, mask_k, HAS_BIAS)
        for r in tl.static_range(UNROLL_R):
            acc = _depthwise_row(acc, x_img, x_chan, w_chan, ih0, iw0, mask_m, mask_k, H, W, r, S,
                                 dil_h, dil_w, stride_xh, stride_xw, stride_wr, stride_ws, UNROLL_S)
    else:
        for r in range(0, R):
            acc = _depthwise_row(acc, x_img, x_chan, w_chan, ih0, iw0, mask_m, mask_k, H, W, r, S,
                                 dil_h, dil_w, stride_xh, stride_xw, stride_wr, stride_ws, UNROLL_S)

    store_output_tile(
        acc, out_ptr, bias_ptr, res_ptr, n_idx, p_idx, q_idx, mask_m, k_idx, mask_k,
        stride_on, stride_ok, stride_op, stride_oq, stride_rn, stride_rk, stride_rp, stride_rq,
        alpha, beta, ACTIVATION, HAS_BIAS and UNROLL_R == 0, HAS_RESIDUAL, FOLD_RELU,
    )
