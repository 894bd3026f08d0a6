"""Kernel-development probe (one device call): grouped_halo (thin groups on the tensor cores, each
input pixel staged in shared memory once a program) against the heuristics' kernel and cuDNN on the
grouped suite's rows, several tiles each; CUDA-graph replays with L2 cleared, every output
poisoned first and checked against float32 F.conv2d, and one row rerun with Inf and NaN inputs
(the merged groups' redo). Prints each kernel's registers and spills and its first call's seconds.

    python3 benchmarks/probe_grouped.py [--json OUT.json] [--widths 16,32] [--warps 4,8] [--case TEXT] [--no-nonfinite]
                                        [--against REV [--rounds K]] [--gemm]

``--against REV``: every tile also runs the kernel as it was at git revision REV (its module loaded
from ``git show``, or from the file REV), launched by today's launcher with the arguments matched by
name, the two timed in turn for ``--rounds`` rounds and both outputs checked: an A/B of a kernel change
in one process.

``--ws-merged``: grouped_gemm_ws's kernel (implicit_gemm_ws one merged group a tile, its
non-finite redo compiled in) with ``pack`` groups merged into 64 input channels and unmerged (one
group a tile where C/g is 16 or more; ``--ws-widths`` picks), one program an SM or two
(``persistent=2``, the register file and shared memory halved), the weight slice held in shared
memory or not (``--ws-configs``): each gathered row 128 bytes where one group's is 32.

``--gemm``: implicit_gemm tiles past the tuning candidates on each row instead of grouped_halo's (64
to 128 rows, 2 to 6 stages, the reduction a tap's channels at a time or a whole filter row's
(``fuse_sc``) in steps of 32 to 128): do the one-group GEMM rows want shorter reductions?
"""
import argparse
import functools
import importlib.util
import itertools
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.getcwd())
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # (probe_window's measure)
from dataclasses import replace

import torch
import torch.nn.functional as F
from probe_window import measure

import tileconv
import tileconv.kernels.launch as launch
from tileconv.bench.host import _graph_us
from tileconv.bench.suites import get_suite
from tileconv.dispatch import select
from tileconv.kernels import LaunchConfig
from tileconv.kernels.weights import block_diagonal_weight
from tileconv.testing import compare, random_inputs, tolerance


def configs(p, widths=None, warps=(4,)):
    """grouped_halo tiles the launcher takes for ``p`` among the probed sizes: 64, 128 and 256 frame
    rows, ``warps`` warps (4), one item a program or 2 to 6 walking programs an SM."""
    out = []
    for block_n in widths or launch.GROUPED_HALO_WIDTHS[:1 if p.c_per_group <= 16 else 2]:
        for block_m, num_warps, persistent in itertools.product((64, 128, 256), warps, (0, 2, 4, 6)):
            config = LaunchConfig(block_m=block_m, block_n=block_n, num_warps=num_warps, persistent=persistent)
            try:
                tiling = launch.grouped_halo_tiling(p, config)
            except ValueError:
                continue
            if tiling.fits(p) and 8 <= tiling.km <= 64:
                out.append(config)
    return out


def gemm_configs(p):
    """implicit_gemm tiles of one group's GEMM (N = K/g): rows 32 to 128, stages 2 to 6, the
    reduction stepped a tap's channels at a time (32 deep) or a filter row's (fuse_sc, 32-128 deep)."""
    out = []
    n = max(16, min(64, p.k_per_group))
    for block_m, (block_k, fuse), stages in itertools.product(
            (32, 64, 128), ((32, 0), (32, 1), (64, 1), (128, 1)), (2, 3, 4, 6)):
        if not fuse and block_k > p.c_per_group:
            continue
        out.append(LaunchConfig(block_m=block_m, block_n=n, block_k=block_k, num_warps=2 if block_m == 32 else 4,
                                num_stages=stages, fuse_sc=fuse))
    return out


def kernel_at(rev):
    """conv2d_grouped_halo_kernel as it was at git revision ``rev`` (or in the file ``rev``: the device
    machine's checkout has no git history), wrapped so that today's launcher can launch it: the
    launcher's positional arguments are passed by name."""
    if os.path.isfile(rev):
        with open(rev) as f:
            source = f.read()
    else:
        source = subprocess.run(["git", "show", f"{rev}:tileconv/kernels/grouped_halo.py"], capture_output=True,
                                text=True, check=True).stdout
    source = source.replace("from .common import", "from tileconv.kernels.common import")
    path = os.path.join(tempfile.mkdtemp(prefix="grouped_halo_"), "grouped_halo_at_rev.py")
    with open(path, "w") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location("grouped_halo_at_rev", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    old, new = module.conv2d_grouped_halo_kernel, launch.conv2d_grouped_halo_kernel

    class ByName:
        """Returns None, so that fast_launch records no call plan (a plan replays arguments in
        today's order)."""

        def __getitem__(self, grid):
            def call(*args, **kwargs):
                kwargs.update(zip(new.arg_names, args, strict=False))
                old[grid](**{name: value for name, value in kwargs.items() if name in old.arg_names or
                             name in ("num_warps", "num_stages", "maxnreg")})
            return call
    return ByName()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--widths", help="merged input channels a program to try, e.g. 16,32 (default: the "
                                     "launcher's for the row's channels a group)")
    ap.add_argument("--warps", default="4", help="warps a program to try, e.g. 4,8")
    ap.add_argument("--case", default="", help="only the rows whose name contains this")
    ap.add_argument("--no-nonfinite", action="store_true", help="skip the non-finite inputs' check")
    ap.add_argument("--against", help="a git revision or a copy of grouped_halo.py: time its grouped_halo kernel beside today's (A/B)")
    ap.add_argument("--rounds", type=int, default=2, help="with --against: A/B rounds")
    ap.add_argument("--gemm", action="store_true", help="sweep implicit_gemm tiles instead of grouped_halo's")
    ap.add_argument("--ws-merged", action="store_true", help="grouped_gemm_ws's kernel, groups merged or not, "
                                                                 "instead of grouped_halo's tiles")
    ap.add_argument("--ws-configs", default="128:8:0:0:0,128:3:0:2:0,128:4:0:2:0,64:6:0:2:0,64:4:0:2:0",
                    help="--ws-merged's tiles, rows:stages:pingpong:programs:resident[:warps] each")
    ap.add_argument("--ws-widths", default="", help="--ws-merged's merged input channels (default: 64 and C/g)")
    args = ap.parse_args()
    args.ws_configs = [tuple(int(v) for v in item.split(":")) for item in args.ws_configs.split(",")]
    today = launch.conv2d_grouped_halo_kernel
    variants = {"A": today}
    if args.against:
        variants["B"] = kernel_at(args.against)
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
        if args.ws_merged:
            rec["merged"] = []
            for cm in ([int(w) for w in args.ws_widths.split(",")] if args.ws_widths
                       else sorted({64, max(16, p.c_per_group)})):
                pack = cm // p.c_per_group
                if pack < 1 or p.groups % pack or p.k_per_group * pack > 256:
                    continue
                merged = replace(p, groups=p.groups // pack)
                if launch._ws_gather_reason(merged, grouped=True):
                    continue
                mi = replace(i, weight=block_diagonal_weight(i.weight, p.groups, pack))
                sub_groups = (p.c_per_group, p.k_per_group) if pack > 1 else (0, 0)
                km = merged.k_per_group
                # (rows, stages, ping-pong, programs an SM, the weight slice held: resident[, MMA warps])
                for m, st, pp, k, held, *warps in args.ws_configs:
                    config = LaunchConfig(block_m=m, block_n=km, block_k=min(64, cm), num_warps=warps[0] if warps else 4,
                                          num_stages=st, pingpong=pp, persistent=k, resident=held)
                    try:
                        r = measure(functools.partial(launch.launch_implicit_gemm_ws, sub_groups=sub_groups), merged,
                                    mi, ref, config, tolerance(p))
                    except Exception as error:  # a ring past the shared memory: say so, go on
                        print(f"    merged x{pack} {config}: {str(error)[:90]}", flush=True)
                        continue
                    print(f"    merged x{pack} (CM {cm}, KM {km}) {config}: {r['us']:6.1f} us {t_ref / r['us']:4.2f}x "
                          f"(auto {t_auto / r['us']:4.2f}x) regs {r['regs']} ok {r['ok']}", flush=True)
                    rec["merged"].append({"pack": pack, "config": config.to_dict(), **r})
            records.append(rec)
            continue
        if args.gemm:
            rec["gemm"] = []
            for config in gemm_configs(p):
                try:
                    m = measure(launch.launch_implicit_gemm, p, i, ref, config, tolerance(p))
                except Exception as error:  # a tile past the shared memory: say so, go on
                    print(f"    gemm {config}: {str(error)[:90]}", flush=True)
                    continue
                print(f"    gemm {config}: {m['us']:6.1f} us {t_ref / m['us']:4.2f}x (auto {t_auto / m['us']:4.2f}x) "
                      f"regs {m['regs']} spills {m['spills']} ok {m['ok']}", flush=True)
                rec["gemm"].append({"config": config.to_dict(), **m})
            records.append(rec)
            continue
        reason = launch.grouped_halo_unsupported_reason(p)
        if reason:
            print(f"    grouped_halo: {reason}", flush=True)
        for config in ([] if reason else configs(p, widths, [int(w) for w in args.warps.split(",")])):
            times, found = {}, {}
            for _ in range(args.rounds if len(variants) > 1 else 1):
                for name, kernel in variants.items():
                    launch.conv2d_grouped_halo_kernel = kernel
                    m = measure(launch.launch_grouped_halo, p, i, ref, config, tolerance(p))
                    times.setdefault(name, []).append(m.pop("us"))
                    found.setdefault(name, m)["ok"] &= m["ok"]
            launch.conv2d_grouped_halo_kernel = today
            t = min(times["A"])
            a = found["A"]
            line = (f"    halo {config}: {t:6.1f} us {t_ref / t:4.2f}x (auto {t_auto / t:4.2f}x, "
                    f"{100 * floor / t:3.0f}% of roofline) regs {a['regs']} spills {a['spills']} "
                    f"first {a['first_call_s']:4.1f} s ok {a['ok']}")
            entry = {"config": config.to_dict(), "us": t, **a}
            if "B" in times:
                b = min(times["B"])
                line += f" | {args.against}: {b:6.1f} us (A/B {t / b:5.3f}) regs {found['B']['regs']} ok {found['B']['ok']}"
                entry.update(against=args.against, against_us=b, against_ok=found["B"]["ok"],
                             against_regs=found["B"]["regs"], rounds={k: v for k, v in times.items()})
            print(line, flush=True)
            rec["halo"].append(entry)
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
