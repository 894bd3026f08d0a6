"""Depthwise weight gradient of large filters on the tensor cores: one Toeplitz GEMM per channel.

    dw[k, 0, r, s] = sum_{n, p, q} dy[n, k, p, q] * x[n, k // MULT, p*U - pad_h + r*dil_h, q*V - pad_w + s*dil_w]

The CUDA-core kernel of :mod:`.wgrad` does one multiply-add per (pixel, tap) with its own
gathered input element: a 31x31 filter at 56x56 (RepLKNet, batch 32) ran 2.5 ms on an H200
(session 13), 0.4 ms being the same problem's forward on the tensor cores
(:mod:`.depthwise_toeplitz`). Along one output row the sum is a matrix product. With x in
zero-bordered planes (padded column j = q*V + s*dil_w, padded row p*U + r*dil_h), for
output row (n, p) of channel k:

    dw[k, r, s] += sum_j  A[r, j] * B[j, s]
    A[r, j] = xp[n, c, p*U + r*dil_h, j]        (R rows of the input plane: a 2D window)
    B[j, s] = dy[n, k, p, (j - s*dil_w) / V]    where that is a whole column in [0, Q), else 0

A is a plain [BLOCK_R, BLOCK_J] tile of the plane (one row a filter row), B a banded
(Toeplitz) [BLOCK_J, BLOCK_S] gather from one row of dy, read from L1 S times; the GEMM runs
over the columns j a row's outputs read, then over the program's rows (n, p). Each program
owns one channel and a split of the N*P output rows (split-K: fp32 partial sums a split,
summed by :func:`.wgrad.wgrad_finish_kernel`). A fraction Q/J of the products is useful
(the band), against the CUDA cores' one product a loaded element.

B's structural zeros multiply every input element of the window, so an Inf or NaN input
would reach taps whose true sum never holds it (0 * Inf is NaN): where a program's sums are
not all finite (rare; one check a program) it recomputes them on the CUDA cores, term by
term, as PyTorch does.

The launcher copies x into zero-bordered planes and dy into planes first (one read and one
write each, small beside a large filter's work; :func:`.launch.padded_planes`):
one channel's rows are then contiguous, the A tile needs no padding mask, and B's gather
reads one row segment.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_launch_dependents

from .._runtime import INT32_LIMIT, cdiv, pow2_at_least, programmatic_launch
from ..problem import ConvProblem
from .config import BackwardConfig, dot_constexprs, needs_int64
from .fast_launch import launch
from .fast_launch import workspace as scratch
from .launch import MAX_GRID_Y, padded_planes, window
from .wgrad import splits_within_input_bytes, sum_splits

MAX_FILTER = 64  # filter rows and columns, each (the GEMM's M and N tiles: at most 64 x 64)
# Split-K: about eight 4-warp programs an SM (H100/H200: 132 SMs), each at least this many rows.
_TARGET_PROGRAMS = 8 * 132
MIN_ROWS_PER_SPLIT = 8


@triton.jit(do_not_specialize=["N", "P", "Q", "K", "C", "HP", "stride_h", "dil_h", "dil_w", "R", "S", "JW",
                               "ROWS_PER_SPLIT"])
def conv2d_wgrad_depthwise_toeplitz_kernel(
    dy_ptr,  # dy planes [N, K, P, QP], contiguous
    x_ptr,  # x planes [N, C, HP, WP], contiguous: zero-bordered (padded coordinates)
    out_ptr,  # fp32 partial sums [SPLIT, K, R*S], contiguous (written)
    N, P, Q, K, C, HP,
    QP, WP,  # plane row lengths (multiples of 16: specialised, so rows start aligned)
    stride_h, dil_h, dil_w,
    R, S,
    JW,  # padded input columns one output row reads: (Q-1)*V + (S-1)*dil_w + 1
    ROWS_PER_SPLIT,
    V: tl.constexpr,  # column stride
    MULTIPLIER: tl.constexpr,  # K / C: output channel k reads input channel k // MULTIPLIER
    BLOCK_R: tl.constexpr, BLOCK_S: tl.constexpr,  # R and S rounded up to powers of two (>= 16)
    BLOCK_J: tl.constexpr,  # input columns a step: the GEMM's reduction slice
    BLOCK_Q: tl.constexpr,  # output columns a step of the exact (non-finite) path
    DOT_PRECISION: tl.constexpr, UPCAST_DOT: tl.constexpr,
    INT64: tl.constexpr,
    SIGNAL_DEPENDENTS: tl.constexpr,  # the split sums follow programmatically (:func:`.wgrad.sum_splits`)
):
    if SIGNAL_DEPENDENTS:
        gdc_launch_dependents()
    k = tl.program_id(0)
    split = tl.program_id(1)
    if INT64:
        k = k.to(tl.int64)
    c = k // MULTIPLIER
    r = tl.arange(0, BLOCK_R)
    s = tl.arange(0, BLOCK_S)
    j = tl.arange(0, BLOCK_J)
    mask_r = r < R
    rows_a = (r * dil_h * WP)[:, None]  # A: filter row r is plane row p*U + r*dil_h
    start = split * ROWS_PER_SPLIT
    if INT64:
        start = start.to(tl.int64)
    end = tl.minimum(start + ROWS_PER_SPLIT, N * P)
    acc = tl.zeros((BLOCK_R, BLOCK_S), dtype=tl.float32)
    # One loop over (row, column block) steps, not a loop of rows around a loop of a row's few
    # column blocks: the pipeliner then prefetches the next row's tiles during this row's.
    blocks = tl.cdiv(JW, BLOCK_J)
    for t in range(start * blocks, end * blocks):
        m = t // blocks
        j0 = (t - m * blocks) * BLOCK_J
        n = m // P
        p = m - n * P
        x_row = x_ptr + ((n * C + c) * HP + p * stride_h) * WP
        dy_row = dy_ptr + ((n * K + k) * P + p) * QP
        jj = j0 + j
        a = tl.load(x_row + rows_a + jj[None, :], mask=mask_r[:, None], other=0.0)
        qv = jj[:, None] - (s * dil_w)[None, :]  # q*V of B[j, s]
        if V == 1:
            ok = (qv >= 0) & (qv < Q)
            q = qv
        else:
            ok = (qv >= 0) & (qv < Q * V) & (qv % V == 0)
            q = qv // V
        b = tl.load(dy_row + q, mask=ok, other=0.0)
        if UPCAST_DOT:
            a = a.to(tl.float32)
            b = b.to(tl.float32)
        acc = tl.dot(a, b, acc, input_precision=DOT_PRECISION)

    valid = mask_r[:, None] & (s < S)[None, :]
    if tl.sum(tl.where(valid & ~(tl.abs(acc) < float("inf")), 1, 0)) > 0:
        # A non-finite sum: redo this program's rows term by term (only products PyTorch forms).
        acc = tl.zeros((BLOCK_R, BLOCK_S), dtype=tl.float32)
        qq = tl.arange(0, BLOCK_Q)
        for m in range(start, end):
            n = m // P
            p = m - n * P
            if INT64:
                n = n.to(tl.int64)
            x_row = x_ptr + ((n * C + c) * HP + p * stride_h) * WP
            dy_row = dy_ptr + ((n * K + k) * P + p) * QP
            for q0 in range(0, Q, BLOCK_Q):
                q = q0 + qq
                mask_q = q < Q
                dyv = tl.load(dy_row + q, mask=mask_q, other=0.0).to(tl.float32)
                cols = (q * V)[None, None, :] + (s * dil_w)[None, :, None]
                xv = tl.load(x_row + (r * dil_h * WP)[:, None, None] + cols,
                             mask=valid[:, :, None] & mask_q[None, None, :], other=0.0).to(tl.float32)
                acc += tl.sum(xv * dyv[None, None, :], axis=2)

    out = out_ptr + (split * K + k) * (R * S)
    tl.store(out + (r * S)[:, None] + s[None, :], acc, mask=valid)


# ------------------------------------------------------------------------- launcher
def wgrad_toeplitz_unsupported_reason(problem: ConvProblem) -> str | None:
    """Why :func:`launch_wgrad_depthwise_toeplitz` cannot run ``problem`` (None if it can)."""
    if not problem.is_depthwise:
        return "it needs groups == C (one input channel per group)"
    if max(problem.r, problem.s) > MAX_FILTER:
        return f"its GEMM tile is the filter: filters of at most {MAX_FILTER}x{MAX_FILTER}"
    if problem.n > MAX_GRID_Y:
        return f"its plane copies run a grid plane per image: it needs a batch of at most {MAX_GRID_Y}"
    return None


def split_rows(problem: ConvProblem, config: BackwardConfig) -> tuple[int, int]:
    """(output rows a split, splits): ``config.split_k`` splits if given, else about
    :data:`_TARGET_PROGRAMS` programs over the channels, each split at least
    :data:`MIN_ROWS_PER_SPLIT` rows, the partial sums within the inputs' bytes."""
    rows = problem.n * problem.out_h
    if config.split_k > 0:
        wanted = config.split_k
    else:
        wanted = min(cdiv(_TARGET_PROGRAMS, problem.k), max(1, rows // MIN_ROWS_PER_SPLIT),
                     splits_within_input_bytes(problem), MAX_GRID_Y)
    per_split = cdiv(rows, max(1, min(wanted, rows, MAX_GRID_Y)))
    return per_split, cdiv(rows, per_split)


def toeplitz_wgrad_columns(problem: ConvProblem) -> int:
    """JW: the padded input columns one output row reads, ``(Q-1)*V + (S-1)*dil_w + 1``."""
    return window(problem.out_w, problem.stride[1], problem.s, problem.dilation[1])


def launch_wgrad_depthwise_toeplitz(
    problem: ConvProblem, grad: torch.Tensor, x: torch.Tensor, grad_weight: torch.Tensor,
    config: BackwardConfig,
) -> int:
    """``grad_weight`` = the depthwise wgrad of ``grad`` and ``x`` by
    :func:`conv2d_wgrad_depthwise_toeplitz_kernel`: ``config.block_k`` input columns a step,
    ``num_warps`` warps, ``split_k`` splits of the output rows (0: the launcher's choice).
    Returns the number of splits."""
    if config.block_k < 16 or config.block_k & (config.block_k - 1):
        raise ValueError(f"config block_k={config.block_k}: the Toeplitz wgrad's column step is a power of two >= 16")
    block_j = config.block_k
    jw = toeplitz_wgrad_columns(problem)
    rows = max(problem.h + problem.padding[0], window(problem.out_h, problem.stride[0], problem.r, problem.dilation[0]))
    columns = cdiv(max(problem.w + problem.padding[1], cdiv(jw, block_j) * block_j), 16) * 16
    x_planes = padded_planes(x, problem.c, problem.padding, rows, columns)
    q_row = cdiv(problem.out_w, 16) * 16
    dy_planes = padded_planes(grad, problem.k, (0, 0), problem.out_h, q_row)
    per_split, split = split_rows(problem, config)
    out = scratch((split, problem.k, 1, problem.r, problem.s), torch.float32, grad_weight.device)
    int64 = needs_int64(problem) or max(x_planes.numel(), dy_planes.numel(), out.numel()) >= INT32_LIMIT
    launch(conv2d_wgrad_depthwise_toeplitz_kernel, (problem.k, split),
        dy_planes, x_planes, out, problem.n, problem.out_h, problem.out_w, problem.k, problem.c, rows,
        q_row, columns, problem.stride[0], problem.dilation[0], problem.dilation[1],
        problem.r, problem.s, jw, per_split,
        V=problem.stride[1], MULTIPLIER=problem.k // problem.c,
        BLOCK_R=pow2_at_least(problem.r, 16), BLOCK_S=pow2_at_least(problem.s, 16), BLOCK_J=block_j,
        BLOCK_Q=8, **dot_constexprs(problem), INT64=int64, SIGNAL_DEPENDENTS=programmatic_launch(grad.device),
        num_warps=config.num_warps, num_stages=config.num_stages,
    )
    sum_splits(problem, out, grad_weight, split)
    return split
