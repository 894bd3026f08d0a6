"""Weight gradient (wgrad): a GEMM whose reduction runs over the N*P*Q output pixels.

For ``y = conv2d(x, w)`` with stride (U, V), top/left padding (pad_h, pad_w), dilation
(dil_h, dil_w) and the pre-activation gradient ``dy``:

    dw[g*K/g + k, c, r, s] = sum_{m = (n, p, q)} dy[n, g*K/g + k, p, q]
                                 * x[n, g*C/g + c, p*U - pad_h + r*dil_h, q*V - pad_w + s*dil_w]

In GEMM terms, per group: M = K/g rows (output channels), N = C/g*R*S columns
t = (r*S + s)*C/g + c (channel fastest, so that a column tile of an NHWC input is one
contiguous channel run, and C/g = 3 does not pad each tap to a whole tile), and the
reduction over the N*P*Q pixels, gathered from x with the padding halo masked (im2col in
the load, as in the forward).

The reduction is long (ResNet's 56x56 at batch 32: 100k pixels) while the output is
small (K*C*R*S), so few tiles would each walk it alone: split-K gives each of ``split``
programs one chunk of the pixels; they write fp32 partial sums to a [split, K, C/g*R*S]
workspace in the tiles' own column order (coalesced stores), and :func:`wgrad_finish_kernel`
sums the splits in a fixed order (deterministic, no atomics) and writes each column to the
weight's (c, r, s). Without split-K, a 1x1 weight is written directly.

- :func:`conv2d_wgrad_kernel` (tensor cores): A[k, m] = dy, B[m, t] = x (gathered).
- :func:`conv2d_wgrad_depthwise_kernel` (CUDA cores): groups = C leaves a 1 x R*S GEMM per
  channel; instead each program multiplies [pixels, channels] tiles of dy with the input
  tiles of every tap of one filter row, one accumulator a tap.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait

from .._runtime import cdiv, kernel_strides, programmatic_launch
from ..problem import ConvProblem
from .common import advance_pixels, divide, output_pixels, pixel_count, pixel_steps
from .config import BackwardConfig, dot_constexprs, needs_int64
from .fast_launch import launch
from .fast_launch import workspace as scratch

# Hopper has 132 SMs; split-K aims at two waves of programs.
_TARGET_PROGRAMS = 2 * 132
# A split keeps at least this many reduction steps, so that its pipeline fills and the
# partial sums (4 bytes per weight element per split) stay small beside the reduction.
_MIN_STEPS_PER_SPLIT = 8
_MAX_SPLIT = 256
# The CUDA-core depthwise wgrad hides its load latency with many warps: about eight 4-warp
# programs an SM.
_CUDA_CORE_PROGRAMS = 8 * 132
FINISH_BLOCK = 256  # wgrad_finish_kernel: weight elements a program, up to 16 splits
FINISH_TILE = 4096  # past 16 splits: splits x weight elements a program sums at a time
FINISH_MAX_SPLITS = 64  # splits a step at most (the rest of the tile: elements)
FINISH_TAP_MIN_CHANNELS = 32  # wgrad_finish_taps_kernel from this many channels a group
FINISH_TAP_MAX_CHANNELS = 256  # its channel block at most
# ... and narrower where the (k, tap) rows alone would give fewer programs than this: a
# program's loads are one round trip, so on a small gradient the grid, not the bytes, is
# what bounds the sum.
FINISH_MIN_PROGRAMS = 4 * 132
# Its warps: two (a 256-channel row is then 16-byte loads). H200, the sum of ResNet-50's 1x1
# splits alone (benchmarks/probe_finish.py, CUDA-graph replays): 2 warps beat 4 on every row
# measured, 256 channels 3.0-3.2 us against 3.5-5.3, 64 channels 3.5-4.2 against 4.3-4.6.
FINISH_TAP_WARPS = 2


@triton.jit(do_not_specialize=["N", "H", "W", "P", "Q", "stride_h", "stride_w", "pad_h", "pad_w", "dil_h", "dil_w",
                               "R", "S", "CHUNK", "SPLIT", "GROUPS"])
def conv2d_wgrad_kernel(
    dy_ptr,  # upstream gradient [N, K, P, Q] through strides stride_dn..
    x_ptr,  # input [N, C, H, W] through strides stride_xn..
    out_ptr,  # [SPLIT, K, C/g*R*S] columns t = (r, s, c), through stride_os, stride_ok, stride_ot (written)
    N, H, W, P, Q,
    C_PER_GROUP, K_PER_GROUP,
    stride_h, stride_w, pad_h, pad_w, dil_h, dil_w,
    stride_dn, stride_dk, stride_dp, stride_dq,
    stride_xn, stride_xc, stride_xh, stride_xw,
    stride_os, stride_ok, stride_ot,
    R, S,
    CHUNK,  # pixels per split, a multiple of BLOCK_K
    SPLIT, GROUPS,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    DOT_PRECISION: tl.constexpr, UPCAST_DOT: tl.constexpr, INT64: tl.constexpr,
    # C/g % BLOCK_N == 0: every column of a tile belongs to one tap (r, s), so the input
    # tile is one pixel gather at a scalar tap offset with a per-pixel halo mask (instead
    # of per-element (r, s) decoding and a 2D mask).
    TAP_TILE: tl.constexpr = False,
    # 1x1, stride 1, no padding, and both tensors dense over (n, h, w) (stride_n = H*stride_h,
    # stride_h = W*stride_w): pixel m sits at m * stride_w in both, no decoding, no halo.
    FLAT: tl.constexpr = False,
    # The split sums follow as a programmatic dependent launch (:func:`sum_splits`): let them
    # be scheduled once every program of this grid has started.
    SIGNAL_DEPENDENTS: tl.constexpr = False,
):
    if SIGNAL_DEPENDENTS:
        gdc_launch_dependents()
    L = pixel_count(N, P, Q, INT64)
    T = C_PER_GROUP * R * S
    num_m = tl.cdiv(K_PER_GROUP, BLOCK_M)
    num_n = tl.cdiv(T, BLOCK_N)
    pid = tl.program_id(0)
    tile = pid % (num_m * num_n)
    group = (pid // (num_m * num_n)) % GROUPS
    split = pid // (num_m * num_n * GROUPS)
    pid_m = tile // num_n
    pid_n = tile % num_n

    offs_k = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)  # output channels within the group
    offs_t = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)  # filter columns (r, s, c)
    offs_pix = tl.arange(0, BLOCK_K)
    if INT64:
        group = group.to(tl.int64)
        split = split.to(tl.int64)
        offs_k = offs_k.to(tl.int64)
        offs_t = offs_t.to(tl.int64)
        offs_pix = offs_pix.to(tl.int64)
    start = split * CHUNK
    end = tl.minimum(start + CHUNK, L)
    mask_k = offs_k < K_PER_GROUP
    mask_t = offs_t < T
    tap = offs_t // C_PER_GROUP
    c = offs_t % C_PER_GROUP
    r = tap // S
    s = tap % S
    dy_col = dy_ptr + ((group * K_PER_GROUP + offs_k) * stride_dk)[:, None]
    x_col = x_ptr + ((group * C_PER_GROUP + c) * stride_xc)[None, :]
    # TAP_TILE: the tile's one tap, as scalars.
    tap0 = (pid_n * BLOCK_N) // C_PER_GROUP
    dh0 = (tap0 // S) * dil_h
    dw0 = (tap0 % S) * dil_w

    # Each lane's pixel (n, p, q) is decoded once, then advanced by BLOCK_K pixels a step
    # with carries (q past Q wraps into p, p past P into n): integer divisions in the loop
    # cost ~400 SASS instructions a step (16 divisions a thread: two layouts, replicated
    # lanes) against 4 HGMMAs.
    n_idx, p, q, _, _ = output_pixels(start + offs_pix, P, Q, 1, 1, 0, 0)
    step_n, step_p, step_q = pixel_steps(BLOCK_K, P, Q)

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for m0 in range(0, CHUNK, BLOCK_K):
        m = start + m0 + offs_pix
        mask_pix = m < end
        if FLAT:
            a = tl.load(dy_col + (m * stride_dq)[None, :], mask=mask_k[:, None] & mask_pix[None, :], other=0.0)
            b = tl.load(x_col + (m * stride_xw)[:, None], mask=mask_pix[:, None] & mask_t[None, :], other=0.0)
        else:
            ih0 = p * stride_h - pad_h
            iw0 = q * stride_w - pad_w
            a = tl.load(dy_col + (n_idx * stride_dn + p * stride_dp + q * stride_dq)[None, :],
                        mask=mask_k[:, None] & mask_pix[None, :], other=0.0)
            if TAP_TILE:
                ih = ih0 + dh0
                iw = iw0 + dw0
                ok = mask_pix & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)  # the padding halo
                b = tl.load(x_col + (n_idx * stride_xn + ih * stride_xh + iw * stride_xw)[:, None],
                            mask=ok[:, None], other=0.0)
            else:
                ih = ih0[:, None] + (r * dil_h)[None, :]
                iw = iw0[:, None] + (s * dil_w)[None, :]
                # The mask is the padding halo (and the tails of pixels and columns).
                ok = mask_pix[:, None] & mask_t[None, :] & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
                b = tl.load(x_col + (n_idx * stride_xn)[:, None] + ih * stride_xh + iw * stride_xw, mask=ok, other=0.0)
            n_idx, p, q = advance_pixels(n_idx, p, q, step_n, step_p, step_q, P, Q)
        if UPCAST_DOT:
            a = a.to(tl.float32)
            b = b.to(tl.float32)
        acc = tl.dot(a, b, acc, input_precision=DOT_PRECISION)

    # Stored in the tile's own column order (consecutive t consecutive in memory: coalesced);
    # the weight's (c, r, s) order is wgrad_finish_kernel's job where it differs.
    out_offs = split * stride_os + ((group * K_PER_GROUP + offs_k) * stride_ok)[:, None] + (offs_t * stride_ot)[None, :]
    tl.store(out_ptr + out_offs, acc.to(out_ptr.dtype.element_ty), mask=mask_k[:, None] & mask_t[None, :])


@triton.jit
def _split_total(ws_ptr, offs_e, mask_e, KT, SPLIT, BLOCK_S: tl.constexpr, BLOCK_E: tl.constexpr,
                 WAIT_PRIOR: tl.constexpr):
    """The sum over the SPLIT splits of the partial sums at ``offs_e`` (fp32 workspace
    [SPLIT, KT]), BLOCK_S splits at a time, in a fixed order (deterministic). ``WAIT_PRIOR``
    (a programmatic dependent launch, :func:`~tileconv._runtime.programmatic_launch`): first
    wait until the kernel that wrote them has finished and its writes are visible."""
    if WAIT_PRIOR:
        gdc_wait()
    offs_s = tl.arange(0, BLOCK_S)
    acc = tl.zeros((BLOCK_S, BLOCK_E), dtype=tl.float32)
    for s0 in range(0, SPLIT, BLOCK_S):
        split = s0 + offs_s
        acc += tl.load(ws_ptr + (split.to(tl.int64) * KT)[:, None] + offs_e[None, :],
                       mask=(split < SPLIT)[:, None] & mask_e[None, :], other=0.0)
    return tl.sum(acc, axis=0)


@triton.jit(do_not_specialize=["SPLIT", "S"])
def wgrad_finish_kernel(
    ws_ptr,  # fp32 partial sums [SPLIT, K*T] (T = C/g*R*S columns t = (r, s, c)), contiguous
    out_ptr,  # the weight gradient [K, C/g, R, S] through its strides (written)
    KT, T, C_PER_GROUP, S, SPLIT,
    stride_ok, stride_oc, stride_or, stride_ow,
    BLOCK_S: tl.constexpr, BLOCK_E: tl.constexpr,
    WAIT_PRIOR: tl.constexpr,  # launched programmatically after the kernel writing ws_ptr: wait for it
):
    """Sum the splits and write element e = k*T + t, t = (r, s, c), to the weight's
    (k, c, r, s). Each program reads BLOCK_S splits of BLOCK_E elements at a time (split-K
    of a small weight has hundreds of splits: one split at a time left a single program
    walking them all); the sum runs in a fixed order (deterministic)."""
    offs_e = tl.program_id(0).to(tl.int64) * BLOCK_E + tl.arange(0, BLOCK_E)
    mask_e = offs_e < KT
    total = _split_total(ws_ptr, offs_e, mask_e, KT, SPLIT, BLOCK_S, BLOCK_E, WAIT_PRIOR)
    k, t = divide(offs_e, T)
    tap, c = divide(t, C_PER_GROUP)
    r, s = divide(tap, S)
    tl.store(out_ptr + k * stride_ok + c * stride_oc + r * stride_or + s * stride_ow,
             total.to(out_ptr.dtype.element_ty), mask=mask_e)


@triton.jit(do_not_specialize=["SPLIT", "S", "TAPS"])
def wgrad_finish_taps_kernel(
    ws_ptr,  # fp32 partial sums [SPLIT, K*T] (T = C/g*R*S columns t = (r, s, c)), contiguous
    out_ptr,  # the weight gradient [K, C/g, R, S] through its strides (written)
    KT, T, C_PER_GROUP, S, TAPS, SPLIT,
    stride_ok, stride_oc, stride_or, stride_ow,
    BLOCK_S: tl.constexpr, BLOCK_C: tl.constexpr,
    WAIT_PRIOR: tl.constexpr,  # as wgrad_finish_kernel's
):
    """:func:`wgrad_finish_kernel` for wide groups (C/g of 32 and more): a program sums the
    splits of one output channel's one tap over BLOCK_C channels, so that its (k, r, s) are
    three scalar divisions a program. The per-element form decodes every element's (k, r, s,
    c) by five divisions by runtime values: on an H200 it ran instruction-bound (ResNet-50's
    c512 hw7 3x3 at two splits: 22 us for 24 MB, longer than the GEMM before it)."""
    pid = tl.program_id(0)
    blocks = tl.cdiv(C_PER_GROUP, BLOCK_C)
    row = pid // blocks  # (k, tap)
    c = (pid - row * blocks) * BLOCK_C + tl.arange(0, BLOCK_C)
    k = row // TAPS
    tap = row - k * TAPS
    r = tap // S
    s = tap - r * S
    offs_e = k.to(tl.int64) * T + tap * C_PER_GROUP + c
    mask_c = c < C_PER_GROUP
    total = _split_total(ws_ptr, offs_e, mask_c, KT, SPLIT, BLOCK_S, BLOCK_C, WAIT_PRIOR)
    tl.store(out_ptr + k.to(tl.int64) * stride_ok + c * stride_oc + r * stride_or + s * stride_ow,
             total.to(out_ptr.dtype.element_ty), mask=mask_c)


# K is specialised (not in do_not_specialize): a channel count divisible by 16 lets the
# channel masks hold over 16-byte groups, and the loads go 16 bytes wide (with K left
# unspecialised, sm_90 SASS loaded every element by itself: LDG.E.U16).
@triton.jit(do_not_specialize=["N", "H", "W", "P", "Q", "stride_h", "stride_w", "pad_h", "pad_w", "dil_h", "dil_w",
                               "S", "CHUNK"])
def conv2d_wgrad_depthwise_kernel(
    dy_ptr,  # upstream gradient [N, K, P, Q]
    x_ptr,  # input [N, C, H, W], C = K / MULTIPLIER
    out_ptr,  # [SPLIT, K, 1, R, S] fp32 partial sums through stride_os and stride_ok.. (written)
    N, H, W, P, Q, K,
    stride_h, stride_w, pad_h, pad_w, dil_h, dil_w,
    stride_dn, stride_dk, stride_dp, stride_dq,
    stride_xn, stride_xc, stride_xh, stride_xw,
    stride_os, stride_ok, stride_oc, stride_or, stride_ow,
    S,
    CHUNK,  # per split: output rows (n, p) with ROW_TILES, else output pixels (a multiple of BLOCK_M)
    MULTIPLIER: tl.constexpr,
    BLOCK_S: tl.constexpr,  # S rounded up to a power of two
    BLOCK_M: tl.constexpr,  # output pixels a tile (of one output row with ROW_TILES)
    BLOCK_C: tl.constexpr,
    ROW_TILES: tl.constexpr,  # tiles inside one output row, or runs of the flattened pixels
    INT64: tl.constexpr,
    SIGNAL_DEPENDENTS: tl.constexpr,  # the split sums follow programmatically (:func:`.wgrad.sum_splits`)
):
    """dw[k, 0, r, s] = sum_{n, p, q} dy[n, k, p, q] * x[n, k // MULT, p*U - pad_h + r*dil_h, q*V - pad_w + s*dil_w].
    Grid: (channel blocks, filter rows r, splits). A program walks its CHUNK of the output
    in tiles of BLOCK_M pixels and multiplies each tile's dy (loaded once) with the input
    tiles of every tap of its filter row at once (a [BLOCK_M, BLOCK_S, BLOCK_C] gather whose
    shifted rows overlap, so most of it hits L1), accumulating per tap; one reduction over
    the pixels at the end. Pixels come first in the gather: the compiler spreads threads
    over channels, then over the first other dimension, so a thread holds all the taps of
    its pixels and dy broadcasts over them in registers.
    ROW_TILES: tiles lie inside one output row, so (n, p) and the input row are scalars (no
    per-pixel division) and a row that filter row r puts in the padding is skipped whole;
    it won for filters wider than 3 (RepLKNet's rows 1.2x-1.3x faster, the 7x7s up to 1.1x)
    and lost on the 3x3s, whose rows are narrow and whose taps are few (up to 1.4x slower),
    where runs of the flattened pixels are the tiles. (Earlier forms: one tap a program,
    reading dy and x from L2 once a tap; per-tap block reductions each tile; taps first, so
    that each thread converted dy again: benchmarks/NOTES.md, session 13.)"""
    if SIGNAL_DEPENDENTS:
        gdc_launch_dependents()
    offs_c = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    r = tl.program_id(1)
    split = tl.program_id(2)
    offs_q = tl.arange(0, BLOCK_M)
    offs_s = tl.arange(0, BLOCK_S)
    if INT64:
        split = split.to(tl.int64)
        offs_c = offs_c.to(tl.int64)
        offs_q = offs_q.to(tl.int64)
    mask_c = offs_c < K
    mask_s = offs_s < S
    dy_chan = dy_ptr + (offs_c * stride_dk)[None, :]
    if MULTIPLIER == 1:  # (offs_c // 1 would hide from the compiler that the channels are contiguous)
        x_chan = x_ptr + (offs_c * stride_xc)[None, None, :]
    else:
        x_chan = x_ptr + ((offs_c // MULTIPLIER) * stride_xc)[None, None, :]
    tap_offs = (offs_s * (dil_w * stride_xw))[None, :, None]

    acc = tl.zeros((BLOCK_M, BLOCK_S, BLOCK_C), dtype=tl.float32)
    start = split * CHUNK
    if ROW_TILES:
        end = tl.minimum(start + CHUNK, pixel_count(N, P, 1, INT64))
        for row in range(start, end):
            n_idx = row // P
            p = row - n_idx * P
            ih = p * stride_h - pad_h + r * dil_h
            if (ih >= 0) & (ih < H):  # else filter row r reads only padding here
                dy_row = dy_chan + (n_idx * stride_dn + p * stride_dp)
                x_row = x_chan + (n_idx * stride_xn + ih * stride_xh) + tap_offs
                for q0 in range(0, Q, BLOCK_M):
                    q = q0 + offs_q
                    mask_q = q < Q
                    dyv = tl.load(dy_row + (q * stride_dq)[:, None], mask=mask_q[:, None] & mask_c[None, :], other=0.0)
                    iw0 = q * stride_w - pad_w
                    iw = iw0[:, None] + (offs_s * dil_w)[None, :]  # [BLOCK_M, BLOCK_S]
                    inside = mask_q[:, None] & mask_s[None, :] & (iw >= 0) & (iw < W)
                    xv = tl.load(x_row + (iw0 * stride_xw)[:, None, None],
                                 mask=inside[:, :, None] & mask_c[None, None, :], other=0.0)
                    acc += dyv.to(tl.float32)[:, None, :] * xv.to(tl.float32)
    else:
        end = tl.minimum(start + CHUNK, pixel_count(N, P, Q, INT64))
        for m0 in range(start, end, BLOCK_M):
            m = m0 + offs_q
            mask_pix = m < end
            n_idx, p, q, ih0, iw0 = output_pixels(m, P, Q, stride_h, stride_w, pad_h, pad_w)
            dyv = tl.load(dy_chan + (n_idx * stride_dn + p * stride_dp + q * stride_dq)[:, None],
                          mask=mask_pix[:, None] & mask_c[None, :], other=0.0)
            ih = ih0 + r * dil_h
            iw = iw0[:, None] + (offs_s * dil_w)[None, :]  # [BLOCK_M, BLOCK_S]
            inside = (mask_pix & (ih >= 0) & (ih < H))[:, None] & mask_s[None, :] & (iw >= 0) & (iw < W)
            x_pix = (n_idx * stride_xn + ih * stride_xh + iw0 * stride_xw)[:, None, None]
            xv = tl.load(x_chan + x_pix + tap_offs, mask=inside[:, :, None] & mask_c[None, None, :], other=0.0)
            acc += dyv.to(tl.float32)[:, None, :] * xv.to(tl.float32)
    total = tl.sum(acc, axis=0)  # [BLOCK_S, BLOCK_C]
    tl.store(out_ptr + split * stride_os + (offs_c * stride_ok)[None, :] + r * stride_or + (offs_s * stride_ow)[:, None],
             total, mask=mask_s[:, None] & mask_c[None, :])


# ------------------------------------------------------------------------- launchers
def choose_split_k(reduction: int, block: int, tiles: int, requested: int = 0, cap: int = _MAX_SPLIT,
                   target: int = _TARGET_PROGRAMS) -> int:
    """How many programs share a reduction of ``reduction`` pixels in steps of ``block``,
    when ``tiles`` programs would exist without splitting. ``requested`` > 0 is obeyed
    (tests pin it); 0 splits only when the grid is short of two waves and each split
    keeps :data:`_MIN_STEPS_PER_SPLIT` steps, and at most ``cap`` ways
    (:func:`partial_sum_cap`); ``target`` programs in all. ``tune --pass wgrad`` races this
    choice against 1, 4 and 16 splits."""
    if requested > 0:
        return max(1, min(requested, cdiv(reduction, block)))
    most = max(1, reduction // (_MIN_STEPS_PER_SPLIT * block))
    wanted = cdiv(target, max(tiles, 1))
    return max(1, min(most, wanted, cap, _MAX_SPLIT))


def splits_within_input_bytes(problem: ConvProblem) -> int:
    """How many splits keep the partial sums' traffic within the inputs' own bytes: each
    split writes and the finish kernel reads K*C/g*R*S fp32 partial sums (8 bytes an element)."""
    inputs = problem.gemm_m * (problem.k + problem.c) * problem.itemsize
    partial_sums = problem.k * problem.c_per_group * problem.r * problem.s * 8
    return max(1, inputs // partial_sums)


def partial_sum_cap(problem: ConvProblem) -> int:
    """The most splits a 1x1 wgrad takes: a 1x1 reduction has no taps to share its input loads
    over, so the partial sums' traffic is held to the inputs' own bytes. Measured on an
    H200 (ResNet-50 at batch 32): where the partial sums outweighed the inputs (c512 hw7
    k2048, c2048 hw7 k512, c1024 hw14 k2048 stride 2), split 1 beat the uncapped choice by
    1.46x-2.37x; c512 hw28 k1024 stride 2 (cap 4) was fastest at 4 splits. Filters with
    taps keep the uncapped choice (c512 hw7 3x3 was fastest at 2 splits, past this cap)."""
    if problem.r * problem.s > 1:
        return _MAX_SPLIT
    return splits_within_input_bytes(problem)


def _chunk(reduction: int, split: int, block: int) -> tuple[int, int]:
    """(pixels per split rounded up to ``block``, splits actually needed)."""
    chunk = cdiv(cdiv(reduction, split), block) * block
    return chunk, cdiv(reduction, chunk)


def split_output(problem: ConvProblem, grad_weight: torch.Tensor, split: int
                 ) -> tuple[torch.Tensor, tuple[int, int, int], bool]:
    """Where a wgrad kernel writes its tiles: (tensor, its (split, k, column) strides, whether
    :func:`sum_splits` must follow). One split over a gradient whose columns are evenly
    spaced (:func:`direct_column_stride`) is the gradient itself, in its dtype; anything
    else a fp32 [split, K, columns] workspace."""
    column_stride = direct_column_stride(problem, grad_weight) if split == 1 else None
    if column_stride is not None:
        return grad_weight, (0, grad_weight.stride(0), column_stride), False
    columns = problem.c_per_group * problem.r * problem.s
    out = scratch((split, problem.k, columns), torch.float32, grad_weight.device)
    return out, out.stride(), True


def direct_column_stride(problem: ConvProblem, grad_weight: torch.Tensor) -> int | None:
    """The stride between consecutive GEMM columns t = (r, s, c) in ``grad_weight`` when it
    is one stride for all of them (a 1x1 filter; a channels_last weight, where t is the
    weight's own memory order), else None. Where it exists and the pixels are not split, a
    wgrad kernel writes its tile straight into the gradient: no partial sums, no second launch."""
    _, stride_c, stride_r, stride_s = grad_weight.stride()
    if (problem.s > 1 and stride_s != problem.c_per_group * stride_c) or \
            (problem.r > 1 and stride_r != problem.s * problem.c_per_group * stride_c):
        return None
    return stride_c


def sum_splits(problem: ConvProblem, workspace: torch.Tensor, grad_weight: torch.Tensor, split: int) -> None:
    """grad_weight = the sum of ``workspace``'s splits ([split, K, C/g*R*S] fp32, columns
    t = (r, s, c)), by :func:`wgrad_finish_kernel` (a Triton launch, so that a replayed call
    (:mod:`tileconv.call_plans`) repeats it). On Hopper it is a programmatic dependent launch
    (:func:`~tileconv._runtime.programmatic_launch`) waiting for the kernel before it: its
    launch and its programs' arrival overlap that kernel's last wave (the weight gradient
    kernels signal it as their programs start: ``SIGNAL_DEPENDENTS``)."""
    pdl = programmatic_launch(workspace.device)
    columns = problem.c_per_group * problem.r * problem.s
    elements = problem.k * columns
    if problem.c_per_group >= FINISH_TAP_MIN_CHANNELS:  # a program a (k, tap) and channel block
        taps = problem.r * problem.s
        block_c = min(FINISH_TAP_MAX_CHANNELS, triton.next_power_of_2(problem.c_per_group))
        while block_c > FINISH_TAP_MIN_CHANNELS and \
                problem.k * taps * cdiv(problem.c_per_group, block_c) < FINISH_MIN_PROGRAMS:
            block_c //= 2
        block_s = min(FINISH_TILE // block_c, 1 << (split - 1).bit_length())
        launch(wgrad_finish_taps_kernel, (problem.k * taps * cdiv(problem.c_per_group, block_c),),
               workspace, grad_weight, elements, columns, problem.c_per_group, problem.s, taps, split,
               *grad_weight.stride(), BLOCK_S=block_s, BLOCK_C=block_c, WAIT_PRIOR=pdl,
               num_warps=FINISH_TAP_WARPS, launch_pdl=pdl)
        return
    # A power of two covering the splits, at most FINISH_MAX_SPLITS: a small weight with
    # hundreds of splits (the depthwise kernel's) is summed in a few wide steps. Up to 16
    # splits, 256 elements a program (the tile every wgrad had before the depthwise kernel's
    # splits grew).
    block_s = min(FINISH_MAX_SPLITS, 1 << (split - 1).bit_length())
    block_e = FINISH_BLOCK if block_s <= 16 else FINISH_TILE // block_s
    launch(wgrad_finish_kernel, (cdiv(elements, block_e),),
           workspace, grad_weight, elements, columns, problem.c_per_group, problem.s, split,
           *grad_weight.stride(), BLOCK_S=block_s, BLOCK_E=block_e, WAIT_PRIOR=pdl, num_warps=4, launch_pdl=pdl)


def launch_wgrad_implicit_gemm(
    problem: ConvProblem, grad: torch.Tensor, x: torch.Tensor, grad_weight: torch.Tensor,
    config: BackwardConfig,
):
    """``grad_weight`` (K, C/g, R, S) = wgrad of ``grad`` (the pre-activation gradient) and ``x``."""
    reduction = problem.gemm_m
    columns = problem.c_per_group * problem.r * problem.s
    tiles = cdiv(problem.k_per_group, config.block_m) * cdiv(columns, config.block_n) * problem.groups
    split = choose_split_k(reduction, config.block_k, tiles, config.split_k, partial_sum_cap(problem))
    chunk, split = _chunk(reduction, split, config.block_k)
    out, out_strides, summed = split_output(problem, grad_weight, split)
    launch(conv2d_wgrad_kernel, (tiles * split,),
        grad, x, out,
        problem.n, problem.h, problem.w, problem.out_h, problem.out_w,
        problem.c_per_group, problem.k_per_group,
        problem.stride[0], problem.stride[1], problem.padding[0], problem.padding[1],
        problem.dilation[0], problem.dilation[1],
        *kernel_strides(grad), *kernel_strides(x), *out_strides,
        problem.r, problem.s, chunk, split, problem.groups,
        BLOCK_M=config.block_m, BLOCK_N=config.block_n, BLOCK_K=config.block_k,
        **dot_constexprs(problem),
        INT64=needs_int64(problem),
        TAP_TILE=problem.c_per_group % config.block_n == 0,
        FLAT=_flat_pixels(problem, grad, x),
        SIGNAL_DEPENDENTS=summed and programmatic_launch(grad.device),
        num_warps=config.num_warps, num_stages=config.num_stages,
    )
    if summed:
        sum_splits(problem, out, grad_weight, split)
    return split


def _dense_pixels(t: torch.Tensor) -> bool:
    """Pixel (n, h, w) of ``t`` sits at ((n*H + h)*W + w) * stride_w: no gaps between rows or images."""
    n, _, h, w = t.shape
    sn, _, sh, sw = t.stride()
    return (h == 1 or sh == w * sw) and (n == 1 or sn == h * w * sw)


def _flat_pixels(problem: ConvProblem, grad: torch.Tensor, x: torch.Tensor) -> bool:
    """Whether wgrad may address pixel m as m * stride_w in both tensors (its FLAT case):
    a 1x1, stride-1, unpadded problem, both tensors dense over pixels, one pixel stride."""
    if (problem.r, problem.s, problem.stride) != (1, 1, (1, 1)) or problem.padding != (0, 0):
        return False
    if problem.padding_end != (0, 0) or problem.dilation != (1, 1) or problem.w == 1:
        return False  # (W = 1: kernel_strides gives a size-1 axis the stride 0)
    return _dense_pixels(grad) and _dense_pixels(x)


def wgrad_depthwise_row_tiles(problem: ConvProblem) -> bool:
    """Whether the depthwise wgrad's tiles lie inside one output row (filters wider than 3)
    or are runs of the flattened pixels (see :func:`conv2d_wgrad_depthwise_kernel`; measured
    on an H200, session 13)."""
    return problem.s > 3


def launch_wgrad_depthwise(
    problem: ConvProblem, grad: torch.Tensor, x: torch.Tensor, grad_weight: torch.Tensor,
    config: BackwardConfig,
):
    """Depthwise wgrad on the CUDA cores: tiles of ``config.block_m`` pixels (of one output row
    for filters wider than 3) x ``block_n`` channels, one filter row a program; ``split_k``
    programs a (channel block, filter row) share the output (0: :func:`choose_split_k`, for
    ~8 programs an SM)."""
    row_tiles = wgrad_depthwise_row_tiles(problem)
    # The reduction: output rows (n, p), a row's pixels in tiles; or the flattened pixels.
    reduction, block = (problem.n * problem.out_h, 1) if row_tiles else (problem.gemm_m, config.block_m)
    tiles = cdiv(problem.k, config.block_n) * problem.r
    # The partial sums held to the inputs' bytes (a 31x31 filter has 961 a channel).
    wanted = choose_split_k(reduction, block, tiles, config.split_k, splits_within_input_bytes(problem),
                            target=_CUDA_CORE_PROGRAMS)
    chunk, split = _chunk(reduction, wanted, block)
    # Taps (r, s) are the columns (C/g = 1): the workspace is [split, K, R*S], as wgrad_finish_kernel reads.
    out = scratch((split, problem.k, 1, problem.r, problem.s), torch.float32, grad_weight.device)
    launch(conv2d_wgrad_depthwise_kernel, (cdiv(problem.k, config.block_n), problem.r, split),
        grad, x, out,
        problem.n, problem.h, problem.w, problem.out_h, problem.out_w, problem.k,
        problem.stride[0], problem.stride[1], problem.padding[0], problem.padding[1],
        problem.dilation[0], problem.dilation[1],
        *kernel_strides(grad), *kernel_strides(x), *kernel_strides(out),
        problem.s, chunk,
        MULTIPLIER=problem.k // problem.c, BLOCK_S=triton.next_power_of_2(problem.s),
        BLOCK_M=config.block_m, BLOCK_C=config.block_n, ROW_TILES=row_tiles, INT64=needs_int64(problem),
        SIGNAL_DEPENDENTS=programmatic_launch(grad.device), num_warps=config.num_warps, num_stages=config.num_stages,
    )
    sum_splits(problem, out, grad_weight, split)
    return split
