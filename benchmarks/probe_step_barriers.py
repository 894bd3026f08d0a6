"""Probe: what do the two CTA barriers a main-loop step cost the warp-specialized kernels?

Session 38's Nsight Compute profile of gemm_1x1_ws (c1024 hw14 k512) put 48% of the stall cycles
at CTA barriers. Triton 3.6 puts a ``bar.sync`` of the MMA partition's 128 threads before each
step's ``mbarrier.try_wait`` (every thread waits for the stage itself) and before the
``mbarrier.arrive`` that frees the previous stage (one thread arrives for the warpgroup, after its
own ``wgmma.wait_group``). CUTLASS's Hopper pipelines have neither: a wgmma is one operation of
the warpgroup, so once one warp's wait returns it has finished reading the stage.

``--edit`` installs a PTX pass (``knobs.runtime.add_stages_inspection_hook``) that removes those
barriers from every basic block holding a ``wgmma.mma_async`` of the ws kernels, and nothing
else. Only one-warpgroup partitions' barriers (``bar.sync N, 128``) go: where two warpgroups
share a tile (8 MMA warps, one partition) the barrier is what tells the arriving thread that the
other warpgroup is done too. The log says how many went a kernel. Then the timing and the float64 checks are
``probe_ring_depth.py``'s (its flags pass through). Triton's compile cache does not key on
stage hooks: give the edited run a TRITON_CACHE_DIR of its own.

    python benchmarks/probe_step_barriers.py [--edit] --json OUT.json [--configs ...] [--rows ...]
    python benchmarks/probe_step_barriers.py --ptx FILE      # CPU: the edit on a PTX file, a summary
"""

from __future__ import annotations

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

KERNELS = ("conv1x1_ws_kernel", "conv2d_implicit_gemm_ws_kernel")
_LABEL = re.compile(r"^\$L__BB\d+_\d+:", re.M)
_SKIP = re.compile(r"^\s*(\.loc\b|//|$|and\.pred\b|\{|\.reg\b|waitLoop:)")
_BAR = re.compile(r"^\s*bar\.sync\s+\d+, 128;\s*$")
_MBAR = re.compile(r"mbarrier\.(try_wait\.parity|arrive\.shared::cta\.b64 _,)")


def _edit_block(block: str) -> tuple[str, int]:
    if "wgmma.mma_async" not in block:
        return block, 0
    lines = block.split("\n")
    keep, removed = [], 0
    for i, line in enumerate(lines):
        if _BAR.match(line):
            nxt = next((ln for ln in lines[i + 1:] if not _SKIP.match(ln) and "begin inline asm" not in ln), "")
            if _MBAR.search(nxt):
                removed += 1
                continue
        keep.append(line)
    return "\n".join(keep), removed


def edit_ptx(ptx: str) -> tuple[str, int]:
    """The ws kernels' PTX with the per-step barriers removed, and how many were."""
    if not any(f".entry {name}" in ptx for name in KERNELS):
        return ptx, 0
    cuts = [m.start() for m in _LABEL.finditer(ptx)]
    pieces = [ptx[a:b] for a, b in zip([0, *cuts], [*cuts, len(ptx)], strict=True)]
    total = 0
    out = []
    for piece in pieces:
        edited, n = _edit_block(piece)
        out.append(edited)
        total += n
    return "".join(out), total


def install() -> None:
    import ptx_pass

    def edit(ptx, metadata):
        ptx, n = edit_ptx(ptx)
        if any(f".entry {name}" in ptx for name in KERNELS):
            print(f"[step barriers] {metadata.get('name', '?')}: {n} removed", flush=True)
        return ptx

    ptx_pass.install(edit)

if __name__ == "__main__":
    if "--ptx" in sys.argv:
        src = open(sys.argv[sys.argv.index("--ptx") + 1]).read()
        edited, n = edit_ptx(src)
        print(f"{n} barriers removed; bar.sync lines {src.count('bar.sync')} -> {edited.count('bar.sync')}")
        sys.stdout.write(edited if "--print" in sys.argv else "")
        sys.exit(0)
    if "--edit" in sys.argv:
        sys.argv.remove("--edit")
        install()
    import probe_ring_depth
    probe_ring_depth.main()
