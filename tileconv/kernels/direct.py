"""Direct convolution on the CUDA cores, for problems where a GEMM wastes the tensor cores.

Depthwise (groups = C, any channel multiplier), grouped convolutions with few channels per
group, and few-channel problems (the seed's C = 6, 6x6 filter, SEEDS.md part 4) do too
little work per output to fill a tensor-core tile: the GEMM's N (= K/groups) or K
(= C/groups * R * S) dimension would be mostly padding. Here every program owns a tile of
BLOCK_M output pixels x BLOCK_N output channels (over all K, so a tile may span groups)
and accumulates

    out[m, k] += x[n, group(k)*C/g + c, p*U - pad_h + r*dil_h, q*V - pad_w + s*dil_w] * w[k, c, r, s]

in fp32 registers over (r, s, c), rows of the window with a mask for the padding halo.
In NHWC the pixel tile reads contiguous channel vectors; in NCHW contiguous pixel runs.
"""

import triton
import triton.language as tl

from .common import output_pixels, pixel_count, store_output_tile


@triton.jit
def _direct_row(acc, x_pix, w_col, c_base, ih0, iw0, mask_m, mask_n, H, W, r, S, C_PER_GROUP,
                dil_h, dil_w, stride_xc, stride_xh, stride_xw, stride_wc, stride_wr, stride_ws,
                DENSE: tl.constexpr, UNROLL_S: tl.constexpr):
    """acc + the tile's taps along filter row r (unrolled when UNROLL_S is the row's length)."""
    ih = ih0 + r * dil_h
    row_ok = mask_m & (ih >= 0) & (ih < H)
    x_row = x_pix + ih * stride_xh
    w_row = w_col + r * stride_wr
    if UNROLL_S > 0:
        for s in tl.static_range(UNROLL_S):
            acc = _direct_tap(acc, x_row, w_row, c_base, row_ok, iw0, mask_n, W, s, C_PER_GROUP,
                              dil_w, stride_xc, stride_xw, stride_wc, stride_ws, DENSE)
    else:
        for s in range(0, S):
            acc = _direct_tap(acc, x_row, w_row, c_base, row_ok, iw0, mask_n, W, s, C_PER_GROUP,
                              dil_w, stride_xc, stride_xw, stride_wc, stride_ws, DENSE)
    return acc


@triton.jit
def _direct_tap(acc, x_row, w_row, c_base, row_ok, iw0, mask_n, W, s, C_PER_GROUP,
                dil_w, stride_xc, stride_xw, stride_wc, stride_ws, DENSE: tl.constexpr):
    """acc + the tile's tap s of one filter row over the group's channels (0 in the padding)."""
    iw = iw0 + s * dil_w
    ok = row_ok & (iw >= 0) & (iw < W)
    x_tap = x_row + iw * stride_xw
    w_tap = w_row + s * stride_ws
    for c in range(0, C_PER_GROUP):
        wv = tl.load(w_tap + c * stride_wc, mask=mask_n, other=0.0)
        if DENSE:
            # groups = 1: every output channel of the tile reads input channel c, so
            # one load per pixel feeds BLOCK_N multiply-adds (an outer product).
            xv = tl.load(x_tap + c * stride_xc, mask=ok, other=0.0)
            acc += xv.to(tl.float32)[:, None] * wv.to(tl.float32)[None, :]
        else:
            xv = tl.load(
                x_tap[:, None] + ((c_base + c) * stride_xc)[None, :],
                mask=ok[:, None] & mask_n[None, :],
                other=0.0,
            )
            acc += xv.to(tl.float32) * wv.to(tl.float32)[None, :]
    return acc


# Spatial sizes and geometry are not specialised, so one compiled kernel serves many
# shapes (first calls stay fast). Strides and channel counts are: their divisibility
# decides whether loads, masks and stores can be 16 bytes wide.
@triton.jit(do_not_specialize=["N", "H", "W", "P", "Q", "stride_h", "stride_w", "pad_h", "pad_w", "dil_h", "dil_w", "R", "S"])
def conv2d_direct_kernel(
    x_ptr,  # input  [N, C, H, W] through strides stride_xn.. (any layout)
    w_ptr,  # weight [K, C/g, R, S] through strides stride_wk..
    out_ptr,  # output [N, K, P, Q] through strides stride_on..
    bias_ptr,  # bias [K] (read only if HAS_BIAS)
    res_ptr,  # residual [N, K, P, Q] (read only if HAS_RESIDUAL)
    N, H, W, P, Q, K,  # batch, input size, output size, output channels
    C_PER_GROUP, K_PER_GROUP,
    stride_h, stride_w, pad_h, pad_w, dil_h, dil_w,
    stride_xn, stride_xc, stride_xh, stride_xw,
    stride_wk, stride_wc, stride_wr, stride_ws,
    stride_on, stride_ok, stride_op, stride_oq,
    stride_rn, stride_rk, stride_rp, stride_rq,
    alpha, beta,
    R, S,  # filter size
    ACTIVATION: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_RESIDUAL: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    INT64: tl.constexpr,
    DENSE: tl.constexpr,  # groups = 1: the input pixel is loaded once for all BLOCK_N output channels
    # R and S as compile-time loop bounds (0: a runtime loop), for small filters: the taps
    # unrolled (see kernels.launch.unrolled_taps).
    UNROLL_R: tl.constexpr = 0, UNROLL_S: tl.constexpr = 0,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    M = pixel_count(N, P, Q, INT64)
    if INT64:  # the tile's first pixel may pass 2**31
        pid_m = pid_m.to(tl.int64)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    if INT64:
        offs_m = offs_m.to(tl.int64)
        offs_n = offs_n.to(tl.int64)
    mask_m = offs_m < M
    mask_n = offs_n < K

    n_idx, p_idx, q_idx, ih0, iw0 = output_pixels(offs_m, P, Q, stride_h, stride_w, pad_h, pad_w)
    # Output channel k reads the input channels of its group.
    c_base = (offs_n // K_PER_GROUP) * C_PER_GROUP
    x_pix = x_ptr + n_idx * stride_xn
    w_col = w_ptr + offs_n * stride_wk

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    if UNROLL_R > 0:
        for r in tl.static_range(UNROLL_R):
            acc = _direct_row(acc, x_pix, w_col, c_base, ih0, iw0, mask_m, mask_n, H, W, r, S, C_PER_GROUP,
                              dil_h, dil_w, stride_xc, stride_xh, stride_xw, stride_wc, stride_wr, stride_ws,
                              DENSE, UNROLL_S)
    else:
        for r in range(0, R):
            acc = _direct_row(acc, x_pix, w_col, c_base, ih0, iw0, mask_m, mask_n, H, W, r, S, C_PER_GROUP,
                              dil_h, dil_w, stride_xc, stride_xh, stride_xw, stride_wc, stride_wr, stride_ws,
                              DENSE, UNROLL_S)

    store_output_tile(
        acc, out_ptr, bias_ptr, res_ptr, n_idx, p_idx, q_idx, mask_m, offs_n, mask_n,
        stride_on, stride_ok, stride_op, stride_oq, stride_rn, stride_rk, stride_rp, stride_rq,
        alpha, beta, ACTIVATION, HAS_BIAS, HAS_RESIDUAL,
    )
