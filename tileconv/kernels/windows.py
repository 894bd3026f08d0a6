"""Few input channels: overlapping windows of one padded copy, read by the copy engine.

A dense convolution with C = 3 (ResNet's 7x7 stem) gives the implicit GEMM a 3-channel
reduction slice a tap. ``im2row`` (:mod:`.im2row`) unrolls each filter row's S x C values
into channels, one run per output column, which costs a copy of about S*C/V / C times the
input (ResNet's stem at batch 32: 103 MB in fp32, for a 19 MB input) written and read again.

Here the copy only pads. :func:`pad_windows_kernel` writes ``xp``
(:meth:`tileconv.problem.ConvProblem.columns_as_windows`): channels_last, C rounded up to
``C4`` (so that V pixels are a multiple of 16 bytes), ``pad_left`` zero pixels in front of
each row and zeros up to the last window's end; each input value once. The S*C4 values that
filter row r meets at output column q are then consecutive in ``xp``, starting at pixel
q*V: a tensor with a pixel stride of V*C4 values and S*C4 "channels", its windows
overlapping. That tensor is what a copy engine (TMA) can describe (its strides are multiples
of 16 bytes), so the convolution runs as an R x 1 one over the windows on ``tma_rows``
(:mod:`.implicit_gemm_tma`): each tile a box of BLOCK_M windows x BLOCK_K values per filter
row, zero-filled past the window's S*C4 values (never a neighbour's pixel) and past the
rows of the image (the vertical padding).
"""

import triton
import triton.language as tl


@triton.jit(do_not_specialize=["PIXELS", "H", "W", "ROW_PIXELS", "pad_w"])
def pad_windows_kernel(
    x_ptr,  # input [N, C, H, W] through its strides (any layout)
    out_ptr,  # xp: [N, H, ROW_PIXELS, C4] contiguous
    PIXELS, H, W, ROW_PIXELS,  # PIXELS = N * H * ROW_PIXELS
    pad_w,  # zero pixels in front of each row
    stride_xn, stride_xc, stride_xh, stride_xw,
    C: tl.constexpr, C4: tl.constexpr,  # input channels; channels a pixel of xp (C4 >= C)
    BLOCK_PIXELS: tl.constexpr, BLOCK_C: tl.constexpr,  # BLOCK_C: C4 as a power of two
    INT64: tl.constexpr,
):
    pixels = tl.program_id(0) * BLOCK_PIXELS + tl.arange(0, BLOCK_PIXELS)
    if INT64:
        pixels = pixels.to(tl.int64)
    c = tl.arange(0, BLOCK_C)
    j = pixels % ROW_PIXELS
    nh = pixels // ROW_PIXELS
    h = nh % H
    n = nh // H
    iw = j - pad_w
    ok = pixels < PIXELS
    inside = (ok & (iw >= 0) & (iw < W))[:, None] & (c < C)[None, :]
    values = tl.load(x_ptr + (n * stride_xn + h * stride_xh + iw * stride_xw)[:, None] + (c * stride_xc)[None, :],
                     mask=inside, other=0.0)
    tl.store(out_ptr + pixels[:, None] * C4 + c[None, :], values, mask=ok[:, None] & (c < C4)[None, :])
