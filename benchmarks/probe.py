"""Kernel-development probe for one device call: for a list of problems, time tileconv's
chosen config and a few pinned alternatives against cuDNN, check each against a float32
reference, and count the SASS instructions of one implicit-GEMM compile (HGMMA present?).

    python3 benchmarks/probe.py gemm     # dense: seed000, resnet50, vae
    python3 benchmarks/probe.py direct   # depthwise, grouped, seed003, the stem
    python3 benchmarks/probe.py toeplitz # dense_toeplitz: seed003 (three dtypes), the stem, the VAE's C = 4
    python3 benchmarks/probe.py rows6    # direct_rows (CUDA cores, all K a thread) against dense_toeplitz on seed003
    python3 benchmarks/probe.py plane    # depthwise_plane: the depthwise suite's 7x7-plane rows, both layouts
    python3 benchmarks/probe.py unroll   # the CUDA-core depthwise/direct kernels: tap unrolling x register caps
    python3 benchmarks/probe.py rows     # depthwise_rows (rows loaded ahead, row stride 1 and 2) on the 3x3 rows
    python3 benchmarks/probe.py ws       # implicit_gemm_ws (Gluon, warp-specialized) on the dense rows, fp16 and TF32
    python3 benchmarks/probe.py waves    # 3x3 and 1x1 rows at batch sizes of 0.56 to 2 rounds of tiles (wave quantization)
    python3 benchmarks/probe.py tf32k    # TF32 channel blocks of 64 and 16 (the candidates keep 32) on ResNet-50's rows
    python3 benchmarks/probe.py halo     # depthwise_halo (Gluon, shared-memory halo) on the depthwise rows up to 7x7
    python3 benchmarks/probe.py grouped  # the grouped suite: pipelined (cp.async, L2) against unpipelined (LDG, L1) tiles

Not the benchmark of record (that is ``python -m tileconv bench``); a bench for trying
configs quickly. Writes the cubin and TTGIR of the inspected kernel under $OUT.
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.getcwd())
import torch
import torch.nn.functional as F
import triton
from triton.testing import do_bench

import tileconv
from tileconv.bench.suites import get_suite
from tileconv.dispatch import select
from tileconv.functional import conv2d_problem
from tileconv.kernels import LaunchConfig
from tileconv.kernels.launch import launch_implicit_gemm
from tileconv.testing import compare, random_inputs, tolerance

torch.backends.cudnn.benchmark = True
torch.backends.cudnn.allow_tf32 = False  # the reference below must be true fp32
OUT = os.environ.get("OUT", "/tmp")
print(torch.cuda.get_device_name(), torch.__version__, triton.__version__, torch.backends.cudnn.version(), flush=True)

def cudnn_fn(p, i):
    def f():
        torch.backends.cudnn.allow_tf32 = p.allow_tf32
        return p.epilogue.torch_apply(F.conv2d(i.x, i.weight, None, p.stride, p.padding, p.dilation, p.groups), i.bias, i.residual)
    return f

def bench_problem(name, p, configs, algo="auto"):
    i = random_inputs(p, "cuda", seed=0)
    torch.backends.cudnn.allow_tf32 = False  # a true fp32 reference (cudnn_fn sets it per problem)
    ref = F.conv2d(i.x.float(), i.weight.float(), None, p.stride, p.padding, p.dilation, p.groups)
    ref = p.epilogue.torch_apply(ref, None if i.bias is None else i.bias.float(), None if i.residual is None else i.residual.float())
    t_cudnn = do_bench(cudnn_fn(p, i), warmup=25, rep=100, return_mode="median")
    rows = []
    for cfg in configs:
        try:
            with tileconv.poison_outputs():
                out = conv2d_problem(p, i.x, i.weight, i.bias, i.residual, algo=algo, config=cfg)
            cmp = compare(out, ref, tolerance(p))
            t = do_bench(lambda cfg=cfg: conv2d_problem(p, i.x, i.weight, i.bias, i.residual, algo=algo, config=cfg),
                         warmup=25, rep=100, return_mode="median")
            rows.append((t, cfg, cmp.rel_err, cmp.ok))
        except Exception as e:
            rows.append((float("inf"), cfg, str(e)[:80], False))
    rows.sort(key=lambda r: r[0])
    best = rows[0]
    tf = p.flops / best[0] / 1e9
    print(f"{name:34s} cudnn {t_cudnn*1e3:8.1f}us  best {best[0]*1e3:8.1f}us {tf:6.1f}TF  x{t_cudnn/best[0]:5.2f}  {best[1]}  err {best[2]} ok {best[3]}", flush=True)
    for r in rows[1:]:
        print(f"{'':34s}   {r[0]*1e3:8.1f}us  {r[1]} err {r[2]} ok {r[3]}", flush=True)
    return t_cudnn, best

C = LaunchConfig
mode = sys.argv[1] if len(sys.argv) > 1 else "gemm"
if mode == "gemm":
    P = lambda *a, **k: C(*a, **k)
    cfgs = [None, C(128,128,64,8,8,3), C(128,64,64,8,4,3), C(128,256,64,8,8,3), C(64,128,64,8,4,4),
            P(128,128,64,8,8,3,persistent=1), P(128,128,64,8,8,4,persistent=1), P(128,64,64,8,4,3,persistent=2), P(128,64,64,8,4,4,persistent=1),
            P(128,256,64,8,8,3,persistent=1), P(64,128,64,8,4,4,persistent=2), P(128,128,64,8,4,3,persistent=1), P(64,64,64,8,4,4,persistent=2)]
    cases = [c for c in get_suite("seed") if c.name.startswith("seed000")] + get_suite("resnet50")[1:] + get_suite("vae")[1:3]
    for c in cases:
        p = c.problem(torch.float16, "nhwc")
        algo, hc = select(p)
        bench_problem(c.name, p, [hc if x is None else x for x in cfgs], "implicit_gemm")
elif mode == "direct":
    for c in get_suite("depthwise"):
        for layout in ("nhwc", "nchw") if "c144" in c.name or "c384" in c.name else ("nhwc",):
            p = c.problem(torch.float16, layout)
            algo, hc = select(p)
            if layout == "nhwc":
                cfgs = [hc, C(512,64,16,num_warps=4), C(1024,32,32,num_warps=4), C(256,64,8,num_warps=4), C(256,128,16,num_warps=8), C(512,32,16,num_warps=2)]
            else:
                cfgs = [hc, C(256,4,32), C(128,8,16), C(512,8,32,num_warps=8)]
            bench_problem(c.name + " " + layout + " " + algo.name, p, cfgs, algo.name)
    for c in get_suite("grouped") + [c for c in get_suite("seed") if c.name == "seed003"] + get_suite("resnet50")[:1]:
        for dt, layout in ((torch.float16, "nhwc"), (torch.float32, "nchw")) if c.name == "seed003" else ((torch.float16, "nhwc"),):
            p = c.problem(dt, layout)
            algo, hc = select(p)
            cfgs = [hc, C(128,32,32,8,4,3, hc.fuse_sc), C(64,32,32,8,4,3, hc.fuse_sc), C(128,64,64,8,4,3,hc.fuse_sc), C(128,16,64,8,4,3,hc.fuse_sc), C(256,16,32,8,8,3,hc.fuse_sc)]
            bench_problem(c.name + " " + str(dt)[6:] + " " + algo.name, p, cfgs, algo.name)
elif mode == "toeplitz":
    # dense_toeplitz (few input channels): its heuristic tile and the tuning candidates against the
    # heuristics' own algorithm and against cuDNN, on seed003 (fp16 NHWC, strict fp32 and TF32 NCHW),
    # the stems (ResNet-50's 7x7/2) and the VAE's C = 4 input layer.
    from tileconv.dispatch.candidates import dense_toeplitz_candidates
    cases = ([c for c in get_suite("seed") if c.name == "seed003"] + get_suite("resnet50")[:1]
             + [c for c in get_suite("vae") if c.name == "vae c4 hw64 k512"])
    for c in cases:
        combos = (((torch.float16, "nhwc", False), (torch.float32, "nchw", False), (torch.float32, "nchw", True),
                   (torch.float16, "nchw", False)) if c.name == "seed003" else ((torch.float16, "nhwc", False),))
        for dt, layout, tf32 in combos:
            torch.backends.cudnn.allow_tf32 = tf32
            p = c.problem(dt, layout, allow_tf32=tf32)
            algo, hc = select(p)
            label = f"{c.name} {str(dt)[6:]}{'+tf32' if tf32 else ''} {layout}"
            bench_problem(label + " " + algo.name, p, [hc], algo.name)
            bench_problem(label + " dense_toeplitz", p, dense_toeplitz_candidates(p), "dense_toeplitz")
    torch.backends.cudnn.allow_tf32 = False
elif mode == "rows6":
    # direct_rows (every output channel of a few columns a thread, FMA units) against dense_toeplitz
    # (banded tensor-core GEMMs) and cuDNN on seed003: fp16 NHWC, strict fp32 and TF32 NCHW, fp16 NCHW,
    # strict fp32 NHWC; plain and with the bias_relu epilogue.
    from tileconv.dispatch.candidates import direct_rows_candidates
    seed003 = next(c for c in get_suite("seed") if c.name == "seed003")
    for dt, layout, tf32 in ((torch.float32, "nchw", False), (torch.float16, "nhwc", False), (torch.float32, "nchw", True),
                             (torch.float16, "nchw", False), (torch.float32, "nhwc", False)):
        for epilogue in ("none", "bias_relu"):
            torch.backends.cudnn.allow_tf32 = tf32
            p = seed003.problem(dt, layout, epilogue, allow_tf32=tf32)
            algo, hc = select(p)
            label = f"seed003 {str(dt)[6:]}{'+tf32' if tf32 else ''} {layout} {epilogue}"
            bench_problem(label + " " + algo.name, p, [hc], algo.name)
            bench_problem(label + " direct_rows", p, direct_rows_candidates(p), "direct_rows")
    torch.backends.cudnn.allow_tf32 = False
elif mode == "plane":
    # depthwise_plane (whole 7x7 planes, one GEMM a channel): its candidates against the
    # heuristics' kernel and cuDNN on the depthwise suite's 7x7-plane rows, both layouts.
    from tileconv.dispatch.candidates import depthwise_plane_candidates
    for c in get_suite("depthwise"):
        if c.h * c.w > 64:
            continue
        for layout in ("nhwc", "nchw"):
            p = c.problem(torch.float16, layout)
            algo, hc = select(p)
            bench_problem(f"{c.name} {layout} {algo.name}", p, [hc], algo.name)
            bench_problem(f"{c.name} {layout} depthwise_plane", p, depthwise_plane_candidates(p), "depthwise_plane")
elif mode == "unroll":
    # The CUDA-core kernels on the depthwise rows they win (fp16 NHWC, each row's tuned winner of
    # session 10): the taps unrolled whole / by filter row / not at all, times a register cap
    # (ptxas's maxnreg: Nsight Compute found the whole unroll at 128 registers, 25% occupancy).
    from tileconv import call_plans
    from tileconv.kernels import launch as L
    real_unrolled, real_launch = L.unrolled_taps, L.launch
    rows = {"mbv2 dw3x3 c32 hw112/1": ("depthwise", C(64, 32, 8, num_warps=4)),
            "mbv2 dw3x3 c144 hw56/1": ("depthwise", C(64, 32, 8, num_warps=4)),
            "mbv2 dw3x3 c96 hw112/2": ("depthwise", C(64, 32, 8, num_warps=4)),
            "mbv2 dw3x3 c576 hw14/1": ("depthwise", C(32, 64, 16, num_warps=4)),
            "mbv2 dw3x3 c192 hw28/1": ("direct", C(64, 64, 32, num_warps=4)),
            "convnext dw7x7 c96 hw56": ("direct", C(128, 32, 32, num_warps=4))}
    policy = {"unroll": "full", "maxnreg": None}

    def forced_unroll(problem, tile_elements, num_warps):
        if policy["unroll"] == "full":
            return dict(UNROLL_R=problem.r, UNROLL_S=problem.s)
        return dict(UNROLL_R=0, UNROLL_S=problem.s if policy["unroll"] == "row" else 0)

    def capped_launch(kernel, grid, *args, **kwargs):
        if policy["maxnreg"] and getattr(kernel, "__name__", "") in ("conv2d_depthwise_kernel", "conv2d_direct_kernel"):
            kwargs["maxnreg"] = policy["maxnreg"]
        return real_launch(kernel, grid, *args, **kwargs)

    L.unrolled_taps, L.launch = forced_unroll, capped_launch
    for c in get_suite("depthwise"):
        if c.name not in rows:
            continue
        algo_name, cfg = rows[c.name]
        p = c.problem(torch.float16, "nhwc")
        for unroll in ("full", "row", "none"):
            for maxnreg in (None, 96, 64):
                policy.update(unroll=unroll, maxnreg=maxnreg)
                call_plans.clear()
                bench_problem(f"{c.name} {algo_name} {unroll} nreg{maxnreg}", p, [cfg], algo_name)
    L.unrolled_taps, L.launch = real_unrolled, real_launch
elif mode == "rows":
    # depthwise_rows's candidates (num_stages 2: the next input rows loaded ahead) against the
    # heuristics' kernel and cuDNN on the depthwise suite's 3x3 rows (fp16 NHWC). Session 10's
    # run also raced the nine weight vectors reloaded from L1 every row: slower on all ten rows.
    from tileconv.dispatch.candidates import depthwise_rows_candidates
    for c in get_suite("depthwise"):
        p = c.problem(torch.float16, "nhwc")
        if p.r != 3:
            continue
        algo, hc = select(p)
        bench_problem(f"{c.name} {algo.name}", p, [hc], algo.name)
        bench_problem(f"{c.name} depthwise_rows", p, depthwise_rows_candidates(p), "depthwise_rows")
elif mode == "ws":
    # The warp-specialized Gluon implicit GEMM against the heuristics' choice and cuDNN, fp16 and
    # TF32 NHWC: seed000 (14-wide rows), ResNet-50's 3x3 and strided rows, seed001, the VAE.
    # (Session 11's run also raced tma_shift, each tap a shifted TMA box of the pixel matrix with
    # the borders masked in registers: 0.35x-1.01x of cuDNN, slower than the heuristics' kernel on
    # every row, its wgmma serialized by the register operand; removed.)
    from dataclasses import replace as _replace
    ws = [C(128,256,64,8,8,3), C(128,128,64,8,8,4), C(128,128,64,8,4,4), C(128,64,64,8,4,5), C(64,128,64,8,4,5), C(128,256,64,8,8,4),
          C(128,128,64,8,4,6,pingpong=1), C(128,128,64,8,4,5,pingpong=1), C(64,128,64,8,4,6,pingpong=1), C(128,64,64,8,4,6,pingpong=1)]
    if len(sys.argv) > 2:  # "pingpong": only the ping-pong configs and the best single-consumer ones
        ws = [C(128,256,64,8,8,4), C(128,128,64,8,4,4), C(64,128,64,8,4,5)] + ws[6:]
    names = ("seed000", "r50 c64 hw56 k64 3x3/1", "r50 c128 hw28 k128 3x3/1", "r50 c256 hw14 k256 3x3/1", "r50 c512 hw7 k512 3x3/1",
             "r50 c128 hw56 k128 3x3/2", "r50 c256 hw28 k256 3x3/2", "r50 c256 hw56 k512 1x1/2", "r50 c2048 hw7 k512 1x1/1",
             "seed001 c64 hw128 k256", "seed001 c32 hw64 k128", "vae c512 hw64 k512")
    cases = {c.name: c for s in ("seed", "resnet50", "vae") for c in get_suite(s)}
    if len(sys.argv) > 3:  # a third argument picks the rows whose name contains it
        names = tuple(n for n in names if sys.argv[3] in n)
    for dt in ("fp16", "tf32"):
        for name in names:
            p = cases[name].problem(torch.float32 if dt == "tf32" else torch.float16, "nhwc")
            if dt == "tf32":
                p = _replace(p, allow_tf32=True)
            algo, hc = select(p)
            bench_problem(f"{name} {dt} {algo.name}", p, [hc], algo.name)
            bench_problem(f"{name} {dt} ws", p, [c if dt == "fp16" else _replace(c, block_k=32) for c in ws], "implicit_gemm_ws")
elif mode == "waves":
    # Wave quantization: the same layers at batch sizes that give 0.56 to 2 rounds of 128x128 tiles
    # on 132 SMs, one pinned config each (session 17: timed by events here, these small rows can be
    # host-bound; CUDA-graph replays gave TF32 c256 hw14 3x3 44.8 us at 98 tiles, 45.4 at 132, 85.8
    # at 196: the last round costs a whole round).
    from tileconv._runtime import cdiv
    from tileconv.problem import ConvProblem
    rows = [((256, 14, 256, 3, 1), "implicit_gemm_ws", (24, 32, 43, 64, 86)),
            ((128, 28, 128, 3, 1), "implicit_gemm_ws", (16, 22, 32, 43)),
            ((128, 28, 128, 3, 1), "implicit_gemm", (16, 22, 32, 43)),
            ((1024, 14, 512, 1, 1), "gemm_1x1", (22, 32, 43, 64))]
    for dt in ("fp16", "tf32"):
        for (c, hw, k, rs, st), algo, batches in rows:
            for n in batches:
                p = ConvProblem(n, c, hw, hw, k, rs, rs, (st, st), (rs // 2, rs // 2),
                                dtype=torch.float32 if dt == "tf32" else torch.float16, layout="nhwc", allow_tf32=dt == "tf32")
                bk = 64 if dt == "fp16" else 32
                cfg = C(128, 128, bk, 8, 8 if algo == "implicit_gemm_ws" else 4, 4, persistent=1 if algo == "gemm_1x1" else 0)
                tiles = cdiv(p.gemm_m, 128) * cdiv(k, 128)
                bench_problem(f"{dt} c{c} hw{hw} k{k} {rs}x{rs} n{n} {algo} tiles {tiles} waves {tiles / 132:.2f}", p, [cfg], algo)
    sys.exit(0)
elif mode == "tf32k":
    # TF32 channel blocks: the tuning candidates keep 32 fp32 channels a step (128 bytes a row, as
    # 16-bit's 64); here 64 (two 128-byte swizzle atoms a row, half the steps and mbarrier waits) and
    # 16 (a deeper ring) on ResNet-50's TF32 NHWC rows, beside the heuristics' pick and cuDNN.
    from dataclasses import replace as _replace
    for c in get_suite("resnet50")[1:]:
        if len(sys.argv) > 2 and sys.argv[2] not in c.name:
            continue
        p = _replace(c.problem(torch.float32, "nhwc"), allow_tf32=True)
        algo, hc = select(p)
        bench_problem(f"{c.name} tf32 {algo.name}", p, [hc], algo.name)
        if p.r * p.s == 1 and p.stride == (1, 1):
            bench_problem(f"{c.name} tf32 gemm_1x1 bk", p, [C(128, 128, 64, 8, 4, 2, persistent=1), C(128, 64, 64, 8, 4, 3, persistent=1),
                                                         C(64, 128, 64, 8, 4, 3, persistent=1), C(128, 128, 16, 8, 4, 8, persistent=1)], "gemm_1x1")
        else:
            bench_problem(f"{c.name} tf32 ws bk", p, [C(128, 128, 64, 8, 4, 2), C(64, 128, 64, 8, 4, 3), C(128, 64, 64, 8, 4, 3),
                                                   C(128, 128, 16, 8, 4, 8), C(128, 128, 16, 8, 8, 8), C(64, 128, 16, 8, 4, 10)],
                          "implicit_gemm_ws")
    sys.exit(0)
elif mode == "halo":
    # depthwise_halo's candidates against the heuristics' kernel and cuDNN on the depthwise
    # suite's rows up to 7x7 (fp16 NHWC; a second argument, comma-separated, picks rows whose name
    # contains one of its parts).
    from tileconv.dispatch.candidates import depthwise_halo_candidates
    for c in get_suite("depthwise"):
        if c.r > 7 or (len(sys.argv) > 2 and not any(part in c.name for part in sys.argv[2].split(","))):
            continue
        p = c.problem(torch.float16, "nhwc")
        algo, hc = select(p)
        bench_problem(f"{c.name} {algo.name}", p, [hc], algo.name)
        bench_problem(f"{c.name} depthwise_halo", p, depthwise_halo_candidates(p), "depthwise_halo")
    sys.exit(0)
elif mode == "grouped":
    # The grouped suite's rows (fp16 NHWC): the heuristics' pick and cuDNN beside grouped_gemm and
    # implicit_gemm tiles at 1 stage (plain loads: LDG through L1, where a tile's nine taps overlap)
    # and pipelined (cp.async.cg, which Triton and Gluon 3.6 emit for every 16-byte copy whatever
    # the cache modifier: each tap from L2, nine times the input's bytes). Session 22 (H200): L1 hit
    # 62% at 1 stage, but slower on every row (c128 hw56 66.8 us against 53.6 pipelined).
    for c in get_suite("grouped"):
        if len(sys.argv) > 2 and sys.argv[2] not in c.name:
            continue
        p = c.problem(torch.float16, "nhwc")
        algo, hc = select(p)
        bench_problem(f"{c.name} {algo.name}", p, [hc], algo.name)
        one = [C(128,32,32,8,4,1), C(64,32,32,8,4,1), C(64,32,32,8,2,1), C(256,32,32,8,8,1), C(128,32,32,8,8,1), C(32,32,32,8,1,1)]
        piped = [C(128,32,32,8,4,4), C(64,32,32,8,4,4), C(128,32,32,8,4,2), C(256,32,32,8,8,3)]
        for name in ("grouped_gemm", "implicit_gemm"):
            if name == "grouped_gemm" and p.c_per_group >= 32:
                continue
            bench_problem(f"{c.name} {name} 1-stage", p, one, name)
            bench_problem(f"{c.name} {name} piped", p, piped, name)
    sys.exit(0)
# SASS check
p = get_suite("resnet50")[2].problem(torch.float16, "nhwc")
i = random_inputs(p, "cuda", seed=0)
out = torch.empty(p.output_shape, device="cuda", dtype=p.dtype).contiguous(memory_format=torch.channels_last)
k = launch_implicit_gemm(p, i.x, i.weight, None, None, out, C(128,128,64,8,8,4))
open(f"{OUT}/k.cubin", "wb").write(k.asm["cubin"])
open(f"{OUT}/k.ttgir", "w").write(k.asm["ttgir"])
sass = subprocess.run(["cuobjdump", "-sass", f"{OUT}/k.cubin"], capture_output=True, text=True).stdout
ops = {}
for m in re.finditer(r"\b(HGMMA|HMMA|LDGSTS|UTMALDG|LDG|LDS|LDSM|STS|BAR|WARPGROUP)\S*", sass):
    ops[m.group(1)] = ops.get(m.group(1), 0) + 1
print("SASS op counts:", ops, "| ttgir mma:", set(re.findall(r"(nvidia_mma<\{versionMajor = \d)", k.asm["ttgir"])), "regs", k.n_regs, "spills", k.n_spills, "shared", k.metadata.shared)
