"""Cold-L2 and steady-state times of pinned configs beside cuDNN, and single launches for Nsight Compute.

    python benchmarks/probe_steady.py                 # times: do_bench (L2 cleared) and CUDA-graph replay
    ncu --profile-from-start off ... python benchmarks/probe_steady.py --ncu   # one profiled launch each
    ncu --profile-from-start off --section WarpStateStats --section SchedulerStats --section SpeedOfLight \
        python benchmarks/probe_steady.py --ncu --rows 4,5,6   # the 1x1 rows: gemm_1x1_ws beside cuDNN

The bench of record clears the L2 cache before every timed call; a CUDA-graph replay of 20 calls
on the same inputs shows what each kernel costs once its operands are on chip (what cuDNN's
profile in session 18 measured). A row where the two disagree between tileconv and cuDNN is
limited by something other than first-touch traffic. Not the benchmark of record.
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # (ncu_one's profiled)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from ncu_one import profiled  # noqa: E402
from triton.testing import do_bench  # noqa: E402

from tileconv.bench.models import cuda_graph_call  # noqa: E402
from tileconv.bench.suites import get_suite  # noqa: E402
from tileconv.dispatch import select  # noqa: E402
from tileconv.functional import conv2d_problem  # noqa: E402
from tileconv.kernels import LaunchConfig as C  # noqa: E402
from tileconv.testing import compare, random_inputs, tolerance  # noqa: E402

WS = "implicit_gemm_ws"
# (suite row, dtype, [(algorithm, config), ...]); None: the heuristics' choice.
ROWS = [
    ("r50 c256 hw14 k256 3x3/1", "tf32", [
        None,
        (WS, C(128, 128, 32, 8, 8, 4)), (WS, C(128, 128, 32, 8, 4, 4)), (WS, C(128, 128, 32, 8, 4, 6)),
        (WS, C(64, 128, 32, 8, 4, 6)), (WS, C(64, 128, 64, 8, 4, 3)), (WS, C(128, 128, 32, 8, 4, 4, pingpong=1)),
        (WS, C(64, 64, 32, 8, 4, 6)), (WS, C(128, 256, 32, 8, 8, 3)), ("implicit_gemm", C(64, 64, 32, 8, 4, 4)),
    ]),
    ("r50 c256 hw14 k256 3x3/1", "float16", [
        None, (WS, C(128, 128, 64, 8, 4, 4)), (WS, C(128, 128, 64, 8, 8, 4)), (WS, C(64, 128, 64, 8, 4, 5)),
        ("implicit_gemm", C(128, 128, 64, 8, 4, 4)),
    ]),
    ("r50 c128 hw28 k128 3x3/1", "tf32", [None, (WS, C(64, 128, 64, 8, 4, 3)), (WS, C(128, 128, 32, 8, 8, 4))]),
    ("r50 c256 hw28 k256 3x3/2", "tf32", [None, (WS, C(128, 128, 32, 8, 8, 4)), (WS, C(64, 128, 64, 8, 4, 3))]),
    # Issue 4's stride-1 1x1 rows under 0.90x (sessions 35-53): gemm_1x1_ws's heuristic tile (the
    # tuner's pick on these rows) beside cuDNN's GEMM, for Nsight Compute's stall reasons
    # (rows 4-6: --ncu --rows 4,5,6).
    ("r50 c2048 hw7 k512 1x1/1", "float16", [None, ("gemm_1x1_ws", C(128, 128, 64, 8, 4, 6))]),
    ("r50 c512 hw28 k256 1x1/1", "float16", [None, ("gemm_1x1_ws", C(128, 128, 64, 8, 4, 6))]),
    ("r50 c1024 hw14 k256 1x1/1", "float16", [None, ("gemm_1x1_ws", C(128, 128, 64, 8, 4, 6))]),
]


def graph_us(fn, calls: int = 20, replays: int = 20) -> float:
    """Median microseconds a call over CUDA-graph replays of ``calls`` back-to-back calls (L2 left warm)."""
    replay, _ = cuda_graph_call(lambda _: [fn() for _ in range(calls)], None)
    times = []
    for _ in range(replays):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000 / calls)
    return sorted(times)[len(times) // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ncu", action="store_true", help="one profiled launch per function (cudaProfilerStart/Stop)")
    parser.add_argument("--first", type=int, default=3, help="--ncu: configs a row (the first N)")
    parser.add_argument("--rows", default=None, help="comma-separated indices into ROWS (default: all)")
    args = parser.parse_args()
    torch.backends.cudnn.benchmark = True
    cases = {case.name: case for case in get_suite("resnet50")}
    print(torch.cuda.get_device_name(), torch.__version__, torch.backends.cudnn.version(), flush=True)
    picked = ROWS if args.rows is None else [ROWS[int(index)] for index in args.rows.split(",")]
    for name, dtype, configs in picked:
        tf32 = dtype == "tf32"
        p = cases[name].problem(torch.float32 if tf32 else getattr(torch, dtype), "nhwc", allow_tf32=tf32)
        i = random_inputs(p, "cuda", seed=0, draw_on_device=True)
        torch.backends.cudnn.allow_tf32 = False
        ref = F.conv2d(i.x.double(), i.weight.double(), None, p.stride, p.padding, p.dilation, p.groups)
        torch.backends.cudnn.allow_tf32 = tf32

        def cudnn(i=i, p=p):
            return F.conv2d(i.x, i.weight, None, p.stride, p.padding, p.dilation, p.groups)

        fns = [("cudnn", cudnn)]
        for entry in configs[: args.first] if args.ncu else configs:
            if entry is None:
                algorithm, config = select(p)
                algo = algorithm.name
            else:
                algo, config = entry
            label = f"{algo} {config}" + (" (heuristics)" if entry is None else "")

            def run(algo=algo, config=config, i=i, p=p):
                return conv2d_problem(p, i.x, i.weight, None, None, algo=algo, config=config)

            try:
                ok = compare(run(), ref, tolerance(p)).ok
            except Exception as error:  # noqa: BLE001 - a probe reports and goes on
                print(f"{name} {dtype} {label}: failed: {str(error)[:100]}", flush=True)
                continue
            fns.append((label + ("" if ok else " WRONG"), run))
        for label, fn in fns:
            if args.ncu:
                profiled(fn)
                print(f"{name} {dtype}: profiled {label}", flush=True)
                continue
            cold = do_bench(fn, warmup=25, rep=100, return_mode="median") * 1000
            warm = graph_us(fn)
            print(f"{name:26s} {dtype:7s} cold {cold:6.1f}  warm {warm:6.1f}  {label}", flush=True)


if __name__ == "__main__":
    main()
