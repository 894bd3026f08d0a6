"""Depthwise convolution on the tensor cores: each filter row a banded matrix (Gluon).

A depthwise filter shares nothing across channels, so the tensor cores see one channel at a
time. Along a filter row, though, a channel's convolution is a matrix product: output row p,
columns q0..q0+7, is input row p + r*dil_h, columns q0 - pad_w .. q0 - pad_w + 15, times the
16 x 8 banded (Toeplitz) matrix of filter row r,

    T_r[i, j] = w[r, s]  where i = j + s*dil_w  (0 <= s < S),  else 0,

and sixteen output rows stacked are the M of one mma_v2 product (m16n8k16): per channel,
per 8 output columns, R products of [16 rows x 16 input columns] @ T_r. A 7x7 filter fills
7*8 = 56 of T's 128 entries (the zeros cost tensor-core work, not bytes), where the CUDA-core
kernels (:mod:`.depthwise_window`) spend about 1.6 instructions on each multiply-add.

A program owns a band of 16 output rows (all columns) of one image by ``CB`` channels. It
stages the band's input rows (16 + (R-1)*dil_h) in shared memory once, transposed to
channel planes: channel c, columns 8g..8g+7 (a *column group*) is a plane of 16-byte rows, so
that the eight rows an ldmatrix reads are 128 contiguous bytes whatever row a filter row's
view starts at (no bank conflicts), and a [16 rows, 16 columns] A operand is two neighbouring
planes of one channel. The planes are laid out (quad of channels, column group, channel of
the quad, row, column): four channels side by side are one batched product [4, 16, 16] @
[4, 16, 8], one channel a warp. The input arrives by 16-byte loads of eight channels of a
pixel and is turned into columns in registers (a thread holds 8 pixels x 8 channels).

Each warp's fp32 sums of column group j go back into the channel's plane j (the last
product that reads it is the one just done); after all channels, the band is written out
pixel by pixel, eight channels in 16 bytes, with the fused epilogue (bias, residual,
activation) in fp32.

Non-finite inputs: an infinite or NaN input times T's zeros is NaN in outputs whose window
does not reach it. A program whose sums are not all finite (rare) recomputes all of its
outputs tap by tap from global memory on the CUDA cores, which gives each output exactly
the convolution's NaN and Inf; finite programs pay one multiply-add a sum and one reduction.

    out[n, k, p, q] = sum_{r, s} x[n, k, p - pad_h + r*dil_h, q - pad_w + s*dil_w] * w[k, 0, r, s]

Stride 1, channel multiplier 1, 8 + (S-1)*dil_w <= 16, channels_last, fp16 or bf16. Gluon
kernels compile only for a GPU: under Triton's interpreter this algorithm is unsupported (the
launcher's reason says so) and its tests run on the GPU; CI compiles it for sm_90
(``benchmarks/sass.py``).
"""

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import mma_v2

from .common import apply_activation

BAND = gl.constexpr(16)  # output rows a program: mma_v2's M
QUAD = gl.constexpr(4)  # channels a batched product: one a warp


@gluon.constexpr_function
def _log2(v):
    v = int(v)
    assert v > 0 and v & (v - 1) == 0, f"{v} is not a power of two"
    return v.bit_length() - 1


@gluon.constexpr_function
def staging_layout(rows, plane_rows, groups, mem_groups, quads, element_bits, order):
    """The shared layout of a view of the staged band, logical (row, column, channel) by
    ``order`` ("rcc": [rows, 8*groups, 4*quads]; "crc": [4*quads, rows, 8*groups]), over the
    memory (quad, column group of ``mem_groups``, channel of the quad, row of a
    ``plane_rows``-row plane, 8 columns) of 16-bit elements. ``element_bits`` 32 views the
    planes as fp32 sums: a plane then holds 16 rows x 8 columns of them."""
    rows, plane_rows, groups, quads = int(rows), int(plane_rows), int(groups), int(quads)
    row_bits = _log2(rows)
    plane_bits = _log2(plane_rows) + (3 if int(element_bits) == 16 else 2)  # offset bits of a plane

    def coord(row=0, col=0, ch=0):
        return [row, col, ch] if order == "rcc" else [ch, row, col]

    bases = [coord(col=1 << b) for b in range(3)]
    bases += [coord(row=1 << b) for b in range(row_bits)]
    bases += [coord()] * (plane_bits - 3 - row_bits)  # the plane's rows past the view
    bases += [coord(ch=1), coord(ch=2)]
    bases += [coord(col=8 << b) for b in range(_log2(groups))]
    if quads > 1:
        bases += [coord()] * (_log2(mem_groups) - _log2(groups))  # the column groups past the view
        bases += [coord(ch=4 << b) for b in range(_log2(quads))]
    return gl.SharedLinearLayout(bases)


def staging_rows(groups: int, chans: int) -> int:
    """Input rows a staging pass: the fewest (at least 8, a power of two) for which a pass's
    [rows, 8*groups, chans] tile has a pixel block of 8 x 8 for each of 4 warps' 32 threads."""
    return 1 << max(3, 7 - (int(groups).bit_length() - 1) - (int(chans) // 8).bit_length() + 1)


def write_rows(out_cols: int, chans: int) -> int:
    """Output rows a write-out pass: as :func:`staging_rows`, 4 columns x 8 channels a thread."""
    return 1 << max(2, 7 - (int(out_cols) // 4).bit_length() + 1 - (int(chans) // 8).bit_length() + 1)


_staging_rows = gluon.constexpr_function(staging_rows)
_write_rows = gluon.constexpr_function(write_rows)


@gluon.constexpr_function
def pixel_layout(rows, cols, chans, vec, cols_first, lane_dims, warp_dims):
    """The register layout of a [rows, cols, chans] tile of pixels (4 warps) in which a thread
    holds ``vec`` neighbouring columns x 8 channels, its registers over channels first
    (``cols_first`` False: 16 bytes of a pixel for global memory) or columns first (a plane
    row's 16 bytes in shared memory). The lanes and warps take the tile's other index bits in
    the order ``lane_dims`` and ``warp_dims`` name them ("r"ow, "c"olumn, c"h"annel; a dimension
    whose bits are used up is passed over), the registers the rest: the same threads own the
    same elements in both forms, so converting between them only renames registers, and the
    lane order decides shared memory's bank conflicts (eight lanes of a 16-byte access should
    cover 128 contiguous bytes)."""
    rows, cols, chans, vec = int(rows), int(cols), int(chans), int(vec)
    free = {"r": _log2(rows), "c": _log2(cols // vec), "h": _log2(chans // 8)}
    used = {"r": 0, "c": 0, "h": 0}

    def basis(dim):
        b = used[dim]
        used[dim] += 1
        return {"r": [1 << b, 0, 0], "c": [0, vec << b, 0], "h": [0, 0, 8 << b]}[dim]

    def take(order, count):
        out = []
        for dim in order:
            if len(out) < count and used[dim] < free[dim]:
                out.append(basis(dim))
        assert len(out) == count, f"a [{rows}, {cols}, {chans}] tile is too small for 4 warps"
        return out

    lanes = take(lane_dims, 5)
    warps = take(warp_dims, 2)
    col_regs = [[0, 1 << b, 0] for b in range(_log2(vec))]
    ch_regs = [[0, 0, 1], [0, 0, 2], [0, 0, 4]]
    regs = col_regs + ch_regs if cols_first else ch_regs + col_regs
    regs += [basis(d) for d in "crh" for _ in range(free[d] - used[d])]
    return gl.DistributedLinearLayout(regs, lanes, warps, [], [rows, cols, chans])


@gluon.jit
def _direct(x_img, w_ptr, c0, p0, j, H, W, K, pad_h, pad_w, stride_xh, stride_xw,
            R: gl.constexpr, S: gl.constexpr, DIL_H: gl.constexpr, DIL_W: gl.constexpr, LR: gl.constexpr):
    """The sums of a quad's column group ``j`` ([4 channels, 16 rows, 8 columns] from channel
    ``c0``), tap by tap on the CUDA cores: the convolution's own NaN and Inf."""
    ch = c0 + gl.arange(0, QUAD, layout=gl.SliceLayout(1, gl.SliceLayout(2, LR)))
    rows = p0 - pad_h + gl.arange(0, BAND, layout=gl.SliceLayout(0, gl.SliceLayout(2, LR)))
    cols = j * 8 - pad_w + gl.arange(0, 8, layout=gl.SliceLayout(0, gl.SliceLayout(1, LR)))
    acc = gl.zeros([QUAD, BAND, 8], gl.float32, LR)
    for t in range(R * S):
        r = t // S
        s = t - r * S
        h = rows + r * DIL_H
        w = cols + s * DIL_W
        inside = ((ch < K)[:, None, None] & ((h >= 0) & (h < H))[None, :, None]
                  & ((w >= 0) & (w < W))[None, None, :])
        offs = ch[:, None, None] + (h * stride_xh)[None, :, None] + (w * stride_xw)[None, None, :]
        v = gl.load(x_img + offs, mask=inside, other=0.0).to(gl.float32)
        wt = gl.load(w_ptr + ch * (R * S) + t, mask=ch < K, other=0.0).to(gl.float32)
        acc += v * wt[:, None, None]
    return acc


@gluon.jit
def _load_band(x_ptr, item, BANDS, ITEMS, H, pad_h, stride_xn, stride_xh, in_offs, in_ok,
               RS: gl.constexpr, RCH: gl.constexpr, LX: gl.constexpr, INT64: gl.constexpr):
    """The staged input rows of item ``item`` (image, band), ``RCH`` rows a tensor (none past
    the last item: masked off), 8 channels of a pixel in 16 bytes a thread."""
    n = item // BANDS
    p0 = (item - n * BANDS) * BAND
    valid = item < ITEMS
    if INT64:
        n = n.to(gl.int64)
    raw = ()
    for chunk in gl.static_range((RS + RCH - 1) // RCH):
        rows = chunk * RCH + gl.arange(0, RCH, layout=gl.SliceLayout(1, gl.SliceLayout(2, LX)))
        h = p0 - pad_h + rows
        row_ok = (h >= 0) & (h < H) & (rows < RS) & valid
        row_offs = n * stride_xn + h * stride_xh
        raw = raw + (gl.load(x_ptr + row_offs[:, None, None] + in_offs, mask=row_ok[:, None, None] & in_ok,
                             other=0.0),)
    return raw


@gluon.jit
def conv2d_depthwise_mma_kernel(
    x_ptr,  # input [N, C, H, W], channels_last (stride_xc == 1)
    w_ptr,  # weight [K, 1, R, S], contiguous
    out_ptr,  # output [N, K, P, Q], channels_last
    bias_ptr,  # bias [K] (read only if HAS_BIAS)
    res_ptr,  # residual [N, K, P, Q] (read only if HAS_RESIDUAL)
    H, W, P, Q, K,
    BANDS,  # bands of 16 output rows an image
    ITEMS,  # (image, band) pairs: N * BANDS
    CBLOCKS,  # channel blocks: cdiv(K, CB)
    pad_h, pad_w,
    stride_xn, stride_xh, stride_xw,
    stride_on, stride_ok, stride_op, stride_oq,
    stride_rn, stride_rk, stride_rp, stride_rq,
    alpha, beta,
    R: gl.constexpr, S: gl.constexpr,
    DIL_H: gl.constexpr, DIL_W: gl.constexpr,
    ACTIVATION: gl.constexpr, HAS_BIAS: gl.constexpr, HAS_RESIDUAL: gl.constexpr,
    CB: gl.constexpr,  # channels a program (a power of two, at least 8)
    WT: gl.constexpr,  # column groups of output: cdiv(Q, 8)
    G8: gl.constexpr,  # staged column groups: a power of two >= WT + 1
    PR: gl.constexpr,  # rows a plane: a power of two >= 16 + (R-1)*DIL_H, at least 32 (16 x 8 fp32 sums)
    RS: gl.constexpr,  # staged input rows: 16 + (R-1)*DIL_H
    INT64: gl.constexpr,
):
    gl.static_assert(gl.num_warps() == QUAD, "one warp a channel of the quad")
    NQ: gl.constexpr = CB // QUAD
    # The staging: a thread loads 8 channels (16 bytes) of 8 neighbouring pixels of a row; eight
    # lanes take eight rows (a plane's 128 contiguous bytes: its stores meet no bank conflict).
    RCH: gl.constexpr = _staging_rows(G8, CB)  # rows a staging pass
    LX: gl.constexpr = pixel_layout(RCH, 8 * G8, CB, 8, False, "rrrhhhccc", "ccrrr")
    LXT: gl.constexpr = pixel_layout(RCH, 8 * G8, CB, 8, True, "rrrhhhccc", "ccrrr")
    # The write-out: a thread holds 4 columns (16 bytes of fp32 sums) x 8 channels (16 bytes out);
    # eight lanes take a plane's two 4-column halves of four rows (128 contiguous bytes).
    CWP: gl.constexpr = 8 * (1 << (WT - 1).bit_length())  # output columns a pass: a power of two >= 8*WT
    RO: gl.constexpr = _write_rows(CWP, CB)  # rows a write-out pass
    LW: gl.constexpr = pixel_layout(RO, CWP, CB, 4, True, "crrhhhcccrr", "rrcc")
    LO: gl.constexpr = pixel_layout(RO, CWP, CB, 4, False, "crrhhhcccrr", "rrcc")
    # The products: four channels batched, one a warp.
    MMA: gl.constexpr = gl.NVMMADistributedLayout(version=[2, 0], warps_per_cta=[QUAD, 1, 1], instr_shape=[1, 16, 8])
    ADOT: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=MMA, k_width=2)
    BDOT: gl.constexpr = gl.DotOperandLayout(operand_index=1, parent=MMA, k_width=2)
    RP: gl.constexpr = 1 << (R - 1).bit_length()  # filter rows, a power of two
    LT: gl.constexpr = gl.BlockedLayout([1, 1, 1, 4], [1, 1, 16, 2], [1, QUAD, 1, 1], [3, 2, 1, 0])  # a quad's T_r
    LR: gl.constexpr = gl.BlockedLayout([1, 1, 4], [1, 16, 2], [QUAD, 1, 1], [2, 1, 0])  # the redo's sums
    STAGE: gl.constexpr = staging_layout(RCH, PR, G8, G8, NQ, 16, "rcc")
    AVIEW: gl.constexpr = staging_layout(16, PR, 2, G8, 1, 16, "crc")
    OVIEW: gl.constexpr = staging_layout(16, PR, 1, G8, 1, 32, "crc")
    WVIEW: gl.constexpr = staging_layout(RO, PR, CWP // 8, G8, NQ, 32, "rcc")
    FLAT: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [0])  # (rank 1: an index() row view is reinterpreted)
    TOE: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [3, 2, 1, 0])
    TOE3: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [2, 1, 0])  # the same memory as [RP * QUAD, 16, 8]
    dtype: gl.constexpr = x_ptr.dtype.element_ty

    # A program keeps channel block ``cb`` (its banded filter rows built once) and walks the
    # items (image, band) first, first + step, ...: the grid is a multiple of CBLOCKS.
    pid = gl.program_id(0)
    cb = pid % CBLOCKS
    step = gl.num_programs(0) // CBLOCKS
    first = pid // CBLOCKS
    c0 = cb * CB

    planes = gl.allocate_shared_memory(dtype, [NQ * G8 * QUAD * PR, 8], FLAT)
    cols = gl.arange(0, 8 * G8, layout=gl.SliceLayout(0, gl.SliceLayout(2, LX)))
    chs = c0 + gl.arange(0, CB, layout=gl.SliceLayout(0, gl.SliceLayout(1, LX)))
    w_in = cols - pad_w
    col_ok = (w_in >= 0) & (w_in < W) & (cols < 8 * (WT + 1))
    col_offs = w_in * stride_xw
    if INT64:
        col_offs = col_offs.to(gl.int64)
    in_offs = col_offs[None, :, None] + chs[None, None, :]
    in_ok = col_ok[None, :, None] & (chs < K)[None, None, :]
    raw = _load_band(x_ptr, first, BANDS, ITEMS, H, pad_h, stride_xn, stride_xh, in_offs, in_ok,
                     RS, RCH, LX, INT64)

    # The banded filter rows, T_r[c, i, j] = w[c, r, (i - j) / dil_w] on the band, of every quad:
    # built in shared memory once, read as B operands item by item.
    toe = gl.allocate_shared_memory(dtype, [NQ * RP, QUAD, 16, 8], TOE)
    tr_ = gl.arange(0, RP, layout=gl.SliceLayout(1, gl.SliceLayout(2, gl.SliceLayout(3, LT))))
    tq = gl.arange(0, QUAD, layout=gl.SliceLayout(0, gl.SliceLayout(2, gl.SliceLayout(3, LT))))
    ti = gl.arange(0, 16, layout=gl.SliceLayout(1, gl.SliceLayout(0, gl.SliceLayout(1, LT))))
    tj = gl.arange(0, 8, layout=gl.SliceLayout(0, gl.SliceLayout(0, gl.SliceLayout(1, LT))))
    diag = ti[:, None] - tj[None, :]
    tap = diag // DIL_W
    on_band = ((diag >= 0) & (diag % DIL_W == 0) & (tap < S))[None, None, :, :] & (tr_ < R)[:, None, None, None]
    tw_offs = (tr_ * S)[:, None, None, None] + tap[None, None, :, :]
    for k in gl.static_range(NQ):
        cq = c0 + k * QUAD + tq
        toe.slice(k * RP, RP).store(gl.load(w_ptr + (cq * (R * S))[None, :, None, None] + tw_offs,
                                            mask=on_band & (cq < K)[None, :, None, None], other=0.0))
    taps = toe._reinterpret(dtype, [NQ * RP * QUAD, 16, 8], TOE3)

    k_out = c0 + gl.arange(0, CB, layout=gl.SliceLayout(0, gl.SliceLayout(1, LO)))
    q = gl.arange(0, CWP, layout=gl.SliceLayout(0, gl.SliceLayout(2, LO)))
    k_ok = k_out < K
    if HAS_BIAS:
        bias = gl.load(bias_ptr + k_out, mask=k_ok, other=0.0).to(gl.float32)
    else:
        bias = gl.zeros([CB], gl.float32, gl.SliceLayout(0, gl.SliceLayout(1, LO)))
    if INT64:
        k_out = k_out.to(gl.int64)

    for item in range(first, ITEMS, step):
        n = item // BANDS
        p0 = (item - n * BANDS) * BAND
        if INT64:
            n = n.to(gl.int64)
        # This item's rows into the planes (the last item's write-out has read them), transposed;
        # the next item's loads fly while this one's products and write-out run.
        gl.thread_barrier()
        for chunk in gl.static_range(len(raw)):
            planes.index(chunk * RCH)._reinterpret(dtype, [RCH, 8 * G8, CB], STAGE).store(
                gl.convert_layout(raw[chunk], LXT))
        raw = _load_band(x_ptr, item + step, BANDS, ITEMS, H, pad_h, stride_xn, stride_xh, in_offs, in_ok,
                         RS, RCH, LX, INT64)
        gl.thread_barrier()

        seen = gl.zeros([QUAD, BAND, 8], gl.float32, MMA)  # acc * 0: NaN where a sum was not finite
        for k in gl.static_range(NQ):
            sums = ()
            for j in gl.static_range(WT):
                acc = gl.zeros([QUAD, BAND, 8], gl.float32, MMA)
                for r in gl.static_range(R):
                    row = ((k * G8 + j) * QUAD) * PR + r * DIL_H  # plane (quad k, group j, channel 0), row r*dil_h
                    a = planes.index(row)._reinterpret(dtype, [QUAD, BAND, 16], AVIEW).load(ADOT)
                    acc = mma_v2(a, taps.slice((k * RP + r) * QUAD, QUAD).load(BDOT), acc)
                sums = sums + (acc,)
            # Group j's sums into its own planes once all the quad's products are done (each warp
            # writes only its own channel's planes, which only it reads).
            for j in gl.static_range(WT):
                seen += sums[j] * 0.0
                planes.index(((k * G8 + j) * QUAD) * PR)._reinterpret(gl.float32, [QUAD, BAND, 8], OVIEW).store(
                    sums[j])

        if gl.sum(gl.sum(gl.sum(seen, axis=2), axis=1), axis=0) != 0.0:
            # Some sum is infinite or NaN: every sum of the item again, tap by tap from global memory.
            gl.thread_barrier()
            for kr in range(NQ):
                for jr in range(WT):
                    redone = _direct(x_ptr + n * stride_xn, w_ptr, c0 + kr * QUAD, p0, jr, H, W, K, pad_h, pad_w,
                                     stride_xh, stride_xw, R, S, DIL_H, DIL_W, LR)
                    planes.index((kr * G8 + jr) * QUAD * PR)._reinterpret(
                        gl.float32, [QUAD, BAND, 8], OVIEW).store(redone)
        gl.thread_barrier()

        # The write-out: 16 bytes of eight channels a pixel, the epilogue in fp32.
        for part in gl.static_range(BAND // RO):
            acc = planes.index(2 * part * RO)._reinterpret(gl.float32, [RO, CWP, CB], WVIEW).load(LW)
            acc = gl.convert_layout(acc, LO)
            p = p0 + part * RO + gl.arange(0, RO, layout=gl.SliceLayout(1, gl.SliceLayout(2, LO)))
            ok = (p < P)[:, None, None] & (q < Q)[None, :, None] & k_ok[None, None, :]
            if INT64:
                p = p.to(gl.int64)
            acc += bias[None, None, :]
            if HAS_RESIDUAL:
                res_offs = (n * stride_rn + (p * stride_rp)[:, None, None] + (q * stride_rq)[None, :, None]
                            + (k_out * stride_rk)[None, None, :])
                acc += gl.load(res_ptr + res_offs, mask=ok, other=0.0).to(gl.float32)
            acc = apply_activation(acc, ACTIVATION, alpha, beta)
            out_offs = (n * stride_on + (p * stride_op)[:, None, None] + (q * stride_oq)[None, :, None]
                        + (k_out * stride_ok)[None, None, :])
            gl.store(out_ptr + out_offs, acc.to(out_ptr.dtype.element_ty), mask=ok)
