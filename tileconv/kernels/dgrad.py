"""Data gradient (dgrad): the input gradient of a convolution, as a transposed implicit GEMM.

For ``y = conv2d(x, w)`` with stride (U, V), padding (pad_h, pad_w) (top/left) and dilation
(dil_h, dil_w), and the upstream gradient ``dy`` (the gradient of the pre-activation):

    dx[n, g*C/g + c, h, w] = sum_{k < K/g} sum_{(r, s) : p, q integral, in range}
                                 dy[n, g*K/g + k, p, q] * w[g*K/g + k, c, r, s]
    p = (h + pad_h - r*dil_h) / U,   q = (w + pad_w - s*dil_w) / V.

Inserted zeros are never multiplied. Pixels are split by output phase
(h mod U, w mod V): within a phase, whether ``h + pad_h - r*dil_h`` is divisible by U
depends on r alone, so every pixel of a tile sees the same taps. Each program owns a tile
of one phase's pixels (h = ph + U*i, w = pw + V*j) and walks one flat loop over that
phase's taps only (about R*S/(U*V) of them) and blocks of K/g. Along a phase the valid r
form an arithmetic sequence r0, r0 + r_step, ... with r_step = U / gcd(U, dil_h), and the
output row moves by r_step*dil_h/U = dp_step rows per step:

    p = i + dp0 - t_r * dp_step,   dp0 = (ph + pad_h - r0*dil_h) / U    (exact division)

For stride 1 there is one phase and every tap is valid: the loop is the forward
convolution of dy with the flipped, transposed weight, read in place (no derived copy).

- :func:`conv2d_dgrad_kernel` (tensor cores): A[m, k] = dy at the tap's (p, q),
  B[k, c] = w[k, c, r, s]; the reduction over K/g is the ``tl.dot`` dimension.
- :func:`conv2d_dgrad_depthwise_kernel` (CUDA cores): groups = C, so the reduction per
  tap is over the multiplier (K/C) channels only; no tensor-core tile fits it.
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from .._runtime import INT32_LIMIT, cdiv, kernel_strides
from ..problem import ConvProblem, layout_of
from .common import divide, output_pixels, pixel_count
from .config import BackwardConfig, dot_constexprs
from .fast_launch import launch
from .weights import channels_last_weight


@triton.jit
def _phase_taps(phase, pad, dil, stride, R):
    """First valid tap r0, the number of valid taps and dp0 of one output phase (see the
    module docstring). ``x % stride == 0`` tests divisibility for either sign of x."""
    # Loop-carried scalars start as int32 tensors (a constexpr 0 could not be re-assigned).
    first = tl.zeros((), dtype=tl.int32) + R
    count = tl.zeros((), dtype=tl.int32)
    for r in range(0, R):
        hit = (phase + pad - r * dil) % stride == 0
        first = tl.where(hit & (first == R), r, first)
        count += tl.where(hit, 1, 0)
    dp0 = (phase + pad - first * dil) // stride  # exact when count > 0; unused otherwise
    return first, count, dp0


@triton.jit(do_not_specialize=["N", "H", "W", "P", "Q", "stride_h", "stride_w", "pad_h", "pad_w", "dil_h", "dil_w",
                               "R", "S", "TAP_STEP_H", "TAP_STEP_W", "DP_STEP_H", "DP_STEP_W"])
def conv2d_dgrad_kernel(
    dy_ptr,  # upstream gradient [N, K, P, Q] through strides stride_dn..
    w_ptr,  # weight [K, C/g, R, S] through strides stride_wk..
    dx_ptr,  # input gradient [N, C, H, W] through strides stride_xn.. (written)
    N, H, W, P, Q,
    C_PER_GROUP, K_PER_GROUP,
    stride_h, stride_w, pad_h, pad_w, dil_h, dil_w,
    stride_dn, stride_dk, stride_dp, stride_dq,
    stride_wk, stride_wc, stride_wr, stride_ws,
    stride_xn, stride_xc, stride_xh, stride_xw,
    R, S,
    TAP_STEP_H, TAP_STEP_W,  # U / gcd(U, dil_h), V / gcd(V, dil_w): distance between valid taps
    DP_STEP_H, DP_STEP_W,  # TAP_STEP_H * dil_h / U, TAP_STEP_W * dil_w / V
    GROUPS,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    DOT_PRECISION: tl.constexpr, UPCAST_DOT: tl.constexpr, INT64: tl.constexpr,
):
    # Pixels of one phase: h = ph + U*i for i < cdiv(H, U) (rows past H are masked).
    rows = tl.cdiv(H, stride_h)
    cols = tl.cdiv(W, stride_w)
    M = pixel_count(N, rows, cols, INT64)
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(C_PER_GROUP, BLOCK_N)
    pid = tl.program_id(0)
    tile = pid % (num_m * num_n)
    group = (pid // (num_m * num_n)) % GROUPS
    phase = pid // (num_m * num_n * GROUPS)
    ph = phase // stride_w
    pw = phase % stride_w
    pid_m = tile // num_n
    pid_n = tile % num_n

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_c = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    if INT64:
        group = group.to(tl.int64)
        offs_m = offs_m.to(tl.int64)
        offs_c = offs_c.to(tl.int64)
        offs_k = offs_k.to(tl.int64)
    # (n, i, j) of each pixel of the phase grid, decoded as output pixels are (no 32-bit rows*cols).
    n_idx, i_idx, j_idx, _, _ = output_pixels(offs_m, rows, cols, 1, 1, 0, 0)
    h_idx = ph + i_idx * stride_h
    w_idx = pw + j_idx * stride_w
    mask_m = (offs_m < M) & (h_idx < H) & (w_idx < W)
    mask_c = offs_c < C_PER_GROUP

    r0, count_r, dp0 = _phase_taps(ph, pad_h, dil_h, stride_h, R)
    s0, count_s, dq0 = _phase_taps(pw, pad_w, dil_w, stride_w, S)
    k_blocks = tl.cdiv(K_PER_GROUP, BLOCK_K)
    dy_row = dy_ptr + n_idx * stride_dn + (group * K_PER_GROUP) * stride_dk
    w_col = w_ptr + (group * K_PER_GROUP) * stride_wk + offs_c * stride_wc

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    # One flat loop over (valid tap, K block) so that the pipeliner streams it.
    for it in range(0, count_r * count_s * k_blocks):
        tap = it // k_blocks
        k = (it - tap * k_blocks) * BLOCK_K + offs_k
        t_r = tap // count_s
        t_s = tap - t_r * count_s
        r = r0 + t_r * TAP_STEP_H
        s = s0 + t_s * TAP_STEP_W
        p = i_idx + (dp0 - t_r * DP_STEP_H)
        q = j_idx + (dq0 - t_s * DP_STEP_W)
        # Taps whose output pixel falls outside [0, P) x [0, Q) (the padding halo) read 0.
        ok = mask_m & (p >= 0) & (p < P) & (q >= 0) & (q < Q)
        mask_k = k < K_PER_GROUP
        a = tl.load(
            (dy_row + p * stride_dp + q * stride_dq)[:, None] + (k * stride_dk)[None, :],
            mask=ok[:, None] & mask_k[None, :], other=0.0,
        )
        b = tl.load(
            (w_col + r * stride_wr + s * stride_ws)[None, :] + (k * stride_wk)[:, None],
            mask=mask_k[:, None] & mask_c[None, :], other=0.0,
        )
        if UPCAST_DOT:
            a = a.to(tl.float32)
            b = b.to(tl.float32)
        acc = tl.dot(a, b, acc, input_precision=DOT_PRECISION)

    dx_offs = (n_idx * stride_xn + h_idx * stride_xh + w_idx * stride_xw)[:, None] + (
        (group * C_PER_GROUP + offs_c) * stride_xc
    )[None, :]
    tl.store(dx_ptr + dx_offs, acc.to(dx_ptr.dtype.element_ty), mask=mask_m[:, None] & mask_c[None, :])


# C is specialised (not in do_not_specialize): a channel count divisible by 16 lets the
# channel masks hold over 16-byte groups, so loads and stores go 16 bytes wide (sm_90 SASS
# with C unspecialised: every element loaded and stored by itself).
@triton.jit(do_not_specialize=["N", "H", "W", "P", "Q", "stride_h", "stride_w", "pad_h", "pad_w", "dil_h", "dil_w",
                               "R", "S", "TAP_STEP_H", "TAP_STEP_W", "DP_STEP_H", "DP_STEP_W"])
def conv2d_dgrad_depthwise_kernel(
    dy_ptr,  # upstream gradient [N, K, P, Q], K = MULTIPLIER * C
    w_ptr,  # weight [K, 1, R, S]
    dx_ptr,  # input gradient [N, C, H, W] (written)
    N, H, W, P, Q, C,
    stride_h, stride_w, pad_h, pad_w, dil_h, dil_w,
    stride_dn, stride_dk, stride_dp, stride_dq,
    stride_wk, stride_wc, stride_wr, stride_ws,
    stride_xn, stride_xc, stride_xh, stride_xw,
    R, S, TAP_STEP_H, TAP_STEP_W, DP_STEP_H, DP_STEP_W,
    MULTIPLIER: tl.constexpr,  # K / C: output channels k = c*MULTIPLIER + j read channel c
    BLOCK_M: tl.constexpr, BLOCK_C: tl.constexpr, INT64: tl.constexpr,
):
    """dx[n, c, h, w] = sum_j sum_{valid (r, s)} dy[n, c*MULT + j, p, q] * w[c*MULT + j, 0, r, s]."""
    rows = tl.cdiv(H, stride_h)
    cols = tl.cdiv(W, stride_w)
    M = pixel_count(N, rows, cols, INT64)
    num_m = tl.cdiv(M, BLOCK_M)
    pid = tl.program_id(0)
    pid_m = pid % num_m
    phase = pid // num_m
    ph = phase // stride_w
    pw = phase % stride_w
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    if INT64:
        offs_m = offs_m.to(tl.int64)
        offs_c = offs_c.to(tl.int64)
    # (n, i, j) of each pixel of the phase grid, decoded as output pixels are (no 32-bit rows*cols).
    n_idx, i_idx, j_idx, _, _ = output_pixels(offs_m, rows, cols, 1, 1, 0, 0)
    h_idx = ph + i_idx * stride_h
    w_idx = pw + j_idx * stride_w
    mask_m = (offs_m < M) & (h_idx < H) & (w_idx < W)
    mask_c = offs_c < C

    r0, count_r, dp0 = _phase_taps(ph, pad_h, dil_h, stride_h, R)
    s0, count_s, dq0 = _phase_taps(pw, pad_w, dil_w, stride_w, S)
    dy_img = dy_ptr + n_idx * stride_dn
    acc = tl.zeros((BLOCK_M, BLOCK_C), dtype=tl.float32)
    for tap in range(0, count_r * count_s):
        t_r = tap // count_s
        t_s = tap - t_r * count_s
        r = r0 + t_r * TAP_STEP_H
        s = s0 + t_s * TAP_STEP_W
        p = i_idx + (dp0 - t_r * DP_STEP_H)
        q = j_idx + (dq0 - t_s * DP_STEP_W)
        ok = mask_m & (p >= 0) & (p < P) & (q >= 0) & (q < Q)
        for j in tl.static_range(MULTIPLIER):
            k = offs_c * MULTIPLIER + j  # (a constant j: the compiler keeps the channels' contiguity)
            dyv = tl.load((dy_img + p * stride_dp + q * stride_dq)[:, None] + (k * stride_dk)[None, :],
                          mask=ok[:, None] & mask_c[None, :], other=0.0)
            wv = tl.load(w_ptr + k * stride_wk + r * stride_wr + s * stride_ws, mask=mask_c, other=0.0)
            acc += dyv.to(tl.float32) * wv.to(tl.float32)[None, :]

    dx_offs = (n_idx * stride_xn + h_idx * stride_xh + w_idx * stride_xw)[:, None] + (offs_c * stride_xc)[None, :]
    tl.store(dx_ptr + dx_offs, acc.to(dx_ptr.dtype.element_ty), mask=mask_m[:, None] & mask_c[None, :])


# ------------------------------------------------------------------------- launchers
@triton.jit
def zero_off_grid_kernel(
    ptr,  # a dense 4D tensor seen as rows of W pixels of INNER elements, each row of one image row h
    W, H, INNER,  # INNER: elements of one pixel along a row (C for channels_last, else 1)
    U: tl.constexpr, V: tl.constexpr, BLOCK_W: tl.constexpr, BLOCK_I: tl.constexpr,
):
    """Zero every element of ``ptr`` except those of pixels (h, w) with h % U == 0 and
    w % V == 0 (which a strided 1x1's dgrad GEMM writes): BLOCK_W pixels x BLOCK_I of their
    elements a program, so that the grid test costs a few operations a pixel, not an element."""
    row = tl.program_id(0).to(tl.int64)
    w = tl.program_id(1) * BLOCK_W + tl.arange(0, BLOCK_W)
    i = tl.program_id(2) * BLOCK_I + tl.arange(0, BLOCK_I)
    on_grid = ((row % H) % U == 0) & (w % V == 0)
    mask = ((w < W) & ~on_grid)[:, None] & (i < INNER)[None, :]
    ptrs = ptr + row * W * INNER + (w * INNER)[:, None] + i[None, :]
    tl.store(ptrs, tl.zeros((BLOCK_W, BLOCK_I), dtype=ptr.dtype.element_ty), mask=mask)


ZERO_TILE = 2048  # elements a program of zero_off_grid_kernel (4 warps: 16 each, 16-byte stores)


def _dense_is_channels_last(t: torch.Tensor, what: str) -> bool:
    """Whether ``t`` (N, C, H, W) is channels_last (else contiguous); ValueError naming
    ``what`` where it is neither (the launchers below address it as one dense block)."""
    channels_last = layout_of(t) == "nhwc"
    if not t.is_contiguous(memory_format=torch.channels_last if channels_last else torch.contiguous_format):
        raise ValueError(f"{what} needs a dense tensor (contiguous or channels_last), got strides "
                         f"{tuple(t.stride())} for shape {tuple(t.shape)}")
    return channels_last


def zero_off_grid(t: torch.Tensor, stride: tuple[int, int]) -> None:
    """Zero the pixels of ``t`` (N, C, H, W), dense (contiguous or channels_last), outside its
    (U, V) grid: all but every U-th row and V-th column, which a strided 1x1's dgrad writes
    (:meth:`~tileconv.problem.ConvProblem.dgrad_as_strided_forward`). A Triton launch: a
    replayed call (:mod:`tileconv.call_plans`) repeats it, where it would skip a ``zero_``."""
    n, c, h, w = t.shape
    nhwc = _dense_is_channels_last(t, "zero_off_grid")
    rows, inner = (n * h, c) if nhwc else (n * c * h, 1)
    block_i = min(triton.next_power_of_2(inner), 256)
    block_w = ZERO_TILE // block_i
    if t.numel():
        launch(zero_off_grid_kernel, (rows, cdiv(w, block_w), cdiv(inner, block_i)), t, w, h, inner,
               U=stride[0], V=stride[1], BLOCK_W=block_w, BLOCK_I=block_i, num_warps=4)


@triton.jit
def shuffle_subpixels_kernel(
    cells_ptr,  # (N, O, ceil(H/U), ceil(W/V)), channel (a*V + b)*C + c of cell (i, j): dx[n, c, U*i + a, V*j + b]
    dx_ptr,  # (N, C, H, W), dense: channels_last or contiguous (CHANNELS_LAST)
    C, H, W, elements,
    stride_cn, stride_co, stride_ci, stride_cj,
    U: tl.constexpr, V: tl.constexpr, CHANNELS_LAST: tl.constexpr, BLOCK: tl.constexpr, INT64: tl.constexpr,
):
    """dx from the sub-pixel cells (:meth:`~tileconv.problem.ConvProblem.dgrad_as_subpixel_forward`):
    BLOCK consecutive elements of dx's memory a program (wide stores), each gathered from its
    phase's channel of its cell."""
    e = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if INT64:
        e = e.to(tl.int64)
    if CHANNELS_LAST:  # e = ((n*H + h)*W + w)*C + c
        pix, c = divide(e, C)
        rows, w = divide(pix, W)
        n, h = divide(rows, H)
    else:  # e = ((n*C + c)*H + h)*W + w
        rows, w = divide(e, W)
        planes, h = divide(rows, H)
        n, c = divide(planes, C)
    i, a = divide(h, U)
    j, b = divide(w, V)
    channel = (a * V + b) * C + c
    mask = e < elements
    value = tl.load(cells_ptr + n * stride_cn + channel * stride_co + i * stride_ci + j * stride_cj, mask=mask)
    tl.store(dx_ptr + e, value, mask=mask)


SHUFFLE_BLOCK = 2048  # elements of dx a program of shuffle_subpixels_kernel (4 warps: 16 a thread)


def shuffle_subpixels(cells: torch.Tensor, dx: torch.Tensor, stride: tuple[int, int]) -> None:
    """Write ``dx`` (N, C, H, W), dense (contiguous or channels_last), from ``cells`` (N, O,
    ceil(H/U), ceil(W/V)), any strides, the sub-pixel convolution's output
    (:meth:`~tileconv.problem.ConvProblem.dgrad_as_subpixel_forward`):
    dx[n, c, U*i + a, V*j + b] = cells[n, (a*V + b)*C + c, i, j]. One Triton launch."""
    n, c, h, w = dx.shape
    channels_last = _dense_is_channels_last(dx, "shuffle_subpixels")
    elements = dx.numel()
    if elements:
        launch(shuffle_subpixels_kernel, (cdiv(elements, SHUFFLE_BLOCK),), cells, dx, c, h, w, elements,
               *kernel_strides(cells), U=stride[0], V=stride[1], CHANNELS_LAST=channels_last, BLOCK=SHUFFLE_BLOCK,
               INT64=max(cells.numel(), elements + SHUFFLE_BLOCK) >= INT32_LIMIT, num_warps=4)


def fold_cells_into(dx: torch.Tensor, stride: tuple[int, int], cells: int,
                    block_n: int) -> tuple[torch.Tensor, tuple[int, int]] | None:
    """Where the sub-pixel dgrad's convolution (:meth:`~tileconv.problem.ConvProblem.dgrad_as_subpixel_forward`,
    ``cells`` output channels) can write dx itself instead of cells to shuffle: (the output
    view, the kernel's channel fold), or None.

    In a dense channels_last dx (N, C, H, W) with H, W multiples of U, V, cell (i, j)'s phase
    (a, b) channel c, dx[n, c, U*i + a, V*j + b], lies at ((n*H + U*i)*W + V*j)*C + a*W*C + b*C + c:
    the V column phases of a row phase are V*C consecutive elements, and row phase a starts a*W*C
    elements on. So channel k = a*V*C + (b*C + c) of the cells is the view's channel k (unit
    stride, pixels at the cells' pitch) plus (k // (V*C)) * (W*C - V*C) elements: a fold the
    kernel applies per tile where ``block_n`` (its tile's channels) divides V*C. Needs the
    cells' channels to be exactly U*V*C (no rounding up)."""
    n, c, h, w = dx.shape
    u, v = stride
    if (layout_of(dx) != "nhwc" or not dx.is_contiguous(memory_format=torch.channels_last) or h % u or w % v
            or cells != u * v * c or (v * c) % block_n):
        return None
    # A view over the first row phase's memory: channels past V*C run on past it, where the fold moves them.
    view = torch.as_strided(dx, (n, cells, h // u, w // v), (h * w * c, 1, u * w * c, v * c))
    return view, (v * c, w * c - v * c)


def _tap_steps(stride: int, dilation: int) -> tuple[int, int]:
    """(distance between valid taps of one phase, output rows moved per such step)."""
    tap_step = stride // math.gcd(stride, dilation)
    return tap_step, tap_step * dilation // stride


def _phase_geometry(problem: ConvProblem) -> list[int]:
    tap_h, dp_h = _tap_steps(problem.stride[0], problem.dilation[0])
    tap_w, dp_w = _tap_steps(problem.stride[1], problem.dilation[1])
    return [problem.r, problem.s, tap_h, tap_w, dp_h, dp_w]


def _phase_pixels(problem: ConvProblem) -> int:
    """Pixels of one phase's grid (N * cdiv(H, U) * cdiv(W, V))."""
    return problem.n * cdiv(problem.h, problem.stride[0]) * cdiv(problem.w, problem.stride[1])


def _int64(problem: ConvProblem) -> bool:
    # The phase grid covers up to N * (H + U) * (W + V) pixel indices.
    phase_span = problem.n * (problem.h + problem.stride[0]) * (problem.w + problem.stride[1]) * problem.c
    return max(problem.max_elements, phase_span) >= INT32_LIMIT


def launch_dgrad_implicit_gemm(
    problem: ConvProblem, grad: torch.Tensor, weight: torch.Tensor, grad_input: torch.Tensor,
    config: BackwardConfig,
):
    """``grad_input`` = dgrad of ``grad`` (the pre-activation gradient) through ``weight``."""
    if problem.r * problem.s > 1:
        # B-tile rows run along C/g; in an NCHW weight they would lie R*S elements apart.
        # (A K-contiguous weight, tried for fp32, made the strided ResNet-50 rows ~2x slower
        # on an H200: 71 against 45 us for c128 hw56 3x3/2.)
        weight = channels_last_weight(weight)
    phases = problem.stride[0] * problem.stride[1]
    grid = (cdiv(_phase_pixels(problem), config.block_m) * cdiv(problem.c_per_group, config.block_n)
            * problem.groups * phases,)
    return launch(conv2d_dgrad_kernel, grid,
        grad, weight, grad_input,
        problem.n, problem.h, problem.w, problem.out_h, problem.out_w,
        problem.c_per_group, problem.k_per_group,
        problem.stride[0], problem.stride[1], problem.padding[0], problem.padding[1],
        problem.dilation[0], problem.dilation[1],
        *kernel_strides(grad), *kernel_strides(weight), *kernel_strides(grad_input),
        *_phase_geometry(problem), problem.groups,
        BLOCK_M=config.block_m, BLOCK_N=config.block_n, BLOCK_K=config.block_k,
        **dot_constexprs(problem),
        INT64=_int64(problem),
        num_warps=config.num_warps, num_stages=_stages(problem, config),
    )


def _stages(problem: ConvProblem, config: BackwardConfig) -> int:
    """The config's pipeline depth, except 1 for one output channel per group (a depthwise
    problem forced onto this kernel): Triton 3.6 specialises K/g = 1 to a constant and then
    fails to compile the pipelined fp32 (TF32) kernel for sm_90. Its loop has one K block
    per tap there. (Not specialising K/g instead cost the strided ResNet-50 rows 20-40%:
    the A loads lost their 16-byte alignment proof.)"""
    return 1 if problem.k_per_group == 1 else config.num_stages


def launch_dgrad_depthwise(
    problem: ConvProblem, grad: torch.Tensor, weight: torch.Tensor, grad_input: torch.Tensor,
    config: BackwardConfig,
):
    """Depthwise dgrad on the CUDA cores (groups = C, any multiplier K/C)."""
    phases = problem.stride[0] * problem.stride[1]
    grid = (cdiv(_phase_pixels(problem), config.block_m) * phases, cdiv(problem.c, config.block_n))
    return launch(conv2d_dgrad_depthwise_kernel, grid,
        grad, weight, grad_input,
        problem.n, problem.h, problem.w, problem.out_h, problem.out_w, problem.c,
        problem.stride[0], problem.stride[1], problem.padding[0], problem.padding[1],
        problem.dilation[0], problem.dilation[1],
        *kernel_strides(grad), *kernel_strides(weight), *kernel_strides(grad_input),
        *_phase_geometry(problem),
        MULTIPLIER=problem.k // problem.c,
        BLOCK_M=config.block_m, BLOCK_C=config.block_n, INT64=_int64(problem),
        num_warps=config.num_warps, num_stages=config.num_stages,
    )
