"""Few input channels: the weight gradient over a filter row's columns as channels, read in place.

The wgrad GEMM of :mod:`.wgrad` has columns t = (r, s, c), the channel fastest. With C = 3
(ResNet's 7x7 stem) a column tile of an NHWC input is a gather of 2-byte values, three to a
pixel at odd addresses: no 16-byte copy, no pipelined load, and a 7x7 filter's 147 columns
round up to two 128-wide tiles. On an H200 that ran the stem's wgrad at 0.86x cuDNN (187 us,
batch 32), with both far from either floor.

Here the input is first copied into ``xs``: channels padded with zeros to CP (a power of two),
columns padded with ``pad_w`` zeros on the left and enough on the right (the copy is
:func:`~.im2row.unroll_columns_kernel` with one filter column: the stem's 9.6 MB input
becomes 13 MB). Filter row r's S x CP values that output pixel (n, p, q) meets are then one
contiguous run of ``xs``:

    xs[n, p*U - pad_h + r*dil_h, q*V + s, c]  =  row (n, ih) at element (q*V)*CP + j,
                                                  j = s*CP + c

(filter columns undilated), the input of :meth:`~tileconv.problem.ConvProblem.columns_as_channels`
read where it lies instead of written out (the forward's ``im2row`` writes it: 51 MB for the
stem). The runs of consecutive output columns overlap, V*CP elements apart. The GEMM:

    dw'[k, (r, j)] = sum_{m = (n, p, q)} dy[n, k, p, q] * xs-run(m, r)[j]

with J (S*CP rounded up to a power of two) columns a filter row and a column tile of
BLOCK_N / J whole filter rows: the stem's 7 rows of 32 (28 real: S*CP) in one 256-wide tile,
one ``tl.dot`` a step over [BLOCK_K pixels, 256 columns] read by 16-byte copies (a row's run
is 16-byte aligned where V*CP*itemsize is) with one padding mask a filter row. Split-K as in
:mod:`.wgrad`: each program writes the real columns of its tile, in the weight's (r, s, c)
order, to a [split, K, C*R*S] fp32 workspace that :func:`~.wgrad.sum_splits` adds up. The
padding columns (s >= S, c >= C) read real neighbouring pixels or zeros and are dropped.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait

from .._runtime import INT32_LIMIT, cdiv, kernel_strides, pow2_at_least, programmatic_launch
from ..problem import ConvProblem
from .common import advance_pixels, output_pixels, pixel_count, pixel_steps
from .config import BackwardConfig, dot_constexprs, needs_int64
from .fast_launch import launch
from .fast_launch import workspace as scratch
from .im2row import unroll_columns_kernel
from .wgrad import _chunk, choose_split_k, sum_splits

# A filter row's columns J at most: a column tile holds whole filter rows, and 256 columns
# by 64 output channels is the 4-warp accumulator (128 fp32 registers a thread).
MAX_ROW_COLUMNS = 256
COPY_ELEMENTS = 4096  # xs elements a program of the padding copy


def padded_channels(problem: ConvProblem) -> int:
    """CP: the input's channels rounded up to a power of two (a pixel of ``xs``)."""
    return pow2_at_least(problem.c)


def row_columns(problem: ConvProblem) -> int:
    """J: a filter row's S x CP unrolled values, rounded up to a power of two (a tile's
    columns a filter row)."""
    return pow2_at_least(problem.s * padded_channels(problem))


def columns_split(problem: ConvProblem, config: BackwardConfig) -> tuple[int, int, int]:
    """(tiles, pixels a split, splits) of ``config``'s launch: K / block_m x the filter rows'
    columns / block_n tiles, the N*P*Q pixels split as :func:`~.wgrad.choose_split_k` says
    (``config.split_k`` > 0 is obeyed)."""
    tiles = cdiv(problem.k, config.block_m) * cdiv(problem.r * row_columns(problem), config.block_n)
    split = choose_split_k(problem.gemm_m, config.block_k, tiles, config.split_k)
    return (tiles, *_chunk(problem.gemm_m, split, config.block_k))


def padded_width(problem: ConvProblem) -> int:
    """WS, the columns of ``xs``: the last output column's run, J / CP pixels from column
    (Q - 1) * V, ends inside the row; rounded up so that a row of ``xs`` is a multiple of
    16 elements (every row's runs then share one alignment, and Triton, seeing the row
    stride divisible by 16, can prove the 16-byte copies aligned)."""
    cp = padded_channels(problem)
    width = (problem.out_w - 1) * problem.stride[1] + row_columns(problem) // cp
    unit = 16 // min(16, cp)  # pixels a multiple of 16 elements
    return cdiv(width, unit) * unit


def columns_wgrad_unsupported_reason(problem: ConvProblem) -> str | None:
    """Why :func:`launch_wgrad_columns` cannot run ``problem`` (None if it can)."""
    if problem.groups != 1:
        return f"it reads whole filter rows of every input channel: it needs groups=1, got groups={problem.groups}"
    if problem.dilation[1] != 1:
        return (f"a filter row's values are one contiguous run of the input: it needs dilation_w=1, "
                f"got {problem.dilation[1]}")
    if row_columns(problem) > MAX_ROW_COLUMNS:
        return (f"a filter row's S x C values, channels padded to a power of two, make {row_columns(problem)} "
                f"columns: it needs at most {MAX_ROW_COLUMNS} (few input channels)")
    return None


# (K specialised: divisible by 16, its mask is constant over 16 channels, and dy's loads 16 bytes wide.)
@triton.jit(do_not_specialize=["N", "H", "P", "Q", "C", "R", "S", "stride_h", "pad_h", "dil_h", "CHUNK"])
def conv2d_wgrad_columns_kernel(
    dy_ptr,  # upstream gradient [N, K, P, Q] through strides stride_dn..
    xs_ptr,  # xs [N, H, WS, CP] contiguous: the input, channels and columns zero-padded
    out_ptr,  # fp32 partial sums [SPLIT, K, C*R*S], columns t = (r*S + s)*C + c, through strides (written)
    N, H, P, Q, K, C, R, S,
    stride_h, pad_h, dil_h,
    stride_dn, stride_dk, stride_dp, stride_dq,
    stride_sn, stride_sh,  # xs's image and row strides (a pixel is CP elements)
    stride_os, stride_ok, stride_ot,
    CHUNK,  # pixels a split, a multiple of BLOCK_K
    STRIDE_W: tl.constexpr, CP: tl.constexpr, J: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    DOT_PRECISION: tl.constexpr, UPCAST_DOT: tl.constexpr, INT64: tl.constexpr,
    PROGRAMMATIC: tl.constexpr,  # launched programmatically after the padding copy; the split sums after it
):
    """One (BLOCK_M output channels, BLOCK_N / J filter rows) tile and one split of the pixels
    a program, tiles fastest (the programs running at once share a split's pixels)."""
    if PROGRAMMATIC:  # (:func:`~tileconv._runtime.programmatic_launch`)
        gdc_launch_dependents()
        gdc_wait()  # the padding copy's xs, complete and visible
    num_m = tl.cdiv(K, BLOCK_M)
    tiles = num_m * tl.cdiv(R * J, BLOCK_N)
    pid = tl.program_id(0)
    tile = pid % tiles
    split = pid // tiles
    pid_m = tile % num_m
    pid_n = tile // num_m

    offs_k = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    r = cols // J  # a tile's columns: whole filter rows, J apiece
    j = cols % J
    offs_pix = tl.arange(0, BLOCK_K)
    if INT64:
        split = split.to(tl.int64)
        offs_k = offs_k.to(tl.int64)
        offs_pix = offs_pix.to(tl.int64)
    start = split * CHUNK
    end = tl.minimum(start + CHUNK, pixel_count(N, P, Q, INT64))
    mask_k = offs_k < K
    row_ok = r < R
    dy_col = dy_ptr + (offs_k * stride_dk)[:, None]
    run_offs = (r * dil_h * stride_sh + j)[None, :]  # a filter row's run, from its first pixel

    # Pixels decoded once, then walked BLOCK_K a step with carries (no division in the loop).
    n_idx, p, q, _, _ = output_pixels(start + offs_pix, P, Q, 1, 1, 0, 0)
    step_n, step_p, step_q = pixel_steps(BLOCK_K, P, Q)

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for m0 in range(0, CHUNK, BLOCK_K):
        mask_pix = start + m0 + offs_pix < end
        a = tl.load(dy_col + (n_idx * stride_dn + p * stride_dp + q * stride_dq)[None, :],
                    mask=mask_k[:, None] & mask_pix[None, :], other=0.0)
        ih0 = p * stride_h - pad_h
        ih = ih0[:, None] + (r * dil_h)[None, :]
        inside = mask_pix[:, None] & row_ok[None, :] & (ih >= 0) & (ih < H)  # the vertical padding
        b = tl.load(xs_ptr + (n_idx * stride_sn + ih0 * stride_sh + q * (STRIDE_W * CP))[:, None] + run_offs,
                    mask=inside, other=0.0)
        n_idx, p, q = advance_pixels(n_idx, p, q, step_n, step_p, step_q, P, Q)
        if UPCAST_DOT:
            a = a.to(tl.float32)
            b = b.to(tl.float32)
        acc = tl.dot(a, b, acc, input_precision=DOT_PRECISION)

    s = j // CP
    c = j % CP
    t = (r * S + s) * C + c
    real = row_ok & (s < S) & (c < C)
    tl.store(out_ptr + split * stride_os + (offs_k * stride_ok)[:, None] + (t * stride_ot)[None, :], acc,
             mask=mask_k[:, None] & real[None, :])


def launch_wgrad_columns(
    problem: ConvProblem, grad: torch.Tensor, x: torch.Tensor, grad_weight: torch.Tensor,
    config: BackwardConfig,
) -> int:
    """``grad_weight`` (K, C, R, S) = wgrad of ``grad`` (the pre-activation gradient) and
    ``x``: the padding copy ``xs``, the GEMM over its filter-row runs (``config.block_m``
    output channels x ``block_n`` columns, a multiple of J, ``block_k`` pixels a step,
    ``split_k`` splits: 0 lets :func:`~.wgrad.choose_split_k` fill two waves), then the split
    sums. Returns the splits."""
    reason = columns_wgrad_unsupported_reason(problem)
    if reason is not None:
        raise ValueError(f"the columns wgrad cannot compute {problem.describe()}: {reason}")
    cp, row = padded_channels(problem), row_columns(problem)
    if config.block_n % row:
        raise ValueError(f"config block_n={config.block_n}: a column tile holds whole filter rows of "
                         f"{row} columns here (a multiple of {row})")
    width = padded_width(problem)
    xs = scratch((problem.n, problem.h, width, cp), x.dtype, x.device)
    pdl = programmatic_launch(x.device)  # the GEMM and the sums each wait on the kernel before
    int64 = needs_int64(problem) or xs.numel() >= INT32_LIMIT
    rows = problem.n * problem.h * width
    copy_rows = COPY_ELEMENTS // cp
    launch(unroll_columns_kernel, (cdiv(rows, copy_rows),),
           x, xs, rows, problem.h, problem.w, width, 1, problem.padding[1], 1, *kernel_strides(x),
           C=problem.c, S=1, CHANNELS=cp, BLOCK_ROWS=copy_rows, BLOCK_J=cp, INT64=int64, SIGNAL_DEPENDENTS=pdl,
           num_warps=4)

    tiles, chunk, split = columns_split(problem, config)
    out = scratch((split, problem.k, problem.c * problem.r * problem.s), torch.float32, grad.device)
    launch(conv2d_wgrad_columns_kernel, (tiles * split,),
           grad, xs, out,
           problem.n, problem.h, problem.out_h, problem.out_w, problem.k, problem.c, problem.r, problem.s,
           problem.stride[0], problem.padding[0], problem.dilation[0],
           *kernel_strides(grad), xs.stride(0), xs.stride(1), *out.stride(), chunk,
           STRIDE_W=problem.stride[1], CP=cp, J=row,
           BLOCK_M=config.block_m, BLOCK_N=config.block_n, BLOCK_K=config.block_k,
           **dot_constexprs(problem), INT64=int64, PROGRAMMATIC=pdl, num_warps=config.num_warps,
           num_stages=config.num_stages, launch_pdl=pdl)
    sum_splits(problem, out, grad_weight, split)
    return split
