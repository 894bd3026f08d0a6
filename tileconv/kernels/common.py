"""Pieces shared by every tileconv kernel: the epilogue, applied to an fp32 tile.

The activation codes are the ones :mod:`tileconv.epilogue` defines; ``alpha`` and
``beta`` are that module's two parameters (leaky slope, clamp bounds). Also the pixel
walks of the implicit GEMMs, and Gluon's signal to a programmatically launched next kernel.
"""

import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

# Codes from tileconv.epilogue._ACTIVATIONS (kept literal: constexpr comparisons).
_NONE, _RELU, _RELU6, _LEAKY, _SILU, _GELU, _GELU_TANH, _SIGMOID, _TANH, _HARDSWISH, _CLAMP = range(11)


@triton.jit
def _tanh(x):
    # tanh(x) = sign(x) * (1 - e) / (1 + e), e = exp(-2|x|): no overflow for any x.
    e = tl.exp(-2.0 * tl.abs(x))
    t = (1.0 - e) / (1.0 + e)
    return tl.where(x < 0, -t, t)


@triton.jit
def apply_activation(x, ACTIVATION: tl.constexpr, alpha, beta, FOLD_RELU: tl.constexpr = False):
    """``x`` is an fp32 tile; returns activation(x) in fp32. NaN propagates as in torch.

    ReLU is a select (FSETP + FSEL an element); with ``FOLD_RELU`` it is the NaN-propagating
    max instead, which ptxas folds into a following fp16 / bf16 conversion (F2FP.RELU: free;
    depthwise_halo's bias + ReLU on c144 hw56/1 1.04x -> 1.00x of its plain time, H200, session
    49). Not the default: with the max, ptxas gave some NCHW CUDA-core tiles (``direct``
    128x16x32) 64 registers and spills in their loop (``benchmarks/audit.py --layout nchw``)."""
    if ACTIVATION == 1 and FOLD_RELU:
        x = tl.maximum(x, 0.0, propagate_nan=tl.PropagateNan.ALL)
    elif ACTIVATION == 1:  # relu; written as a select so that NaN stays NaN, as torch.relu
        x = tl.where(x < 0.0, 0.0, x)
    elif ACTIVATION == 2:  # relu6
        x = tl.where(x < 0.0, 0.0, tl.where(x > 6.0, 6.0, x))
    elif ACTIVATION == 3:  # leaky_relu, alpha = negative slope
        x = tl.where(x < 0.0, x * alpha, x)
    elif ACTIVATION == 4:  # silu
        x = x / (1.0 + tl.exp(-x))
    elif ACTIVATION == 5:  # gelu, erf form
        x = 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))
    elif ACTIVATION == 6:  # gelu, tanh approximation
        x = 0.5 * x * (1.0 + _tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))
    elif ACTIVATION == 7:  # sigmoid
        x = 1.0 / (1.0 + tl.exp(-x))
    elif ACTIVATION == 8:  # tanh
        x = _tanh(x)
    elif ACTIVATION == 9:  # hardswish: x * relu6(x + 3) / 6
        t = x + 3.0
        x = x * tl.where(t < 0.0, 0.0, tl.where(t > 6.0, 6.0, t)) / 6.0
    elif ACTIVATION == 10:  # clamp to [alpha, beta]
        x = tl.where(x < alpha, alpha, tl.where(x > beta, beta, x))
    return x


@triton.jit
def swizzle_tile(pid, num_m, num_n, GROUP_M: tl.constexpr):
    """Grouped tile order: GROUP_M row-tiles share each column sweep, so that the
    weight tiles (and input rows) they read stay in L2 (Triton matmul tutorial)."""
    width = GROUP_M * num_n
    group = pid // width
    first_m = group * GROUP_M
    size_m = tl.minimum(num_m - first_m, GROUP_M)
    pid_m = first_m + (pid % width) % size_m
    pid_n = (pid % width) // size_m
    return pid_m, pid_n


@triton.jit
def dot_acc(a, b, acc, DOT_PRECISION: tl.constexpr, UPCAST_DOT: tl.constexpr):
    """acc + a @ b on the tensor cores (``DOT_PRECISION``: see config.dot_constexprs). Under
    the interpreter bf16 tiles are multiplied in fp32 (``UPCAST_DOT``): its bf16 dot is wrong."""
    if UPCAST_DOT:
        a = a.to(tl.float32)
        b = b.to(tl.float32)
    return tl.dot(a, b, acc, input_precision=DOT_PRECISION)


@triton.jit
def next_reduction_step(c0, tap_s, tap_r, C, S, BLOCK_K: tl.constexpr):
    """An implicit GEMM's next (channel block, filter column, filter row), by scalar counters
    and no division: past the last channel block the next column, past the last column the
    next row."""
    c0 += BLOCK_K
    next_tap = c0 >= C
    c0 = tl.where(next_tap, 0, c0)
    tap_s = tl.where(next_tap, tap_s + 1, tap_s)
    next_row = tap_s >= S
    tap_s = tl.where(next_row, 0, tap_s)
    tap_r = tl.where(next_row, tap_r + 1, tap_r)
    return c0, tap_s, tap_r


@triton.jit
def divide(x, d):
    """(x // d, x % d) for non-negative x, with one division (the remainder by a multiply):
    one digit of a flat index in mixed radix."""
    q = x // d
    return q, x - q * d


@triton.jit
def pixel_count(N, P, Q, INT64: tl.constexpr):
    """N*P*Q, the GEMM's M (or any N x rows x columns count): in int64 when ``INT64``, where
    the product itself may pass 2**31."""
    if INT64:
        count = N.to(tl.int64) * P * Q
    else:
        count = N * P * Q
    return count


@triton.jit
def output_pixels(offs_m, P, Q, stride_h, stride_w, pad_h, pad_w):
    """Flat output-pixel indices m = (n*P + p)*Q + q -> (n, p, q), and the input corner
    (p*U - pad_h, q*V - pad_w) where each pixel's filter window starts."""
    # Decoded without forming P*Q: that product is 32-bit and passes 2**31 on a 46400 x
    # 46400 output even when offs_m itself is int64 (found by the int64 GPU test).
    rows = offs_m // Q
    q_idx = offs_m - rows * Q
    n_idx = rows // P
    p_idx = rows - n_idx * P
    return n_idx, p_idx, q_idx, p_idx * stride_h - pad_h, q_idx * stride_w - pad_w


@triton.jit
def pixel_steps(BLOCK: tl.constexpr, P, Q):
    """(n, p, q) steps of a move by BLOCK flat output pixels, for :func:`advance_pixels`."""
    rows = BLOCK // Q
    return rows // P, rows % P, BLOCK % Q


@triton.jit
def advance_pixels(n, p, q, step_n, step_p, step_q, P, Q):
    """(n, p, q) moved by the flat step of :func:`pixel_steps`, with carries (q past Q wraps
    into p, p past P into n): a pixel walk without a division a step."""
    q += step_q
    carry = q >= Q
    q = tl.where(carry, q - Q, q)
    p += step_p + carry.to(p.dtype)
    carry = p >= P
    p = tl.where(carry, p - P, p)
    n += step_n + carry.to(n.dtype)
    return n, p, q


@triton.jit
def tile_origin(pid_m, PI, Q, BLOCK_M: tl.constexpr, BOX_Q: tl.constexpr):
    """Where M tile ``pid_m`` of the 1x1 GEMM kernels starts, as (img, row, col).

    BOX_Q = 0 (stride 1): the tile is BLOCK_M consecutive rows of the (M, C) matrix from row
    ``row`` (img and col are 0). BOX_Q > 0 (strided): the tile is a box of the strided view,
    output rows row .. row + BLOCK_M // BOX_Q of grid image img, columns col .. col + BOX_Q.
    The grid is images of PI output rows: (N, P), or (1, N*P) where the batch and the rows
    merge; an output row wider than BOX_Q takes several boxes."""
    if BOX_Q == 0:
        return 0, pid_m * BLOCK_M, 0
    else:
        BOX_H: tl.constexpr = BLOCK_M // BOX_Q
        segments = tl.cdiv(Q, BOX_Q)
        per_image = tl.cdiv(PI, BOX_H) * segments
        img = pid_m // per_image
        rest = pid_m - img * per_image
        box_row = rest // segments
        return img, box_row * BOX_H, (rest - box_row * segments) * BOX_Q


@triton.jit
def tile_pixels(i, img, row, col, M, PI, P, Q, BOX_Q: tl.constexpr, INT64: tl.constexpr):
    """The pixels ``i`` of the tile at (img, row, col) (:func:`tile_origin`; ``i`` an arange
    over the tile in the caller's layout) -> (n, p, q) of the output and whether each is one
    (past M; in a box, rows past the grid image's last and columns past Q: the zero fill)."""
    if BOX_Q == 0:
        offs_m = row + i
        if INT64:
            offs_m = offs_m.to(tl.int64)
        n_idx, p_idx, q_idx, _, _ = output_pixels(offs_m, P, Q, 1, 1, 0, 0)
        return n_idx, p_idx, q_idx, offs_m < M
    else:
        grid_row = row + i // BOX_Q
        q_idx = col + i % BOX_Q
        flat_row = img * PI + grid_row  # n * P + p
        if INT64:
            flat_row = flat_row.to(tl.int64)
        n_idx = flat_row // P
        return n_idx, flat_row - n_idx * P, q_idx, (grid_row < PI) & (q_idx < Q)


@triton.jit
def store_output_tile(
    acc,  # [BLOCK_M, BLOCK_N] fp32 convolution result
    out_ptr, bias_ptr, res_ptr,
    n_idx, p_idx, q_idx, mask_m,  # [BLOCK_M] output pixel coordinates and validity
    k_idx, mask_n,  # [BLOCK_N] output channels (over all K) and validity
    stride_on, stride_ok, stride_op, stride_oq,
    stride_rn, stride_rk, stride_rp, stride_rq,
    alpha, beta,
    ACTIVATION: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_RESIDUAL: tl.constexpr,
    FOLD_RELU: tl.constexpr = False,  # see apply_activation
):
    """The fused epilogue shared by every forward kernel: + bias, + residual, activation
    (:func:`epilogue`), cast to the output dtype, one masked store."""
    acc = epilogue(acc, bias_ptr, res_ptr, n_idx, p_idx, q_idx, mask_m, k_idx, mask_n,
                   stride_rn, stride_rk, stride_rp, stride_rq, alpha, beta, ACTIVATION, HAS_BIAS, HAS_RESIDUAL,
                   FOLD_RELU)
    mask_out = mask_m[:, None] & mask_n[None, :]
    out_offs = (n_idx * stride_on + p_idx * stride_op + q_idx * stride_oq)[:, None] + (
        k_idx * stride_ok
    )[None, :]
    tl.store(out_ptr + out_offs, acc.to(out_ptr.dtype.element_ty), mask=mask_out)


@triton.jit
def load_bias(bias_ptr, k_idx, mask_k, HAS_BIAS: tl.constexpr):
    """The bias of output channels ``k_idx`` as an fp32 row [1, BLOCK_N] to add to a tile (0.0
    without one), for kernels that read it before their reduction: read in the epilogue, its
    latency comes after the last multiply (a one-tile-a-program GEMM's whole grid waits on it)."""
    bias = 0.0
    if HAS_BIAS:
        bias = tl.load(bias_ptr + k_idx, mask=mask_k, other=0.0).to(tl.float32)[None, :]
    return bias


@triton.jit
def store_off_grid_zeros(
    out_ptr,  # the output, a view t[:, :, ::U, ::V] of a tensor t (N, K, H, W)
    n_idx, p_idx, q_idx, mask_m,  # [BLOCK_M] output pixels (of the view) and validity
    k_idx, mask_n,  # [BLOCK_N] channels and validity
    stride_on, stride_ok,  # t's (and the view's) image and channel strides
    H, W, stride_th, stride_tw,  # t's height, width, row and column strides
    U: tl.constexpr, V: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    """Zero t's pixels (U*p + i, V*q + j), 0 <= i < U, 0 <= j < V, (i, j) != (0, 0), of each
    output pixel (n, p, q) of the tile: with the tile's own stores (pixel (U*p, V*q)), every
    pixel of t whose cell the tile covers (t's pixel (h, w) is in the cell of (h // U, w // V),
    so the output's tiles cover t). A strided 1x1's input gradient is a GEMM onto every U-th
    row and V-th column of dx and zero elsewhere (ConvProblem.dgrad_as_strided_forward): its
    zeros leave with the GEMM's tile instead of from a launch of their own."""
    zeros = tl.zeros((BLOCK_M, BLOCK_N), dtype=out_ptr.dtype.element_ty)
    corner = n_idx * stride_on + (p_idx * U) * stride_th + (q_idx * V) * stride_tw
    channels = (k_idx * stride_ok)[None, :]
    for i in tl.static_range(U):
        for j in tl.static_range(V):
            if i + j > 0:
                inside = mask_m & (p_idx * U + i < H) & (q_idx * V + j < W)
                tl.store(out_ptr + (corner + i * stride_th + j * stride_tw)[:, None] + channels, zeros,
                         mask=inside[:, None] & mask_n[None, :])


@triton.jit
def epilogue(
    acc,  # [BLOCK_M, BLOCK_N] fp32 convolution result
    bias_ptr, res_ptr,  # bias [K] (read only if HAS_BIAS), residual (read only if HAS_RESIDUAL)
    n_idx, p_idx, q_idx, mask_m,  # [BLOCK_M] output pixel coordinates (n may be one scalar) and validity
    k_idx, mask_n,  # [BLOCK_N] output channels (over all K) and validity
    stride_rn, stride_rk, stride_rp, stride_rq,
    alpha, beta,
    ACTIVATION: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_RESIDUAL: tl.constexpr,
    FOLD_RELU: tl.constexpr = False,  # see apply_activation
):
    """activation(acc + bias + residual) on the fp32 tile: the epilogue's arithmetic, for
    kernels that store the tile their own way (:func:`store_output_tile` is the usual one)."""
    res_offs = (n_idx * stride_rn + p_idx * stride_rp + q_idx * stride_rq)[:, None] + (k_idx * stride_rk)[None, :]
    return epilogue_at(acc, bias_ptr, res_ptr, k_idx, mask_n, res_offs,
                       mask_m[:, None] & mask_n[None, :], alpha, beta, ACTIVATION, HAS_BIAS, HAS_RESIDUAL, FOLD_RELU)


@triton.jit
def epilogue_at(
    acc,  # [BLOCK_M, BLOCK_N] fp32 convolution result
    bias_ptr, res_ptr,
    k_idx, mask_k,  # [BLOCK_N] output channel of each column and its validity
    res_offs, mask,  # [BLOCK_M, BLOCK_N] residual offsets and the elements that exist
    alpha, beta,
    ACTIVATION: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_RESIDUAL: tl.constexpr,
    FOLD_RELU: tl.constexpr = False,  # see apply_activation
):
    """:func:`epilogue` for tiles whose columns are not output channels alone (the dense
    Toeplitz kernel's columns are (output column, output channel) pairs): the caller gives
    each column's channel and each element's residual offset."""
    if HAS_BIAS:
        acc += load_bias(bias_ptr, k_idx, mask_k, HAS_BIAS)
    if HAS_RESIDUAL:
        acc += tl.load(res_ptr + res_offs, mask=mask, other=0.0).to(tl.float32)
    return apply_activation(acc, ACTIVATION, alpha, beta, FOLD_RELU)


@gluon.jit
def signal_dependents():
    """Gluon's ``gdc_launch_dependents``: let the kernel launched programmatically after this
    one (:func:`~tileconv._runtime.programmatic_launch`) be scheduled once every program of this
    grid has signalled or exited (the first thread of a program to issue it signals for it)."""
    gl.inline_asm_elementwise("griddepcontrol.launch_dependents; // $0", "=r", [], dtype=gl.int32,
                              is_pure=False, pack=1)
