"""Depthwise convolution over small planes on the tensor cores: one GEMM per channel.

Late in a network the planes are small (7x7 in ResNet's, MobileNet's and ConvNeXt's last
stage) while depthwise filters grow (RepLKNet's 13x13 at 7x7): a 13x13 filter padded by 6
over a 7x7 plane does 169 taps an output, 120 of them in the padding, and every one of them
is a load and a multiply-add for the CUDA-core kernels (cuDNN took 399 us on the 13x13 c1024
hw7 row at batch 32, the direct kernel 74 us; H200, seventh session). Yet each output
channel's whole convolution is one linear map from its H*W input plane to its P*Q output
plane:

    out[n, k, (p, q)] = sum_{(h, w)}  x[n, k // MULT, (h, w)] * T[k, (h, w), (p, q)]
    T[k, (h, w), (p, q)] = w[k, 0, r, s]  where h = p*U - pad_h + r*dil_h and
                                                w = q*V - pad_w + s*dil_w, else 0

a GEMM per channel with the images as M: [N x H*W] @ [H*W x P*Q]. T holds only the taps that
land inside the plane (49 of 169 a column for the 13x13 at 7x7, every tap of a 3x3 away from
the border), it depends only on the filter and the geometry, so it is derived once per
weight version (:func:`tileconv.kernels.weights.plane_weight`), and with planes of at most 64
pixels it is at most 64x64 a channel: the tensor cores do the padded taps' work for free and
the kernel moves the input, the output and T once each. Each program owns BLOCK_N images by
BLOCK_C channels: one channel (a 2D GEMM, wgmma from 64 images; an NCHW plane is one contiguous
run) or several (a batched GEMM over the channels, mma.sync; in channels_last the channels
of a pixel are the contiguous run). Any stride, padding, dilation, channel multiplier,
layout, dtype and the fused epilogue.

T's zeros multiply inputs outside an output's window: a NaN/Inf there would poison outputs
that PyTorch leaves finite, so a tile whose sums are not all finite (rare; one check a
tile) is redone tap by tap on the CUDA cores, as in :mod:`.depthwise_toeplitz`.
"""

import triton
import triton.language as tl

from .common import store_output_tile


@triton.jit(do_not_specialize=["N", "H", "W", "P", "Q", "stride_h", "stride_w", "pad_h", "pad_w", "dil_h", "dil_w", "R", "S"])
def conv2d_depthwise_plane_kernel(
    x_ptr,  # input [N, C, H, W] through strides stride_xn.. (any layout)
    t_ptr,  # plane maps [K, HW_PAD, PQ_PAD], contiguous (weights.plane_weight)
    w_ptr,  # weight [K, 1, R, S] through strides stride_wk.. (the NaN redo's taps)
    out_ptr, bias_ptr, res_ptr,
    N, H, W, P, Q, K,
    stride_h, stride_w, pad_h, pad_w, dil_h, dil_w,
    stride_xn, stride_xc, stride_xh, stride_xw,
    stride_wk, stride_wc, stride_wr, stride_ws,
    stride_on, stride_ok, stride_op, stride_oq,
    stride_rn, stride_rk, stride_rp, stride_rq,
    alpha, beta,
    R, S,
    MULTIPLIER: tl.constexpr,  # K / C
    ACTIVATION: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_RESIDUAL: tl.constexpr,
    BLOCK_N: tl.constexpr,  # images per program: the GEMM's M
    BLOCK_C: tl.constexpr,  # output channels per program: the batch
    HW_PAD: tl.constexpr,  # H*W rounded up to a power of two (>= 16): the GEMM's reduction
    PQ_PAD: tl.constexpr,  # P*Q rounded up likewise: the GEMM's N
    DOT_PRECISION: tl.constexpr, UPCAST_DOT: tl.constexpr,
    INT64: tl.constexpr,
):
    n_idx = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    k_idx = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    pix = tl.arange(0, HW_PAD)  # input pixel h*W + w
    opix = tl.arange(0, PQ_PAD)  # output pixel p*Q + q
    if INT64:
        n_idx = n_idx.to(tl.int64)
        k_idx = k_idx.to(tl.int64)
        pix = pix.to(tl.int64)
        opix = opix.to(tl.int64)
    mask_n = n_idx < N
    mask_k = k_idx < K
    h = pix // W
    w = pix - h * W
    # [C, N, 1]: each channel's plane in each image; output channel k reads input k // MULTIPLIER.
    x_plane = ((k_idx // MULTIPLIER) * stride_xc)[:, None, None] + (x_ptr + n_idx * stride_xn)[None, :, None]
    ok_plane = mask_k[:, None, None] & mask_n[None, :, None]
    a = tl.load(x_plane + (h * stride_xh + w * stride_xw)[None, None, :],
                mask=ok_plane & (pix < H * W)[None, None, :], other=0.0)
    t_chan = t_ptr + k_idx * (HW_PAD * PQ_PAD)
    b = tl.load(t_chan[:, None, None] + (pix * PQ_PAD)[None, :, None] + opix[None, None, :],
                mask=mask_k[:, None, None], other=0.0)
    if UPCAST_DOT:
        a = a.to(tl.float32)
        b = b.to(tl.float32)
    if BLOCK_C == 1:  # one channel: a plain 2D GEMM (wgmma from 64 images, mma.sync below)
        acc = tl.reshape(tl.dot(tl.reshape(a, (BLOCK_N, HW_PAD)), tl.reshape(b, (HW_PAD, PQ_PAD)),
                                input_precision=DOT_PRECISION), (1, BLOCK_N, PQ_PAD))
    else:  # batched over the channels (mma.sync)
        acc = tl.dot(a, b, input_precision=DOT_PRECISION)

    p_idx = opix // Q
    q_idx = opix - p_idx * Q
    mask_pq = opix < P * Q
    # A NaN/Inf input times T's zeros is NaN in every output of its plane, not only in those
    # whose window holds it: where the tile's sums are not all finite, redo it tap by tap.
    if tl.sum(tl.where(tl.abs(acc) < float("inf"), 0, 1)) > 0:
        acc = tl.zeros((BLOCK_C, BLOCK_N, PQ_PAD), dtype=tl.float32)
        w_chan = w_ptr + k_idx * stride_wk
        for r in range(0, R):
            ih = p_idx * stride_h - pad_h + r * dil_h
            for s in range(0, S):
                iw = q_idx * stride_w - pad_w + s * dil_w
                inside = mask_pq & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
                xv = tl.load(x_plane + (ih * stride_xh + iw * stride_xw)[None, None, :],
                             mask=ok_plane & inside[None, None, :], other=0.0)
                wv = tl.load(w_chan + r * stride_wr + s * stride_ws, mask=mask_k, other=0.0)
                acc += xv.to(tl.float32) * wv.to(tl.float32)[:, None, None]

    # [C, N, PQ] -> [N * PQ, C]: the tile's output pixels against its channels, for the shared epilogue.
    acc = tl.reshape(tl.permute(acc, (1, 2, 0)), (BLOCK_N * PQ_PAD, BLOCK_C))
    rows = tl.arange(0, BLOCK_N * PQ_PAD)
    if INT64:
        rows = rows.to(tl.int64)
    out_n = tl.program_id(0) * BLOCK_N + rows // PQ_PAD
    out_pix = rows % PQ_PAD
    out_p = out_pix // Q
    out_q = out_pix - out_p * Q
    store_output_tile(
        acc, out_ptr, bias_ptr, res_ptr, out_n, out_p, out_q, (out_n < N) & (out_pix < P * Q), k_idx, mask_k,
        stride_on, stride_ok, stride_op, stride_oq, stride_rn, stride_rk, stride_rp, stride_rq,
        alpha, beta, ACTIVATION, HAS_BIAS, HAS_RESIDUAL,
    )
