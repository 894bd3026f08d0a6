"""Dense convolutions with few input channels on the tensor cores: each filter row a banded GEMM.

With few input channels (the seed's 1,6,768,512 -> 6 problem with a 6x6 filter, the stems'
C = 3) an implicit GEMM's reduction slice of one tap is C values: padded to a 16-deep
tensor-core step it is mostly zeros, and fused over a filter row (the implicit GEMM's
FUSE_SC) it becomes a gather at addresses C elements apart, which 16-byte copies cannot
take; each input element is also loaded once for every tap that meets it (R*S times). The
direct kernel (CUDA cores) reached 1.0x cuDNN on the seed problem in fp16 (H200, seventh
session), far from both of its floors.

In channels_last memory an input row is one run of W*C values, and the output columns
``q0 .. q0 + BQ - 1`` of one output row read, along filter row ``r``, one contiguous
segment of it: the J = (BQ-1)*V + (S-1)*dil_w + 1 input columns from column ``q0*V``, J*C
values. Along that filter row the convolution of the segment is a matrix product with a
banded (Toeplitz) matrix built once from the filter row:

    out[m, (qq, k)] += sum_{(j, c)}  x[row(m) + r*dil_h, q0*V + j, c] * T[r, (j, c), (qq, k)]
    T[r, (j, c), (qq, k)] = w[k, c, r, s]  where j = qq*V + s*dil_w (0 <= s < S), else 0

with ``m`` running over output rows (image and row, ``n*P + p``): a GEMM of [BLOCK_M rows x
T] by [T x BLOCK_NN] per filter row, whose reduction index ``j*C + c`` is the input's own
memory order and whose output index is the output's: ``qq*KB + k`` in channels_last (each
program's channels a run), ``k*BQ + qq`` in NCHW (its columns a run). So the A tile is read
16 bytes at a time by asynchronous copies with no gather and no padding mask (the launcher
copies the input into zero-bordered rows first, :func:`.staged.to_padded_rows_kernel`: a
few-channel input is small; an unpadded channels_last input whose rows start 16-byte
aligned is read in place, a column mask cutting the segments that run past a row's end),
each input element is read once per filter row (R times, not R*S), and the tensor cores do
the rest. A fraction S*C*BQ*KB / (T*BLOCK_NN) of the tensor
work is useful (a third for the seed problem), which the tensor cores can afford.

T depends only on the filter, the column stride and dilation and the tile, so it is
derived once per weight version (:func:`tileconv.kernels.weights.dense_toeplitz_weight`).
Any stride, padding, dilation, layout, dtype and the fused epilogue; groups = 1.

The band's zeros multiply inputs outside an output's window: a NaN/Inf there would poison
outputs that PyTorch leaves finite, so a tile whose sums are not all finite (rare; one
check per tile) is redone tap by tap on the CUDA cores, as :mod:`.depthwise_toeplitz` does.
"""

import triton
import triton.language as tl

from .common import dot_acc, epilogue_at, load_bias


@triton.jit
def _columns(offs_nn, pid_q, pid_k, Q, K, BLOCK_Q: tl.constexpr, BLOCK_KC: tl.constexpr, QQ_MINOR: tl.constexpr):
    """GEMM column -> output column q and channel k, in the output's own order, so that the
    store runs along its contiguous axis: (q_idx, k_idx, band_col, mask), band_col the column of
    (qq = 0, kk) in the band, mask the columns that exist."""
    if QQ_MINOR:
        kk = offs_nn // BLOCK_Q
        qq = offs_nn - kk * BLOCK_Q
        band_col = offs_nn - qq
    else:
        qq = offs_nn // BLOCK_KC
        kk = offs_nn - qq * BLOCK_KC
        band_col = kk
    q_idx = pid_q * BLOCK_Q + qq
    k_idx = pid_k * BLOCK_KC + kk
    in_tile = (qq < BLOCK_Q) & (kk < BLOCK_KC)
    return q_idx, k_idx, band_col, in_tile & (q_idx < Q) & (k_idx < K)


@triton.jit(do_not_specialize=["N", "P", "Q", "HP", "stride_h", "dil_h", "dil_w", "R", "S"])
def conv2d_dense_toeplitz_kernel(
    x_ptr,  # rows [N, HP, ROW]: the zero-bordered copy (input (h, w, c) at [h + pad_h, (w + pad_w)*C + c]),
            # or an unpadded channels_last input itself (HP = H, ROW = W*C)
    t_ptr,  # bands [K_BLOCKS, R, T_STEPS*BLOCK_T, BLOCK_NN], contiguous (weights.dense_toeplitz_weight)
    out_ptr, bias_ptr, res_ptr,
    N, P, Q, K, HP, ROW,  # ROW: the rows' pitch in elements (a multiple of 16 in the copy; W*C in place)
    stride_h, dil_h, dil_w,  # the vertical geometry; dil_w for the NaN redo (the band holds it)
    stride_on, stride_ok, stride_op, stride_oq,
    stride_rn, stride_rk, stride_rp, stride_rq,
    alpha, beta,
    R, S,
    C: tl.constexpr,  # input channels: a pixel's run in the copy's rows
    STRIDE_W: tl.constexpr,  # column stride: a column block starts BLOCK_Q*STRIDE_W*C values along a row
    ACTIVATION: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_RESIDUAL: tl.constexpr,
    BLOCK_M: tl.constexpr,  # output rows (n, p) per program: the GEMM's M
    BLOCK_Q: tl.constexpr,  # output columns per program
    BLOCK_KC: tl.constexpr,  # output channels per program
    BLOCK_NN: tl.constexpr,  # the GEMM's N: BLOCK_Q * BLOCK_KC rounded up to a power of two
    QQ_MINOR: tl.constexpr,  # GEMM column nn = kk*BLOCK_Q + qq (NCHW output: columns contiguous), else qq*BLOCK_KC + kk
    BLOCK_T: tl.constexpr,  # reduction values per step
    T_STEPS: tl.constexpr,  # steps per filter row: the band's T = T_STEPS * BLOCK_T >= J*C
    MASK_COLS: tl.constexpr,  # rows read in place: a segment may run past a row's end (ROW values)
    DOT_PRECISION: tl.constexpr, UPCAST_DOT: tl.constexpr,
    INT64: tl.constexpr,
):
    tiles_q = tl.cdiv(Q, BLOCK_Q)
    k_blocks = tl.cdiv(K, BLOCK_KC)
    # Column blocks fastest: consecutive programs read the same input rows (L2).
    pid = tl.program_id(0)
    pid_q = pid % tiles_q
    pid_k = (pid // tiles_q) % k_blocks
    pid_m = pid // (tiles_q * k_blocks)

    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)  # flat output rows n*P + p
    offs_nn = tl.arange(0, BLOCK_NN)
    row_len = ROW
    if INT64:
        rows = rows.to(tl.int64)
        offs_nn = offs_nn.to(tl.int64)
        pid_q = pid_q.to(tl.int64)
        pid_k = pid_k.to(tl.int64)
        row_len = row_len.to(tl.int64)
    n_idx = rows // P
    p_idx = rows - n_idx * P
    mask_rows = rows < N * P
    # Each output row's first input row in the copy (its padding is real zeros there).
    row_start = (n_idx * HP + p_idx * stride_h) * row_len
    col0 = pid_q * (BLOCK_Q * STRIDE_W * C)  # where the column block's segment starts in a row
    band_len = T_STEPS * BLOCK_T
    bands = t_ptr + pid_k * (R * band_len * BLOCK_NN)

    offs_t = tl.arange(0, BLOCK_T)
    a_ptrs = x_ptr + (row_start + col0)[:, None] + offs_t[None, :]
    b_ptrs = bands + offs_t[:, None] * BLOCK_NN + offs_nn[None, :]

    # The bias read before the reduction, its latency behind the loop's (read in the epilogue,
    # each program waited for it after its last dot: seed003's bias + ReLU 1.035x-1.038x of plain
    # in fp16, 0.994x read here; H200, sessions 56-57); added after the loop and the NaN redo,
    # which recomputes the sums. (Without a bias the columns' channels computed here are dead
    # code: the plain kernel's SASS is unchanged.)
    _, bias_k, _, bias_mask = _columns(offs_nn, pid_q, pid_k, Q, K, BLOCK_Q, BLOCK_KC, QQ_MINOR)
    bias = load_bias(bias_ptr, bias_k, bias_mask, HAS_BIAS)

    acc = tl.zeros((BLOCK_M, BLOCK_NN), dtype=tl.float32)
    # One flat loop over (filter row, reduction step) so that the pipeliner streams it.
    for step in range(0, R * T_STEPS):
        r = step // T_STEPS
        t0 = (step - r * T_STEPS) * BLOCK_T
        a_mask = mask_rows[:, None]
        if MASK_COLS:
            a_mask = a_mask & (col0 + t0 + offs_t < row_len)[None, :]
        a = tl.load(a_ptrs + (r * dil_h * row_len + t0), mask=a_mask, other=0.0)
        b = tl.load(b_ptrs + step * (BLOCK_T * BLOCK_NN))
        acc = dot_acc(a, b, acc, DOT_PRECISION, UPCAST_DOT)

    q_idx, k_idx, band_col, mask_nn = _columns(offs_nn, pid_q, pid_k, Q, K, BLOCK_Q, BLOCK_KC, QQ_MINOR)

    # A NaN/Inf input times the band's zeros is NaN in every column of the tile, not only in
    # those whose window holds it: where the tile's sums are not all finite (rare; one check
    # a tile), redo it tap by tap on the CUDA cores, as PyTorch computes. w[k, c, r, s] is
    # T[k-block, r, s*dil_w*C + c, band_col] (output column qq = 0 of the band).
    if tl.sum(tl.where(tl.abs(acc) < float("inf"), 0, 1)) > 0:
        acc = tl.zeros((BLOCK_M, BLOCK_NN), dtype=tl.float32)
        col = (q_idx * STRIDE_W * C)[None, :]
        ok = mask_rows[:, None] & mask_nn[None, :]  # an output column past Q may read past a row's end
        for r in range(0, R):
            x_row = x_ptr + (row_start + r * dil_h * row_len)[:, None] + col
            for s in range(0, S):
                for c in range(0, C):
                    xv = tl.load(x_row + (s * dil_w * C + c), mask=ok, other=0.0)
                    wv = tl.load(bands + (r * band_len + s * dil_w * C + c) * BLOCK_NN + band_col)
                    acc += xv.to(tl.float32) * wv.to(tl.float32)[None, :]

    out_rows = n_idx * stride_on + p_idx * stride_op
    out_cols = q_idx * stride_oq + k_idx * stride_ok
    mask = mask_rows[:, None] & mask_nn[None, :]
    res_offs = (n_idx * stride_rn + p_idx * stride_rp)[:, None] + (q_idx * stride_rq + k_idx * stride_rk)[None, :]
    if HAS_BIAS:
        acc += bias
    acc = epilogue_at(acc, bias_ptr, res_ptr, k_idx, mask_nn, res_offs, mask,
                      alpha, beta, ACTIVATION, False, HAS_RESIDUAL)
    tl.store(out_ptr + out_rows[:, None] + out_cols[None, :], acc.to(out_ptr.dtype.element_ty), mask=mask)
