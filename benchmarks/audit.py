"""Audit the heuristics' launches without a GPU: registers, spills, serialized wgmma, shared memory.

    python benchmarks/audit.py                        # every suite, fp16 channels_last
    python benchmarks/audit.py --suite resnet50,seed --dtype tf32 --layout nchw
    python benchmarks/audit.py --candidates           # every tuning candidate, not only the heuristics' pick
    python benchmarks/audit.py --suite depthwise --algo depthwise_plane   # one algorithm wherever it runs
    python benchmarks/audit.py --json audit.json

For each problem of the suites, the launches that ``auto`` would make untuned (the heuristics'
algorithm and config, and a backward problem's dgrad and wgrad with ``--backward``) are
recorded on CPU tensors (``benchmarks/sass.py``'s recorder), compiled for sm_90 with Triton's own
compiler, and the PTX is assembled again by the ptxas in Triton's wheel with ``-v``: what it says
of each kernel is what a GPU would run. Flagged:

- spills (``bytes spill stores``): local-memory traffic in the main loop;
- ``C7515``-style advisories: wgmma instructions serialized (ptxas could not keep the
  accumulator out of non-wgmma instructions' way; session 4 found it in wgrad's 8-warp tiles);
- shared memory past an H100/H200 block's 227 KB (the launch would fail);
- 255 registers (the allocator's ceiling: one CTA of 256 threads an SM at most), where the
  compiler chose the count: a launch that sets ``maxnreg`` (the warp-specialized kernels hand the
  whole register file to their partitions by design, one program an SM) is held to its cap by
  ptxas, which spills past it (flagged above); what count ptxas reports for it differs between
  versions (CUDA 12's in Triton's wheel: what the partitions use; CUDA 13's: the cap).

Identical compiles (same kernel, signature and constexprs) are assembled once. Exit code 1 when
anything is flagged, so the audit can gate a change; it needs no GPU and must run without
TRITON_INTERPRET (interpreted kernels have no compiler front end).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402
import triton  # noqa: E402
from sass import TARGET, _specialise, record_launches  # noqa: E402
from triton import knobs  # noqa: E402

from tileconv.bench.suites import SUITES, get_suite  # noqa: E402
from tileconv.dispatch.candidates import H100_SHARED_MEMORY, candidates  # noqa: E402
from tileconv.dispatch.heuristics import choose_algorithm, default_config  # noqa: E402
from tileconv.kernels import ALGORITHMS  # noqa: E402

DTYPES = {"float16": (torch.float16, False), "bfloat16": (torch.bfloat16, False),
          "float32": (torch.float32, False), "tf32": (torch.float32, True)}
MAX_REGISTERS = 255


def ptxas_report(ptx: str) -> dict:
    """What ``ptxas -v`` says of one kernel's PTX for sm_90a: registers, spill bytes, and its
    performance advisories (``Cxxxx`` codes with their text)."""
    with tempfile.TemporaryDirectory() as folder:
        source = os.path.join(folder, "kernel.ptx")
        with open(source, "w") as f:
            f.write(ptx)
        done = subprocess.run([knobs.nvidia.ptxas.path, "-v", "--gpu-name=sm_90a", source, "-o",
                               os.path.join(folder, "kernel.o")], capture_output=True, text=True)
    log = done.stdout + done.stderr
    if done.returncode != 0:
        raise RuntimeError(f"ptxas failed: {log[-2000:]}")
    registers = re.search(r"Used (\d+) registers", log)
    spills = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log)
    advisories = sorted({m.group(0).strip() for m in re.finditer(r"\(C\d{4}\)[^\n]*", log)})
    return {"registers": int(registers.group(1)) if registers else 0,
            "spill_stores": int(spills.group(1)) if spills else 0,
            "spill_loads": int(spills.group(2)) if spills else 0,
            "advisories": advisories}


def audit_launches(problem, algorithm: str, config, seen: dict) -> list[dict]:
    """One row for each kernel ``algorithm`` launches on ``problem`` with ``config``; compiles
    already made (``seen``, keyed by kernel and specialisation) are not made again."""
    rows = []
    for name, recorder in record_launches(problem, algorithm, config).items():
        args, kwargs = recorder.calls[0]
        source, options = _specialise(recorder.kernel, args, dict(kwargs))
        key = (source.hash(), repr(sorted(options.items())))  # kernel source, signature, constexprs, attributes
        if key not in seen:
            compiled = triton.compile(source, target=TARGET, options=options)
            seen[key] = {"shared_bytes": compiled.metadata.shared, **ptxas_report(compiled.asm["ptx"])}
        report = seen[key]
        flags = []
        if report["spill_stores"] or report["spill_loads"]:
            flags.append(f"spills {report['spill_stores']}/{report['spill_loads']} B")
        if report["registers"] >= MAX_REGISTERS and "maxnreg" not in options:
            flags.append("255 registers")
        if report["shared_bytes"] > H100_SHARED_MEMORY:
            flags.append(f"shared {report['shared_bytes']} B")
        flags += report["advisories"]
        rows.append({"problem": problem.describe(), "algorithm": algorithm, "config": str(config), "kernel": name,
                     **report, "flags": flags})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", default="all", help=f"all, or one or more of {','.join(SUITES)}, comma-separated")
    parser.add_argument("--dtype", default="float16", choices=list(DTYPES))
    parser.add_argument("--layout", default="nhwc", choices=["nhwc", "nchw"])
    parser.add_argument("--epilogue", default="bias_add_relu", help="the epilogue compiled in (default: the largest)")
    parser.add_argument("--candidates", action="store_true", help="every tuning candidate, not only the heuristics'")
    parser.add_argument("--algo", default=None, help="this algorithm's default config wherever it computes the problem, "
                        "instead of the heuristics' pick (kernels they do not pick yet)")
    parser.add_argument("--json", default=None, help="write the rows here")
    args = parser.parse_args(argv)
    if os.environ.get("TRITON_INTERPRET") == "1":
        print("benchmarks/audit.py compiles real kernels: run it without TRITON_INTERPRET=1", file=sys.stderr)
        return 2
    dtype, tf32 = DTYPES[args.dtype]
    suites = list(SUITES) if args.suite == "all" else args.suite.split(",")
    unknown = [name for name in suites if name not in SUITES]
    if unknown:
        print(f"--suite: unknown suite(s) {', '.join(unknown)}; known: all, {', '.join(SUITES)}", file=sys.stderr)
        return 2
    seen: dict = {}
    rows = []
    for suite in suites:
        for case in get_suite(suite):
            problem = case.problem(dtype, args.layout, args.epilogue, allow_tf32=tf32)
            if args.algo is not None:
                if args.algo not in ALGORITHMS:
                    print(f"--algo={args.algo!r} is not a tileconv algorithm", file=sys.stderr)
                    return 2
                supported = ALGORITHMS[args.algo].unsupported_reason(problem) is None
                launches = [(args.algo, default_config(problem, args.algo))] if supported else []
            elif args.candidates:
                launches = candidates(problem)
            else:
                name = choose_algorithm(problem)
                launches = [(name, default_config(problem, name))]
            for name, config in launches:
                if ALGORITHMS[name].teaching:
                    continue
                for row in audit_launches(problem, name, config, seen):
                    rows.append({"suite": suite, "case": case.name, **row})
                    mark = "  <-- " + "; ".join(row["flags"]) if row["flags"] else ""
                    print(f"{case.name:30s} {name:18s} {row['config']:30s} {row['kernel']:36s} "
                          f"regs {row['registers']:3d} shared {row['shared_bytes'] // 1024:3d} KB{mark}", flush=True)
    flagged = [row for row in rows if row["flags"]]
    print(f"{len(rows)} launches, {len(seen)} distinct compiles, {len(flagged)} flagged")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 1 if flagged else 0


if __name__ == "__main__":
    sys.exit(main())
