"""Depthwise convolution streaming input rows through shared memory by the copy engine (Gluon,
Hopper: TMA and mbarriers).

The small-filter depthwise rows (MobileNet's 3x3) do about nine multiply-adds a byte moved: they
are bound by how fast memory streams, and the other depthwise kernels stream it badly. The
cp.async halo kernel (:mod:`.depthwise_halo`) copies a program's halo, waits, computes and
stores, so a program's memory and arithmetic take turns and only the other programs on the
SM overlap them (H200, session 44: the stride-1 3x3 rows at 24%-53% of the copy roofline).

Here each program walks work items, an item being ``BAND`` output rows of one image by ``CB``
channels, and keeps the copy engine ahead of its arithmetic:

- the input rows its items read go, one after the other, into a ring of ``NR`` row slots: per
  row a TMA box [1, 1, FW, CB] of the NHWC input from column ``COL0`` (the zero fill outside
  the image is the padding), each slot with an mbarrier that says when its row has landed. The
  copies run as far ahead as the ring allows, into the program's next item too: whenever a
  step hands slots back, the program issues the rows that follow the last one issued.
- a step makes TJ output rows of the item: for each filter column s and each input row the
  step reads, one [FW, CB] view of the row's slot starting at the tap's column is loaded
  (16 bytes a thread), converted to fp32 once and multiplied into every output row of the
  step that reads it, by that filter row's CB weights (an fp32 table in shared memory, written
  once an item). The fused epilogue (bias, residual, activation) runs in fp32 and the columns
  q < Q are stored, 16 bytes a thread. The slots no later step reads are then refilled.

One partition does both (no warp specialization): Triton 3.6's register reallocation between
partitions assumes one program an SM, and this kernel wants several (``persistent``) to hide
its shared-memory latency.

Column stride 2 (``V = 2``): the input is described as (N, H, W/2, 2C), a pixel pair a row, so
that a box at channel offset b*C + c0 holds the columns of phase b (2j + b); a row slot holds
both phases' boxes and tap s reads phase (s*dil_w - pad_w) mod 2 from column
(s*dil_w - pad_w) // 2 - COL0. Row strides are just which rows are copied.

Output column q of a frame row is frame column q (plus the tap's offset); columns q >= Q are
computed from whatever the slot holds there (the next row's columns, or the ring's slack
rows) and never stored; so are output rows past the item's last (a step's rows past it read
slots not waited for). Channels past C (the last channel block) read zeros (V = 1) or the
next phase's channels (V = 2) against zero weights, and are never stored.

Channels_last fp16 or bf16, channel multiplier 1 (groups = C = K), C a multiple of 8, the
filter's taps unrolled at compile time. Gluon kernels compile only for a GPU: under Triton's
interpreter this algorithm is unsupported (the launcher's reason says so) and its tests run
on the GPU; CI compiles it for sm_90 (``benchmarks/sass.py``).

    out[n, k, p, q] = sum_{r, s} x[n, k, p*U - pad_h + r*dil_h, q*V - pad_w + s*dil_w] * w[k, 0, r, s]
"""

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma

from .common import epilogue_at


@gluon.jit
def _item_of(item, bands, cblocks, P, BAND: gl.constexpr, U: gl.constexpr, R: gl.constexpr, DIL_H: gl.constexpr):
    """Work item ``item``'s image, first output row, output rows, channel block and input rows
    (the channel blocks of one band of rows are neighbouring items: programs running side by
    side read the same input rows)."""
    cb = item % cblocks
    band = (item // cblocks) % bands
    n = item // (cblocks * bands)
    p0 = band * BAND
    jb = gl.minimum(P - p0, BAND)
    return n, p0, jb, cb, (jb - 1) * U + (R - 1) * DIL_H + 1


@gluon.jit
def _issue_rows(x_desc, rows, ready, until, lseq, l_item, l_row, num_items, bands, cblocks, P, C, pad_h,
                U: gl.constexpr, V: gl.constexpr, R: gl.constexpr, DIL_H: gl.constexpr,
                FW: gl.constexpr, COL0: gl.constexpr, BAND: gl.constexpr, CB: gl.constexpr):
    """Copy the rows after the ``lseq`` issued so far (the ``l_row``-th of item ``l_item``) into
    their slots, up to row ``until`` of the program's sequence or its last item's end. Returns
    the new (lseq, l_item, l_row)."""
    NR: gl.constexpr = ready.type.shape[0]
    dtype: gl.constexpr = x_desc.dtype
    n, p0, jb, cb, last = _item_of(l_item, bands, cblocks, P, BAND, U, R, DIL_H)
    while (lseq < until) & (l_item < num_items):
        slot = lseq % NR
        bar = ready.index(slot)
        mbarrier.expect(bar, V * x_desc.block_type.nbytes)
        for b in gl.static_range(V):
            box = rows.index((slot * V + b) * FW)._reinterpret(dtype, x_desc.block_type.shape, x_desc.layout)
            tma.async_copy_global_to_shared(x_desc, [n, p0 * U - pad_h + l_row, COL0, b * C + cb * CB], bar, box)
        lseq += 1
        l_row += 1
        if l_row == last:
            l_row = 0
            l_item += gl.num_programs(0)
            n, p0, jb, cb, last = _item_of(l_item, bands, cblocks, P, BAND, U, R, DIL_H)
    return lseq, l_item, l_row


@gluon.jit
def conv2d_depthwise_stream_kernel(
    x_desc,  # the NHWC input as (N, H, W, C) (V = 1) or (N, H, W/2, 2C) (V = 2), block (1, 1, FW, CB), no swizzle
    w_ptr,  # weight [K, 1, R, S] stored (R, S, 1, K): channel-minor
    out_ptr, bias_ptr, res_ptr,
    num_items, bands, cblocks,  # items: images x bands of BAND output rows x channel blocks
    P, Q, C, pad_h,
    stride_wr, stride_ws,
    stride_on, stride_ok, stride_op, stride_oq,
    stride_rn, stride_rk, stride_rp, stride_rq,
    alpha, beta,
    ACTIVATION: gl.constexpr, HAS_BIAS: gl.constexpr, HAS_RESIDUAL: gl.constexpr,
    R: gl.constexpr, S: gl.constexpr, U: gl.constexpr, V: gl.constexpr,
    DIL_H: gl.constexpr, DIL_W: gl.constexpr, PAD_W: gl.constexpr,
    FW: gl.constexpr,  # frame columns a slot phase (a power of two: the box's width)
    COL0: gl.constexpr,  # the frame's first column (in phase columns): -pad_w at V = 1
    BAND: gl.constexpr,  # output rows an item
    CB: gl.constexpr,  # channels an item
    TJ: gl.constexpr,  # output rows a compute step
    TAPS: gl.constexpr,  # R * S to a power of two: the filter's rows in shared memory
    NR: gl.constexpr,  # row slots in the ring
    SLACK: gl.constexpr,  # rows past the ring's last slot (read only for columns q >= Q)
    VEC: gl.constexpr,  # channels a thread: 16 bytes
    NUM_WARPS: gl.constexpr,
):
    dtype: gl.constexpr = x_desc.dtype
    TC: gl.constexpr = CB // VEC  # threads across a pixel's channels
    BL: gl.constexpr = gl.BlockedLayout([1, VEC], [32 // TC, TC], [NUM_WARPS, 1], [1, 0])
    PLAIN: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [1, 0])  # the slots are not swizzled
    ROW: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [0])
    TJ_IN: gl.constexpr = (TJ - 1) * U + (R - 1) * DIL_H + 1  # input rows a step reads
    # Indexed by frame row (a pixel's CB channels): [rows, 1, CB] so that index(i) is a [1, CB]
    # view at any row, reinterpreted as a box or as a tap's [FW, CB] window from there.
    rows = gl.allocate_shared_memory(dtype, [NR * V * FW + SLACK, 1, CB], PLAIN)
    weights = gl.allocate_shared_memory(gl.float32, [TAPS, CB], PLAIN)
    ready = gl.allocate_shared_memory(gl.int64, [NR, 1], mbarrier.MBarrierLayout())
    for k in gl.static_range(NR):
        mbarrier.init(ready.index(k), count=1)
    fence_async_shared()
    tap_rows = weights._reinterpret(gl.float32, [TAPS, CB], ROW)

    q = gl.arange(0, FW, layout=gl.SliceLayout(1, BL))
    c = gl.arange(0, CB, layout=gl.SliceLayout(0, BL))
    tap = gl.arange(0, TAPS, layout=gl.SliceLayout(1, BL))
    # The copies: the ring's first NR rows now, then as steps hand slots back.
    zero = gl.program_id(0) * 0  # (the copy cursor's counters are loop-carried tensors)
    lseq, l_item, l_row = _issue_rows(x_desc, rows, ready, NR, zero, gl.program_id(0), zero, num_items, bands,
                                      cblocks, P, C, pad_h, U, V, R, DIL_H, FW, COL0, BAND, CB)
    seq = zero  # the program's rows consumed before this item
    for item in range(gl.program_id(0), num_items, gl.num_programs(0)):
        n, p0, jb, cb, last = _item_of(item, bands, cblocks, P, BAND, U, R, DIL_H)
        ch = cb * CB + c
        mask_c = ch < C
        # The item's filter as fp32 into shared memory (every warp is done with the last item's).
        w_offs = ((tap // S) * stride_wr + (tap % S) * stride_ws)[:, None] + ch[None, :]
        w_tile = gl.load(w_ptr + w_offs, mask=(tap < R * S)[:, None] & mask_c[None, :], other=0.0)
        gl.thread_barrier()
        weights.store(w_tile.to(gl.float32))
        gl.thread_barrier()
        out_offs = q[:, None] * stride_oq + ch[None, :] * stride_ok
        res_offs = q[:, None] * stride_rq + ch[None, :] * stride_rk
        mask = (q < Q)[:, None] & mask_c[None, :]
        out_img = out_ptr + n.to(gl.int64) * stride_on
        res_img = res_ptr + n.to(gl.int64) * stride_rn
        for j0 in range(0, jb, TJ):
            # Wait for the rows this step reads that the step before did not: from the step before's
            # last (or this step's first, where the stride skips rows nothing reads, already refilled)
            # to this step's last (rows past the item's, read only by output rows past jb, are not
            # waited for: never stored). (A Python walk of this schedule, session 46, checked every
            # band, step, stride, dilation and ring size for waits on overwritten slots.)
            need = gl.minimum(j0 * U + TJ_IN, last)
            start = gl.maximum(gl.minimum((j0 - TJ) * U + TJ_IN, last), j0 * U)
            if j0 == 0:
                start = start * 0
            for i in range(start, need):
                mbarrier.wait(ready.index((seq + i) % NR), ((seq + i) // NR) & 1)
            accs = ()
            for _ in gl.static_range(TJ):
                accs = accs + (gl.zeros([FW, CB], gl.float32, BL),)
            for s in gl.static_range(S):
                w_s = ()
                for r in gl.static_range(R):
                    w_s = w_s + (tap_rows.index(r * S + s).load(gl.SliceLayout(0, BL)),)
                for rho in gl.static_range(TJ_IN):
                    slot = (seq + j0 * U + rho) % NR
                    # The tap's column in the frame (>= 0: COL0 is the leftmost tap's): its phase, its column.
                    view = rows.index((slot * V + (s * DIL_W - PAD_W - V * COL0) % V) * FW
                                      + (s * DIL_W - PAD_W - V * COL0) // V)._reinterpret(dtype, [FW, CB], PLAIN)
                    x = view.load(BL).to(gl.float32)
                    updated = ()
                    for t in gl.static_range(TJ):
                        # Output row j0 + t reads this input row at filter row (rho - t*U) / DIL_H.
                        if (rho - t * U) >= 0 and (rho - t * U) % DIL_H == 0 and (rho - t * U) // DIL_H < R:
                            updated = updated + (accs[t] + x * w_s[(rho - t * U) // DIL_H][None, :],)
                        else:
                            updated = updated + (accs[t],)
                    accs = updated
            # Every warp's reads of the rows below the next step's are done: refill their slots.
            done = gl.minimum((j0 + TJ) * U, last)
            if j0 + TJ >= jb:
                done = last
            gl.thread_barrier()
            fence_async_shared()
            lseq, l_item, l_row = _issue_rows(x_desc, rows, ready, seq + done + NR, lseq, l_item, l_row, num_items,
                                              bands, cblocks, P, C, pad_h, U, V, R, DIL_H, FW, COL0, BAND, CB)
            for t in gl.static_range(TJ):
                p = p0 + j0 + t
                keep = mask & (j0 + t < jb)
                acc = epilogue_at(accs[t], bias_ptr, res_img + p * stride_rp, ch, mask_c, res_offs, keep, alpha, beta,
                                  ACTIVATION, HAS_BIAS, HAS_RESIDUAL)
                gl.store(out_img + p * stride_op + out_offs, acc.to(out_ptr.dtype.element_ty), mask=keep)
        seq += last
