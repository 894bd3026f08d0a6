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
``tma_rows`` win its short-reduction rows). With ``STREAM_K`` its last one to two rounds of
tiles are shared evenly among the programs (:mod:`.common`'s stream-K): ResNet-50's 1x1 rows
at batch 32 leave the last round of 128x128 tiles a quarter to a half empty.
"""

import triton
import triton.language as tl

from .common import dot_acc, epilogue, output_pixels, store_output_tile, stream_k_fixup, stream_k_start, swizzle_tile


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
def _tile_product(a_desc, b_desc, pid_m, pid_n, k_begin, k_end,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  DOT_PRECISION: tl.constexpr, UPCAST_DOT: tl.constexpr):
    """Channel blocks [k_begin, k_end) of output tile (pid_m, pid_n), by bulk copies."""
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(k_begin, k_end):
        a = a_desc.load([pid_m * BLOCK_M, k0 * BLOCK_K])
        b = b_desc.load([pid_n * BLOCK_N, k0 * BLOCK_K])
        acc = dot_acc(a, b.T, acc, DOT_PRECISION, UPCAST_DOT)
    return acc


@triton.jit
def _store_tile(acc, out_desc, bias_ptr, res_ptr, pid_m, pid_n, M, K, P, Q,
                stride_rn, stride_rk, stride_rp, stride_rq, alpha, beta,
                ACTIVATION: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_RESIDUAL: tl.constexpr,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, INT64: tl.constexpr):
    """The fused epilogue of output tile (pid_m, pid_n), leaving by a TMA store."""
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    if INT64:
        offs_m = offs_m.to(tl.int64)
    n_idx, p_idx, q_idx, _, _ = output_pixels(offs_m, P, Q, 1, 1, 0, 0)
    out = epilogue(acc, bias_ptr, res_ptr, n_idx, p_idx, q_idx, offs_m < M, offs_n, offs_n < K,
                   stride_rn, stride_rk, stride_rp, stride_rq, alpha, beta, ACTIVATION, HAS_BIAS, HAS_RESIDUAL)
    out_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], out.to(out_desc.dtype))


@triton.jit
def conv1x1_tma_persistent_kernel(
    a_desc,  # as conv1x1_tma_kernel's
    b_desc,
    out_desc,  # TensorDescriptor over the output as (M, K) (NHWC), block (BLOCK_M, BLOCK_N)
    bias_ptr, res_ptr,
    partials_ptr,  # stream-K only: fp32 [2 * programs, BLOCK_M * BLOCK_N] partial sums (scratch)
    semaphores_ptr,  # stream-K only: int32 arrivals per stream-K tile, zero at launch and left zero
    M, K, C, P, Q,
    stride_rn, stride_rk, stride_rp, stride_rq,
    alpha, beta,
    dp_tiles,  # tiles taken whole, round-robin (all of them without stream-K)
    sk_iters,  # stream-K iterations after them, shared evenly (kernels.launch.stream_k_split)
    ACTIVATION: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_RESIDUAL: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    DOT_PRECISION: tl.constexpr, UPCAST_DOT: tl.constexpr, INT64: tl.constexpr,
    STREAM_K: tl.constexpr,  # sk_iters may be > 0 (else that code is left out)
):
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(K, BLOCK_N)
    steps = tl.cdiv(C, BLOCK_K)
    program = tl.program_id(0)
    programs = tl.num_programs(0)
    for tile in tl.range(program, dp_tiles, programs, flatten=True):
        pid_m, pid_n = swizzle_tile(tile, num_m, num_n, GROUP_M)
        acc = _tile_product(a_desc, b_desc, pid_m, pid_n, 0, steps, BLOCK_M, BLOCK_N, BLOCK_K, DOT_PRECISION, UPCAST_DOT)
        _store_tile(acc, out_desc, bias_ptr, res_ptr, pid_m, pid_n, M, K, P, Q, stride_rn, stride_rk, stride_rp,
                    stride_rq, alpha, beta, ACTIVATION, HAS_BIAS, HAS_RESIDUAL, BLOCK_M, BLOCK_N, INT64)
    if STREAM_K:
        # This program's share of the stream-K iterations: a tail of one tile, whole tiles, the
        # head of another (common.stream_k_fixup joins the shares of a tile).
        begin = stream_k_start(program, sk_iters, programs)
        end = stream_k_start(program + 1, sk_iters, programs)
        tile_offs = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
        for t in range(begin // steps, tl.cdiv(end, steps)):
            k_begin = tl.maximum(begin - t * steps, 0)
            k_end = tl.minimum(end - t * steps, steps)
            pid_m, pid_n = swizzle_tile(dp_tiles + t, num_m, num_n, GROUP_M)
            acc = _tile_product(a_desc, b_desc, pid_m, pid_n, k_begin, k_end,
                                BLOCK_M, BLOCK_N, BLOCK_K, DOT_PRECISION, UPCAST_DOT)
            finished = True
            if k_end - k_begin != steps:
                finished, acc = stream_k_fixup(acc, tile_offs, partials_ptr, semaphores_ptr, t, program, programs,
                                               steps, sk_iters, BLOCK_M * BLOCK_N)
            if finished:
                _store_tile(acc, out_desc, bias_ptr, res_ptr, pid_m, pid_n, M, K, P, Q, stride_rn, stride_rk,
                            stride_rp, stride_rq, alpha, beta, ACTIVATION, HAS_BIAS, HAS_RESIDUAL, BLOCK_M, BLOCK_N, INT64)
