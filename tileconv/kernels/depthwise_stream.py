"""Depthwise convolution on the tensor cores, streaming input rows: row streams as the GEMM's M.

A depthwise filter shares nothing across channels, so a tensor-core GEMM has to find its
shared operand elsewhere: along one filter row r, output row p of a channel is input row
p + r times a banded (Toeplitz) matrix built from that filter row,

    out[p, q] += sum_j x[p + r, q*V - pad_w + j] * T_r[j, q],   T_r[j, q] = w[r, s] where j = q*V + s*dil_w

(:mod:`.depthwise_toeplitz` does this one channel at a time over an NCHW copy). Here the
rows of the GEMM are **streams**: BLOCK_S independent sequences of rows, a stream being a
band of ``BAND_H`` output rows of one image (stream t = image t // BANDS, band t % BANDS).
All the streams of a program walk their input rows in step, so one loaded [BLOCK_S x KW]
tile of input row i (KW input columns of each stream, for TILE_Q output columns) is the A
operand of R products, one a filter row, each into the partial sums of the output row it
feeds (``out[i - r] += A_i @ T_r``): every input element is loaded once a band and feeds
R*S multiply-adds through the tensor cores, where the CUDA-core kernels spend about 1.5
instructions a multiply-add. Channels are the batch of a 3D ``tl.dot`` (mma.sync): BLOCK_C
channels a program, read as the contiguous channel vectors of channels_last memory (the
dot's operand conversion, through shared memory, puts each channel's columns in a row).
The R bands T_r of a channel are built once a program from the filter and kept in
registers; the R - 1 unfinished output rows ride through the loop as fp32 accumulators.

The band has S of every KW entries of a column non-zero, so a non-finite input anywhere in a
stream's KW columns reaches all of that stream's TILE_Q outputs (Inf * 0 = NaN), where
PyTorch's convolution lets it reach only the outputs whose taps read it. A finished row whose
sums are not all finite is therefore recomputed tap by tap (fp32 multiply-adds, the direct
formula) for the streams and channels that have a non-finite sum, which gives PyTorch's result
exactly where the GEMM's did not; a row with finite sums read only finite inputs, so the
GEMM's is already right.

    out[n, k, p, q] = sum_{r, s} x[n, k // m, p - pad_h + r, q*V - pad_w + s*dil_w] * w[k, 0, r, s]

Row stride and row dilation 1; any column stride and dilation, channel multiplier m, layout
(channels_last reads a program's channels of a pixel as one vector) and the fused epilogue.
16-bit inputs (fp32 accumulation).
"""

import triton
import triton.language as tl

from .common import apply_activation, dot_acc


@triton.jit
def _band(w_ptr, k_idx, mask_k, r, stride_wk, stride_wr, stride_ws, S: tl.constexpr, V: tl.constexpr,
          DIL_W: tl.constexpr, BLOCK_C: tl.constexpr, KW: tl.constexpr, TILE_Q: tl.constexpr, DTYPE: tl.constexpr):
    """T_r [BLOCK_C, KW, TILE_Q] of every channel of the program: T_r[c, j, q] = w[k_c, r, s]
    where j = q*V + s*DIL_W, else 0."""
    j = tl.arange(0, KW)[None, :, None]
    q = tl.arange(0, TILE_Q)[None, None, :]
    d = j - q * V
    s = d // DIL_W
    on_band = (d >= 0) & (d - s * DIL_W == 0) & (s < S)
    ptrs = w_ptr + (k_idx * stride_wk)[:, None, None] + r * stride_wr + s * stride_ws
    return tl.load(ptrs, mask=mask_k[:, None, None] & on_band, other=0.0).to(DTYPE)


@triton.jit
def _direct_row(x_ptr, w_ptr, x_chan, k_idx, mask_k, n_img, ih_top, iw0, stream_ok, H, W,
                stride_xn, stride_xh, stride_xw, stride_wk, stride_wr, stride_ws,
                R: tl.constexpr, S: tl.constexpr, V: tl.constexpr, DIL_W: tl.constexpr,
                BLOCK_C: tl.constexpr, BLOCK_S: tl.constexpr, TILE_Q: tl.constexpr, INT64: tl.constexpr):
    """One output row of every stream (input rows ``ih_top`` .. ``ih_top + R - 1``), tap by tap
    in fp32 on the CUDA cores: the exact result where the GEMM's spread a non-finite input."""
    q = tl.arange(0, TILE_Q)
    acc = tl.zeros([BLOCK_C, BLOCK_S, TILE_Q], dtype=tl.float32)
    for r in range(R):
        ih = ih_top + r
        row_ok = stream_ok & (ih >= 0) & (ih < H)
        if INT64:
            ih = ih.to(tl.int64)
        row = x_ptr + x_chan[:, None, None] + (n_img * stride_xn + ih * stride_xh)[None, :, None]
        for s in range(S):
            iw = iw0 + q * V + s * DIL_W
            ok = mask_k[:, None, None] & row_ok[None, :, None] & ((iw >= 0) & (iw < W))[None, None, :]
            if INT64:
                iw = iw.to(tl.int64)
            v = tl.load(row + (iw * stride_xw)[None, None, :], mask=ok, other=0.0).to(tl.float32)
            wt = tl.load(w_ptr + k_idx * stride_wk + r * stride_wr + s * stride_ws, mask=mask_k,
                         other=0.0).to(tl.float32)
            acc += v * wt[:, None, None]
    return acc


@triton.jit
def _finish(acc, p, ok, bias, out_tile, res_tile, stride_op, stride_rp, alpha, beta,
            ACTIVATION: tl.constexpr, HAS_RESIDUAL: tl.constexpr, INT64: tl.constexpr):
    """Output row ``p`` of every stream (``acc`` [BLOCK_C, BLOCK_S, TILE_Q], complete) through
    the fused epilogue (common.epilogue_at's order: + bias, + residual, activation) into the
    output, where ``ok``."""
    if INT64:
        p = p.to(tl.int64)
    out = acc + bias
    if HAS_RESIDUAL:
        out += tl.load(res_tile + (p * stride_rp)[None, :, None], mask=ok, other=0.0).to(tl.float32)
    out = apply_activation(out, ACTIVATION, alpha, beta)
    tl.store(out_tile + (p * stride_op)[None, :, None], out.to(out_tile.dtype.element_ty), mask=ok)


@triton.jit(do_not_specialize=["N", "H", "W", "P", "Q", "K", "pad_h", "pad_w", "BANDS", "STREAMS"])
def conv2d_depthwise_stream_kernel(
    x_ptr,  # input [N, C, H, W] through strides
    w_ptr,  # weight [K, 1, R, S] through stride_wk, stride_wr, stride_ws
    out_ptr,  # output [N, K, P, Q]
    bias_ptr,  # bias [K] (read only if HAS_BIAS)
    res_ptr,  # residual [N, K, P, Q] (read only if HAS_RESIDUAL)
    N, H, W, P, Q, K,
    pad_h, pad_w,
    BANDS, STREAMS,  # bands an image (cdiv(P, BAND_H)); streams in all (N * BANDS)
    stride_xn, stride_xc, stride_xh, stride_xw,
    stride_wk, stride_wr, stride_ws,
    stride_on, stride_ok, stride_op, stride_oq,
    stride_rn, stride_rk, stride_rp, stride_rq,
    alpha, beta,
    R: tl.constexpr, S: tl.constexpr,
    V: tl.constexpr, DIL_W: tl.constexpr,  # column stride and dilation (rows: 1 and 1)
    MULTIPLIER: tl.constexpr,  # K // C: output channel k reads input channel k // MULTIPLIER
    ACTIVATION: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_RESIDUAL: tl.constexpr,
    BAND_H: tl.constexpr,  # output rows a stream
    BLOCK_S: tl.constexpr,  # streams a program: the GEMM's M
    TILE_Q: tl.constexpr,  # output columns a program: the GEMM's N
    BLOCK_C: tl.constexpr,  # channels a program: the batch
    WIN_W: tl.constexpr,  # input columns the tile reads: (TILE_Q-1)*V + (S-1)*DIL_W + 1 (launch.window)
    KW: tl.constexpr,  # WIN_W to a power of two, at least 16: the GEMM's reduction
    EVEN_K: tl.constexpr,  # K a multiple of BLOCK_C: no channel masks (whole channel vectors)
    UPCAST_DOT: tl.constexpr,
    INT64: tl.constexpr,
):
    pid = tl.program_id(0)
    tiles_q = tl.cdiv(Q, TILE_Q)
    t0 = (pid // tiles_q) * BLOCK_S
    q0 = (pid % tiles_q) * TILE_Q
    k_idx = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    mask_k = k_idx < K
    t_idx = t0 + tl.arange(0, BLOCK_S)
    stream_ok = t_idx < STREAMS
    n_img = t_idx // BANDS
    p_top = (t_idx - n_img * BANDS) * BAND_H  # each stream's first output row
    ih0 = p_top - pad_h  # ... and the input row its first filter row reads
    iw0 = q0 * V - pad_w
    if INT64:
        n_img = n_img.to(tl.int64)
        k_idx = k_idx.to(tl.int64)
    x_chan = (k_idx // MULTIPLIER) * stride_xc
    dtype = x_ptr.dtype.element_ty

    # The R bands, built once.
    bands = ()
    for r in tl.static_range(R):
        bands = bands + (_band(w_ptr, k_idx, mask_k, r, stride_wk, stride_wr, stride_ws, S, V, DIL_W,
                               BLOCK_C, KW, TILE_Q, dtype),)
    if HAS_BIAS:
        bias = tl.load(bias_ptr + k_idx, mask=mask_k, other=0.0).to(tl.float32)[:, None, None]
    else:
        bias = 0.0

    # Input tiles [BLOCK_C, BLOCK_S, KW]: a stream's row as stored, zeros outside the input.
    j = tl.arange(0, KW)
    iw = iw0 + j
    col_ok = (j < WIN_W) & (iw >= 0) & (iw < W)
    if INT64:
        iw = iw.to(tl.int64)
    x_tile = (x_ptr + x_chan[:, None, None] + (n_img * stride_xn)[None, :, None]
              + (iw * stride_xw)[None, None, :])
    in_ok = stream_ok[None, :, None] & col_ok[None, None, :]
    if not EVEN_K:
        in_ok = in_ok & mask_k[:, None, None]
    # Output rows [BLOCK_C, BLOCK_S, TILE_Q].
    q = q0 + tl.arange(0, TILE_Q)
    q_ok = (q < Q)[None, None, :]
    if not EVEN_K:
        q_ok = q_ok & mask_k[:, None, None]
    if INT64:
        q = q.to(tl.int64)
    out_tile = (out_ptr + (k_idx * stride_ok)[:, None, None] + (n_img * stride_on)[None, :, None]
                + (q * stride_oq)[None, None, :])
    res_tile = (res_ptr + (k_idx * stride_rk)[:, None, None] + (n_img * stride_rn)[None, :, None]
                + (q * stride_rq)[None, None, :])

    # Slot k of the window holds the partial sums of band row i - R + 1 + k before input row i
    # (band-relative), which adds filter row R - 1 - k there; slot 0 is then complete.
    zero = tl.zeros([BLOCK_C, BLOCK_S, TILE_Q], dtype=tl.float32)
    pending = ()
    for _k in tl.static_range(R - 1):
        pending = pending + (zero,)
    # NaN wherever a finished sum was not finite (sum * 0 is NaN exactly then): one FFMA an
    # output, and the redo decided once, after the walk.
    probe = zero
    ih = ih0
    row_ok = stream_ok & (ih >= 0) & (ih < H)
    if INT64:
        ih = ih.to(tl.int64)
    ahead = tl.load(x_tile + (ih * stride_xh)[None, :, None], mask=in_ok & row_ok[None, :, None], other=0.0)
    for i in range(BAND_H + R - 1):
        a = ahead
        ih = ih0 + i + 1
        row_ok = stream_ok & (ih >= 0) & (ih < H)
        if INT64:
            ih = ih.to(tl.int64)
        ahead = tl.load(x_tile + (ih * stride_xh)[None, :, None], mask=in_ok & row_ok[None, :, None], other=0.0)
        slots = ()
        for k in tl.static_range(R):
            if k < R - 1:
                acc = pending[k]
            else:
                acc = zero
            slots = slots + (dot_acc(a, bands[R - 1 - k], acc, "ieee", UPCAST_DOT),)
        if i >= R - 1:  # slot 0 is band row i - R + 1: complete
            o = i - R + 1
            p = p_top + o
            ok = q_ok & (stream_ok & (p < P) & (o < BAND_H))[None, :, None]
            probe += slots[0] * 0.0
            _finish(slots[0], p, ok, bias, out_tile, res_tile, stride_op, stride_rp, alpha, beta,
                    ACTIVATION, HAS_RESIDUAL, INT64)
        rest = ()
        for k in tl.static_range(1, R):
            rest = rest + (slots[k],)
        pending = rest

    # A non-finite sum: that (channel, stream)'s rows again, tap by tap, over what was stored.
    redo = tl.sum(probe, axis=2)
    redo = redo != redo
    if tl.max(tl.max(redo.to(tl.int32), axis=1), axis=0) > 0:
        for o in range(BAND_H):
            p = p_top + o
            ok = q_ok & (redo & stream_ok & (p < P))[:, :, None]
            exact = _direct_row(x_ptr, w_ptr, x_chan, k_idx, mask_k, n_img, ih0 + o, iw0, stream_ok, H, W,
                                stride_xn, stride_xh, stride_xw, stride_wk, stride_wr, stride_ws,
                                R, S, V, DIL_W, BLOCK_C, BLOCK_S, TILE_Q, INT64)
            _finish(exact, p, ok, bias, out_tile, res_tile, stride_op, stride_rp, alpha, beta,
                    ACTIVATION, HAS_RESIDUAL, INT64)
