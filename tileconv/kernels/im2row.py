"""Few input channels: unroll each filter row's columns into channels, then a plain implicit GEMM.

A dense convolution with C = 3 (ResNet's 7x7 stem, MobileNet's and ConvNeXt's stems) gives
the implicit GEMM a reduction slice of 3 channels a tap: padded to a 16-deep tensor-core
step it is 81% zeros, and fusing (filter column, channel) into one slice instead (the
kernel's FUSE_SC) leaves 2-byte gathers at odd addresses, which the asynchronous copies
cannot take (4 bytes at least): the loads are not pipelined. On an H200 the stem ran at
0.43x cuDNN that way, far above both of its floors.

:func:`unroll_columns_kernel` writes ``xr`` (:meth:`tileconv.problem.ConvProblem.columns_as_channels`):
for every input row h and output column q, the S x C input values that the filter row
meets there, zero-padded to a multiple of 16 channels, channels_last. The convolution is
then an R x 1 one over ``xr`` with a weight laid out to match
(:func:`tileconv.kernels.weights.unrolled_columns_weight`): every tap reads one
16-byte-aligned run per pixel, the production implicit GEMM kernel at its best.

The copy costs ``unrolled_channels / C x Q / W`` times the input's bytes once (ResNet's
stem: 32 / 3 x 1/2 = 5.3x, about 51 MB at batch 32), for loads that become wide and
pipelined; ``tune`` races it against the implicit GEMM's fused slices.
"""

import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_launch_dependents


@triton.jit(do_not_specialize=["ROWS", "H", "W", "Q", "stride_w", "pad_w", "dil_w"])
def unroll_columns_kernel(
    x_ptr,  # input [N, C, H, W] through its strides (any layout)
    out_ptr,  # xr: [N, H, Q, CHANNELS] contiguous (a channels_last [N, CHANNELS, H, Q])
    ROWS, H, W, Q,  # ROWS = N * H * Q
    stride_w, pad_w, dil_w,  # the convolution's horizontal geometry
    stride_xn, stride_xc, stride_xh, stride_xw,
    C: tl.constexpr, S: tl.constexpr,  # input channels and filter columns: j = s * C + c
    # S * C rounded up (im2row: to a multiple of 16; the columns wgrad's padding copy, S = 1:
    # to a power of two); the rest is zeros
    CHANNELS: tl.constexpr,
    BLOCK_ROWS: tl.constexpr, BLOCK_J: tl.constexpr,  # BLOCK_J: CHANNELS as a power of two
    INT64: tl.constexpr,
    # The kernel after it waits on it programmatically (:func:`~tileconv._runtime.programmatic_launch`):
    # let that kernel be scheduled once every program of this grid has started.
    SIGNAL_DEPENDENTS: tl.constexpr,
):
    if SIGNAL_DEPENDENTS:
        gdc_launch_dependents()
    rows = tl.program_id(0) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)
    if INT64:
        rows = rows.to(tl.int64)
    j = tl.arange(0, BLOCK_J)
    q = rows % Q
    nh = rows // Q
    h = nh % H
    n = nh // H
    s = j // C  # C and S are compile-time: shifts and multiplies
    c = j - s * C
    iw = (q * stride_w - pad_w)[:, None] + (s * dil_w)[None, :]
    row_ok = rows < ROWS
    inside = row_ok[:, None] & (j < S * C)[None, :] & (iw >= 0) & (iw < W)
    values = tl.load(
        x_ptr + (n * stride_xn + h * stride_xh)[:, None] + iw * stride_xw + (c * stride_xc)[None, :],
        mask=inside, other=0.0,
    )
    tl.store(out_ptr + rows[:, None] * CHANNELS + j[None, :], values, mask=row_ok[:, None] & (j < CHANNELS)[None, :])
