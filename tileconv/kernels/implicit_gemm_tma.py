"""Stride-1 NHWC convolution as an implicit GEMM whose operands arrive by TMA, the padding
halo included.

The implicit GEMM (:mod:`.implicit_gemm`) gathers each A tile with per-pixel addresses and
masks (cp.async): address arithmetic and predicates every step, for every tile. Here a
program's BLOCK_M output pixels are one segment of one output row, (n, p, q0 .. q0+BLOCK_M),
and for a stride-1 convolution the inputs that tap (r, s) reads for them are one segment of
one input row:

    A_rs[i, c] = x[n, p - pad_h + r*dil_h, q0 + i - pad_w + s*dil_w, c]   (0 outside the image)

which is a single box of a 4D tensor descriptor over the NHWC input, [1, 1, BLOCK_M, BLOCK_K]
at coordinates (n, p - pad_h + r*dil_h, q0 - pad_w + s*dil_w, c0). The copy engine fills
the coordinates outside the tensor (negative ones included) with zeros: that is the padding
halo, with no mask. The weight is a 3D descriptor over its channels_last form, [K, R*S, C],
box [BLOCK_N, 1, BLOCK_K]; channels past C read as zeros on both sides, so C need not be a
multiple of BLOCK_K. Both boxes drop their unit dimensions into 2D shared-memory tiles that
wgmma reads directly; the main loop has no address arithmetic beyond three scalar counters.

The cost is the segment's tail: an output row of Q pixels takes ceil(Q / BLOCK_M) segments,
so rows narrower than BLOCK_M waste the rest (the heuristics use this kernel where rows are
long: the VAE's, the seed's hw64 and hw128). A 2D box (several rows a tile) would need the
box reshaped in shared memory, which Triton 3.6 does only through registers.

The epilogue (bias, residual, activation) is the shared one. Two forms:

- ``conv2d_tma_rows_kernel``: one tile a program, the epilogue's masked pointer stores.
- ``conv2d_tma_rows_persistent_kernel``: one program an SM walking tiles; the tile loop and
  the reduction loop are one flattened, software-pipelined loop, so the next tile's copies
  are in flight while this one's epilogue runs, and the tile leaves through a TMA store
  (a 4D box over the NHWC output, clipped at the row's end by the copy engine). For short
  reductions (few channels, 3x3) the prologue and epilogue are a large share of a tile.
"""

import triton
import triton.language as tl

from .common import dot_acc, epilogue, next_reduction_step, store_output_tile, swizzle_tile


@triton.jit
def _segment_of(tile, N, P, Q, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    """Tile index -> (n, p, q0, k0): image, output row, first column, first output channel."""
    segments = tl.cdiv(Q, BLOCK_M)  # row segments per output row
    pid_m, pid_n = swizzle_tile(tile, N * P * segments, tl.cdiv(K, BLOCK_N), GROUP_M)
    row = pid_m // segments  # n * P + p
    n = row // P
    return n, row - n * P, (pid_m - row * segments) * BLOCK_M, pid_n * BLOCK_N


@triton.jit
def _product(x_desc, w_desc, acc, n, ih, iw, k0, c0, tap_r, tap_s, S, dil_h, dil_w,
             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
             DOT_PRECISION: tl.constexpr, UPCAST_DOT: tl.constexpr):
    """acc + the product of one tap's channel block: two bulk copies, one tl.dot. (ih, iw) is
    where tap (0, 0) reads for the segment's first pixel; outside the input reads as zero."""
    a = x_desc.load([n, ih + tap_r * dil_h, iw + tap_s * dil_w, c0]).reshape(BLOCK_M, BLOCK_K)
    b = w_desc.load([k0, tap_r * S + tap_s, c0]).reshape(BLOCK_N, BLOCK_K)
    return dot_acc(a, b.T, acc, DOT_PRECISION, UPCAST_DOT)


@triton.jit(do_not_specialize=["N", "P", "Q", "pad_h", "pad_w", "dil_h", "dil_w", "R", "S"])
def conv2d_tma_rows_kernel(
    x_desc,  # TensorDescriptor over x as [N, H, W, C], block [1, 1, BLOCK_M, BLOCK_K]
    w_desc,  # TensorDescriptor over the weight as [K, R*S, C], block [BLOCK_N, 1, BLOCK_K]
    out_ptr, bias_ptr, res_ptr,  # output [N, K, P, Q] (strides below), bias [K], residual
    N, P, Q, K, C,  # batch, output height/width, output and input channels
    pad_h, pad_w, dil_h, dil_w,  # pad_* = top/left padding (stride is 1)
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
    n, p, q0, k0 = _segment_of(tl.program_id(0), N, P, Q, K, BLOCK_M, BLOCK_N, GROUP_M)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    tap_r = 0
    tap_s = 0
    c0 = 0
    for _ in range(0, R * S * tl.cdiv(C, BLOCK_K)):
        acc = _product(x_desc, w_desc, acc, n, p - pad_h, q0 - pad_w, k0, c0, tap_r, tap_s, S, dil_h, dil_w,
                       BLOCK_M, BLOCK_N, BLOCK_K, DOT_PRECISION, UPCAST_DOT)
        c0, tap_s, tap_r = next_reduction_step(c0, tap_s, tap_r, C, S, BLOCK_K)

    q_idx = q0 + tl.arange(0, BLOCK_M)
    k_idx = k0 + tl.arange(0, BLOCK_N)
    if INT64:
        n = n.to(tl.int64)
        p = p.to(tl.int64)
        q_idx = q_idx.to(tl.int64)
    store_output_tile(
        acc, out_ptr, bias_ptr, res_ptr, n, p, q_idx, q_idx < Q, k_idx, k_idx < K,
        stride_on, stride_ok, stride_op, stride_oq, stride_rn, stride_rk, stride_rp, stride_rq,
        alpha, beta, ACTIVATION, HAS_BIAS, HAS_RESIDUAL,
    )


@triton.jit(do_not_specialize=["N", "P", "Q", "pad_h", "pad_w", "dil_h", "dil_w", "R", "S"])
def conv2d_tma_rows_persistent_kernel(
    x_desc,  # as conv2d_tma_rows_kernel's
    w_desc,
    out_desc,  # TensorDescriptor over the output as [N, P, Q, K], block [1, 1, BLOCK_M, BLOCK_N]
    bias_ptr, res_ptr,  # bias [K], residual [N, K, P, Q] (strides below)
    N, P, Q, K, C,
    pad_h, pad_w, dil_h, dil_w,
    stride_rn, stride_rk, stride_rp, stride_rq,
    alpha, beta,
    R, S,
    ACTIVATION: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_RESIDUAL: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    DOT_PRECISION: tl.constexpr, UPCAST_DOT: tl.constexpr, INT64: tl.constexpr,
):
    tiles = N * P * tl.cdiv(Q, BLOCK_M) * tl.cdiv(K, BLOCK_N)
    # Tile loop and reduction loop flattened into one software-pipelined loop: the next
    # tile's copies are issued during this tile's epilogue (tutorial 09's persistent matmul).
    for tile in tl.range(tl.program_id(0), tiles, tl.num_programs(0), flatten=True):
        n, p, q0, k0 = _segment_of(tile, N, P, Q, K, BLOCK_M, BLOCK_N, GROUP_M)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        tap_r = 0
        tap_s = 0
        c0 = 0
        for _ in range(0, R * S * tl.cdiv(C, BLOCK_K)):
            acc = _product(x_desc, w_desc, acc, n, p - pad_h, q0 - pad_w, k0, c0, tap_r, tap_s, S, dil_h, dil_w,
                           BLOCK_M, BLOCK_N, BLOCK_K, DOT_PRECISION, UPCAST_DOT)
            c0, tap_s, tap_r = next_reduction_step(c0, tap_s, tap_r, C, S, BLOCK_K)
        q_idx = q0 + tl.arange(0, BLOCK_M)
        k_idx = k0 + tl.arange(0, BLOCK_N)
        if INT64:
            q_idx = q_idx.to(tl.int64)
        out = epilogue(acc, bias_ptr, res_ptr, n.to(q_idx.dtype), p.to(q_idx.dtype), q_idx, q_idx < Q, k_idx,
                       k_idx < K, stride_rn, stride_rk, stride_rp, stride_rq, alpha, beta,
                       ACTIVATION, HAS_BIAS, HAS_RESIDUAL)
        out_desc.store([n, p, q0, k0], out.to(out_desc.dtype).reshape(1, 1, BLOCK_M, BLOCK_N))
