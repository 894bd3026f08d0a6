"""A 1x1, stride-1, unpadded convolution in NHWC is a plain GEMM; this kernel runs it with
Hopper's bulk tensor copies (TMA) feeding the tensor cores.

    out[m, k] = sum_c x2d[m, c] * w2d[k, c],   x2d = x as an (N*H*W, C) matrix (a view of
                                               a channels_last input), w2d = weight as (K, C)

The implicit-GEMM kernel gathers its A tile with per-element address arithmetic and masks
(cp.async); here both operand tiles are one bulk copy each, described once on the host
(``TensorDescriptor``), and out-of-bounds reads (the M, N and C tails) come back as zeros
from the copy engine. The epilogue is the shared one (bias, residual, activation).
1x1 convolutions are ResNet-50's most frequent layers and its furthest behind cuDNN
(benchmarks/NOTES.md). ``conv1x1_tma_persistent_kernel`` is the persistent form: one program
an SM, the tile and reduction loops flattened so that the next tile's copies are in flight
during this tile's epilogue, which leaves through a TMA store (the pattern that made
``tma_rows`` win its short-reduction rows).
"""

import triton
import triton.language as tl

from .common import dot_acc, epilogue, output_pixels, store_output_tile, swizzle_tile


@triton.jit
def conv1x1_tma_kernel(
    a_desc,  # TensorDescriptor over x as (M = N*H*W, C), block (BLOCK_M, BLOCK_K)
    b_desc,  # TensorDescriptor over the weight as (K, C), block (BLOCK_N, BLOCK_K)
    out_ptr, bias_ptr, res_ptr,  # output [N, K, P, Q] (strides below), bias [K], residual
    M, K, C, P, Q,  # GEMM sizes; P = H, Q = W (stride 1, no padding)
    stride_on, stride_ok, stride_op, stride_oq,
    stride_rn, stride_rk, stride_rp, stride_rq,
    alpha, beta,
    ACTIVATION: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_RESIDUAL: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    DOT_PRECISION: tl.constexpr, UPCAST_DOT: tl.constexpr, INT64: tl.constexpr,
):
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(K, BLOCK_N)
    pid_m, pid_n = swizzle_tile(tl.program_id(0), num_m, num_n, GROUP_M)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, tl.cdiv(C, BLOCK_K)):
        a = a_desc.load([pid_m * BLOCK_M, k0 * BLOCK_K])
        b = b_desc.load([pid_n * BLOCK_N, k0 * BLOCK_K])
        acc = dot_acc(a, b.T, acc, DOT_PRECISION, UPCAST_DOT)

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    if INT64:
        offs_m = offs_m.to(tl.int64)
    n_idx, p_idx, q_idx, _, _ = output_pixels(offs_m, P, Q, 1, 1, 0, 0)
    store_output_tile(
        acc, out_ptr, bias_ptr, res_ptr, n_idx, p_idx, q_idx, offs_m < M, offs_n, offs_n < K,
        stride_on, stride_ok, stride_op, stride_oq, stride_rn, stride_rk, stride_rp, stride_rq,
        alpha, beta, ACTIVATION, HAS_BIAS, HAS_RESIDUAL,
    )


@triton.jit
def conv1x1_tma_persistent_kernel(
    a_desc,  # as conv1x1_tma_kernel's
    b_desc,
    out_desc,  # TensorDescriptor over the output as (M, K) (NHWC), block (BLOCK_M, BLOCK_N)
    bias_ptr, res_ptr,
    M, K, C, P, Q,
    stride_rn, stride_rk, stride_rp, stride_rq,
    alpha, beta,
    ACTIVATION: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_RESIDUAL: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    DOT_PRECISION: tl.constexpr, UPCAST_DOT: tl.constexpr, INT64: tl.constexpr,
):
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(K, BLOCK_N)
    for tile in tl.range(tl.program_id(0), num_m * num_n, tl.num_programs(0), flatten=True):
        pid_m, pid_n = swizzle_tile(tile, num_m, num_n, GROUP_M)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k0 in range(0, tl.cdiv(C, BLOCK_K)):
            a = a_desc.load([pid_m * BLOCK_M, k0 * BLOCK_K])
            b = b_desc.load([pid_n * BLOCK_N, k0 * BLOCK_K])
            acc = dot_acc(a, b.T, acc, DOT_PRECISION, UPCAST_DOT)
        offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        if INT64:
            offs_m = offs_m.to(tl.int64)
        n_idx, p_idx, q_idx, _, _ = output_pixels(offs_m, P, Q, 1, 1, 0, 0)
        out = epilogue(acc, bias_ptr, res_ptr, n_idx, p_idx, q_idx, offs_m < M, offs_n, offs_n < K,
                       stride_rn, stride_rk, stride_rp, stride_rq, alpha, beta, ACTIVATION, HAS_BIAS, HAS_RESIDUAL)
        out_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], out.to(out_desc.dtype))
