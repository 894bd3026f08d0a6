"""A 1x1, stride-1, unpadded convolution of an NCHW input is one GEMM per image, with the
pixels contiguous on both sides:

    out[n, k, p] = sum_c w[k, c] * x[n, c, p],   p = h*W + w over the H*W pixels

The implicit GEMM reads an NCHW input as (pixels x channels) tiles whose pixel addresses
it decodes from a flat index over N*P*Q, so it cannot prove them contiguous: every element
is its own 2- or 4-byte load, and every output element its own store. Here a program
owns a tile of one image's pixels, so the (channels x pixels) input tile is rows of
contiguous pixels (16-byte loads, pipelined as asynchronous copies) and the output tile is
stored the same way; the input tile reaches the tensor cores transposed (a pixel-major A
operand, which wgmma reads for 16-bit types). Shallow 1x1 layers (ResNet-50's 64- to
512-channel ones) are where this matters: a channels_last copy first (``staged_nhwc``)
costs more than their GEMM (H200, 2026-11-23: 0.54x-0.78x cuDNN either way).

The epilogue is the shared one (:func:`tileconv.kernels.common.epilogue`: bias, residual,
activation) with the store along the pixels; the output's pixels are contiguous (the
launcher's rule).
"""

import triton
import triton.language as tl

from .common import epilogue, swizzle_tile


# PIXELS is specialised (Triton notes whether it is a multiple of 16): the pixel mask is
# then uniform over 16-byte runs and the loads and stores are 16 bytes wide.
@triton.jit(do_not_specialize=["W"])
def conv1x1_nchw_kernel(
    x_ptr,  # input [N, C, H, W] through its strides; X_FLAT: pixel p at offset p
    w_ptr,  # weight [K, C] (the [K, C, 1, 1] weight's rows) through stride_wk, stride_wc
    out_ptr,  # output [N, K, H, W], pixels contiguous: (n, k, p) at n*stride_on + k*stride_ok + p
    bias_ptr,  # bias [K] (read only if HAS_BIAS)
    res_ptr,  # residual [N, K, H, W] through its strides (read only if HAS_RESIDUAL)
    K, C, PIXELS, W,  # output channels, input channels, H * W, width
    stride_xn, stride_xc, stride_xh, stride_xw,
    stride_wk, stride_wc,
    stride_on, stride_ok,
    stride_rn, stride_rk, stride_rh, stride_rw,
    alpha, beta,  # activation parameters (tileconv.epilogue.Activation)
    ACTIVATION: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_RESIDUAL: tl.constexpr,
    X_FLAT: tl.constexpr,  # stride_xw == 1 and stride_xh == W: pixel p is at offset p
    BLOCK_M: tl.constexpr,  # pixels of one image per program
    BLOCK_N: tl.constexpr,  # output channels per program
    BLOCK_K: tl.constexpr,  # input channels per step
    GROUP_M: tl.constexpr,
    DOT_PRECISION: tl.constexpr, UPCAST_DOT: tl.constexpr,  # see config.dot_constexprs
    INT64: tl.constexpr,  # some tensor has >= 2**31 elements: index in int64
):
    image = tl.program_id(1)
    num_m = tl.cdiv(PIXELS, BLOCK_M)
    num_n = tl.cdiv(K, BLOCK_N)
    pid_m, pid_n = swizzle_tile(tl.program_id(0), num_m, num_n, GROUP_M)
    if INT64:
        image = image.to(tl.int64)
        pid_m = pid_m.to(tl.int64)
    offs_p = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_k = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_c = tl.arange(0, BLOCK_K)
    if INT64:
        offs_k = offs_k.to(tl.int64)
        offs_c = offs_c.to(tl.int64)
    mask_p = offs_p < PIXELS
    mask_k = offs_k < K
    row = offs_p // W
    column = offs_p - row * W
    if X_FLAT:
        x_pixel = offs_p
    else:
        x_pixel = row * stride_xh + column * stride_xw
    x_image = x_ptr + image * stride_xn
    w_rows = w_ptr + offs_k * stride_wk

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for c0 in range(0, C, BLOCK_K):
        c = c0 + offs_c
        mask_c = c < C
        # (channels x pixels): rows of contiguous pixels.
        a = tl.load(x_image + (c * stride_xc)[:, None] + x_pixel[None, :],
                    mask=mask_c[:, None] & mask_p[None, :], other=0.0)
        # (channels x output channels): columns of contiguous channels (a K-major B).
        b = tl.load(w_rows[None, :] + (c * stride_wc)[:, None], mask=mask_c[:, None] & mask_k[None, :], other=0.0)
        if UPCAST_DOT:
            a = a.to(tl.float32)
            b = b.to(tl.float32)
        acc = tl.dot(tl.trans(a), b, acc, input_precision=DOT_PRECISION)

    # The shared epilogue, stored along the pixels.
    acc = epilogue(acc, bias_ptr, res_ptr, image, row, column, mask_p, offs_k, mask_k,
                   stride_rn, stride_rk, stride_rh, stride_rw, alpha, beta, ACTIVATION, HAS_BIAS, HAS_RESIDUAL)
    mask = mask_p[:, None] & mask_k[None, :]
    out_offs = image * stride_on + (offs_k * stride_ok)[None, :] + offs_p[:, None]
    tl.store(out_ptr + out_offs, acc.to(out_ptr.dtype.element_ty), mask=mask)
