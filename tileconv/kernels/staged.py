"""NCHW input: copy it into channels_last once, then run the implicit GEMM on the copy.

The implicit GEMM's A tile is (pixels x channels). In channels_last each pixel's channel
slice is one contiguous run, loaded 16 bytes at a time by asynchronous copies; in NCHW a
channel's pixels are the contiguous axis, and the gather the kernel does (pixel addresses
decoded from the flat index, through the padding halo's mask) cannot be proven
contiguous: every element is its own 2- or 4-byte load. 2-byte loads cannot even be
asynchronous copies (4 bytes at least), so fp16 NCHW tiles are not pipelined. On an H200
(2026-11-22) ResNet-50's layers ran at 0.72x cuDNN in fp16 NCHW against 0.87x in NHWC.

cuDNN pays a layout transform of its own on NCHW input; this is tileconv's:
:func:`to_channels_last_kernel` reads (channels x pixels) tiles of one image along the
pixels and writes them transposed along the channels, so both sides are wide, coalesced
accesses; the copy costs one read and one write of the input, and the GEMM then reads
16-byte runs. It pays where the GEMM reads the input many times over (3x3 filters, deep
1x1 layers: many FLOPs per input element); ``tune`` races it against the direct NCHW
gather, and the heuristics use it past a FLOPs-per-input-element line
(:func:`tileconv.dispatch.heuristics.staging_pays`).

The copy's rows are padded to a multiple of 16 bytes (``C_PAD`` channels, the padding
never read), so that every pixel's run starts 16-byte aligned whatever C is.
"""

import triton
import triton.language as tl


# C and PIXELS are specialised (Triton notes whether each is a multiple of 16): the masks
# ``c < C`` and ``p < PIXELS`` then stay uniform over 16-byte runs and the loads and stores
# are 16 bytes wide (with them unspecialised the SASS had 2-byte accesses only).
@triton.jit(do_not_specialize=["W"])
def to_channels_last_kernel(
    x_ptr,  # input [N, C, H, W] through its four strides (any layout)
    out_ptr,  # copy [N, H, W, C_PAD], contiguous
    C, PIXELS, W,  # channels, H * W, width
    stride_xn, stride_xc, stride_xh, stride_xw,
    C_PAD,  # the copy's row length: C rounded up to 16 bytes
    FLAT: tl.constexpr,  # stride_xw == 1 and stride_xh == W: pixel p = h*W + w is its own offset
    BLOCK_P: tl.constexpr, BLOCK_C: tl.constexpr,  # pixels and channels of one tile
    INT64: tl.constexpr,  # some tensor has >= 2**31 elements: index in int64
):
    n = tl.program_id(2)
    first_p = tl.program_id(0)
    c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    if INT64:  # widened before the multiply: a 46400 x 46400 image has pixel 2**31 in tile 2**25
        n = n.to(tl.int64)
        first_p = first_p.to(tl.int64)
        c = c.to(tl.int64)
    p = first_p * BLOCK_P + tl.arange(0, BLOCK_P)
    mask = (c < C)[:, None] & (p < PIXELS)[None, :]
    if FLAT:
        pixel_offset = p
    else:
        h = p // W
        pixel_offset = h * stride_xh + (p - h * W) * stride_xw
    # (channels x pixels): contiguous along the pixels in NCHW.
    tile = tl.load(x_ptr + n * stride_xn + (c * stride_xc)[:, None] + pixel_offset[None, :], mask=mask)
    # (pixels x channels): contiguous along the channels in the copy.
    out_offsets = (n * PIXELS + p)[:, None] * C_PAD + c[None, :]
    tl.store(out_ptr + out_offsets, tl.trans(tile), mask=tl.trans(mask))



@triton.jit(do_not_specialize=["H", "W", "PAD_H", "PAD_W", "HP", "WP"])
def to_padded_planes_kernel(
    x_ptr,  # input [N, C, H, W] through its four strides (any layout)
    out_ptr,  # copy [N, C, HP, WP], contiguous: x at rows PAD_H.., columns PAD_W.., zeros around
    C, H, W, PAD_H, PAD_W, HP, WP,
    stride_xn, stride_xc, stride_xh, stride_xw,
    BLOCK_P: tl.constexpr, BLOCK_C: tl.constexpr,  # copy pixels and channels of one tile
    INT64: tl.constexpr,
):
    """The other way round, with the padding made real: ``x`` copied into contiguous,
    zero-bordered channel planes, for kernels that read one channel's rows
    (:mod:`.depthwise_toeplitz` with one channel a program): their loads then need no
    padding masks and start 16-byte aligned. (copy pixels x channels) tiles of one image,
    read along the channels of a channels_last input, written along the copy's pixels."""
    n = tl.program_id(2)
    first_p = tl.program_id(0)
    c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    if INT64:
        n = n.to(tl.int64)
        first_p = first_p.to(tl.int64)
        c = c.to(tl.int64)
    p = first_p * BLOCK_P + tl.arange(0, BLOCK_P)
    plane = HP * WP
    if INT64:  # a plane of the copy may itself pass 2**31 elements (found by the int64 GPU test)
        plane = HP.to(tl.int64) * WP
    h = p // WP - PAD_H
    w = p % WP - PAD_W
    inside = (h >= 0) & (h < H) & (w >= 0) & (w < W)
    mask_c = (c < C)[None, :]
    tile = tl.load(x_ptr + n * stride_xn + (h * stride_xh + w * stride_xw)[:, None] + (c * stride_xc)[None, :],
                   mask=inside[:, None] & mask_c, other=0.0)
    tl.store(out_ptr + (n * C + c)[None, :] * plane + p[:, None], tile, mask=(p < plane)[:, None] & mask_c)


@triton.jit(do_not_specialize=["ROWS", "H", "W", "PAD_H", "PAD_W", "HP"])
def to_padded_rows_kernel(
    x_ptr,  # input [N, C, H, W] through its four strides (any layout)
    out_ptr,  # copy [N * HP, ROW], contiguous: channels_last rows, zero-bordered
    ROWS, H, W, PAD_H, PAD_W, HP, ROW,  # ROWS = N * HP; ROW: values a row of the copy holds
    stride_xn, stride_xc, stride_xh, stride_xw,
    C: tl.constexpr,  # channels: value e of a row is channel e % C of column e // C
    BLOCK_ROWS: tl.constexpr, BLOCK_E: tl.constexpr,  # rows and values of one tile
    INT64: tl.constexpr,
):
    """Rows of channels_last values with the padding made real, for :mod:`.dense_toeplitz`:
    row ``n*HP + h`` of the copy is input row ``h - PAD_H`` of image ``n`` (zeros outside),
    value ``e`` of it channel ``e % C`` of input column ``e // C - PAD_W`` (zeros outside
    and past the input's last column, up to ``ROW``). Read through the input's strides,
    written along the rows."""
    rows = tl.program_id(0) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)
    e = tl.program_id(1) * BLOCK_E + tl.arange(0, BLOCK_E)
    if INT64:
        rows = rows.to(tl.int64)
        e = e.to(tl.int64)
    n = rows // HP
    h = rows - n * HP - PAD_H
    w = e // C - PAD_W  # C is compile-time: a multiply and a shift
    c = e % C
    inside = ((rows < ROWS) & (h >= 0) & (h < H))[:, None] & ((w >= 0) & (w < W))[None, :]
    values = tl.load(x_ptr + (n * stride_xn + h * stride_xh)[:, None] + (w * stride_xw + c * stride_xc)[None, :],
                     mask=inside, other=0.0)
    tl.store(out_ptr + rows[:, None] * ROW + e[None, :], values, mask=(rows < ROWS)[:, None] & (e < ROW)[None, :])
