"""Hopper implicit GEMM for stride-1 convolutions that stages each input pixel once a tile (Gluon).

The warp-specialized implicit GEMM (:mod:`.implicit_gemm_ws`) gathers a fresh A tile for
every filter tap: a 3x3 filter puts nine copies of the input through L2 and into each SM. On
ResNet-50's 3x3 rows those bytes, not the tensor cores, set the time (session 13 on an H200:
every SM takes its operands in at about 30 bytes a clock, whatever the kernel; session 35: the
same for cuBLAS and with TMA multicast): c64 hw56 k64 3x3 ran at 34% of the GEMM ceiling and
the same as cuDNN's, 221 KB into an SM for each 128x64 tile, two thirds of it A.

Here, as in :mod:`.grouped_halo`, a tile is ``BLOCK_M`` consecutive outputs of one image in the
*padded frame*: the input with its zero padding, FW = Q + (S-1)*dil_w pixels wide. Output (p, q)
sits at frame index f = p*FW + q and its tap (r, s) reads f + r*dil_h*FW + s*dil_w: each tap's
A tile is the same run of frame rows shifted by a constant. So for each channel block the
loader copies frame rows [f0, f0 + BLOCK_M + (R-1)*dil_h*FW + (S-1)*dil_w) once into shared
memory (16-byte cp.async, zero-filled in the padding), and every tap reads its A operand from
there: a 3x3 row's A bytes into the SM fall from nine tiles to about two (c64 hw56: 246 frame
rows a 128-row tile). The columns q >= Q of each frame row are outputs of no pixel, computed
and never stored ((S-1)*dil_w of every FW: 3.4% at 56 wide, 12.5% at 14 wide).

- The staged frame is *planar* (:func:`.grouped_halo.frame_layout`): eight channels (16 bytes)
  a row in each plane, so a view from any row is a [BLOCK_M, BLOCK_K] matrix that ``ldmatrix``
  reads without bank conflicts. A wgmma descriptor cannot start at any row of a swizzled tile,
  so A goes through registers (wgmma's register-A form); B, the weight tile of one tap and
  channel block, comes by TMA into a ring and is read by wgmma from shared memory.
- A **copy partition** (``COPY_WARPS`` warps) fills ``FRAMES`` frame buffers (the copies run up to
  FRAMES - 1 channel blocks ahead) and a one-warp partition the weight ring; the **MMA partition**
  (``NUM_WARPS`` warps, or two one-warpgroup partitions each taking half a tile's rows: ``HALVES``)
  loads each tap's A view, issues the tap's wgmma steps and waits for them (ptxas serializes every
  wgmma of a kernel that loads a wgmma's register operand while one is in flight: C7513), hands
  back the ring stage and, after a channel block's last tap, the frame buffer; then the fused
  epilogue (pointer stores: a tile's rows are not an output box).
- Persistent: one program an SM walking the tiles in grouped order.

Stride 1, groups 1, channels_last input, C a multiple of the channel block; fp16 or bf16 (the
register-A wgmma has no TF32 form in this kernel). Gluon kernels compile only for a GPU: under
Triton's interpreter this algorithm is unsupported (the launcher's reason says so) and its tests
run on the GPU; CI compiles it for sm_90 (``benchmarks/sass.py``).

    out[n, k, p, q] = sum_{r, s, c} x[n, c, p - pad_h + r*dil_h, q - pad_w + s*dil_w] * w[k, c, r, s]
"""

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma, warpgroup_mma, warpgroup_mma_wait

from .common import epilogue_at, store_output_tile, swizzle_tile
from .grouped_halo import frame_layout


@gluon.jit
def _frame_tile(tile, num_m, num_n, blocks, GROUP_M: gl.constexpr, BLOCK_M: gl.constexpr):
    """Tile ``tile``'s image, first frame row and output-channel block (grouped order over the
    images' frame blocks, ``blocks`` an image)."""
    pid_m, pid_n = swizzle_tile(tile, num_m, num_n, GROUP_M)
    n = pid_m // blocks
    return n, (pid_m - n * blocks) * BLOCK_M, pid_n


@gluon.jit
def _frame_copy_partition(
    x_ptr, frames, f_ready, f_empty,
    H, W, C, FH, pad_h, pad_w, num_m, num_n, blocks,
    stride_xn, stride_xh, stride_xw,
    FW: gl.constexpr, HALO: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_K: gl.constexpr, GROUP_M: gl.constexpr,
    ROWS: gl.constexpr, PLANE_ROWS: gl.constexpr, CHUNK: gl.constexpr, VEC: gl.constexpr,
    COPY_WARPS: gl.constexpr, INT64: gl.constexpr,
):
    """For every tile and channel block of this program, the frame rows the tile's taps read
    into the next frame buffer (zero fill outside the image), as soon as the MMA warps hand it
    back: a block ahead of them."""
    FRAMES: gl.constexpr = PLANE_ROWS // ROWS
    # A warp's copy: 8 rows x four 16-byte chunks (planes): 64 bytes of each of 8 pixels, landing in
    # shared memory as four 128-byte plane runs (no bank conflicts). Measured on an H200 (Nsight
    # Compute, c64 hw56): 4 rows x 8 planes put all eight planes' rows on the same banks (planes are
    # 16 KB apart): 8-way conflicts; 16 rows x 2 planes touched 16 global lines an instruction, 36
    # L1 wavefronts each.
    XL: gl.constexpr = gl.BlockedLayout([1, VEC], [8, 4], [COPY_WARPS, 1], [1, 0])
    CHUNK_VIEW: gl.constexpr = frame_layout(CHUNK, BLOCK_K, PLANE_ROWS)
    offs_c = gl.max_contiguous(gl.multiple_of(gl.arange(0, BLOCK_K, layout=gl.SliceLayout(0, XL)), VEC), VEC)
    v = gl.arange(0, CHUNK, layout=gl.SliceLayout(1, XL))
    STAGED: gl.constexpr = BLOCK_M + HALO  # frame rows a tile's taps read
    CHUNKS: gl.constexpr = (STAGED + CHUNK - 1) // CHUNK
    frame_rows = FH * FW
    fi = 0  # frame fills
    for tile in range(gl.program_id(0), num_m * num_n, gl.num_programs(0)):
        n, f0, _ = _frame_tile(tile, num_m, num_n, blocks, GROUP_M, BLOCK_M)
        if INT64:
            n = n.to(gl.int64)
        x_img = x_ptr + n * stride_xn
        for c0 in range(0, C, BLOCK_K):
            buf = fi % FRAMES
            mbarrier.wait(f_empty.index(buf), ((fi // FRAMES) & 1) ^ 1)  # the MMA warps are done with it
            for chunk in gl.static_range(CHUNKS):
                f = f0 + chunk * CHUNK + v
                ih = f // FW - pad_h  # (FW a constant: a multiply and a shift)
                iw = f % FW - pad_w
                inside = (chunk * CHUNK + v < STAGED) & (f < frame_rows) & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
                if INT64:
                    ih = ih.to(gl.int64)
                offs = gl.multiple_of(ih * stride_xh + iw * stride_xw, VEC)[:, None] + (c0 + offs_c)[None, :]
                dest = frames.index(buf * ROWS + chunk * CHUNK)._reinterpret(frames.dtype, [CHUNK, BLOCK_K], CHUNK_VIEW)
                async_copy.async_copy_global_to_shared(dest, x_img + offs, mask=inside[:, None])
            async_copy.mbarrier_arrive(f_ready.index(buf), increment_count=False)
            fi += 1


@gluon.jit
def _weight_copy_partition(
    w_desc, b_bufs, b_ready, b_empty, C, num_m, num_n, blocks, taps,
    BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr, GROUP_M: gl.constexpr,
):
    """For every tile, channel block and tap of this program, the weight tile into the ring by
    TMA (one warp)."""
    STAGES: gl.constexpr = b_bufs.type.shape[0]
    it = 0
    for tile in range(gl.program_id(0), num_m * num_n, gl.num_programs(0)):
        _, _, pid_n = _frame_tile(tile, num_m, num_n, blocks, GROUP_M, BLOCK_M)
        for c0 in range(0, C, BLOCK_K):
            for t in range(taps):
                stage = it % STAGES
                mbarrier.wait(b_empty.index(stage), ((it // STAGES) & 1) ^ 1)
                bar = b_ready.index(stage)
                mbarrier.expect(bar, w_desc.block_type.nbytes)
                tma.async_copy_global_to_shared(w_desc, [pid_n * BLOCK_N, t * C + c0], bar, b_bufs.index(stage))
                it += 1


@gluon.jit
def _frame_mma_partition(
    frames, b_bufs, f_ready, f_empty, b_ready, b_empty,
    out_ptr, bias_ptr, res_ptr,
    C, K, P, num_m, num_n, blocks,
    stride_on, stride_ok, stride_op, stride_oq,
    stride_rn, stride_rk, stride_rp, stride_rq,
    alpha, beta,
    ACTIVATION: gl.constexpr, HAS_BIAS: gl.constexpr, HAS_RESIDUAL: gl.constexpr,
    Q: gl.constexpr, FW: gl.constexpr,
    BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr, GROUP_M: gl.constexpr,
    ROWS: gl.constexpr, PLANE_ROWS: gl.constexpr, R: gl.constexpr, S: gl.constexpr,
    DIL_H: gl.constexpr, DIL_W: gl.constexpr, NUM_WARPS: gl.constexpr, INT64: gl.constexpr,
    HALF: gl.constexpr, HALVES: gl.constexpr,
):
    """Each tap's A view from the frame buffer into registers (ldmatrix), then the tap's wgmma
    steps against the ring's weight tile; the epilogue. With two MMA partitions (``HALVES`` = 2)
    this one takes rows HALF*BLOCK_M/2 .. of every tile: the two run unsynchronised, one's loads and
    waits covered by the other's wgmma."""
    MH: gl.constexpr = BLOCK_M // HALVES  # this partition's rows of a tile
    FRAMES: gl.constexpr = PLANE_ROWS // ROWS
    STAGES: gl.constexpr = b_bufs.type.shape[0]
    mma_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[NUM_WARPS, 1],
                                                        instr_shape=[16, BLOCK_N, 16])
    ADOT: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=mma_layout, k_width=2)
    VIEW: gl.constexpr = frame_layout(MH, BLOCK_K, PLANE_ROWS)
    out_layout: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [NUM_WARPS, 1], [1, 0])
    it = 0
    fi = 0
    for tile in range(gl.program_id(0), num_m * num_n, gl.num_programs(0)):
        n, f0, pid_n = _frame_tile(tile, num_m, num_n, blocks, GROUP_M, BLOCK_M)
        acc = gl.zeros([MH, BLOCK_N], gl.float32, layout=mma_layout)
        for _ in range(0, C, BLOCK_K):
            buf = fi % FRAMES
            mbarrier.wait(f_ready.index(buf), (fi // FRAMES) & 1)
            for r in gl.static_range(R):
                for s in gl.static_range(S):
                    stage = it % STAGES
                    a = frames.index(buf * ROWS + HALF * MH + r * DIL_H * FW + s * DIL_W)._reinterpret(
                        frames.dtype, [MH, BLOCK_K], VIEW).load(ADOT)
                    if r == R - 1 and s == S - 1:
                        mbarrier.arrive(f_empty.index(buf))  # the block's last tap is in registers
                    mbarrier.wait(b_ready.index(stage), (it // STAGES) & 1)
                    # A tap's wgmma steps run back to back; the next tap's A registers are loaded only
                    # once they are done (ptxas serializes every wgmma of a kernel that writes a wgmma's
                    # register operands while one is in flight: C7513).
                    acc = warpgroup_mma(a, b_bufs.index(stage).permute((1, 0)), acc, is_async=True)
                    acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))
                    mbarrier.arrive(b_empty.index(stage))
                    it += 1
            fi += 1

        f = f0 + HALF * MH + gl.arange(0, MH, layout=gl.SliceLayout(1, out_layout))
        p = f // FW
        q = f - p * FW
        if INT64:
            n = n.to(gl.int64)
            p = p.to(gl.int64)
        offs_k = pid_n * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, out_layout))
        mask_m = (p < P) & (q < Q)  # frame columns q >= Q (and rows past the image) are no outputs
        if HAS_RESIDUAL:  # the residual read in the stores' layout (16 bytes a thread), then the epilogue
            store_output_tile(gl.convert_layout(acc, out_layout), out_ptr, bias_ptr, res_ptr, n, p, q, mask_m,
                              offs_k, offs_k < K, stride_on, stride_ok, stride_op, stride_oq, stride_rn, stride_rk,
                              stride_rp, stride_rq, alpha, beta, ACTIVATION, HAS_BIAS, HAS_RESIDUAL)
        else:  # bias and activation in the MMA's layout, the cast before the layout conversion (as implicit_gemm_ws)
            offs_b = pid_n * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, mma_layout))
            acc = epilogue_at(acc, bias_ptr, res_ptr, offs_b, offs_b < K, 0, False, alpha, beta,
                              ACTIVATION, HAS_BIAS, False)
            out = gl.convert_layout(acc.to(out_ptr.dtype.element_ty), out_layout)
            store_output_tile(out, out_ptr, bias_ptr, res_ptr, n, p, q, mask_m, offs_k, offs_k < K,
                              stride_on, stride_ok, stride_op, stride_oq, stride_rn, stride_rk, stride_rp, stride_rq,
                              alpha, beta, 0, False, False)


@gluon.jit
def conv2d_implicit_gemm_frame_kernel(
    x_ptr,  # input, channels_last (channel stride 1), pixel strides multiples of 16 bytes
    w_desc,  # TensorDescriptor over the weight as (K, R*S*C) ((r, s, c) order), block (BLOCK_N, BLOCK_K)
    out_ptr, bias_ptr, res_ptr,  # output [N, K, P, Q] (strides below), bias [K], residual
    N, H, W, C, K, P,
    pad_h, pad_w,
    stride_xn, stride_xh, stride_xw,
    stride_on, stride_ok, stride_op, stride_oq,
    stride_rn, stride_rk, stride_rp, stride_rq,
    alpha, beta,
    ACTIVATION: gl.constexpr, HAS_BIAS: gl.constexpr, HAS_RESIDUAL: gl.constexpr,
    Q: gl.constexpr,  # the output's width (the frame's is a constant: its divisions are multiplications)
    R: gl.constexpr, S: gl.constexpr, DIL_H: gl.constexpr, DIL_W: gl.constexpr,
    BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr, GROUP_M: gl.constexpr,
    ROWS: gl.constexpr,  # a frame buffer's rows: a power of two, at least BLOCK_M + the taps' reach
    FRAMES: gl.constexpr,  # frame buffers (2 or 4): the copies run FRAMES - 1 channel blocks ahead
    CHUNK: gl.constexpr,  # frame rows a loader copy instruction covers
    STAGES: gl.constexpr,  # depth of the weight ring
    COPY_WARPS: gl.constexpr, COPY_REGS: gl.constexpr,  # the frame copies' partition
    WEIGHT_REGS: gl.constexpr,  # the weight copies' one-warp partition
    NUM_WARPS: gl.constexpr,  # each MMA partition's warps (the kernel's num_warps)
    HALVES: gl.constexpr, MMA_REGS: gl.constexpr,  # 1, or 2 MMA partitions of half the tile's rows (and the second's registers)
    INT64: gl.constexpr,
):
    dtype: gl.constexpr = w_desc.dtype
    VEC: gl.constexpr = 128 // dtype.primitive_bitwidth
    PLANE_ROWS: gl.constexpr = FRAMES * ROWS  # every frame buffer's rows in each plane of eight channels
    ROW: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [0])  # (rank one: index(row) then reinterpret, as grouped_halo)
    frames = gl.allocate_shared_memory(dtype, [PLANE_ROWS * (BLOCK_K // 8), 8], ROW)
    b_bufs = gl.allocate_shared_memory(dtype, [STAGES, BLOCK_N, BLOCK_K], w_desc.layout)
    f_ready = gl.allocate_shared_memory(gl.int64, [FRAMES, 1], mbarrier.MBarrierLayout())
    f_empty = gl.allocate_shared_memory(gl.int64, [FRAMES, 1], mbarrier.MBarrierLayout())
    b_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    b_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(FRAMES):
        mbarrier.init(f_ready.index(i), count=COPY_WARPS * 32)  # every copying thread's cp.async arrival
        mbarrier.init(f_empty.index(i), count=HALVES)  # each MMA partition's release
    for i in gl.static_range(STAGES):
        mbarrier.init(b_ready.index(i), count=1)  # the loader's expect; the copy's bytes complete it
        mbarrier.init(b_empty.index(i), count=HALVES)

    FW: gl.constexpr = Q + (S - 1) * DIL_W  # the padded frame's width
    FH = P + (R - 1) * DIL_H
    HALO: gl.constexpr = (R - 1) * DIL_H * FW + (S - 1) * DIL_W  # the taps' reach past a tile's rows
    blocks = gl.cdiv(P * FW, BLOCK_M)  # frame blocks an image
    num_m = N * blocks
    num_n = gl.cdiv(K, BLOCK_N)
    if HALVES == 1:
        gl.warp_specialize([
            (_frame_mma_partition, (frames, b_bufs, f_ready, f_empty, b_ready, b_empty, out_ptr, bias_ptr, res_ptr,
                                    C, K, P, num_m, num_n, blocks, stride_on, stride_ok, stride_op, stride_oq,
                                    stride_rn, stride_rk, stride_rp, stride_rq, alpha, beta, ACTIVATION, HAS_BIAS,
                                    HAS_RESIDUAL, Q, FW, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, ROWS, PLANE_ROWS, R, S, DIL_H,
                                    DIL_W, NUM_WARPS, INT64, 0, 1)),
            (_frame_copy_partition, (x_ptr, frames, f_ready, f_empty, H, W, C, FH, pad_h, pad_w, num_m, num_n,
                                     blocks, stride_xn, stride_xh, stride_xw, FW, HALO, BLOCK_M, BLOCK_K, GROUP_M, ROWS,
                                     PLANE_ROWS, CHUNK, VEC, COPY_WARPS, INT64)),
            (_weight_copy_partition, (w_desc, b_bufs, b_ready, b_empty, C, num_m, num_n, blocks, R * S,
                                      BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M)),
        ], [COPY_WARPS, 1], [COPY_REGS, WEIGHT_REGS])
    else:
        gl.warp_specialize([
            (_frame_mma_partition, (frames, b_bufs, f_ready, f_empty, b_ready, b_empty, out_ptr, bias_ptr, res_ptr,
                                    C, K, P, num_m, num_n, blocks, stride_on, stride_ok, stride_op, stride_oq,
                                    stride_rn, stride_rk, stride_rp, stride_rq, alpha, beta, ACTIVATION, HAS_BIAS,
                                    HAS_RESIDUAL, Q, FW, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, ROWS, PLANE_ROWS, R, S, DIL_H,
                                    DIL_W, NUM_WARPS, INT64, 0, 2)),
            (_frame_copy_partition, (x_ptr, frames, f_ready, f_empty, H, W, C, FH, pad_h, pad_w, num_m, num_n,
                                     blocks, stride_xn, stride_xh, stride_xw, FW, HALO, BLOCK_M, BLOCK_K, GROUP_M, ROWS,
                                     PLANE_ROWS, CHUNK, VEC, COPY_WARPS, INT64)),
            (_weight_copy_partition, (w_desc, b_bufs, b_ready, b_empty, C, num_m, num_n, blocks, R * S,
                                      BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M)),
            (_frame_mma_partition, (frames, b_bufs, f_ready, f_empty, b_ready, b_empty, out_ptr, bias_ptr, res_ptr,
                                    C, K, P, num_m, num_n, blocks, stride_on, stride_ok, stride_op, stride_oq,
                                    stride_rn, stride_rk, stride_rp, stride_rq, alpha, beta, ACTIVATION, HAS_BIAS,
                                    HAS_RESIDUAL, Q, FW, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, ROWS, PLANE_ROWS, R, S, DIL_H,
                                    DIL_W, NUM_WARPS, INT64, 1, 2)),
        ], [COPY_WARPS, 1, NUM_WARPS], [COPY_REGS, WEIGHT_REGS, MMA_REGS])
