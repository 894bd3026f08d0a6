"""Does wgmma read a 128-byte-swizzled A operand correctly from a view that starts at any row?

A frame of ROWS rows x 64 fp16 channels is staged in shared memory (128-byte swizzle, the layout
TMA writes), and a [128, 64] view of it starting at row START is multiplied by a [64, 64] weight
(Gluon's warpgroup_mma; the view is ``index(START)._reinterpret``, so the descriptor's start
address is START * 128 bytes and its base-offset field 0). Printed per START: the largest error
against torch. If the tensor cores take the swizzle phase from the address, every START is right;
if from the descriptor's base offset, only multiples of 8 are.

    python benchmarks/probe_wgmma_rows.py
"""

import sys

import torch
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma, warpgroup_mma
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

ROWS, BM, BK, BN = 256, 128, 64, 64


@gluon.jit
def _probe(x_desc, x_ptr, w_ptr, out_ptr, START: gl.constexpr, VIA_TMA: gl.constexpr, ROWS: gl.constexpr,
           BM: gl.constexpr, BK: gl.constexpr, BN: gl.constexpr):
    blk: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])
    layout: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2)
    frame = gl.allocate_shared_memory(gl.float16, [ROWS, 1, BK], layout)
    c = gl.arange(0, BK, layout=gl.SliceLayout(0, blk))
    if VIA_TMA:
        bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
        mbarrier.init(bar, count=1)
        mbarrier.expect(bar, x_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(x_desc, [0, 0], bar, frame._reinterpret(gl.float16, [ROWS, BK], layout))
        mbarrier.wait(bar, 0)
    else:
        r = gl.arange(0, ROWS, layout=gl.SliceLayout(1, blk))
        x = gl.load(x_ptr + r[:, None] * BK + c[None, :])
        frame._reinterpret(gl.float16, [ROWS, BK], layout).store(x)
    rn = gl.arange(0, BN, layout=gl.SliceLayout(1, blk))
    w = gl.load(w_ptr + rn[:, None] * BK + c[None, :])
    wb = gl.allocate_shared_memory(gl.float16, [BN, BK], layout, w)
    fence_async_shared()
    acc_l: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BN, 16])
    acc = gl.zeros([BM, BN], gl.float32, acc_l)
    acc = warpgroup_mma(frame.index(START)._reinterpret(gl.float16, [BM, BK], layout), wb.permute((1, 0)), acc)
    om = gl.arange(0, BM, layout=gl.SliceLayout(1, acc_l))
    on = gl.arange(0, BN, layout=gl.SliceLayout(0, acc_l))
    gl.store(out_ptr + om[:, None] * BN + on[None, :], acc)


def main() -> int:
    torch.manual_seed(0)
    x = torch.randn(ROWS + BM, BK, device="cuda").half()
    w = torch.randn(BN, BK, device="cuda").half()
    layout = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2)
    desc = TensorDescriptor.from_tensor(x, [ROWS, BK], layout)
    bad = 0
    for via_tma in (False, True):
        for start in (0, 1, 2, 3, 5, 7, 8, 9, 64, 65, 66, 127):
            out = torch.full((BM, BN), float("nan"), device="cuda")
            _probe[(1,)](desc, x, w, out, START=start, VIA_TMA=via_tma, ROWS=ROWS, BM=BM, BK=BK, BN=BN, num_warps=4)
            ref = x[start:start + BM].double() @ w.double().T
            err = (out.double() - ref).abs().max().item()
            bad += err > 1e-2
            print(f"{'tma ' if via_tma else 'st  '} start {start:3d}: max error {err:.3g}")
    print("all right" if not bad else f"{bad} wrong")
    return 0


if __name__ == "__main__":
    sys.exit(main())
