"""Stride-1 "same" NHWC convolution as an implicit GEMM whose A tiles are shifted windows of
the input's pixel matrix, fetched by TMA whatever the width of the rows.

A channels_last input is a matrix X of N*H*W pixel rows by C channels, and so is the output
(N*P*Q rows by K channels). When the convolution keeps the image size (stride 1 and
P = H, Q = W: "same" padding, 2*pad = dil*(R-1)), output pixel m = (n*H + p)*W + q reads,
through tap (r, s), input pixel

    m + (r*dil_h - pad_h)*W + (s*dil_w - pad_w)

so the A tile of BLOCK_M consecutive output pixels for one tap is BLOCK_M consecutive rows
of X, shifted by a constant: one box of a 2D tensor descriptor over X, at any row width and
across row and image boundaries (``tma_rows`` needs one output row a tile, and wastes the
rest of a segment on narrow rows: seed000's and ResNet-50's 14-wide rows). The rows a shift
carries across a border (past the left or right edge into the neighbouring row, past the top
or bottom into the neighbouring image) are the padding: a row mask per tap, two compares
on the tile's [BLOCK_M] (p, q) vectors, zeroes them in registers before the product; rows
before the first pixel or past the last come back as zeros from the copy engine. The price
of the mask is that A reaches wgmma from registers (the weight tile stays in shared memory).

The weight is the 3D descriptor ``tma_rows`` reads, [K, R*S, C] with box [BLOCK_N, 1,
BLOCK_K]: channels past C read as zeros, so C need not be a multiple of BLOCK_K. The output
is the (N*P*Q, K) matrix: the persistent form stores its tiles by TMA, 2D boxes.

- ``conv2d_tma_shift_kernel``: one tile a program, the shared epilogue's pointer stores.
- ``conv2d_tma_shift_persistent_kernel``: one program an SM walking tiles, tile and
  reduction loops flattened into one software-pipelined loop (tutorial 09), the next tile's
  copies in flight during this tile's epilogue, which leaves by TMA store.
"""

import triton
import triton.language as tl

from .common import dot_acc, epilogue, next_reduction_step, output_pixels, store_output_tile, swizzle_tile


@triton.jit
def _tile_pixels(pid_m, H, W, BLOCK_M: tl.constexpr, INT64: tl.constexpr):
    """The tile's output pixels m (flat), and each one's image n, row p and column q."""
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    if INT64:
        offs_m = offs_m.to(tl.int64)
    n_idx, p_idx, q_idx, _, _ = output_pixels(offs_m, H, W, 1, 1, 0, 0)
    return offs_m, n_idx, p_idx, q_idx


@triton.jit
def _shifted_product(x_desc, w_desc, acc, m0, k0, p_idx, q_idx, c0, tap_r, tap_s, H, W, S,
                     pad_h, pad_w, dil_h, dil_w,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                     DOT_PRECISION: tl.constexpr, UPCAST_DOT: tl.constexpr):
    """acc + one tap's channel block: the tile's input rows as one shifted box, the rows whose
    tap falls outside their image zeroed, times the tap's weight box."""
    dh = tap_r * dil_h - pad_h
    dw = tap_s * dil_w - pad_w
    a = x_desc.load([m0 + dh * W + dw, c0])
    ih = p_idx + dh
    iw = q_idx + dw
    inside = (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
    a = tl.where(inside[:, None], a, tl.zeros_like(a))
    b = w_desc.load([k0, tap_r * S + tap_s, c0]).reshape(BLOCK_N, BLOCK_K)
    return dot_acc(a, b.T, acc, DOT_PRECISION, UPCAST_DOT)


@triton.jit(do_not_specialize=["M", "H", "W", "pad_h", "pad_w", "dil_h", "dil_w", "R", "S"])
def conv2d_tma_shift_kernel(
    x_desc,  # TensorDescriptor over x as (N*H*W, C), block (BLOCK_M, BLOCK_K)
    w_desc,  # TensorDescriptor over the weight as [K, R*S, C], block [BLOCK_N, 1, BLOCK_K]
    out_ptr, bias_ptr, res_ptr,  # output [N, K, P, Q] (strides below), bias [K], residual
    M, H, W, K, C,  # M = N*H*W pixels; the output is H x W too ("same" padding, stride 1)
    pad_h, pad_w, dil_h, dil_w,
    stride_on, stride_ok, stride_op, stride_oq,
    stride_rn, stride_rk, stride_rp, stride_rq,
    alpha, beta,  # activation parameters (tileconv.epilogue.Activation)
    R, S,  # filter size
    ACTIVATION: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_RESIDUAL: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    DOT_PRECISION: tl.constexpr,  # "tf32x3" (strict fp32) or "tf32"; see config.dot_constexprs
    UPCAST_DOT: tl.constexpr,  # interpreter only: tl.dot on bf16 is wrong there, so use fp32
    INT64: tl.constexpr,  # some tensor has >= 2**31 elements: the epilogue indexes in int64
):
    pid_m, pid_n = swizzle_tile(tl.program_id(0), tl.cdiv(M, BLOCK_M), tl.cdiv(K, BLOCK_N), GROUP_M)
    m0 = pid_m * BLOCK_M
    k0 = pid_n * BLOCK_N
    offs_m, n_idx, p_idx, q_idx = _tile_pixels(pid_m, H, W, BLOCK_M, INT64)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    tap_r = 0
    tap_s = 0
    c0 = 0
    for _ in range(0, R * S * tl.cdiv(C, BLOCK_K)):
        acc = _shifted_product(x_desc, w_desc, acc, m0, k0, p_idx, q_idx, c0, tap_r, tap_s, H, W, S,
                               pad_h, pad_w, dil_h, dil_w, BLOCK_M, BLOCK_N, BLOCK_K, DOT_PRECISION, UPCAST_DOT)
        c0, tap_s, tap_r = next_reduction_step(c0, tap_s, tap_r, C, S, BLOCK_K)

    k_idx = k0 + tl.arange(0, BLOCK_N)
    store_output_tile(
        acc, out_ptr, bias_ptr, res_ptr, n_idx, p_idx, q_idx, offs_m < M, k_idx, k_idx < K,
        stride_on, stride_ok, stride_op, stride_oq, stride_rn, stride_rk, stride_rp, stride_rq,
        alpha, beta, ACTIVATION, HAS_BIAS, HAS_RESIDUAL,
    )


@triton.jit(do_not_specialize=["M", "H", "W", "pad_h", "pad_w", "dil_h", "dil_w", "R", "S"])
def conv2d_tma_shift_persistent_kernel(
    x_desc,  # as conv2d_tma_shift_kernel's
    w_desc,
    out_desc,  # TensorDescriptor over the output as (M, K) (NHWC), block (BLOCK_M, BLOCK_N)
    bias_ptr, res_ptr,  # bias [K], residual [N, K, P, Q] (strides below)
    M, H, W, K, C,
    pad_h, pad_w, dil_h, dil_w,
    stride_rn, stride_rk, stride_rp, stride_rq,
    alpha, beta,
    R, S,
    ACTIVATION: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_RESIDUAL: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    DOT_PRECISION: tl.constexpr, UPCAST_DOT: tl.constexpr, INT64: tl.constexpr,
):
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(K, BLOCK_N)
    for tile in tl.range(tl.program_id(0), num_m * num_n, tl.num_programs(0), flatten=True):
        pid_m, pid_n = swizzle_tile(tile, num_m, num_n, GROUP_M)
        m0 = pid_m * BLOCK_M
        k0 = pid_n * BLOCK_N
        offs_m, n_idx, p_idx, q_idx = _tile_pixels(pid_m, H, W, BLOCK_M, INT64)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        tap_r = 0
        tap_s = 0
        c0 = 0
        for _ in range(0, R * S * tl.cdiv(C, BLOCK_K)):
            acc = _shifted_product(x_desc, w_desc, acc, m0, k0, p_idx, q_idx, c0, tap_r, tap_s, H, W, S,
                                   pad_h, pad_w, dil_h, dil_w, BLOCK_M, BLOCK_N, BLOCK_K, DOT_PRECISION, UPCAST_DOT)
            c0, tap_s, tap_r = next_reduction_step(c0, tap_s, tap_r, C, S, BLOCK_K)
        k_idx = k0 + tl.arange(0, BLOCK_N)
        out = epilogue(acc, bias_ptr, res_ptr, n_idx, p_idx, q_idx, offs_m < M, k_idx, k_idx < K,
                       stride_rn, stride_rk, stride_rp, stride_rq, alpha, beta, ACTIVATION, HAS_BIAS, HAS_RESIDUAL)
        out_desc.store([m0, k0], out.to(out_desc.dtype))
