"""Forward convolution as an implicit GEMM on the tensor cores (``tl.dot``).

The GEMM view of one group (SEEDS.md part 2):

    out[m, k] = sum_{t < C/g * R * S} A[m, t] * B[t, k]
    m = (n, p, q) ranges over the N*P*Q output pixels,
    t = (r, s, c) over the filter taps and the group's input channels,
    A[m, t] = x[n, g*C/g + c, p*U - pad_h + r*dil_h, q*V - pad_w + s*dil_w]  (0 outside),
    B[t, k] = w[g*K/g + k, c, r, s].

A is never materialised: each program computes a BLOCK_M x BLOCK_N output tile and walks
one flat loop over (tap, channel block), gathering the A tile from the input with a mask
for the padding halo (the im2col expansion happens in the load, as in cuDNN's kernel).
The loop is flat, not nested over taps, so that Triton's software pipeliner streams it
without a bubble at every tap. Every tensor is addressed through its four strides, so
NCHW, NHWC and any other strided input run without a layout pass.

The epilogue (bias, residual, activation) is applied to the fp32 accumulator before the
single store.
"""

import triton
import triton.language as tl

from .common import (
    load_bias,
    next_reduction_step,
    output_pixels,
    pixel_count,
    store_output_tile,
    swizzle_tile,
)


# Spatial sizes and geometry are not specialised, so one compiled kernel serves many
# shapes (first calls stay fast). Strides and channel counts are: their divisibility
# decides whether loads, masks and stores can be 16 bytes wide.
@triton.jit(do_not_specialize=["N", "H", "W", "P", "Q", "stride_h", "stride_w", "pad_h", "pad_w", "dil_h", "dil_w", "R", "S"])
def conv2d_implicit_gemm_kernel(
    x_ptr,  # input  [N, C, H, W] through strides stride_xn.. (any layout)
    w_ptr,  # weight [K, C/g, R, S] through strides stride_wk..
    out_ptr,  # output [N, K, P, Q] through strides stride_on..
    bias_ptr,  # bias [K] (read only if HAS_BIAS)
    res_ptr,  # residual [N, K, P, Q] through strides stride_rn.. (read only if HAS_RESIDUAL)
    N, H, W, P, Q,  # batch, input height/width, output height/width
    C_PER_GROUP, K_PER_GROUP,  # GEMM reduction channels and GEMM N of one group
    stride_h, stride_w, pad_h, pad_w, dil_h, dil_w,  # pad_* = top/left padding
    stride_xn, stride_xc, stride_xh, stride_xw,
    stride_wk, stride_wc, stride_wr, stride_ws,
    stride_on, stride_ok, stride_op, stride_oq,
    stride_rn, stride_rk, stride_rp, stride_rq,
    alpha, beta,  # activation parameters (tileconv.epilogue.Activation)
    R, S,  # filter size
    ws_ptr,  # split-K only: fp32 partial sums [SPLIT_K, N*P*Q, K] (else never read)
    ACTIVATION: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_RESIDUAL: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    FUSE_SC: tl.constexpr,  # reduce over (s, c) jointly per filter row: for few channels
    DOT_PRECISION: tl.constexpr,  # "tf32x3" (strict fp32) or "tf32"; see config.dot_constexprs
    UPCAST_DOT: tl.constexpr,  # interpreter only: tl.dot on bf16 is wrong there, so use fp32
    INT64: tl.constexpr,  # some tensor has >= 2**31 elements: index in int64
    EVEN_C: tl.constexpr,  # C/g % BLOCK_K == 0 (the channel loop needs no tail mask)
    # grouped_gemm: the groups merged into this GEMM have SUB_C input and SUB_K output
    # channels each (0: no merging). Their block-diagonal weight multiplies a NaN/Inf of
    # one group by the zeros of another; tiles that read a non-finite input are redone
    # exactly, group by group, so that NaN/Inf spread as in PyTorch and no further.
    SUB_C: tl.constexpr = 0, SUB_K: tl.constexpr = 0,
    # Split-K: grid axis 1 cuts the reduction into SPLIT_K contiguous ranges; each program
    # writes its fp32 partial tile to ws_ptr and splitk_epilogue_kernel sums them and
    # applies the epilogue. For small N*P*Q with long reductions (too few tiles to fill
    # the GPU). Dense (groups = 1) problems only, without FUSE_SC.
    SPLIT_K: tl.constexpr = 1,
):
    tl.static_assert(SPLIT_K == 1 or (not FUSE_SC and SUB_K == 0), "split-K runs the plain channel loop only")
    M = pixel_count(N, P, Q, INT64)
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(K_PER_GROUP, BLOCK_N)
    # One grid axis for all groups' tiles: the second axis would cap groups at 65535.
    group = tl.program_id(0) // (num_m * num_n)
    pid_m, pid_n = swizzle_tile(tl.program_id(0) % (num_m * num_n), num_m, num_n, GROUP_M)

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    if INT64:
        group = group.to(tl.int64)  # group * C/g * stride_c passes 2**31 in a large NCHW input
        offs_m = offs_m.to(tl.int64)
        offs_n = offs_n.to(tl.int64)
        offs_k = offs_k.to(tl.int64)
    mask_m = offs_m < M
    mask_n = offs_n < K_PER_GROUP

    # Output pixel m -> (n, p, q) and the input corner its window starts at.
    n_idx, p_idx, q_idx, ih0, iw0 = output_pixels(offs_m, P, Q, stride_h, stride_w, pad_h, pad_w)
    x_row = x_ptr + n_idx * stride_xn + (group * C_PER_GROUP) * stride_xc
    w_col = w_ptr + (group * K_PER_GROUP + offs_n) * stride_wk

    # The sums start from the bias, read ahead of the reduction, which hides its latency: read in
    # the epilogue, a one-wave grid waited on it after the last multiply (0.3-0.4 us on ResNeXt's
    # c1024 rows, H200, session 49). Held as a row of its own through the loop it cost registers
    # (64 x 128 tiles on 4 warps: 122 -> 154); in the accumulator, none. Split-K's epilogue
    # kernel adds it there.
    BIAS_FIRST: tl.constexpr = HAS_BIAS and SPLIT_K == 1
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32) + load_bias(
        bias_ptr, group * K_PER_GROUP + offs_n, mask_n, BIAS_FIRST)
    if FUSE_SC:
        # Few channels: one reduction index t = s * C/g + c runs over a whole filter row,
        # so that C/g = 3 does not pad each tap's channel slice to BLOCK_K (the stem, the
        # seed's C = 6 problem). In NHWC with dilation 1, t walks contiguous memory.
        span = S * C_PER_GROUP
        t_blocks = tl.cdiv(span, BLOCK_K)
        for it in range(0, R * t_blocks):
            r = it // t_blocks
            t = (it - r * t_blocks) * BLOCK_K + offs_k
            s = t // C_PER_GROUP
            c = t - s * C_PER_GROUP
            mask_t = t < span
            ih = ih0 + r * dil_h
            iw = iw0[:, None] + (s * dil_w)[None, :]
            row_ok = mask_m & (ih >= 0) & (ih < H)
            a = tl.load(
                (x_row + ih * stride_xh)[:, None] + iw * stride_xw + (c * stride_xc)[None, :],
                mask=row_ok[:, None] & (iw >= 0) & (iw < W) & mask_t[None, :],
                other=0.0,
            )
            b = tl.load(
                (w_col + r * stride_wr)[None, :] + (s * stride_ws + c * stride_wc)[:, None],
                mask=mask_t[:, None] & mask_n[None, :],
                other=0.0,
            )
            if UPCAST_DOT:
                a = a.to(tl.float32)
                b = b.to(tl.float32)
            acc = tl.dot(a, b, acc, input_precision=DOT_PRECISION)
    else:
        # The loop walks (r, s, channel block) with scalar counters rather than dividing
        # the step index, and each A address is a per-pixel part (computed once) plus a
        # per-tap scalar: the SASS of the divide-and-recompute form spent ~240 instructions
        # a step for 4 HGMMAs, and Nsight Compute found it issue-bound (0.34 IPC a
        # scheduler, stalls on fixed-latency integer dependencies).
        x_pix = x_row + ih0 * stride_xh + iw0 * stride_xw
        if INT64:
            tap_r = tl.full((), 0, tl.int64)
            tap_s = tl.full((), 0, tl.int64)
        else:
            tap_r = tl.full((), 0, tl.int32)
            tap_s = tl.full((), 0, tl.int32)
        c0 = tl.full((), 0, tl.int32)
        c_blocks = tl.cdiv(C_PER_GROUP, BLOCK_K)
        steps = R * S * c_blocks
        if SPLIT_K > 1:  # this program's share of the (tap, channel block) steps
            per_split = tl.cdiv(steps, SPLIT_K)
            first = tl.program_id(1) * per_split
            steps = tl.maximum(tl.minimum(steps - first, per_split), 0)
            tap = first // c_blocks
            c0 += (first - tap * c_blocks) * BLOCK_K
            tap_r += tap // S
            tap_s += tap - (tap // S) * S
        for _ in range(0, steps):
            dh = tap_r * dil_h
            dw = tap_s * dil_w
            ih = ih0 + dh
            iw = iw0 + dw
            # The mask is the padding halo: taps outside the input read as zero.
            in_bounds = mask_m & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
            c = c0 + offs_k
            a_ptrs = (x_pix + (dh * stride_xh + dw * stride_xw))[:, None] + (c * stride_xc)[None, :]
            b_ptrs = (w_col + (tap_r * stride_wr + tap_s * stride_ws))[None, :] + (c * stride_wc)[:, None]
            if EVEN_C:  # C/g is a multiple of BLOCK_K: no channel tail to mask
                a = tl.load(a_ptrs, mask=in_bounds[:, None], other=0.0)
                b = tl.load(b_ptrs, mask=mask_n[None, :], other=0.0)
            else:
                mask_c = c < C_PER_GROUP
                a = tl.load(a_ptrs, mask=in_bounds[:, None] & mask_c[None, :], other=0.0)
                b = tl.load(b_ptrs, mask=mask_c[:, None] & mask_n[None, :], other=0.0)
            if UPCAST_DOT:
                a = a.to(tl.float32)
                b = b.to(tl.float32)
            acc = tl.dot(a, b, acc, input_precision=DOT_PRECISION)
            c0, tap_s, tap_r = next_reduction_step(c0, tap_s, tap_r, C_PER_GROUP, S, BLOCK_K)

    if SUB_K > 0:
        # A NaN/Inf input times the weight's zeros between groups is NaN, so any non-finite
        # input of this tile leaves a non-finite accumulator: one check per tile. (A count
        # per loaded element came with ResNeXt's c128 layer going from 53 to 123 us on an
        # H200.) Rare: redo the tile on the CUDA cores, each output from its own group only.
        # The redo runs one output column at a time, over [BLOCK_M] vectors: a redo over whole
        # [BLOCK_M, BLOCK_N] gather tiles (a 64-bit address an element) set the kernel's register
        # count for a path that almost never runs (grouped_gemm's 128x32 tile, sm_90: 255
        # registers with it, 92 without; benchmarks/audit.py).
        if tl.sum(tl.where(tl.abs(acc) < float("inf"), 0, 1)) > 0:
            acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            for j in range(0, BLOCK_N):
                k = pid_n * BLOCK_N + j  # the column's output channel within the merged group
                if INT64:  # (channel0 + c) * stride_xc passes 2**31 in a large NCHW input
                    k = k.to(tl.int64)
                channel0 = (k // SUB_K) * SUB_C  # the first channel of its own group
                w_k = w_ptr + (group * K_PER_GROUP + k) * stride_wk
                column = tl.zeros((BLOCK_M,), dtype=tl.float32)
                for r in range(0, R):
                    ih = ih0 + r * dil_h
                    for s in range(0, S):
                        iw = iw0 + s * dil_w
                        ok = mask_m & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W) & (k < K_PER_GROUP)
                        for c in range(0, SUB_C):
                            xv = tl.load(x_row + ih * stride_xh + iw * stride_xw + (channel0 + c) * stride_xc,
                                         mask=ok, other=0.0)
                            wv = tl.load(w_k + r * stride_wr + s * stride_ws + (channel0 + c) * stride_wc,
                                         mask=k < K_PER_GROUP, other=0.0)
                            column += xv.to(tl.float32) * wv.to(tl.float32)
                acc = tl.where((tl.arange(0, BLOCK_N) == j)[None, :], column[:, None], acc)
            acc += load_bias(bias_ptr, group * K_PER_GROUP + offs_n, mask_n, BIAS_FIRST)  # as the sums above

    if SPLIT_K > 1:  # partial sums only: the epilogue runs once they are all in
        # groups = 1 here (the launcher's rule): a row of the workspace is K_PER_GROUP = K.
        ws_offs = (tl.program_id(1).to(tl.int64) * M + offs_m)[:, None] * K_PER_GROUP + offs_n[None, :]
        tl.store(ws_ptr + ws_offs, acc, mask=mask_m[:, None] & mask_n[None, :])
        return

    # Epilogue on the fp32 accumulator (the bias is in: the sums started from it, split-K
    # returned above): + residual, activation, one store. A 16-bit output takes ReLU folded into
    # its conversion (common.apply_activation).
    store_output_tile(
        acc, out_ptr, bias_ptr, res_ptr, n_idx, p_idx, q_idx, mask_m,
        group * K_PER_GROUP + offs_n, mask_n,
        stride_on, stride_ok, stride_op, stride_oq, stride_rn, stride_rk, stride_rp, stride_rq,
        alpha, beta, ACTIVATION, False, HAS_RESIDUAL, out_ptr.dtype.element_ty.primitive_bitwidth == 16,
    )


@triton.jit(do_not_specialize=["M", "P", "Q"])
def splitk_epilogue_kernel(
    ws_ptr,  # fp32 partial sums [SPLIT_K, M, K] of conv2d_implicit_gemm_kernel
    out_ptr, bias_ptr, res_ptr,
    M, K, P, Q,
    stride_on, stride_ok, stride_op, stride_oq,
    stride_rn, stride_rk, stride_rp, stride_rq,
    alpha, beta,
    ACTIVATION: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_RESIDUAL: tl.constexpr,
    SPLIT_K: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    """Sum the SPLIT_K partial tiles (in a fixed order: deterministic) and apply the shared
    epilogue, as the implicit GEMM's own store would have."""
    offs_m = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask_m = offs_m < M
    mask_n = offs_n < K
    mask = mask_m[:, None] & mask_n[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for split in range(0, SPLIT_K):
        acc += tl.load(ws_ptr + (M.to(tl.int64) * split + offs_m)[:, None] * K + offs_n[None, :], mask=mask, other=0.0)
    n_idx, p_idx, q_idx, _, _ = output_pixels(offs_m, P, Q, 1, 1, 0, 0)
    store_output_tile(
        acc, out_ptr, bias_ptr, res_ptr, n_idx, p_idx, q_idx, mask_m, offs_n, mask_n,
        stride_on, stride_ok, stride_op, stride_oq, stride_rn, stride_rk, stride_rp, stride_rq,
        alpha, beta, ACTIVATION, HAS_BIAS, HAS_RESIDUAL,
    )
