"""Depthwise convolution with large filters on the tensor cores: one Toeplitz GEMM per channel.

A depthwise convolution does R*S multiply-adds per output and nothing in it is a GEMM with a
shared operand, so the CUDA-core kernels (:mod:`.depthwise`, :mod:`.direct`) re-read every
input element once per tap. Their ceiling is the L1 bandwidth, 2 bytes per multiply-add in
fp16 (~16 T multiply-adds/s on an H100/H200): a 31x31 filter at 56x56 (RepLKNet) cannot go
below ~0.8 ms that way. Along one filter row, though, a channel's convolution is a matrix
product with a banded (Toeplitz) matrix built from that row of the filter:

    out[c, m, q] += sum_j  x[c, row(m) + r*dil_h, q0*V - pad_w + j] * T[c, r, j, q - q0]
    T[c, r, j, q] = w[c, r, s]  where j = q*V + s*dil_w (0 <= s < S), else 0

with m running over output rows (image and row, n*P + p), q over a block of BLOCK_Q output
columns and j over the JK input columns that block reads. Per filter row r this is a batched
GEMM, one batch element per channel: [BLOCK_M rows x JK] @ [JK x BLOCK_Q], through the
tensor cores. The band holds S of every JK entries of a column of T, so a fraction S/JK of
the tensor-core work is useful (31/64 for the 31x31 filter), far more than the CUDA cores'
share of the tensor cores' rate; and each input element is loaded once per filter row
(R times), not once per tap (R*S times).

T depends only on the filter, the column stride and dilation and the block size, so it is
derived once per weight version (:func:`tileconv.kernels.weights.toeplitz_weight`) and read
as a contiguous [JK, BLOCK_Q] tile per channel and filter row. Any stride, dilation,
padding, channel multiplier (output channel k reads input channel k // MULTIPLIER), layout
and the fused epilogue.
"""

import triton
import triton.language as tl

from .common import store_output_tile


@triton.jit(do_not_specialize=["N", "H", "W", "P", "Q", "stride_h", "stride_w", "pad_h", "pad_w", "dil_h", "dil_w", "R", "S"])
def conv2d_depthwise_toeplitz_kernel(
    x_ptr,  # input [N, C, H, W] through strides stride_xn.. (any layout)
    t_ptr,  # Toeplitz filter rows [K, R, JK, BLOCK_Q], contiguous (weights.toeplitz_weight)
    out_ptr, bias_ptr, res_ptr,  # as in conv2d_depthwise_kernel
    N, H, W, P, Q, K,
    stride_h, stride_w, pad_h, pad_w, dil_h, dil_w,
    stride_xn, stride_xc, stride_xh, stride_xw,
    stride_on, stride_ok, stride_op, stride_oq,
    stride_rn, stride_rk, stride_rp, stride_rq,
    alpha, beta,
    R, S,  # filter rows (the GEMM's steps) and columns (folded into T; the NaN redo walks them)
    MULTIPLIER: tl.constexpr,  # K / C
    ACTIVATION: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_RESIDUAL: tl.constexpr,
    BLOCK_M: tl.constexpr,  # output rows (n, p) per program: the GEMM's M
    BLOCK_Q: tl.constexpr,  # output columns per program: the GEMM's N
    BLOCK_C: tl.constexpr,  # channels per program: the batch
    JK: tl.constexpr,  # input columns a column block reads: the GEMM's reduction
    DOT_PRECISION: tl.constexpr, UPCAST_DOT: tl.constexpr,
    INT64: tl.constexpr,
    PLANES: tl.constexpr = False,  # x is the launcher's zero-bordered NCHW copy (pad_* = 0 here)
):
    pid = tl.program_id(0)
    tiles_q = tl.cdiv(Q, BLOCK_Q)
    m0 = (pid // tiles_q) * BLOCK_M
    q0 = (pid % tiles_q) * BLOCK_Q
    rows = m0 + tl.arange(0, BLOCK_M)  # flat output rows n*P + p
    k_idx = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    if INT64:
        rows = rows.to(tl.int64)
        k_idx = k_idx.to(tl.int64)
    n_idx = rows // P
    p_idx = rows - n_idx * P
    mask_rows = rows < N * P
    mask_k = k_idx < K
    j = tl.arange(0, JK)
    if PLANES:  # a zero-bordered copy wide enough for every column block: no column mask,
        # and (pad_w = 0 there) the first column's offset is a multiple of BLOCK_Q: wide loads
        iw = q0 * stride_w + j
        cols_ok = tl.full((JK,), 1, tl.int1)
    else:
        iw = q0 * stride_w - pad_w + j  # the input columns of this column block
        cols_ok = (iw >= 0) & (iw < W)

    # [C, M, 1]: each channel's plane in each row's image; output channel k reads input k // MULTIPLIER.
    x_plane = ((k_idx // MULTIPLIER) * stride_xc)[:, None, None] + (x_ptr + n_idx * stride_xn)[None, :, None]
    ih0 = p_idx * stride_h - pad_h  # the first input row of each output row's window
    # A[c, m, j]: channel-major 3D pointers; the channel axis is the contiguous one in NHWC.
    x_base = x_plane + (ih0 * stride_xh)[None, :, None] + (iw * stride_xw)[None, None, :]
    ok_base = mask_k[:, None, None] & mask_rows[None, :, None] & cols_ok[None, None, :]
    t_chan = t_ptr + k_idx * R * (JK * BLOCK_Q)  # channel k's R Toeplitz tiles
    # B[c, j, q]: channel k's [JK, BLOCK_Q] Toeplitz tile of filter row r.
    t_tile = t_chan[:, None, None] + (j * BLOCK_Q)[None, :, None] + tl.arange(0, BLOCK_Q)[None, None, :]

    acc = tl.zeros((BLOCK_C, BLOCK_M, BLOCK_Q), dtype=tl.float32)
    for r in range(0, R):
        ih = ih0 + r * dil_h
        ok = ok_base & ((ih >= 0) & (ih < H))[None, :, None]
        a = tl.load(x_base + r * dil_h * stride_xh, mask=ok, other=0.0)
        b = tl.load(t_tile + r * (JK * BLOCK_Q), mask=mask_k[:, None, None], other=0.0)
        if UPCAST_DOT:
            a = a.to(tl.float32)
            b = b.to(tl.float32)
        if BLOCK_C == 1:  # one channel: a plain 2D GEMM, which Hopper runs as wgmma
            acc = tl.reshape(tl.dot(tl.reshape(a, (BLOCK_M, JK)), tl.reshape(b, (JK, BLOCK_Q)),
                                    tl.reshape(acc, (BLOCK_M, BLOCK_Q)), input_precision=DOT_PRECISION),
                             (1, BLOCK_M, BLOCK_Q))
        else:  # batched over the channels (mma.sync)
            acc = tl.dot(a, b, acc, input_precision=DOT_PRECISION)

    # A NaN/Inf input times the band's zeros is NaN, so it would reach every output of the
    # tile, not only those whose window holds it: where the tile's sums are not all finite
    # (rare; one check per tile), redo it tap by tap on the CUDA cores, as PyTorch computes.
    # w[k, r, s] is T[k, r, s*dil_w, 0].
    if tl.sum(tl.where(tl.abs(acc) < float("inf"), 0, 1)) > 0:
        acc = tl.zeros((BLOCK_C, BLOCK_M, BLOCK_Q), dtype=tl.float32)
        q = q0 + tl.arange(0, BLOCK_Q)
        for r in range(0, R):
            ih = ih0 + r * dil_h
            row_ok = mask_k[:, None, None] & (mask_rows & (ih >= 0) & (ih < H))[None, :, None]
            for s in range(0, S):
                iw_s = q * stride_w - pad_w + s * dil_w
                ok = row_ok & ((iw_s >= 0) & (iw_s < W))[None, None, :]
                xv = tl.load(x_plane + (ih * stride_xh)[None, :, None] + (iw_s * stride_xw)[None, None, :],
                             mask=ok, other=0.0)
                wv = tl.load(t_chan + r * (JK * BLOCK_Q) + s * dil_w * BLOCK_Q, mask=mask_k, other=0.0)
                acc += xv.to(tl.float32) * wv.to(tl.float32)[:, None, None]

    # [C, M, Q] -> [M * Q, C]: the pixels of the tile against its channels, for the shared epilogue.
    acc = tl.reshape(tl.permute(acc, (1, 2, 0)), (BLOCK_M * BLOCK_Q, BLOCK_C))
    pix = tl.arange(0, BLOCK_M * BLOCK_Q)
    q_idx = q0 + pix % BLOCK_Q
    out_rows = m0 + pix // BLOCK_Q
    if INT64:
        out_rows = out_rows.to(tl.int64)
    out_n = out_rows // P
    out_p = out_rows - out_n * P
    store_output_tile(
        acc, out_ptr, bias_ptr, res_ptr, out_n, out_p, q_idx, (out_rows < N * P) & (q_idx < Q), k_idx, mask_k,
        stride_on, stride_ok, stride_op, stride_oq, stride_rn, stride_rk, stride_rp, stride_rq,
        alpha, beta, ACTIVATION, HAS_BIAS, HAS_RESIDUAL,
    )
