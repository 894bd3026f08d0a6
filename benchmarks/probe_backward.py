"""Kernel-development probe for the backward kernels, for one device call: time the wgrad
(or dgrad) kernel of a few ResNet-50 rows under several pinned configs against cuDNN's
``convolution_backward`` for the same gradient, each result checked against float32.

    python3 benchmarks/probe_backward.py wgrad            # the table
    python3 benchmarks/probe_backward.py wgrad --once     # one launch per row (for ncu)
    python3 benchmarks/probe_backward.py wgrad --ws       # the warp-specialized wgrad's configs, every 3x3 row
    python3 benchmarks/probe_backward.py wgrad --wave     # the ws wgrad's 128x128 split-K on the 1x1 rows whose
                                                          # auto split leaves SMs idle: auto, one full wave, two
    python3 benchmarks/probe_backward.py dw-random [N]    # N random depthwise problems: every backward
                                                          # algorithm's wgrad (and auto's dgrad) vs float64
    python3 benchmarks/probe_backward.py dw-host          # the depthwise suite's auto dgrad and wgrad:
                                                          # events against graph replay, host CPU a call
    python3 benchmarks/probe_backward.py dw-wgrad [--all] # the depthwise suite's wgrad up to 7x7 (--all:
                                                          # RepLKNet's too): the CUDA-core kernel, the
                                                          # chosen kernel's tuning candidates

Not the benchmark of record (that is ``python -m tileconv bench --pass wgrad``).
"""
import os
import sys

sys.path.insert(0, os.getcwd())
import torch
from triton.testing import do_bench

from tileconv.bench.suites import get_suite
from tileconv.functional import conv2d_backward_problem
from tileconv.kernels import BackwardConfig
from tileconv.kernels.backward import aten_convolution_backward
from tileconv.testing import compare, random_inputs, tolerance

torch.backends.cudnn.benchmark = True
gradient = sys.argv[1] if len(sys.argv) > 1 else "wgrad"
once = "--once" in sys.argv
B = BackwardConfig
CONFIGS = [None, B(128, 128, 64, 4, 8, 3), B(128, 128, 64, 1, 8, 4), B(128, 128, 32, 4, 8, 4), B(64, 128, 64, 4, 4, 4),
           B(128, 64, 64, 4, 4, 4), B(128, 256, 64, 2, 8, 3), B(256, 128, 64, 2, 8, 3)]
ROWS = ("r50 c64 hw56 k64 3x3/1", "r50 c256 hw14 k256 3x3/1", "r50 c512 hw7 k512 3x3/1", "r50 c64 hw56 k64 1x1/1",
        "r50 c1024 hw14 k256 1x1/1")
if "--wave" in sys.argv:
    ROWS = ("r50 c128 hw28 k512 1x1/1", "r50 c512 hw28 k128 1x1/1", "r50 c256 hw14 k1024 1x1/1",
            "r50 c1024 hw14 k256 1x1/1", "r50 c1024 hw14 k512 1x1/1", "r50 c512 hw28 k256 1x1/1")
if "--ws" in sys.argv:  # the warp-specialized wgrad (kernels/wgrad_ws.py) on every 3x3 row and two 1x1s
    CONFIGS = [None] + [B(bm, bn, bk, sk, w, st, ws=1) for bm, bn, bk, sk, w, st in (
        (128, 128, 64, 0, 4, 4), (128, 128, 64, 0, 4, 3), (256, 128, 64, 0, 8, 4), (128, 256, 64, 0, 8, 4),
        (256, 128, 64, 0, 8, 3), (128, 128, 64, 0, 8, 4), (64, 128, 64, 0, 4, 4), (128, 64, 64, 0, 4, 4),
        (256, 128, 32, 0, 8, 6))]
    ROWS = tuple(c.name for c in get_suite("resnet50") if c.r == 3) + ("r50 c64 hw56 k64 1x1/1", "r50 c1024 hw14 k256 1x1/1")


def probe_depthwise(name, p):
    """The depthwise wgrad of ``p``: cuDNN, the CUDA-core kernel (its heuristics), and every
    candidate the chosen kernel's tuning would race (the halo's or the Toeplitz GEMM's),
    each checked against float32."""
    from tileconv.dispatch.heuristics import choose_backward_algorithm, default_backward_config
    from tileconv.dispatch.tune_backward import backward_candidates

    i = random_inputs(p, "cuda", seed=0)
    grad = torch.randn(p.output_shape, device="cuda", dtype=p.dtype).contiguous(memory_format=torch.channels_last)
    chosen = choose_backward_algorithm(p)  # depthwise_halo up to 7x7, depthwise_toeplitz past it
    if once:  # the heuristics' config and the first variant, one launch each (for ncu)
        for cfg in backward_candidates(p, chosen, "wgrad", 2):
            conv2d_backward_problem(p, grad, i.x, i.weight, False, True, algo=chosen, wgrad_config=cfg)
        torch.cuda.synchronize()
        return
    ref = aten_convolution_backward(p, grad.float(), i.x.float(), i.weight.float(), False, True)[1]
    t_ref = do_bench(lambda: aten_convolution_backward(p, grad, i.x, i.weight, False, True), warmup=25, rep=100,
                     return_mode="median")
    print(f"{name:28s} cudnn {t_ref * 1e3:8.1f} us", flush=True)
    runs = [("depthwise", default_backward_config(p, "depthwise", "wgrad"))]
    runs += [(chosen, c) for c in backward_candidates(p, chosen, "wgrad")]
    for algo, cfg in runs:
        def ours(algo=algo, cfg=cfg):
            return conv2d_backward_problem(p, grad, i.x, i.weight, False, True, algo=algo, wgrad_config=cfg)[1]
        try:
            ok = compare(ours(), ref, tolerance(p, p.gemm_m)).ok
            t = do_bench(ours, warmup=25, rep=100, return_mode="median")
            print(f"{'':28s} {t * 1e3:8.1f} us  {t_ref / t:5.2f}x  {algo:15s} {cfg}  ok {ok}", flush=True)
        except Exception as err:  # noqa: BLE001 - a probe reports and goes on
            print(f"{'':28s} {algo} {cfg}: {type(err).__name__}: {str(err)[:200]}", flush=True)


def probe(name, p):
    i = random_inputs(p, "cuda", seed=0)
    grad = torch.randn(p.output_shape, device="cuda", dtype=p.dtype).contiguous(memory_format=torch.channels_last)
    need_x, need_w = gradient == "dgrad", gradient == "wgrad"
    ref = aten_convolution_backward(p, grad.float(), i.x.float(), i.weight.float(), need_x, need_w)[0 if need_x else 1]

    def cudnn():
        return aten_convolution_backward(p, grad, i.x, i.weight, need_x, need_w)

    def ours(cfg):
        kw = {"dgrad_config" if need_x else "wgrad_config": cfg}
        return conv2d_backward_problem(p, grad, i.x, i.weight, need_x, need_w, **kw)[0 if need_x else 1]

    if once:  # one launch each of tileconv's heuristics (with --ws: the first ws config) and cuDNN (for ncu)
        ours(CONFIGS[1] if "--ws" in sys.argv else None)
        cudnn()
        return
    t_ref = do_bench(cudnn, warmup=25, rep=100, return_mode="median")
    print(f"{name:28s} cudnn {t_ref * 1e3:7.1f} us  {p.flops / t_ref / 1e9:6.1f} TFLOP/s", flush=True)
    configs = CONFIGS
    if "--wave" in sys.argv:  # 128x128 tiles, the launcher's split, then as many splits as fill one and two waves
        tiles = (p.k // 128) * (p.c // 128)
        configs = [None] + [B(128, 128, 64, split, 4, 4, ws=1) for split in (0, 132 // tiles, 264 // tiles)]
    for cfg in configs:
        try:
            ok = compare(ours(cfg), ref, tolerance(p, p.gemm_m if need_w else p.k * p.r * p.s)).ok
            t = do_bench(lambda cfg=cfg: ours(cfg), warmup=25, rep=100, return_mode="median")
            print(f"{'':28s} {t * 1e3:7.1f} us  {t_ref / t:5.2f}x  {p.flops / t / 1e9:6.1f} TFLOP/s  "
                  f"{cfg or 'heuristics'}  ok {ok}", flush=True)
        except Exception as err:  # noqa: BLE001 - a probe reports and goes on
            print(f"{'':28s} {cfg}: {type(err).__name__}: {str(err)[:100]}", flush=True)


def probe_host(name, p, profile=False):
    """The default (auto) dgrad and wgrad of ``p`` as bench times them (events, cold L2) against
    a CUDA-graph replay of the same call, and their host CPU time a call: a row whose event
    time exceeds its graph time is measuring the host. ``profile``: cProfile of the wgrad's calls."""
    import cProfile
    import pstats
    import time

    from tileconv.bench.host import _graph_us
    from tileconv.bench.timing import bench_us

    i = random_inputs(p, "cuda", seed=0)
    grad = torch.randn(p.output_shape, device="cuda", dtype=p.dtype).contiguous(memory_format=torch.channels_last)
    for gradient_name, need_x in (("dgrad", True), ("wgrad", False)):
        def call(need_x=need_x):
            return conv2d_backward_problem(p, grad, i.x, i.weight, need_x, not need_x)
        events, graph = bench_us(call), _graph_us(call)
        for _ in range(20):
            call()
        torch.cuda.synchronize()
        cpu = time.thread_time()
        for _ in range(200):
            call()
        cpu = (time.thread_time() - cpu) / 200 * 1e6
        torch.cuda.synchronize()
        print(f"{name:28s} {gradient_name}: events {events:7.1f} us, graph {graph:7.1f} us, "
              f"host {cpu:6.1f} us CPU a call", flush=True)
        if profile and not need_x:
            profiler = cProfile.Profile()
            profiler.enable()
            for _ in range(200):
                call()
            profiler.disable()
            torch.cuda.synchronize()
            pstats.Stats(profiler).sort_stats("tottime").print_stats(12)


def random_depthwise(cases: int, seed: int) -> int:
    """``cases`` random depthwise problems (multiplier 1 and 2, channels_last and NCHW, fp16,
    bf16, fp32; filters 1x1 to 15x15, strides, paddings, dilations, small and ragged images):
    the wgrad of every backward algorithm that runs each (and auto's dgrad), outputs poisoned,
    against float64. Returns the failures."""
    import random

    import tileconv
    from tileconv.kernels import BACKWARD_ALGORITHMS

    rng = random.Random(seed)
    failures = checked = 0
    while checked < cases:
        c = rng.choice([8, 16, 24, 32, 40, 64, 96, 136])
        mult = rng.choice([1, 1, 1, 2])
        r, s = rng.choice([(1, 1), (3, 3), (3, 3), (5, 5), (7, 7), (7, 7), (3, 5), (9, 9), (13, 13), (15, 7)])
        dtype = rng.choice([torch.float16, torch.float16, torch.bfloat16, torch.float32])
        layout = rng.choice(["nhwc", "nhwc", "nhwc", "nchw"])
        stride, dil = (rng.choice([1, 1, 2, 3]), rng.choice([1, 1, 2])), (rng.choice([1, 1, 2]), rng.choice([1, 1, 2]))
        pad = (rng.randint(0, r), rng.randint(0, s))
        n, h, w = rng.randint(1, 4), rng.randint(1, 40), rng.randint(1, 40)
        x = torch.randn(n, c, h, w, device="cuda").to(dtype)
        if layout == "nhwc":
            x = x.contiguous(memory_format=torch.channels_last)
        weight = (torch.randn(c * mult, 1, r, s, device="cuda") / (r * s) ** 0.5).to(dtype)
        try:
            p = tileconv.problem_from_arguments(x, weight, None, stride, pad, dil, c)
        except ValueError:
            continue  # an empty output
        checked += 1
        grad = torch.randn(p.output_shape, device="cuda").to(dtype).contiguous(
            memory_format=torch.channels_last if layout == "nhwc" else torch.contiguous_format)
        ref_x, ref_w = aten_convolution_backward(p, grad.double(), x.double(), weight.double(), True, True)
        algos = ["auto"] + [a for a in ("depthwise", "depthwise_halo", "depthwise_toeplitz")
                            if BACKWARD_ALGORITHMS[a].unsupported_reason(p) is None]
        for algo in algos:
            with tileconv.poison_outputs():
                got_x, got_w = conv2d_backward_problem(p, grad, x, weight, algo == "auto", True, algo=algo)
            bad = []
            if not compare(got_w, ref_w, tolerance(p, p.gemm_m)).ok:
                bad.append("wgrad")
            if algo == "auto" and not compare(got_x, ref_x, tolerance(p, p.k_per_group * r * s)).ok:
                bad.append("dgrad")
            if bad:
                failures += 1
                print(f"FAILED {bad} {algo}: {p.describe()} {p.dtype_name} {p.layout}", flush=True)
        print(f"[{checked}/{cases}] {failures} failures; {p.describe()} {p.dtype_name} {p.layout}: {', '.join(algos)}",
              flush=True)
    print(f"{checked} random depthwise problems, {failures} failures", flush=True)
    return failures


print(torch.cuda.get_device_name(), flush=True)
if gradient == "dw-random":
    sys.exit(1 if random_depthwise(int(sys.argv[2]) if len(sys.argv) > 2 else 200, 14) else 0)
if gradient == "dw-host":
    for case in get_suite("depthwise"):
        probe_host(case.name, case.problem(torch.float16, "nhwc"), profile="c768" in case.name)
    sys.exit(0)
if gradient == "dw-wgrad":
    for case in get_suite("depthwise"):
        rows = [a[len("--rows="):] for a in sys.argv if a.startswith("--rows=")]
        if (case.r <= 7 or "--all" in sys.argv) and (not rows or any(r in case.name for r in rows[0].split(","))):
            probe_depthwise(case.name, case.problem(torch.float16, "nhwc"))
    sys.exit(0)
for case in get_suite("resnet50"):
    if case.name in ROWS:
        probe(case.name, case.problem(torch.float16, "nhwc"))
