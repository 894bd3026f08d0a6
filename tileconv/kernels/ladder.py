"""The seed's ladder: implicit GEMM built up step by step (SEEDS.md part 2), in Triton.

These kernels are for teaching and for the step-by-step chart (``bench --algo all``), not
for speed: auto dispatch never picks them and tuning never races them (``teaching=True``
in :data:`tileconv.kernels.ALGORITHMS`). Each one is nevertheless complete: every stride,
padding, dilation and groups value, any strides (NCHW, NHWC, views), fp16/bf16/fp32 and
the fused epilogue (:func:`.common.store_output_tile`), checked by the same tests as the
production kernels. Each step changes one thing from the one before:

==========================  ===========================================================
``ladder0_direct``          program 0: one output per lane, direct loops over C, R, S
``ladder1_implicit_gemm``   program 1: the same, one flat loop over t = (c, r, s)
``ladder2_tiled``           programs 2-4: a BLOCK_M x BLOCK_N tile per program, K-slices
                            loaded as 2D tiles, reduced by multiply-add on CUDA cores
``ladder3_tensor_core``     the same tiles through ``tl.dot`` (tensor cores), no
                            pipelining (one stage)
``implicit_gemm``           the production kernel (:mod:`.implicit_gemm`): (tap, channel
                            block) order on a channels_last weight, software-pipelined
                            loads, swizzled tile order, (s, c) fusion for few channels
==========================  ===========================================================

The GEMM view is the one :mod:`.implicit_gemm` describes: m = (n, p, q) over the N*P*Q
output pixels, k over a group's K/g output channels, and the reduction index

    t = (c * R + r) * S + s,  t < C/g * R * S,   B[t, k] = w[k, c, r, s]

which is the seed's (c, r, s) order: contiguous in an NCHW weight.

Strict fp32: ladders 0 to 2 multiply and add in fp32 on the CUDA cores for every input
dtype; ladder 3 uses TF32 for fp32 inputs exactly when ``problem.allow_tf32``, like the
production kernel.
"""

from __future__ import annotations

from dataclasses import replace

import triton
import triton.language as tl

from .._runtime import INTERPRET
from ..problem import ConvProblem
from .common import output_pixels, pixel_count, store_output_tile
from .config import LaunchConfig, dot_constexprs

# Step names in ladder order; the last step is the production implicit_gemm.
LADDER = ("ladder0_direct", "ladder1_implicit_gemm", "ladder2_tiled", "ladder3_tensor_core")

# Spatial sizes and geometry are not specialised (one compiled kernel serves many shapes),
# as in the production kernels.
_GENERIC = ["N", "H", "W", "P", "Q", "stride_h", "stride_w", "pad_h", "pad_w", "dil_h", "dil_w", "R", "S"]


@triton.jit
def _lanes_of(N, P, Q, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, INT64: tl.constexpr):
    """(pixel offsets, channel offsets over all K, M) of a ladder 0/1 program. Channel
    tiles vary fastest, so programs running together read the same input pixels."""
    M = pixel_count(N, P, Q, INT64)
    num_n = tl.cdiv(K, BLOCK_N)
    pid_m = tl.program_id(0) // num_n
    pid_n = tl.program_id(0) % num_n
    if INT64:
        pid_m = pid_m.to(tl.int64)
        pid_n = pid_n.to(tl.int64)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    return offs_m, offs_n, M


# --------------------------------------------------------------------- program 0
@triton.jit(do_not_specialize=_GENERIC)
def conv2d_ladder0_direct_kernel(
    x_ptr,  # input  [N, C, H, W] through strides stride_xn.. (any layout)
    w_ptr,  # weight [K, C/g, R, S] through strides stride_wk..
    out_ptr,  # output [N, K, P, Q] through strides stride_on..
    bias_ptr,  # bias [K] (read only if HAS_BIAS)
    res_ptr,  # residual [N, K, P, Q] through strides stride_rn.. (read only if HAS_RESIDUAL)
    N, H, W, P, Q, K,  # batch, input size, output size, output channels (all groups)
    C_PER_GROUP, K_PER_GROUP,
    stride_h, stride_w, pad_h, pad_w, dil_h, dil_w,  # pad_* = top/left padding
    stride_xn, stride_xc, stride_xh, stride_xw,
    stride_wk, stride_wc, stride_wr, stride_ws,
    stride_on, stride_ok, stride_op, stride_oq,
    stride_rn, stride_rk, stride_rp, stride_rq,
    alpha, beta,  # activation parameters (tileconv.epilogue.Activation)
    R, S,  # filter size
    ACTIVATION: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_RESIDUAL: tl.constexpr,
    BLOCK_M: tl.constexpr,  # output pixels per program
    BLOCK_N: tl.constexpr,  # output channels per program (over all K; 1 on a GPU)
    INT64: tl.constexpr,  # some tensor has >= 2**31 elements: index in int64
):
    """Program 0: one lane per output element, direct loops over C, R, S.

        out[n, k, p, q] = sum_c sum_r sum_s x[n, g*C/g + c, p*U - pad_h + r*dil_h,
                                              q*V - pad_w + s*dil_w] * w[k, c, r, s]

    A program owns BLOCK_M output pixels x BLOCK_N output channels, one output per lane
    (its default config is one channel of 128 pixels, one output per thread, as the
    seed's; the interpreter takes wider tiles, fewer programs). Each lane keeps one fp32
    accumulator and loads its own input value at every step (a masked gather: the mask
    is the padding halo) and its channel's weight value. Nothing is reused on chip except
    what the caches keep: every multiply-add costs a global load.
    """
    offs_m, offs_n, M = _lanes_of(N, P, Q, K, BLOCK_M, BLOCK_N, INT64)
    mask_m = offs_m < M
    mask_n = offs_n < K
    n_idx, p_idx, q_idx, ih0, iw0 = output_pixels(offs_m, P, Q, stride_h, stride_w, pad_h, pad_w)
    chan0 = (offs_n // K_PER_GROUP) * C_PER_GROUP  # first input channel of each k's group
    x_img = x_ptr + n_idx * stride_xn
    w_k = w_ptr + offs_n * stride_wk

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for c in range(0, C_PER_GROUP):
        x_chan = (chan0 + c) * stride_xc  # [BLOCK_N]; chan0 is int64 under INT64: no overflow
        for r in range(0, R):
            ih = ih0 + r * dil_h
            row_ok = mask_m & (ih >= 0) & (ih < H)
            for s in range(0, S):
                iw = iw0 + s * dil_w
                ok = row_ok & (iw >= 0) & (iw < W)
                xv = tl.load(
                    (x_img + ih * stride_xh + iw * stride_xw)[:, None] + x_chan[None, :],
                    mask=ok[:, None] & mask_n[None, :],
                    other=0.0,
                )
                wv = tl.load(w_k + c * stride_wc + r * stride_wr + s * stride_ws, mask=mask_n, other=0.0)
                acc += xv.to(tl.float32) * wv.to(tl.float32)[None, :]

    store_output_tile(
        acc, out_ptr, bias_ptr, res_ptr, n_idx, p_idx, q_idx, mask_m, offs_n, mask_n,
        stride_on, stride_ok, stride_op, stride_oq, stride_rn, stride_rk, stride_rp, stride_rq,
        alpha, beta, ACTIVATION, HAS_BIAS, HAS_RESIDUAL,
    )


# --------------------------------------------------------------------- program 1
@triton.jit(do_not_specialize=_GENERIC)
def conv2d_ladder1_implicit_gemm_kernel(
    x_ptr, w_ptr, out_ptr, bias_ptr, res_ptr,  # as in conv2d_ladder0_direct_kernel
    N, H, W, P, Q, K,
    C_PER_GROUP, K_PER_GROUP,
    stride_h, stride_w, pad_h, pad_w, dil_h, dil_w,
    stride_xn, stride_xc, stride_xh, stride_xw,
    stride_wk, stride_wc, stride_wr, stride_ws,
    stride_on, stride_ok, stride_op, stride_oq,
    stride_rn, stride_rk, stride_rp, stride_rq,
    alpha, beta,
    R, S,
    ACTIVATION: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_RESIDUAL: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,  # as in ladder 0
    INT64: tl.constexpr,
):
    """Program 1: the same lanes as program 0, seen as an implicit GEMM.

    What changes: the three loops over C, R, S become one loop over the GEMM's reduction
    index t < C/g * R * S, and (c, r, s) is decoded from t at every step:

        c = t // (R*S),  r = (t // S) % R,  s = t % S,
        out[m, k] = sum_t A[m, t] * B[t, k]   (A = the implicit im2col matrix, B = w)

    The work and the loads are those of program 0, plus two divisions per step; the gain
    is the shape of the computation, which the next step tiles.
    """
    offs_m, offs_n, M = _lanes_of(N, P, Q, K, BLOCK_M, BLOCK_N, INT64)
    mask_m = offs_m < M
    mask_n = offs_n < K
    n_idx, p_idx, q_idx, ih0, iw0 = output_pixels(offs_m, P, Q, stride_h, stride_w, pad_h, pad_w)
    chan0 = (offs_n // K_PER_GROUP) * C_PER_GROUP  # first input channel of each k's group
    x_img = x_ptr + n_idx * stride_xn
    w_k = w_ptr + offs_n * stride_wk

    RS = R * S
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for t in range(0, C_PER_GROUP * RS):
        c = t // RS
        rs = t - c * RS
        r = rs // S
        s = rs - r * S
        ih = ih0 + r * dil_h
        iw = iw0 + s * dil_w
        ok = mask_m & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
        xv = tl.load(
            (x_img + ih * stride_xh + iw * stride_xw)[:, None] + ((chan0 + c) * stride_xc)[None, :],
            mask=ok[:, None] & mask_n[None, :],
            other=0.0,
        )
        wv = tl.load(w_k + c * stride_wc + r * stride_wr + s * stride_ws, mask=mask_n, other=0.0)
        acc += xv.to(tl.float32) * wv.to(tl.float32)[None, :]

    store_output_tile(
        acc, out_ptr, bias_ptr, res_ptr, n_idx, p_idx, q_idx, mask_m, offs_n, mask_n,
        stride_on, stride_ok, stride_op, stride_oq, stride_rn, stride_rk, stride_rp, stride_rq,
        alpha, beta, ACTIVATION, HAS_BIAS, HAS_RESIDUAL,
    )


# --------------------------------------------------------------------- programs 2 to 4 and 3 with tensor cores
@triton.jit
def _tile_of(N, P, Q, K_PER_GROUP, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, INT64: tl.constexpr):
    """(group, pixel offsets, channel offsets within the group, M) of this program. One grid
    axis, row-major over (group, pixel tile, channel tile): no swizzle (a production step)."""
    M = pixel_count(N, P, Q, INT64)
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(K_PER_GROUP, BLOCK_N)
    pid = tl.program_id(0)
    group = pid // (num_m * num_n)
    rest = pid % (num_m * num_n)
    pid_m = rest // num_n
    pid_n = rest % num_n
    if INT64:
        group = group.to(tl.int64)
        pid_m = pid_m.to(tl.int64)
        pid_n = pid_n.to(tl.int64)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    return group, offs_m, offs_n, M


@triton.jit
def _load_slice(
    x_img, w_col, ih0, iw0, mask_m, mask_n, t, H, W, R, S, C_PER_GROUP,
    dil_h, dil_w, stride_xc, stride_xh, stride_xw, stride_wc, stride_wr, stride_ws,
):
    """One K-slice of the implicit GEMM: A[m, t] as a [BLOCK_M, BLOCK_K] tile gathered
    from the input (zero in the padding halo and past the reduction), B[t, k] as a
    [BLOCK_K, BLOCK_N] tile of the weight. (c, r, s) are decoded from t per element."""
    RS = R * S
    mask_t = t < C_PER_GROUP * RS
    c = t // RS
    rs = t - c * RS
    r = rs // S
    s = rs - r * S
    ih = ih0[:, None] + (r * dil_h)[None, :]
    iw = iw0[:, None] + (s * dil_w)[None, :]
    in_bounds = (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
    a = tl.load(
        x_img[:, None] + ih * stride_xh + iw * stride_xw + (c * stride_xc)[None, :],
        mask=mask_m[:, None] & mask_t[None, :] & in_bounds,
        other=0.0,
    )
    b = tl.load(
        w_col[None, :] + (c * stride_wc + r * stride_wr + s * stride_ws)[:, None],
        mask=mask_t[:, None] & mask_n[None, :],
        other=0.0,
    )
    return a, b


@triton.jit(do_not_specialize=_GENERIC)
def conv2d_ladder2_tiled_kernel(
    x_ptr, w_ptr, out_ptr, bias_ptr, res_ptr,  # as in conv2d_ladder0_direct_kernel
    N, H, W, P, Q, K,
    C_PER_GROUP, K_PER_GROUP,
    stride_h, stride_w, pad_h, pad_w, dil_h, dil_w,
    stride_xn, stride_xc, stride_xh, stride_xw,
    stride_wk, stride_wc, stride_wr, stride_ws,
    stride_on, stride_ok, stride_op, stride_oq,
    stride_rn, stride_rk, stride_rp, stride_rq,
    alpha, beta,
    R, S,
    ACTIVATION: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_RESIDUAL: tl.constexpr,
    BLOCK_M: tl.constexpr,  # output pixels per program
    BLOCK_N: tl.constexpr,  # output channels (of one group) per program
    BLOCK_K: tl.constexpr,  # reduction elements t per step (the seed's K-slice of 8)
    INT64: tl.constexpr,
):
    """Programs 2 to 4: block tiling, shared-memory staging and register tiling on the CUDA cores.

    What changes from program 1: a program owns a BLOCK_M x BLOCK_N output tile (pixels x
    one group's channels) in registers, and each step loads a K-slice of BLOCK_K reduction
    elements t as two tiles, A[BLOCK_M, BLOCK_K] of the input and B[BLOCK_K, BLOCK_N] of
    the weight, then multiplies them on the CUDA cores:

        acc[m, k] += sum_{t in slice} A[m, t] * B[t, k]

    Every loaded input value now feeds BLOCK_N multiply-adds and every weight value
    BLOCK_M, instead of one. The product is ``tl.dot`` with ``input_precision="ieee"`` on
    fp32 operands, which Triton lowers to FFMA loops over register sub-tiles, the operand
    slices staged through shared memory: the seed's programs 2 to 4 (shared-memory tiles,
    then each thread a small block of acc). No tensor cores (the SASS check pins FFMA and
    no HMMA/HGMMA). Two earlier forms lost: a ``tl.sum`` of a broadcast [M, K, N] product,
    which Triton rewrote into a TF32 ``tl.dot`` (the benchmark's strict-fp32 check failed it,
    7.7e-4), and per-element rank-1 updates, 108 GFLOP/s on an H200 (2026-11-23), 15x
    slower than program 0.
    """
    group, offs_m, offs_n, M = _tile_of(N, P, Q, K_PER_GROUP, BLOCK_M, BLOCK_N, INT64)
    mask_m = offs_m < M
    mask_n = offs_n < K_PER_GROUP
    n_idx, p_idx, q_idx, ih0, iw0 = output_pixels(offs_m, P, Q, stride_h, stride_w, pad_h, pad_w)
    x_img = x_ptr + n_idx * stride_xn + (group * C_PER_GROUP) * stride_xc
    w_col = w_ptr + (group * K_PER_GROUP + offs_n) * stride_wk

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    RS = R * S
    CRS = C_PER_GROUP * RS
    for t0 in range(0, CRS, BLOCK_K):
        t = t0 + tl.arange(0, BLOCK_K)
        if INT64:  # c * stride_xc passes 2**31 in a large NCHW input
            t = t.to(tl.int64)
        c = t // RS
        r = (t - c * RS) // S
        s = t - c * RS - r * S
        mask_t = t < CRS
        ih = ih0[:, None] + (r * dil_h)[None, :]
        iw = iw0[:, None] + (s * dil_w)[None, :]
        ok = mask_m[:, None] & mask_t[None, :] & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
        a = tl.load((x_img[:, None] + ih * stride_xh + iw * stride_xw) + (c * stride_xc)[None, :], mask=ok, other=0.0)
        b = tl.load(w_col[None, :] + (c * stride_wc + r * stride_wr + s * stride_ws)[:, None],
                    mask=mask_t[:, None] & mask_n[None, :], other=0.0)
        acc = tl.dot(a.to(tl.float32), b.to(tl.float32), acc, input_precision="ieee")

    store_output_tile(
        acc, out_ptr, bias_ptr, res_ptr, n_idx, p_idx, q_idx, mask_m, group * K_PER_GROUP + offs_n, mask_n,
        stride_on, stride_ok, stride_op, stride_oq, stride_rn, stride_rk, stride_rp, stride_rq,
        alpha, beta, ACTIVATION, HAS_BIAS, HAS_RESIDUAL,
    )


@triton.jit(do_not_specialize=_GENERIC)
def conv2d_ladder3_tensor_core_kernel(
    x_ptr, w_ptr, out_ptr, bias_ptr, res_ptr,  # as in conv2d_ladder0_direct_kernel
    N, H, W, P, Q, K,
    C_PER_GROUP, K_PER_GROUP,
    stride_h, stride_w, pad_h, pad_w, dil_h, dil_w,
    stride_xn, stride_xc, stride_xh, stride_xw,
    stride_wk, stride_wc, stride_wr, stride_ws,
    stride_on, stride_ok, stride_op, stride_oq,
    stride_rn, stride_rk, stride_rp, stride_rq,
    alpha, beta,
    R, S,
    ACTIVATION: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_RESIDUAL: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,  # each >= 16 (tl.dot)
    DOT_PRECISION: tl.constexpr,  # "tf32x3" (strict fp32) or "tf32"; see config.dot_constexprs
    UPCAST_DOT: tl.constexpr,  # interpreter only: tl.dot on bf16 is wrong there, so use fp32
    INT64: tl.constexpr,
):
    """Tensor cores (SEEDS.md part 3): program 4's tiles, reduced by ``tl.dot``.

    What changes from ladder 2: the K-slice product ``acc += A @ B`` is one ``tl.dot``
    (wgmma on Hopper) on the 16-bit operands as loaded, fp32 accumulation; fp32 inputs
    use TF32 exactly when the problem allows it (else ``tl.dot`` computes in strict fp32,
    which Triton lowers to CUDA-core FMAs). The kernel is launched with one stage: each
    step's loads are waited for before its dot, nothing overlaps them; the loads still
    decode (c, r, s) per element in the seed's order, which is contiguous in neither
    layout's input. Both are what the production ``implicit_gemm`` changes.
    """
    group, offs_m, offs_n, M = _tile_of(N, P, Q, K_PER_GROUP, BLOCK_M, BLOCK_N, INT64)
    offs_t = tl.arange(0, BLOCK_K)
    if INT64:
        offs_t = offs_t.to(tl.int64)
    mask_m = offs_m < M
    mask_n = offs_n < K_PER_GROUP
    n_idx, p_idx, q_idx, ih0, iw0 = output_pixels(offs_m, P, Q, stride_h, stride_w, pad_h, pad_w)
    x_img = x_ptr + n_idx * stride_xn + (group * C_PER_GROUP) * stride_xc
    w_col = w_ptr + (group * K_PER_GROUP + offs_n) * stride_wk

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for t0 in range(0, C_PER_GROUP * R * S, BLOCK_K):
        a, b = _load_slice(
            x_img, w_col, ih0, iw0, mask_m, mask_n, t0 + offs_t, H, W, R, S, C_PER_GROUP,
            dil_h, dil_w, stride_xc, stride_xh, stride_xw, stride_wc, stride_wr, stride_ws,
        )
        if UPCAST_DOT:
            a = a.to(tl.float32)
            b = b.to(tl.float32)
        acc = tl.dot(a, b, acc, input_precision=DOT_PRECISION)

    store_output_tile(
        acc, out_ptr, bias_ptr, res_ptr, n_idx, p_idx, q_idx, mask_m, group * K_PER_GROUP + offs_n, mask_n,
        stride_on, stride_ok, stride_op, stride_oq, stride_rn, stride_rk, stride_rp, stride_rq,
        alpha, beta, ACTIVATION, HAS_BIAS, HAS_RESIDUAL,
    )


# --------------------------------------------------------------------- launchers
def _arguments(problem: ConvProblem, x, weight, bias, residual, out) -> tuple[list, dict]:
    # The launchers' shared prefix (launch.py), with K and the group sizes inserted.
    from .launch import _shared_arguments

    args, geometry, constexprs = _shared_arguments(problem, x, weight, bias, residual, out)
    return [*args, problem.k, problem.c_per_group, problem.k_per_group, *geometry], constexprs


def _tile_grid(problem: ConvProblem, config: LaunchConfig) -> tuple[int]:
    return (
        triton.cdiv(problem.gemm_m, config.block_m) * triton.cdiv(problem.k_per_group, config.block_n)
        * problem.groups,
    )


def _lane_grid(problem: ConvProblem, config: LaunchConfig) -> tuple[int]:
    return (triton.cdiv(problem.gemm_m, config.block_m) * triton.cdiv(problem.k, config.block_n),)


def launch_ladder0_direct(problem, x, weight, bias, residual, out, config: LaunchConfig):
    """block_m pixels x block_n channels (over all K) per program, one output per lane."""
    args, constexprs = _arguments(problem, x, weight, bias, residual, out)
    return conv2d_ladder0_direct_kernel[_lane_grid(problem, config)](
        *args, **constexprs, BLOCK_M=config.block_m, BLOCK_N=config.block_n,
        num_warps=config.num_warps, num_stages=1,
    )


def launch_ladder1_implicit_gemm(problem, x, weight, bias, residual, out, config: LaunchConfig):
    """As :func:`launch_ladder0_direct`."""
    args, constexprs = _arguments(problem, x, weight, bias, residual, out)
    return conv2d_ladder1_implicit_gemm_kernel[_lane_grid(problem, config)](
        *args, **constexprs, BLOCK_M=config.block_m, BLOCK_N=config.block_n,
        num_warps=config.num_warps, num_stages=1,
    )


def launch_ladder2_tiled(problem, x, weight, bias, residual, out, config: LaunchConfig):
    """block_m x block_n tiles of one group each, block_k reduction elements per step."""
    args, constexprs = _arguments(problem, x, weight, bias, residual, out)
    return conv2d_ladder2_tiled_kernel[_tile_grid(problem, config)](
        *args, **constexprs, BLOCK_M=config.block_m, BLOCK_N=config.block_n, BLOCK_K=config.block_k,
        num_warps=config.num_warps, num_stages=1,
    )


def launch_ladder3_tensor_core(problem, x, weight, bias, residual, out, config: LaunchConfig):
    """As :func:`launch_ladder2_tiled` with ``tl.dot``; one stage whatever the config says."""
    args, constexprs = _arguments(problem, x, weight, bias, residual, out)
    return conv2d_ladder3_tensor_core_kernel[_tile_grid(problem, config)](
        *args, **constexprs, BLOCK_M=config.block_m, BLOCK_N=config.block_n, BLOCK_K=config.block_k,
        **dot_constexprs(problem),
        num_warps=config.num_warps, num_stages=1,
    )


def _pow2_between(value: int, low: int, high: int) -> int:
    return max(low, min(high, triton.next_power_of_2(max(value, 1))))


def ladder_config(problem: ConvProblem, algorithm: str) -> LaunchConfig:
    """The fixed launch config of a ladder step (never tuned): the seed's shapes on a GPU;
    under the interpreter, whose cost is per program and per step, few large tiles."""
    one_stage = dict(num_stages=1, group_m=1)
    if algorithm in ("ladder0_direct", "ladder1_implicit_gemm"):
        if INTERPRET:
            return LaunchConfig(block_m=64, block_n=_pow2_between(problem.k, 1, 32), block_k=1,
                                num_warps=1, **one_stage)
        # One output per thread, as the seed's programs 0 and 1: 128 pixels of one channel
        # on 4 warps (the channel's weight value is one broadcast load per step).
        return LaunchConfig(block_m=128, block_n=1, block_k=1, num_warps=4, **one_stage)
    reduction = problem.c_per_group * problem.r * problem.s
    if algorithm == "ladder2_tiled":
        if INTERPRET:
            return LaunchConfig(block_m=64, block_n=_pow2_between(problem.k_per_group, 16, 32),
                                block_k=_pow2_between(reduction, 16, 32), num_warps=1, **one_stage)
        # Programs 3-4 of the seed: 64x64 tiles (32 accumulators a thread), K-slices of 16
        # (the seed's 8 is below tl.dot's smallest operand edge).
        return LaunchConfig(block_m=64, block_n=64, block_k=16, num_warps=4, **one_stage)
    if algorithm == "ladder3_tensor_core":
        # The production kernel's tile for this problem (so that the last step of the chart
        # changes only what implicit_gemm adds), one stage, K-slices over all of t.
        from ..dispatch.heuristics import default_config

        base = default_config(problem, "implicit_gemm")
        wide = problem.itemsize == 2
        block_k = _pow2_between(reduction, 16, 32 if INTERPRET or not wide else 64)
        return replace(base, block_k=block_k, fuse_sc=0, **one_stage)
    raise ValueError(f"{algorithm!r} is not a ladder step; ladder: {', '.join(LADDER)}")
