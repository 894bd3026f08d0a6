"""Depthwise convolution from a shared-memory halo (Gluon): each input element copied from
memory once a program, every tap read from shared memory without masks or address math.

The CUDA-core depthwise kernels (:mod:`.depthwise`, :mod:`.depthwise_rows`) load each tap's
input window from global memory: hits in L1 after the first tap, but each with its own
64-bit addresses, masks (the padding) and load instructions. On an H200 that made them
instruction-bound, not memory-bound (Nsight Compute, tenth session: 46 instructions an
output for a 3x3 filter, 0.64 issued a cycle a scheduler; the 3x3 rows at 17-59% of the copy
roofline, the 7x7 rows at 6-10%).

Here a program owns a ``TILE_H`` x ``TILE_W`` tile of output pixels of one image and
``BLOCK_C`` channels (channels_last). It copies the input halo its taps read (HH x WW pixels,
HH = (TILE_H-1)*U + (R-1)*dil_h + 1) into shared memory once, by 16-byte cp.async copies
zero-filled outside the image (the padding: no masks afterwards), the filter and the bias
by the same copies into rows after the halo's, and takes the filter as fp32: into registers,
one vector a tap, where R*S x VEC values a thread fit (``WEIGHT_REGISTERS``), else into a
shared-memory table. Then, pixel by pixel, each tap is one
shared-memory row: halo pixel (p*U + r*dil_h, q*V + s*dil_w), at an offset known at compile
time from the pixel's base, loaded as the thread's ``VEC`` channels, converted to fp32,
multiplied by the tap's weights and added: 2.4-2.8 instructions a multiply-add in the sm_90
SASS (load, convert, FMA) where the global-memory kernels spend about five.

One warp holds a halo of its own: warps cannot split one halo's pixels (their rows would be a
strided subview, below), so the shared memory a warp takes bounds the warps an SM runs. On an
H200 (session 12) the kernel is latency-bound: the 7x7 c96 hw56 row ran 73.7 us where its
multiply-adds at that instruction count need about 33.

Why pixel by pixel: a tap's window of a 2D tile is the halo shifted by the tap's offset,
and Triton 3.6's shared-memory subviews must start at multiples of their own length (the
subslice verifier), so a shifted window cannot be a subview; one pixel's channels can (an
index along the first dimension, at any offset). ``UNROLL`` neighbouring pixels of a row
run in one step, their independent multiply-add chains interleaved.

    out[n, k, p, q] = sum_{r, s} x[n, k, p*U - pad_h + r*dil_h, q*V - pad_w + s*dil_w] * w[k, 0, r, s]

Channel multiplier 1 (groups = C = K), channels_last input and output, C a multiple of 16
bytes of channels; filter size, stride and dilation are compile-time constants (the taps
unrolled; one compile each). Gluon kernels compile only for a GPU: under Triton's
interpreter this algorithm is unsupported (the launcher's reason says so) and its tests run
on the GPU; CI compiles it for sm_90 (``benchmarks/sass.py``).
"""

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy

from .common import apply_activation


@gluon.jit
def conv2d_depthwise_halo_kernel(
    x_ptr,  # input [N, C, H, W], channels_last (stride_xc == 1)
    w_ptr,  # weight [K, 1, R, S] stored (R, S, 1, K): channel-minor
    out_ptr,  # output [N, K, P, Q]
    bias_ptr,  # bias [K] (read only if HAS_BIAS)
    res_ptr,  # residual [N, K, P, Q] (read only if HAS_RESIDUAL)
    H, W, P, Q, C,
    pad_h, pad_w,
    stride_xn, stride_xh, stride_xw,
    stride_wr, stride_ws,
    stride_on, stride_ok, stride_op, stride_oq,
    stride_rn, stride_rk, stride_rp, stride_rq,
    alpha, beta,
    R: gl.constexpr, S: gl.constexpr,
    U: gl.constexpr, V: gl.constexpr,  # stride
    DIL_H: gl.constexpr, DIL_W: gl.constexpr,
    ACTIVATION: gl.constexpr, HAS_BIAS: gl.constexpr, HAS_RESIDUAL: gl.constexpr,
    TILE_H: gl.constexpr, TILE_W: gl.constexpr,
    BLOCK_C: gl.constexpr,  # VEC * 32 * NUM_WARPS: the warps split the channels
    VEC: gl.constexpr,  # channels a thread
    UNROLL: gl.constexpr,  # pixels of a row a step (divides TILE_W)
    CHUNK: gl.constexpr,  # halo pixels a copy (a power of two)
    WEIGHT_REGISTERS: gl.constexpr,  # the filter in registers (else in shared memory)
    COPY_VEC: gl.constexpr,  # channels in 16 bytes
    NUM_WARPS: gl.constexpr,
    INT64: gl.constexpr,
):
    HH: gl.constexpr = (TILE_H - 1) * U + (R - 1) * DIL_H + 1
    WW: gl.constexpr = (TILE_W - 1) * V + (S - 1) * DIL_W + 1
    # One pixel's channels: each thread VEC of them, the warps side by side.
    CL: gl.constexpr = gl.BlockedLayout([VEC], [32], [NUM_WARPS], [0])
    # The copies: 16 bytes a thread, a warp's threads over a pixel's channels then pixels.
    TPW_C: gl.constexpr = BLOCK_C // COPY_VEC
    XL: gl.constexpr = gl.BlockedLayout([1, COPY_VEC], [32 // TPW_C, TPW_C], [NUM_WARPS, 1], [1, 0])
    PLANE: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [1, 0])  # no swizzle: rows read at any index
    ROW: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [0])

    pid = gl.program_id(0)
    tiles_q = gl.cdiv(Q, TILE_W)
    tiles_pq = gl.cdiv(P, TILE_H) * tiles_q
    n = pid // tiles_pq
    p0 = (pid % tiles_pq) // tiles_q * TILE_H
    q0 = (pid % tiles_q) * TILE_W
    c0 = gl.program_id(1) * BLOCK_C
    if INT64:
        n = n.to(gl.int64)

    # The halo: pixel (hh, ww) at row hh*WW + ww, zeros outside the image and past C; then the
    # filter's R*S taps and the bias (HAS_BIAS), a row each. Those come in with the pixels, by the
    # same copies (a chunk past the pixels takes its rows from the filter and the bias), and reach
    # registers from shared memory after the one wait: loaded from global memory beside the copies
    # instead, their latency came after the copies' in every program (ptxas put six of c192
    # hw28/1's ten such loads behind the wait in the bias variant, bias + ReLU 7.8% slower than
    # plain on an H200, session 55; and every load of a filter too large for registers). They fill
    # the last chunk's spare rows first (on the 3x3 rows the heuristics give this kernel, no fewer
    # programs an SM). Copied in chunks of CHUNK rows (views have power-of-two shapes; the halo need not).
    HALO: gl.constexpr = HH * WW
    PARAMS: gl.constexpr = R * S + HAS_BIAS
    CHUNKS: gl.constexpr = (HALO + PARAMS + CHUNK - 1) // CHUNK
    BIAS_ROW: gl.constexpr = HALO + R * S  # (HAS_BIAS)
    halo = gl.allocate_shared_memory(x_ptr.dtype.element_ty, [CHUNKS, CHUNK, BLOCK_C], PLANE)
    cx = c0 + gl.arange(0, BLOCK_C, layout=gl.SliceLayout(0, XL))
    if INT64:
        cx = cx.to(gl.int64)
    # Channel offsets start 16 bytes aligned (C a multiple of COPY_VEC).
    cx = gl.max_contiguous(gl.multiple_of(cx, COPY_VEC), COPY_VEC)
    x_img = x_ptr + gl.multiple_of(n * stride_xn, COPY_VEC)  # 16 bytes aligned, as the pixel strides
    # C as a whole number of 16-byte groups (it is one: the launcher's condition), so that the
    # compiler sees the channel mask constant over each group and keeps the copies 16 bytes wide
    # whatever divisibility C was specialised with (C = 24: 2-byte copies, which cp.async refuses).
    c_end = (C // COPY_VEC) * COPY_VEC
    for chunk in gl.static_range(CHUNKS):
        pix = chunk * CHUNK + gl.arange(0, CHUNK, layout=gl.SliceLayout(1, XL))
        ih = p0 * U - pad_h + pix // WW
        iw = q0 * V - pad_w + pix % WW
        inside = (pix < HALO) & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
        if INT64:
            ih = ih.to(gl.int64)
        # Pixel strides are multiples of 16 bytes (the launcher's condition): 16-byte copies.
        x_offs = gl.multiple_of(ih * stride_xh + iw * stride_xw, COPY_VEC)[:, None] + cx[None, :]
        ptrs = x_img + x_offs
        c_ok = (cx < c_end)[None, :]
        mask = inside[:, None] & c_ok
        if (chunk + 1) * CHUNK > HALO:  # rows of parameters in this chunk
            t = pix - HALO  # tap t (the filter is channel-minor: a tap's C weights start 16 bytes aligned)
            # (said of the whole offset: said of the taps' row offsets alone, the hint went where
            # an S = 1 or a 1x1 filter's arithmetic folded away, and the copies became 2 bytes wide)
            w_offs = gl.multiple_of(((t // S) * stride_wr + (t % S) * stride_ws)[:, None] + cx[None, :],
                                    [COPY_VEC, COPY_VEC])
            is_tap = (t >= 0) & (t < R * S)
            ptrs = gl.where(is_tap[:, None], w_ptr + w_offs, ptrs)
            mask = mask | (is_tap[:, None] & c_ok)
            if HAS_BIAS:
                is_bias = pix == BIAS_ROW
                ptrs = gl.where(is_bias[:, None], bias_ptr + cx[None, :], ptrs)
                mask = mask | (is_bias[:, None] & c_ok)
        async_copy.async_copy_global_to_shared(halo.index(chunk), ptrs, mask=mask)
    async_copy.commit_group()

    async_copy.wait_group(0)
    gl.thread_barrier()  # every thread's copies are in before any thread reads them

    # Row views: index i is halo pixel i (or parameter i - HALO), a [BLOCK_C] vector.
    halo_rows = halo._reinterpret(x_ptr.dtype.element_ty, [CHUNKS * CHUNK, BLOCK_C], ROW)
    c_idx = c0 + gl.arange(0, BLOCK_C, layout=CL)
    mask_c = c_idx < C
    if WEIGHT_REGISTERS:  # one fp32 [BLOCK_C] register vector a tap
        taps = ()
        for t in gl.static_range(R * S):
            taps = taps + (halo_rows.index(HALO + t).load(CL).to(gl.float32),)
    else:  # tap t at row t of an fp32 shared-memory table
        weights = gl.allocate_shared_memory(gl.float32, [R * S, BLOCK_C], PLANE)
        weight_rows = weights._reinterpret(gl.float32, [R * S, BLOCK_C], ROW)
        for t in gl.static_range(R * S):
            weight_rows.index(t).store(halo_rows.index(HALO + t).load(CL).to(gl.float32))  # (read back by this thread)
    if HAS_BIAS:
        bias = halo_rows.index(BIAS_ROW).load(CL).to(gl.float32)
    if INT64:
        c_idx = c_idx.to(gl.int64)
    out_c = out_ptr + n * stride_on + c_idx * stride_ok
    res_c = res_ptr + n * stride_rn + c_idx * stride_rk
    for step in range(TILE_H * TILE_W // UNROLL):
        pl = step // (TILE_W // UNROLL)
        ql = (step % (TILE_W // UNROLL)) * UNROLL
        for j in gl.static_range(UNROLL):
            base = pl * U * WW + (ql + j) * V
            # The sum starts from the bias (one add fewer an output than adding it at the end).
            if HAS_BIAS:
                acc = bias
            else:
                acc = gl.zeros([BLOCK_C], gl.float32, CL)
            for r in gl.static_range(R):
                for s in gl.static_range(S):
                    xv = halo_rows.index(base + (r * DIL_H * WW + s * DIL_W)).load(CL).to(gl.float32)
                    if WEIGHT_REGISTERS:
                        acc += xv * taps[r * S + s]
                    else:
                        acc += xv * weight_rows.index(r * S + s).load(CL)
            # The rest of the fused epilogue, in common.epilogue_at's order: + residual, activation.
            p = p0 + pl
            q = q0 + ql + j
            ok = mask_c & (p < P) & (q < Q)
            if HAS_RESIDUAL:
                acc += gl.load(res_c + (p * stride_rp + q * stride_rq), mask=ok, other=0.0).to(gl.float32)
            # ReLU folded into the 16-bit conversion (channels_last only, where it does not spill)
            acc = apply_activation(acc, ACTIVATION, alpha, beta, FOLD_RELU=True)
            gl.store(out_c + (p * stride_op + q * stride_oq), acc.to(out_ptr.dtype.element_ty), mask=ok)
