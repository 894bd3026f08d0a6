"""Probe: TMA multicast across a cluster of two CTAs for a plain GEMM (ResNet-50's small 1x1 rows
and weight gradients), and split-K on the same kernel.

Triton 3.6 does not lower TMA multicast ("NYI: Support multicast") and has no cluster-scope
mbarrier arrive. This probe gets both by editing the kernel's PTX between Triton's PTX and
cubin stages (``knobs.runtime.add_stages_inspection_hook``, installed on import; kernels
without the marker pass through untouched):

- the kernel entry gets ``.reqnctapercluster 2, 1, 1`` (a compile-time cluster: an ordinary
  launch makes clusters of two neighbouring CTAs);
- every 3D bulk tensor copy (the B operand's, described as 3D only so that it can be told
  apart) becomes ``.multicast::cluster`` with CTA mask 0b11: each CTA copies half of the B
  tile into the same offset of both CTAs' shared memory, signalling both CTAs' mbarriers;
- every plain ``mbarrier.arrive`` (the MMA warps freeing a ring stage) also arrives on the
  peer CTA's barrier at the same offset (``mapa`` + ``.shared::cluster``, CUTLASS's form: a
  ``.release.cluster`` arrive compiles to MEMBAR.ALL.GPU before it, which doubled the time):
  a stage is refilled only once both CTAs' MMA warps are done with it (empty barriers count two).

The same kernel without MULTICAST runs its CTAs in the same pairs, each loading both halves:
the A/B control. Measured on an H200 (session 35, benchmarks/NOTES.md): correct, and 0-10%
slower than the control on every shape and tile; Nsight Compute shows the same bytes into the
SMs and no fewer L2 reads.

    python benchmarks/probe_multicast.py ptx [--no-multicast --split S ...]  # CPU: compile for sm_90
    python benchmarks/probe_multicast.py run [--wgrad] --json F   # GPU: both forms and cuBLAS (and
                                                                  # cuDNN / tileconv on the 1x1 rows)
    python benchmarks/probe_multicast.py split --json F           # GPU: split-K main loops (fp32 atomics)
    python benchmarks/probe_multicast.py once --shape NAME        # GPU: each form once (for ncu)
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # (ptx_pass)

import ptx_pass  # noqa: E402
import torch  # noqa: E402
import triton  # noqa: E402
from triton.experimental import gluon  # noqa: E402
from triton.experimental.gluon import language as gl  # noqa: E402
from triton.experimental.gluon.language.nvidia.hopper import (  # noqa: E402
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)

from tileconv.bench.timing import bench_us  # noqa: E402
from tileconv.kernels.common import swizzle_tile  # noqa: E402

MARK = "tileconv-multicast-v1"


# ----------------------------------------------------------------------------- the PTX edit

_ENTRY = re.compile(r"(\.visible \.entry [^\n]*\([^)]*\))", re.S)
_COPY3D = re.compile(r"^(\s*)(@%p\d+ )?(cp\.async\.bulk\.tensor\.3d\.shared::cluster\.global\.mbarrier::complete_tx::bytes)"
                     r" (\[[^\]]+\], \[[^\]]+\], \[[^\]]+\]);", re.M)
_ARRIVE = re.compile(r"^(\s*)(@%p\d+ )?mbarrier\.arrive\.shared::cta\.b64 _, \[(%r\d+)(\+\d+)?\];", re.M)


def multicast_ptx(ptx: str) -> str:
    """The edits above, on a kernel that carries the marker; others untouched."""
    if MARK not in ptx:
        return ptx
    ptx, n_entry = _ENTRY.subn(r"\1\n.reqnctapercluster 2, 1, 1", ptx, count=1)
    ptx, n_copy = _COPY3D.subn(
        lambda m: (f"{m.group(1)}{{ .reg .b16 %mcmask; mov.b16 %mcmask, 3;\n"
                   f"{m.group(1)}{m.group(2) or ''}{m.group(3)}.multicast::cluster {m.group(4)}, %mcmask; }}"), ptx)

    def arrive(m):
        pad, pred, reg, off = m.group(1), m.group(2) or "", m.group(3), m.group(4) or ""
        return (f"{pad}{pred}mbarrier.arrive.shared::cta.b64 _, [{reg}{off}];\n"
                f"{pad}{{ .reg .b32 %mcpeer, %mcrank, %mcaddr; mov.u32 %mcrank, %cluster_ctarank;"
                f" xor.b32 %mcpeer, %mcrank, 1; add.u32 %mcaddr, {reg}, {off[1:] if off else 0};"
                f" mapa.shared::cluster.u32 %mcaddr, %mcaddr, %mcpeer;\n"
                f"{pad}{pred}mbarrier.arrive.shared::cluster.b64 _, [%mcaddr]; }}")
    ptx, n_arrive = _ARRIVE.subn(arrive, ptx)
    if not (n_entry == 1 and n_copy >= 1 and n_arrive >= 1):
        raise RuntimeError(f"multicast PTX edit: entry {n_entry}, copies {n_copy}, arrives {n_arrive}")
    return ptx


def _edit_digest() -> str:
    """The PTX edit's own source, hashed: passed to the kernel as a constexpr, so that Triton's
    compile cache (keyed by the kernel's source and constants, not by stage hooks) never
    serves a binary made by another version of the edit."""
    import hashlib
    import inspect
    return hashlib.sha256(inspect.getsource(multicast_ptx).encode()).hexdigest()[:16]


EDIT = _edit_digest()


ptx_pass.install(lambda ptx, metadata: multicast_ptx(ptx))


# ----------------------------------------------------------------------------- the kernel

@gluon.jit
def _cta_rank():
    return gl.inline_asm_elementwise("mov.u32 $0, %cluster_ctarank;", "=r", [], dtype=gl.int32,
                                     is_pure=True, pack=1)


@gluon.jit
def _cluster_sync(MULTICAST: gl.constexpr):
    if MULTICAST:
        gl.inline_asm_elementwise(
            "// tileconv-multicast-v1\n fence.mbarrier_init.release.cluster; barrier.cluster.arrive.release.aligned;"
            " barrier.cluster.wait.acquire.aligned; mov.u32 $0, 0;",
            "=r", [], dtype=gl.int32, is_pure=False, pack=1)


@gluon.jit
def _pair_rank(MULTICAST: gl.constexpr):
    """This CTA's place in its pair: its cluster rank, or without a cluster its program id's parity."""
    if MULTICAST:
        rank = _cta_rank()
    else:
        rank = gl.program_id(0) % 2
    return rank


@gluon.jit
def _item(item, rank, num_pm, num_n, per_split, GROUP_M: gl.constexpr, SPLIT: gl.constexpr):
    """A pair's work item ``item``: this CTA's M tile, the pair's N tile and the first reduction step."""
    pm, pn = swizzle_tile(item // SPLIT, num_pm, num_n, GROUP_M)
    return 2 * pm + rank, pn, item % SPLIT * per_split


@gluon.jit
def _loader(a_desc, b_desc, a_bufs, b_bufs, ready, empty, num_pm, num_n, steps,
            BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr, GROUP_M: gl.constexpr,
            MULTICAST: gl.constexpr, SPLIT: gl.constexpr):
    STAGES: gl.constexpr = a_bufs.type.shape[0]
    HALF: gl.constexpr = BLOCK_N // 2
    nbytes: gl.constexpr = a_desc.block_type.nbytes + 2 * b_desc.block_type.nbytes
    rank = _pair_rank(MULTICAST)
    _cluster_sync(MULTICAST)  # the peer's barriers are initialised
    it = 0
    per_split = gl.cdiv(steps, SPLIT)
    for item in range(gl.program_id(0) // 2, num_pm * num_n * SPLIT, gl.num_programs(0) // 2):
        pid_m, pn, first = _item(item, rank, num_pm, num_n, per_split, GROUP_M, SPLIT)
        for step in range(first, gl.minimum(first + per_split, steps)):
            stage = it % STAGES
            mbarrier.wait(empty.index(stage), ((it // STAGES) & 1) ^ 1)
            bar = ready.index(stage)
            mbarrier.expect(bar, nbytes)
            tma.async_copy_global_to_shared(a_desc, [pid_m * BLOCK_M, step * BLOCK_K], bar, a_bufs.index(stage))
            if MULTICAST:  # my half of B, into both CTAs
                if rank == 0:
                    dst = b_bufs.index(stage).slice(0, HALF)._reinterpret(b_desc.dtype, b_desc.block_type.shape,
                                                                          b_desc.layout)
                    tma.async_copy_global_to_shared(b_desc, [0, pn * BLOCK_N, step * BLOCK_K], bar, dst)
                else:
                    dst = b_bufs.index(stage).slice(HALF, HALF)._reinterpret(b_desc.dtype, b_desc.block_type.shape,
                                                                             b_desc.layout)
                    tma.async_copy_global_to_shared(b_desc, [0, pn * BLOCK_N + HALF, step * BLOCK_K], bar, dst)
            else:  # both halves, into this CTA only
                lo = b_bufs.index(stage).slice(0, HALF)._reinterpret(b_desc.dtype, b_desc.block_type.shape,
                                                                     b_desc.layout)
                hi = b_bufs.index(stage).slice(HALF, HALF)._reinterpret(b_desc.dtype, b_desc.block_type.shape,
                                                                        b_desc.layout)
                tma.async_copy_global_to_shared(b_desc, [0, pn * BLOCK_N, step * BLOCK_K], bar, lo)
                tma.async_copy_global_to_shared(b_desc, [0, pn * BLOCK_N + HALF, step * BLOCK_K], bar, hi)
            it += 1
    _cluster_sync(MULTICAST)  # (every thread of both CTAs arrives: see _mma)


@gluon.jit
def _mma(a_bufs, b_bufs, ready, empty, c_ptr, M, N, num_pm, num_n, steps,
         BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, GROUP_M: gl.constexpr, NUM_WARPS: gl.constexpr,
         MULTICAST: gl.constexpr, SPLIT: gl.constexpr):
    STAGES: gl.constexpr = a_bufs.type.shape[0]
    mma_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[NUM_WARPS, 1],
                                                        instr_shape=[16, BLOCK_N, 16])
    out_layout: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [NUM_WARPS, 1], [1, 0])
    rank = _pair_rank(MULTICAST)
    _cluster_sync(MULTICAST)  # the peer's barriers are initialised
    it = 0
    per_split = gl.cdiv(steps, SPLIT)
    for item in range(gl.program_id(0) // 2, num_pm * num_n * SPLIT, gl.num_programs(0) // 2):
        pid_m, pn, first = _item(item, rank, num_pm, num_n, per_split, GROUP_M, SPLIT)
        acc = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, layout=mma_layout)
        for step in range(first, gl.minimum(first + per_split, steps)):
            stage = it % STAGES
            mbarrier.wait(ready.index(stage), (it // STAGES) & 1)
            acc = warpgroup_mma(a_bufs.index(stage), b_bufs.index(stage).permute((1, 0)), acc, is_async=True)
            acc = warpgroup_mma_wait(num_outstanding=1, deps=(acc,))
            mbarrier.arrive(empty.index((it + STAGES - 1) % STAGES), pred=step > first)
            it += 1
        acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))
        mbarrier.arrive(empty.index((it + STAGES - 1) % STAGES))
        rows = pid_m * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, out_layout))
        cols = pn * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, out_layout))
        ptrs = c_ptr + rows.to(gl.int64)[:, None] * N + cols[None, :]
        ok = (rows < M)[:, None] & (cols < N)[None, :]
        if SPLIT == 1:
            gl.store(ptrs, gl.convert_layout(acc.to(c_ptr.dtype.element_ty), out_layout), mask=ok)
        else:  # fp32 partial sums added into a zeroed fp32 C (a probe of the split's main loops)
            gl.atomic_add(ptrs, gl.convert_layout(acc, out_layout), mask=ok, sem="relaxed")
    _cluster_sync(MULTICAST)  # no CTA leaves while its peer may still arrive on its barriers


@gluon.jit
def gemm_multicast_kernel(a_desc, b_desc, c_ptr, M, N, K,
                          BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr,
                          GROUP_M: gl.constexpr, STAGES: gl.constexpr, NUM_WARPS: gl.constexpr,
                          MULTICAST: gl.constexpr, EDIT: gl.constexpr, SPLIT: gl.constexpr = 1):
    """C[M, N] = A[M, K] @ B[N, K]^T; programs in pairs (a cluster where MULTICAST), a pair
    taking M tiles 2*pm and 2*pm + 1 of one N tile. The loader partition has as many warps as
    make the CTA a whole number of warpgroups: Triton pads a CTA to warpgroups with idle warps,
    and an idle warp never arrives at the cluster barrier (it waits for every thread)."""
    LOADER_WARPS: gl.constexpr = 4 - NUM_WARPS % 4
    dtype: gl.constexpr = a_desc.dtype
    a_bufs = gl.allocate_shared_memory(dtype, [STAGES, BLOCK_M, BLOCK_K], a_desc.layout)
    b_layout: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BLOCK_N, BLOCK_K], dtype)
    b_bufs = gl.allocate_shared_memory(dtype, [STAGES, BLOCK_N, BLOCK_K], b_layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)
        mbarrier.init(empty.index(i), count=2 if MULTICAST else 1)
    num_pm = gl.cdiv(gl.cdiv(M, BLOCK_M), 2)
    num_n = gl.cdiv(N, BLOCK_N)
    steps = gl.cdiv(K, BLOCK_K)
    gl.warp_specialize([
        (_mma, (a_bufs, b_bufs, ready, empty, c_ptr, M, N, num_pm, num_n, steps, BLOCK_M, BLOCK_N, GROUP_M,
                NUM_WARPS, MULTICAST, SPLIT)),
        (_loader, (a_desc, b_desc, a_bufs, b_bufs, ready, empty, num_pm, num_n, steps, BLOCK_M, BLOCK_N, BLOCK_K,
                   GROUP_M, MULTICAST, SPLIT)),
    ], [LOADER_WARPS], [40])


def descriptors(a, b, block_m, block_n, block_k):
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor
    dtype = gl.float16 if a.dtype == torch.float16 else gl.bfloat16
    a_block = [block_m, block_k]
    a_desc = TensorDescriptor.from_tensor(a, a_block, gl.NVMMASharedLayout.get_default_for(a_block, dtype))
    b_block = [1, block_n // 2, block_k]
    # The half tile's swizzle as the whole tile's (rows of BLOCK_K elements, same byte pattern).
    full = gl.NVMMASharedLayout.get_default_for([block_n, block_k], dtype)
    b_layout = gl.NVMMASharedLayout(full.swizzle_byte_width, full.element_bitwidth, rank=3)
    b_desc = TensorDescriptor.from_tensor(b.unsqueeze(0), b_block, b_layout)
    return a_desc, b_desc


def gemm(a, b, c, block_m=128, block_n=128, block_k=64, stages=4, num_warps=4, group_m=8, multicast=True,
         programs=None, split=1):
    M, K = a.shape
    N = b.shape[0]
    a_desc, b_desc = descriptors(a, b, block_m, block_n, block_k)
    pairs = triton.cdiv(triton.cdiv(M, block_m), 2) * triton.cdiv(N, block_n) * split
    if programs is None:
        programs = torch.cuda.get_device_properties(a.device).multi_processor_count if a.is_cuda else 132
    grid = (2 * min(pairs, programs // 2),)
    return gemm_multicast_kernel[grid](a_desc, b_desc, c, M, N, K, BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k,
                                       GROUP_M=group_m, STAGES=stages, NUM_WARPS=num_warps, MULTICAST=multicast, EDIT=EDIT, SPLIT=split,
                                       num_warps=num_warps)


# ----------------------------------------------------------------------------- CLI

SHAPES = {  # ResNet-50's small 1x1 rows at batch 32 as GEMMs (M = N*P*Q, N = K, K = C)
    "c2048 hw7 k512": (1568, 512, 2048),
    "c512 hw7 k2048": (1568, 2048, 512),
    "c1024 hw14 k256": (6272, 256, 1024),
    "c1024 hw14 k512": (6272, 512, 1024),
    "c512 hw28 k256": (25088, 256, 512),
    "c512 hw28 k128": (25088, 128, 512),
    "c256 hw14 k1024": (6272, 1024, 256),
}
WGRAD_SHAPES = {  # ResNet-50 weight gradients as GEMMs, (M, N, K) = (K, R*S*C, N*P*Q) and transposed
    "wgrad c512 hw7 3x3": (512, 4608, 1568),
    "wgrad c512 hw7 3x3 T": (4608, 512, 1568),
    "wgrad c1024 hw14 k512": (512, 1024, 6272),
    "wgrad c256 hw14 3x3": (256, 2304, 6272),
}


def _ptx(args):
    from sass import TARGET, disassemble  # (benchmarks/, this script's folder)
    from triton.experimental.gluon._runtime import GluonASTSource
    bm, bn, bk, st, nw = args.block_m, args.block_n, args.block_k, args.stages, args.num_warps
    dt = "fp16"
    full = gl.NVMMASharedLayout.get_default_for([bn, bk], gl.float16)
    a_layout = gl.NVMMASharedLayout.get_default_for([bm, bk], gl.float16)
    b_layout = gl.NVMMASharedLayout(full.swizzle_byte_width, full.element_bitwidth, rank=3)
    sig = {"a_desc": f"tensordesc<{dt}[{bm}, {bk}],{a_layout!r}>",
           "b_desc": f"tensordesc<{dt}[1, {bn // 2}, {bk}],{b_layout!r}>",
           "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
           "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "BLOCK_K": "constexpr", "GROUP_M": "constexpr",
           "STAGES": "constexpr", "NUM_WARPS": "constexpr", "MULTICAST": "constexpr", "EDIT": "constexpr", "SPLIT": "constexpr"}
    names = gemm_multicast_kernel.arg_names
    values = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8, "STAGES": st, "NUM_WARPS": nw,
              "MULTICAST": not args.no_multicast, "EDIT": EDIT, "SPLIT": args.split}
    constexprs = {(names.index(k),): v for k, v in values.items()}
    src = GluonASTSource(fn=gemm_multicast_kernel, signature=sig, constexprs=constexprs,
                         attrs={(names.index("c_ptr"),): [["tt.divisibility", 16]]})
    k = triton.compile(src, target=TARGET, options={"num_warps": nw})
    for line in k.asm["ptx"].splitlines():
        if any(s in line for s in ("reqnctapercluster", "multicast", "mapa", "cluster_ctarank", "barrier.cluster",
                                   "mbarrier.arrive", "cp.async.bulk.tensor", "mbarrier.init")):
            print(line.strip())
    sass = disassemble(k.asm["cubin"])
    for op in ("HGMMA", "UTMALDG", "SYNCS", "UCGABAR", "MEMBAR"):
        print(op, len(re.findall(r"\b" + op, sass)))
    print("shared", k.metadata.shared)


def _time(fn, *args, **kwargs):
    """The bench's timer (:func:`tileconv.bench.timing.bench_us`: CUDA events, L2 cleared) on
    ``fn(*args, **kwargs)``. (The runs of session 35 used this file's own loop: a median of 20
    calls after 5, a 1 GiB memset before each; the same protocol.)"""
    return bench_us(functools.partial(fn, *args, **kwargs))


def _operands(M, N, K, reference=True):
    """Random fp16 A (M, K) and B (N, K) on the GPU, and A B^T in float64 (None without ``reference``)."""
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(N, K, device="cuda", dtype=torch.float16)
    return a, b, a.double() @ b.double().T if reference else None


def _write(path, rows):
    if path:
        with open(path, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


def _run(args):
    torch.manual_seed(0)
    configs = [(128, 128, 64, 4, 4), (64, 128, 64, 5, 4), (128, 256, 64, 3, 8), (64, 256, 64, 4, 4),
               (128, 64, 64, 6, 4)]
    rows = []
    for name, (M, N, K) in (WGRAD_SHAPES if args.wgrad else SHAPES).items():
        a, b, ref = _operands(M, N, K)
        cublas = _time(torch.matmul, a, b.T)
        row = {"name": name, "M": M, "N": N, "K": K, "cublas_us": cublas}
        if not args.wgrad:  # the same GEMM as the 1x1 convolution it is: cuDNN and tileconv (its cache)
            import tileconv
            hw = int(name.split()[1][2:])
            x = a.reshape(M // (hw * hw), hw, hw, K).permute(0, 3, 1, 2)
            w = b.reshape(N, K, 1, 1)
            row["cudnn_us"] = _time(torch.nn.functional.conv2d, x, w)
            tileconv.conv2d(x, w)
            row["tileconv_us"] = _time(tileconv.conv2d, x, w)
        for cfg in (configs[:1] if args.quick else configs):
            bm, bn, bk, st, nw = cfg
            for mc in (True, False):
                print("launch", name, cfg, mc, flush=True)
                c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float16)
                try:
                    gemm(a, b, c, bm, bn, bk, st, nw, multicast=mc)
                    torch.cuda.synchronize()
                    err = ((c.double() - ref).abs().max() / ref.abs().max()).item()
                    t = _time(gemm, a, b, c, bm, bn, bk, st, nw, multicast=mc)
                except Exception as exc:  # noqa: BLE001 - a probe: record and go on
                    err, t = str(exc)[:200], None
                row[f"{'mc' if mc else 'pair'} {bm}x{bn}x{bk} s{st} w{nw}"] = {"us": t, "err": err}
        rows.append(row)
        print(json.dumps(row), flush=True)
        if args.quick:
            break
    _write(args.json, rows)


def _split(args):
    """The pair form (no multicast) with split-K: fp32 partials added atomically into C (zeroed
    for the check, not in the timed calls: the main loops' time, a bound for any split-K)."""
    torch.manual_seed(0)
    configs = [(128, 128, 64, 4, 4), (128, 256, 64, 3, 8), (64, 256, 64, 4, 4), (64, 128, 64, 5, 4)]
    rows = []
    for name, (M, N, K) in SHAPES.items():
        a, b, ref = _operands(M, N, K)
        row = {"name": name, "cublas_us": _time(torch.matmul, a, b.T)}
        for bm, bn, bk, st, nw in configs:
            for split in (1, 2, 4):
                c = torch.zeros(M, N, device="cuda", dtype=torch.float16 if split == 1 else torch.float32)
                gemm(a, b, c, bm, bn, bk, st, nw, multicast=False, split=split)
                torch.cuda.synchronize()
                err = ((c.double() - ref).abs().max() / ref.abs().max()).item()
                t = _time(gemm, a, b, c, bm, bn, bk, st, nw, multicast=False, split=split)
                row[f"{bm}x{bn} s{st} w{nw} split{split}"] = {"us": t, "err": err}
        rows.append(row)
        print(json.dumps(row), flush=True)
    _write(args.json, rows)


def _once(args):
    """Each form once on one shape (for Nsight Compute: ``ncu --kernel-name gemm_multicast_kernel``)."""
    M, N, K = {**SHAPES, **WGRAD_SHAPES}[args.shape]
    a, b, _ = _operands(M, N, K, reference=False)  # nothing but the kernels under Nsight Compute
    c = torch.empty(M, N, device="cuda", dtype=torch.float16)
    for mc in (True, False):
        gemm(a, b, c, args.block_m, args.block_n, args.block_k, args.stages, args.num_warps, multicast=mc)
    if args.peers:  # cuBLAS on the same GEMM; on a 1x1 row also cuDNN's and tileconv's convolutions
        torch.matmul(a, b.T)
        if args.shape in SHAPES:
            import tileconv
            hw = int(args.shape.split()[1][2:])
            x = a.reshape(M // (hw * hw), hw, hw, K).permute(0, 3, 1, 2)
            w = b.reshape(N, K, 1, 1)
            torch.nn.functional.conv2d(x, w)
            tileconv.conv2d(x, w)
    torch.cuda.synchronize()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=("ptx", "run", "once", "split"))
    p.add_argument("--shape", default="c2048 hw7 k512", choices=tuple(SHAPES) + tuple(WGRAD_SHAPES))
    p.add_argument("--block-m", type=int, default=128)
    p.add_argument("--block-n", type=int, default=128)
    p.add_argument("--block-k", type=int, default=64)
    p.add_argument("--stages", type=int, default=4)
    p.add_argument("--num-warps", type=int, default=4)
    p.add_argument("--no-multicast", action="store_true")
    p.add_argument("--split", type=int, default=1)
    p.add_argument("--json")
    p.add_argument("--quick", action="store_true", help="one shape, one tile")
    p.add_argument("--wgrad", action="store_true", help="the weight gradients' GEMM shapes")
    p.add_argument("--peers", action="store_true", help="once: also cuBLAS, cuDNN and tileconv")
    args = p.parse_args()
    {"ptx": _ptx, "run": _run, "once": _once, "split": _split}[args.mode](args)


if __name__ == "__main__":
    main()
