"""Stride-1 NHWC convolution as an implicit GEMM whose operands arrive by TMA, the padding
halo included; dense or grouped.

The implicit GEMM (:mod:`.implicit_gemm`) gathers each A tile with per-pixel addresses and
masks (cp.async): address arithmetic and predicates every step, for every tile. Here a
program's BLOCK_M output pixels are one box of the output, BLOCK_M // BOX_Q rows of BOX_Q
columns of one image: (n, p0 .. p0 + BLOCK_M // BOX_Q, q0 .. q0 + BOX_Q), BOX_Q a power of
two (the output row rounded up, or a segment of a row longer than BLOCK_M). For a stride-1
convolution the inputs that tap (r, s) reads for them are one box of the input too:

    A_rs[(i, j), c] = x[n, p0 + i - pad_h + r*dil_h, q0 + j - pad_w + s*dil_w, c]   (0 outside)

a single box of a 4D tensor descriptor over the NHWC input, [1, BLOCK_M // BOX_Q, BOX_Q,
BLOCK_K]. The copy engine fills the coordinates outside the tensor (negative ones included)
with zeros: that is the padding halo, with no mask. Box rows past the image's last row and
columns past Q compute outputs nobody stores. The weight is a 3D descriptor over its
channels_last form, [K, R*S, C/g], box [BLOCK_N, 1, BLOCK_K]; channels past C/g read as
zeros, so a dense C need not be a multiple of BLOCK_K. The main loop has no address
arithmetic beyond three scalar counters; Triton reshapes the 4D box into the [BLOCK_M,
BLOCK_K] operand through registers.

Groups: an N tile lies inside one group (BLOCK_N divides K/g), and its A boxes start at the
group's first channel (BLOCK_K divides C/g, so a box never reads the next group's). Groups
thinner than a tensor-core step arrive merged (the launcher's block-diagonal weight, as
grouped_gemm's): SUB_C / SUB_K are then the original groups' channels, and a tile whose
accumulator is not finite (a NaN/Inf input met the zeros between merged groups) is redone
one original group at a time, each with the other groups' channels masked out of its A
tiles, so NaN and Inf spread as in PyTorch and no further.

Two forms, the epilogue (bias, residual, activation) the shared one:

- ``conv2d_tma_rows_kernel``: one tile a program, the epilogue's masked pointer stores.
- ``conv2d_tma_rows_persistent_kernel``: one program an SM walking tiles; the tile loop and
  the reduction loop are one flattened, software-pipelined loop, so the next tile's copies
  are in flight while this one's epilogue runs, and the tile leaves through a TMA store
  (a 4D box over the NHWC output, clipped at the image's edges by the copy engine). For short
  reductions (few channels, 3x3) the prologue and epilogue are a large share of a tile. A
  merged-groups tile that needs its redo is flagged and redone after that loop (a redo inside
  it would split the pipeline). ``config.persistent`` programs an SM.
"""

import triton
import triton.language as tl

from .common import (
    dot_acc,
    epilogue,
    next_reduction_step,
    store_output_tile,
    swizzle_tile,
    tile_origin,
    tile_pixels,
)


@triton.jit
def _box_of(tile, N, P, Q, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr,
            BOX_Q: tl.constexpr):
    """Tile index -> (n, p0, q0, k0): image, first output row and column, first output channel."""
    boxes = tl.cdiv(P, BLOCK_M // BOX_Q) * tl.cdiv(Q, BOX_Q)  # boxes per image
    pid_m, pid_n = swizzle_tile(tile, N * boxes, tl.cdiv(K, BLOCK_N), GROUP_M)
    n, p0, q0 = tile_origin(pid_m, P, Q, BLOCK_M, BOX_Q)
    return n, p0, q0, pid_n * BLOCK_N


@triton.jit
def _product(x_desc, w_desc, acc, n, ih, iw, k0, c0, c_in_group, tap_r, tap_s, S, dil_h, dil_w,
             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
             DOT_PRECISION: tl.constexpr, UPCAST_DOT: tl.constexpr, SUB_C: tl.constexpr, sub):
    """acc + the product of one tap's channel block: two bulk copies, one tl.dot. (ih, iw) is
    where tap (0, 0) reads for the box's first pixel; outside the input reads as zero. c0 is
    the block's first input channel over all of C, c_in_group the same within its group.
    SUB_C > 0: only merged group ``sub``'s channels of the A tile count (the NaN/Inf redo)."""
    a = x_desc.load([n, ih + tap_r * dil_h, iw + tap_s * dil_w, c0]).reshape(BLOCK_M, BLOCK_K)
    if SUB_C > 0:
        own = (c_in_group + tl.arange(0, BLOCK_K)) // SUB_C == sub
        a = tl.where(own[None, :], a, tl.zeros_like(a))
    b = w_desc.load([k0, tap_r * S + tap_s, c_in_group]).reshape(BLOCK_N, BLOCK_K)
    return dot_acc(a, b.T, acc, DOT_PRECISION, UPCAST_DOT)


@triton.jit
def _tile_sum(x_desc, w_desc, n, ih, iw, k0, c_base, C_GROUP, R, S, dil_h, dil_w,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
              DOT_PRECISION: tl.constexpr, UPCAST_DOT: tl.constexpr, SUB_C: tl.constexpr, sub):
    """The tile's accumulator: every (tap, channel block) step of its group (SUB_C > 0: of
    merged group ``sub``'s channels only, see :func:`_product`)."""
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    tap_r = 0
    tap_s = 0
    c0 = 0
    for _ in range(0, R * S * tl.cdiv(C_GROUP, BLOCK_K)):
        acc = _product(x_desc, w_desc, acc, n, ih, iw, k0, c_base + c0, c0, tap_r, tap_s, S, dil_h, dil_w,
                       BLOCK_M, BLOCK_N, BLOCK_K, DOT_PRECISION, UPCAST_DOT, SUB_C, sub)
        c0, tap_s, tap_r = next_reduction_step(c0, tap_s, tap_r, C_GROUP, S, BLOCK_K)
    return acc


@triton.jit
def _not_finite(acc):
    """Whether the tile holds a NaN or an Inf (one reduction a tile)."""
    return tl.sum(tl.where(tl.abs(acc) < float("inf"), 0, 1)) > 0


@triton.jit
def _redo_by_group(x_desc, w_desc, n, ih, iw, k0, c_base, C_GROUP, K_GROUP, R, S, dil_h, dil_w,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                   DOT_PRECISION: tl.constexpr, UPCAST_DOT: tl.constexpr,
                   SUB_C: tl.constexpr, SUB_K: tl.constexpr):
    """Merged groups: a NaN/Inf input times the block-diagonal weight's zeros is NaN, so a
    tile whose accumulator is not finite is recomputed one original group at a time, each
    from its own channels only (the redo almost never runs)."""
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    first_col = k0 % K_GROUP  # the tile's first column within its merged group
    col_sub = (first_col + tl.arange(0, BLOCK_N)) // SUB_K
    for sub in range(first_col // SUB_K, first_col // SUB_K + tl.cdiv(BLOCK_N, SUB_K)):
        part = _tile_sum(x_desc, w_desc, n, ih, iw, k0, c_base, C_GROUP, R, S, dil_h, dil_w,
                         BLOCK_M, BLOCK_N, BLOCK_K, DOT_PRECISION, UPCAST_DOT, SUB_C, sub)
        acc = tl.where((col_sub == sub)[None, :], part, acc)
    return acc


@triton.jit
def _store_box(out_desc, acc, bias_ptr, res_ptr, n, p0, q0, k0, P, Q, K,
               stride_rn, stride_rk, stride_rp, stride_rq, alpha, beta,
               ACTIVATION: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_RESIDUAL: tl.constexpr,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BOX_Q: tl.constexpr, INT64: tl.constexpr):
    """The persistent form's epilogue: the shared epilogue's arithmetic, then one TMA store
    of the box (clipped at the image's edges by the copy engine)."""
    n_idx, p_idx, q_idx, mask_m = tile_pixels(tl.arange(0, BLOCK_M), n, p0, q0, 0, P, P, Q, BOX_Q, INT64)
    k_idx = k0 + tl.arange(0, BLOCK_N)
    out = epilogue(acc, bias_ptr, res_ptr, n_idx, p_idx, q_idx, mask_m, k_idx, k_idx < K,
                   stride_rn, stride_rk, stride_rp, stride_rq, alpha, beta, ACTIVATION, HAS_BIAS, HAS_RESIDUAL)
    out_desc.store([n, p0, q0, k0], out.to(out_desc.dtype).reshape(1, BLOCK_M // BOX_Q, BOX_Q, BLOCK_N))


@triton.jit(do_not_specialize=["N", "P", "Q", "pad_h", "pad_w", "dil_h", "dil_w", "R", "S"])
def conv2d_tma_rows_kernel(
    x_desc,  # TensorDescriptor over x as [N, H, W, C], block [1, BLOCK_M // BOX_Q, BOX_Q, BLOCK_K]
    w_desc,  # TensorDescriptor over the weight as [K, R*S, C/g], block [BLOCK_N, 1, BLOCK_K]
    out_ptr, bias_ptr, res_ptr,  # output [N, K, P, Q] (strides below), bias [K], residual
    N, P, Q, K,  # batch, output height/width, output channels
    C_GROUP, K_GROUP,  # input and output channels of one group (C and K when dense)
    pad_h, pad_w, dil_h, dil_w,  # pad_* = top/left padding (stride is 1)
    stride_on, stride_ok, stride_op, stride_oq,
    stride_rn, stride_rk, stride_rp, stride_rq,
    alpha, beta,  # activation parameters (tileconv.epilogue.Activation)
    R, S,  # filter size
    ACTIVATION: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_RESIDUAL: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    BOX_Q: tl.constexpr,  # a box's columns (a power of two); its rows are BLOCK_M // BOX_Q
    DOT_PRECISION: tl.constexpr,  # "tf32x3" (strict fp32) or "tf32"; see config.dot_constexprs
    UPCAST_DOT: tl.constexpr,  # interpreter only: tl.dot on bf16 is wrong there, so use fp32
    INT64: tl.constexpr,  # some tensor has >= 2**31 elements: the epilogue indexes in int64
    SUB_C: tl.constexpr = 0, SUB_K: tl.constexpr = 0,  # merged groups' own channels (0: none merged)
):
    n, p0, q0, k0 = _box_of(tl.program_id(0), N, P, Q, K, BLOCK_M, BLOCK_N, GROUP_M, BOX_Q)
    c_base = (k0 // K_GROUP) * C_GROUP
    acc = _tile_sum(x_desc, w_desc, n, p0 - pad_h, q0 - pad_w, k0, c_base, C_GROUP, R, S, dil_h, dil_w,
                    BLOCK_M, BLOCK_N, BLOCK_K, DOT_PRECISION, UPCAST_DOT, 0, 0)
    if SUB_K > 0:
        if _not_finite(acc):
            acc = _redo_by_group(x_desc, w_desc, n, p0 - pad_h, q0 - pad_w, k0, c_base, C_GROUP, K_GROUP, R, S,
                                 dil_h, dil_w, BLOCK_M, BLOCK_N, BLOCK_K, DOT_PRECISION, UPCAST_DOT, SUB_C, SUB_K)
    n_idx, p_idx, q_idx, mask_m = tile_pixels(tl.arange(0, BLOCK_M), n, p0, q0, 0, P, P, Q, BOX_Q, INT64)
    k_idx = k0 + tl.arange(0, BLOCK_N)
    store_output_tile(
        acc, out_ptr, bias_ptr, res_ptr, n_idx, p_idx, q_idx, mask_m, k_idx, k_idx < K,
        stride_on, stride_ok, stride_op, stride_oq, stride_rn, stride_rk, stride_rp, stride_rq,
        alpha, beta, ACTIVATION, HAS_BIAS, HAS_RESIDUAL,
    )


@triton.jit(do_not_specialize=["N", "P", "Q", "pad_h", "pad_w", "dil_h", "dil_w", "R", "S"])
def conv2d_tma_rows_persistent_kernel(
    x_desc,  # as conv2d_tma_rows_kernel's
    w_desc,
    out_desc,  # TensorDescriptor over the output as [N, P, Q, K], block [1, BLOCK_M // BOX_Q, BOX_Q, BLOCK_N]
    bias_ptr, res_ptr,  # bias [K], residual [N, K, P, Q] (strides below)
    redo_ptr,  # merged groups only: int8 [tiles], whether each tile waits for its group-by-group redo
    N, P, Q, K,
    C_GROUP, K_GROUP,
    pad_h, pad_w, dil_h, dil_w,
    stride_rn, stride_rk, stride_rp, stride_rq,
    alpha, beta,
    R, S,
    ACTIVATION: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_RESIDUAL: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    BOX_Q: tl.constexpr, DOT_PRECISION: tl.constexpr, UPCAST_DOT: tl.constexpr, INT64: tl.constexpr,
    SUB_C: tl.constexpr = 0, SUB_K: tl.constexpr = 0,
):
    BOX_H: tl.constexpr = BLOCK_M // BOX_Q
    tiles = N * tl.cdiv(P, BOX_H) * tl.cdiv(Q, BOX_Q) * tl.cdiv(K, BLOCK_N)
    # Tile loop and reduction loop flattened into one software-pipelined loop: the next
    # tile's copies are issued during this tile's epilogue (tutorial 09's persistent matmul).
    for tile in tl.range(tl.program_id(0), tiles, tl.num_programs(0), flatten=True):
        n, p0, q0, k0 = _box_of(tile, N, P, Q, K, BLOCK_M, BLOCK_N, GROUP_M, BOX_Q)
        c_base = (k0 // K_GROUP) * C_GROUP
        acc = _tile_sum(x_desc, w_desc, n, p0 - pad_h, q0 - pad_w, k0, c_base, C_GROUP, R, S, dil_h, dil_w,
                        BLOCK_M, BLOCK_N, BLOCK_K, DOT_PRECISION, UPCAST_DOT, 0, 0)
        redo = False
        if SUB_K > 0:  # merged groups: a non-finite tile is left to the loop below
            redo = _not_finite(acc)
            tl.store(redo_ptr + tile, redo.to(tl.int8))
        if not redo:
            _store_box(out_desc, acc, bias_ptr, res_ptr, n, p0, q0, k0, P, Q, K, stride_rn, stride_rk, stride_rp,
                       stride_rq, alpha, beta, ACTIVATION, HAS_BIAS, HAS_RESIDUAL, BLOCK_M, BLOCK_N, BOX_Q, INT64)
    if SUB_K > 0:
        # The redo outside the flattened loop, which keeps that loop one software pipeline.
        for tile in range(tl.program_id(0), tiles, tl.num_programs(0)):
            if tl.load(redo_ptr + tile) != 0:
                n, p0, q0, k0 = _box_of(tile, N, P, Q, K, BLOCK_M, BLOCK_N, GROUP_M, BOX_Q)
                acc = _redo_by_group(x_desc, w_desc, n, p0 - pad_h, q0 - pad_w, k0, (k0 // K_GROUP) * C_GROUP,
                                     C_GROUP, K_GROUP, R, S, dil_h, dil_w, BLOCK_M, BLOCK_N, BLOCK_K,
                                     DOT_PRECISION, UPCAST_DOT, SUB_C, SUB_K)
                _store_box(out_desc, acc, bias_ptr, res_ptr, n, p0, q0, k0, P, Q, K, stride_rn, stride_rk,
                           stride_rp, stride_rq, alpha, beta, ACTIVATION, HAS_BIAS, HAS_RESIDUAL,
                           BLOCK_M, BLOCK_N, BOX_Q, INT64)
