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

A strided 1x1 convolution (unpadded) is the same GEMM over the strided view
x[:, ::U, ::V, :], whose pixels are not one matrix's rows: the A operand is then a 4D
descriptor over that view, (images, output rows, output columns, C), and a tile of
BLOCK_M pixels is one box of ``BLOCK_M // BOX_Q`` output rows of ``BOX_Q`` columns
(``BOX_Q`` the output width rounded up to a power of two, at most BLOCK_M; a wider row
takes several boxes). The copy engine fetches the strided pixels and zero-fills the box past
the row's end; those tile rows are computed and never stored. Where the batch and row
dimensions merge (H = U*P and a dense output), the view is one image of N*P rows, so boxes
also run across image boundaries. Triton 3.6 reshapes the 4D box into the [BLOCK_M,
BLOCK_K] operand through registers (ldmatrix, then wgmma with A from registers).
"""

import triton
import triton.language as tl

from .common import (
    dot_acc,
    epilogue,
    store_off_grid_zeros,
    store_output_tile,
    swizzle_tile,
    tile_origin,
    tile_pixels,
)


@triton.jit
def _tile_product(a_desc, b_desc, img, row, col, pid_n, C, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr, BOX_Q: tl.constexpr, DOT_PRECISION: tl.constexpr, UPCAST_DOT: tl.constexpr):
    """One output tile's GEMM over all C channels, in fp32: the A operand's [BLOCK_M, BLOCK_K]
    tiles at (img, row, col) (common.tile_origin: a 2D box of the (M, C) matrix, or, BOX_Q > 0,
    a 4D box of the strided view reshaped) against the weight's [BLOCK_N, BLOCK_K] tiles."""
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, tl.cdiv(C, BLOCK_K)):
        if BOX_Q == 0:
            a = a_desc.load([row, k0 * BLOCK_K])
        else:
            a = a_desc.load([img, row, col, k0 * BLOCK_K]).reshape(BLOCK_M, BLOCK_K)
        b = b_desc.load([pid_n * BLOCK_N, k0 * BLOCK_K])
        acc = dot_acc(a, b.T, acc, DOT_PRECISION, UPCAST_DOT)
    return acc


@triton.jit
def conv1x1_tma_kernel(
    a_desc,  # TensorDescriptor over x as (M = N*H*W, C), block (BLOCK_M, BLOCK_K); or, BOX_Q > 0,
             # over the strided view as (NI, PI, Q, C), block (1, BLOCK_M // BOX_Q, BOX_Q, BLOCK_K)
    b_desc,  # TensorDescriptor over the weight as (K, C), block (BLOCK_N, BLOCK_K)
    out_ptr, bias_ptr, res_ptr,  # output [N, K, P, Q] (strides below), bias [K], residual
    M, K, C, P, Q,  # GEMM sizes (M = N*P*Q), output height and width
    num_m, PI,  # M tiles (the host's count); BOX_Q > 0: the box grid's rows per image (common.tile_origin)
    stride_on, stride_ok, stride_op, stride_oq,
    stride_rn, stride_rk, stride_rp, stride_rq,
    alpha, beta,
    fill_h, fill_w, stride_fh, stride_fw,  # FILL_U * FILL_V > 1: the tensor whose [:, :, ::FILL_U, ::FILL_V]
                                           # view the output is (its height, width, row and column strides)
    ACTIVATION: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_RESIDUAL: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    BOX_Q: tl.constexpr,  # 0: stride 1, A a 2D matrix; else a 4D box's columns (see the module)
    FILL_U: tl.constexpr, FILL_V: tl.constexpr,  # > 1: also zero that tensor's pixels off the output's grid
    DOT_PRECISION: tl.constexpr, UPCAST_DOT: tl.constexpr, INT64: tl.constexpr,
):
    num_n = tl.cdiv(K, BLOCK_N)
    pid_m, pid_n = swizzle_tile(tl.program_id(0), num_m, num_n, GROUP_M)
    img, row, col = tile_origin(pid_m, PI, Q, BLOCK_M, BOX_Q)
    acc = _tile_product(a_desc, b_desc, img, row, col, pid_n, C, BLOCK_M, BLOCK_N, BLOCK_K, BOX_Q,
                        DOT_PRECISION, UPCAST_DOT)

    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    n_idx, p_idx, q_idx, mask_m = tile_pixels(tl.arange(0, BLOCK_M), img, row, col, M, PI, P, Q, BOX_Q, INT64)
    store_output_tile(
        acc, out_ptr, bias_ptr, res_ptr, n_idx, p_idx, q_idx, mask_m, offs_n, offs_n < K,
        stride_on, stride_ok, stride_op, stride_oq, stride_rn, stride_rk, stride_rp, stride_rq,
        alpha, beta, ACTIVATION, HAS_BIAS, HAS_RESIDUAL,
    )
    if FILL_U * FILL_V > 1:
        store_off_grid_zeros(out_ptr, n_idx, p_idx, q_idx, mask_m, offs_n, offs_n < K, stride_on, stride_ok,
                             fill_h, fill_w, stride_fh, stride_fw, FILL_U, FILL_V, BLOCK_M, BLOCK_N)


@triton.jit
def conv1x1_tma_persistent_kernel(
    a_desc,  # as conv1x1_tma_kernel's
    b_desc,
    out_desc,  # TensorDescriptor over the output as (M, K) (NHWC), block (BLOCK_M, BLOCK_N); or,
               # BOX_Q > 0, as (NI, PI, Q, K), block (1, BLOCK_M // BOX_Q, BOX_Q, BLOCK_N)
    bias_ptr, res_ptr,
    M, K, C, P, Q,
    num_m, PI,
    stride_rn, stride_rk, stride_rp, stride_rq,
    alpha, beta,
    ACTIVATION: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_RESIDUAL: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    BOX_Q: tl.constexpr,
    DOT_PRECISION: tl.constexpr, UPCAST_DOT: tl.constexpr, INT64: tl.constexpr,
):
    num_n = tl.cdiv(K, BLOCK_N)
    for tile in tl.range(tl.program_id(0), num_m * num_n, tl.num_programs(0), flatten=True):
        pid_m, pid_n = swizzle_tile(tile, num_m, num_n, GROUP_M)
        img, row, col = tile_origin(pid_m, PI, Q, BLOCK_M, BOX_Q)
        acc = _tile_product(a_desc, b_desc, img, row, col, pid_n, C, BLOCK_M, BLOCK_N, BLOCK_K, BOX_Q,
                            DOT_PRECISION, UPCAST_DOT)
        offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        n_idx, p_idx, q_idx, mask_m = tile_pixels(tl.arange(0, BLOCK_M), img, row, col, M, PI, P, Q, BOX_Q, INT64)
        out = epilogue(acc, bias_ptr, res_ptr, n_idx, p_idx, q_idx, mask_m, offs_n, offs_n < K,
                       stride_rn, stride_rk, stride_rp, stride_rq, alpha, beta, ACTIVATION, HAS_BIAS, HAS_RESIDUAL)
        if BOX_Q == 0:
            out_desc.store([row, pid_n * BLOCK_N], out.to(out_desc.dtype))
        else:  # the copy engine drops the box's rows and columns outside the output
            out_desc.store([img, row, col, pid_n * BLOCK_N],
                           out.to(out_desc.dtype).reshape(1, BLOCK_M // BOX_Q, BOX_Q, BLOCK_N))
