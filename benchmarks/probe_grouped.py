"""Kernel-development probe (one device call): grouped_halo (thin groups on the tensor cores, each
input pixel staged in shared memory once a program) against the heuristics' kernel and cuDNN on the
grouped suite's rows, several tiles each; CUDA-graph replays with L2 cleared, every output
poisoned first and checked against float32 F.conv2d, and one row rerun with Inf and NaN inputs
(the merged groups' redo). Prints each kernel's registers and spills and its first call's seconds.

    python3 benchmarks/probe_grouped.py [--json OUT.json] [--widths 16,32] [--case TEXT] [--no-nonfinite]
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.getcwd())
import torch
import torch.nn.functional as F

import tileconv
import tileconv.kernels.launch as launch
from tileconv.bench.host import _graph_us
from tileconv.bench.suites import get_suite
from tileconv.dispatch import select
from tileconv.kernels import LaunchConfig
from tileconv.testing import compare, random_inputs, tolerance


def configs(p, widths=None):
    """grouped_halo tiles the launcher takes for ``p`` among the probed sizes: 64, 128 and 256 frame
    rows, 4 warps, one item a program or 2 to 6 walking programs an SM."""
    out = []
    for block_n in widths or launch.GROUPED_HALO_WIDTHS[:1 if p.c_per_group <= 16 else 2]:
        for block_m in (64, 128, 256):
            for persistent in (0, 2, 4, 6):
                config = LaunchConfig(block_m=block_m, block_n=block_n, num_warps=4, persistent=persistent)
                try:
                    tiling = launch.grouped_halo_tiling(p, config)
                except ValueError:
                    continue
                if tiling.fits(p) and 8 <= tiling.km <= 64:
                    out.append(config)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--widths", help="merged input channels a program to try, e.g. 16,32 (default: the "
                                     "launcher's for the row's channels a group)")
    ap.add_argument("--case", default="", help="only the rows whose name contains this")
    ap.add_argument("--no-nonfinite", action="store_true", help="skip the non-finite inputs' check")
    args = ap.parse_args()
    widths = [int(w) for w in args.widths.split(",")] if args.widths else None
    torch.backends.cudnn.benchmark = True
    print(torch.cuda.get_device_name(), flush=True)
    records = []
    for case in [c for c in get_suite("grouped") if args.case in c.name]:
        p = case.problem(torch.float16, "nhwc")
        i = random_inputs(p, "cuda", seed=0)
        ref = F.conv2d(i.x.float(), i.weight.float(), None, p.stride, p.padding, p.dilation, p.groups)
        t_ref = _graph_us(lambda p=p, i=i: F.conv2d(i.x, i.weight, None, p.stride, p.padding, p.dilation, p.groups))
        algo, config = select(p)
        t_auto = _graph_us(lambda i=i, p=p: tileconv.conv2d(i.x, i.weight, None, p.stride, p.padding, p.dilation, p.groups))
        floor = p.min_bytes / 4.17e6  # us at the 4.17 TB/s copy roofline
        print(f"{case.name:28s} cuDNN {t_ref:7.1f} us | auto ({algo.name} {config}) {t_auto:6.1f} us "
              f"{t_ref / t_auto:4.2f}x | roofline {floor:5.1f} us", flush=True)
        rec = {"case": case.name, "cudnn_us": t_ref, "auto_algo": algo.name, "auto_config": config.to_dict(),
               "auto_us": t_auto, "roofline_us": floor, "halo": []}
        reason = launch.grouped_halo_unsupported_reason(p)
        if reason:
            print(f"    grouped_halo: {reason}", flush=True)
        for config in ([] if reason else configs(p, widths)):
            out = torch.full_like(ref, float("nan"), dtype=p.dtype).contiguous(memory_format=torch.channels_last)

            def run(out=out, p=p, i=i, config=config):
                return launch.launch_grouped_halo(p, i.x, i.weight, None, None, out, config)
            start = time.perf_counter()
            compiled = run()
            torch.cuda.synchronize()
            first = time.perf_counter() - start
            ok = compare(out, ref.double(), tolerance(p)).ok
            t = _graph_us(run)
            regs, spills = getattr(compiled, "n_regs", None), getattr(compiled, "n_spills", None)
            print(f"    halo {config}: {t:6.1f} us {t_ref / t:4.2f}x (auto {t_auto / t:4.2f}x, "
                  f"{100 * floor / t:3.0f}% of roofline) regs {regs} spills {spills} first {first:4.1f} s ok {ok}",
                  flush=True)
            rec["halo"].append({"config": config.to_dict(), "us": t, "ok": ok, "regs": regs, "spills": spills,
                                "first_call_s": first})
        records.append(rec)

    # Non-finite inputs on the c128 hw56 row (4 groups merged) and the stride-2 c256 hw56 row (2
    # merged): the redo path, checked on the images that hold them against float64 on the CPU.
    nonfinite = []
    for case in [c for c in get_suite("grouped") if c.name in ("resnext g32 c128 hw56/1", "resnext g32 c256 hw56/2")
                 and not args.no_nonfinite]:
        p = case.problem(torch.float16, "nhwc")
        i = random_inputs(p, "cuda", seed=1)
        i.x[0, 5, 10, 11] = float("inf")
        i.x[1, 70, 0, 55] = float("nan")
        i.x[1, 127, 30, 30] = float("-inf")
        ref = F.conv2d(i.x[:2].cpu().double(), i.weight.cpu().double(), None, p.stride, p.padding, p.dilation,
                       p.groups)
        for config in configs(p)[:3]:
            out = torch.zeros(p.output_shape, dtype=p.dtype, device="cuda").contiguous(memory_format=torch.channels_last)
            launch.launch_grouped_halo(p, i.x, i.weight, None, None, out, config)
            got = out[:2].cpu()
            same_nan = bool(torch.equal(torch.isnan(got), torch.isnan(ref)))
            same_inf = bool(torch.equal(torch.isinf(got), torch.isinf(ref)))
            ok = compare(got, ref, tolerance(p)).ok
            print(f"non-finite {case.name} {config}: NaN pattern {same_nan} ({int(torch.isnan(got).sum())} against "
                  f"{int(torch.isnan(ref).sum())}), Inf pattern {same_inf}, ok {ok}", flush=True)
            nonfinite.append({"case": case.name, "config": config.to_dict(), "nan_pattern": same_nan,
                              "inf_pattern": same_inf, "ok": ok})
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(), "rows": records, "nonfinite": nonfinite}, f, indent=1)


if __name__ == "__main__":
    main()
