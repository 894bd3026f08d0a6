"""Probe: the TMA descriptors' L2 promotion (how much an L2 miss of a bulk copy fetches).

Triton 3.6 encodes every host-side tensor descriptor with ``CU_TENSOR_MAP_L2_PROMOTION_L2_128B``
(``backends/nvidia/driver.c``): an L2 miss of a copy fetches the 128-byte line it touched. A
channels_last operand is read by reduction steps of 64 channels (128 bytes of fp16) a row, so
with 256-byte promotion a miss also brings the next step's 128 bytes of the same row into L2:
one DRAM round trip for two steps where the operands come from DRAM (the bench's cold L2).
The gathering kernels' cp.async copies (16 bytes a thread, ``cp.async.cg``) carry no L2
prefetch size at all; ``--cp-async 256`` adds ``.L2::256B`` to each by a PTX pass (Triton's
compile cache does not key on it: give such a run a TRITON_CACHE_DIR of its own).

This runs another script with Triton's descriptor encoder wrapped: the descriptor Triton
encodes is encoded again, into the same object, by ``cuTensorMapEncodeTiled`` with the
promotion asked for (the same arguments otherwise; with promotion 128 the bytes must equal
Triton's, which the wrapper checks once). Not part of the package: a probe.

    python benchmarks/probe_promotion.py --tma 256 -- benchmarks/probe_ring_depth.py --rows c2048 ...
    python benchmarks/probe_promotion.py --tma 256 --cp-async 256 -- -m tileconv bench --suite seed ...
"""

from __future__ import annotations

import argparse
import ctypes
import os
import re
import runpy
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # (ptx_pass)

PROMOTION = {"none": 0, "64": 1, "128": 2, "256": 3}


def install(promotion: int) -> None:
    """Wrap Triton's ``fill_tma_descriptor`` so that every descriptor it encodes carries ``promotion``."""
    import triton

    libcuda = ctypes.CDLL("libcuda.so.1")
    encode = libcuda.cuTensorMapEncodeTiled
    encode.restype = ctypes.c_int
    utils = triton.runtime.driver.active.utils
    original = utils.fill_tma_descriptor
    checked = []

    def encoded(desc, ptr, swizzle, elem_size, elem_type, block, shape, strides, padding, level):
        rank = len(block)
        boxes = (ctypes.c_uint32 * 5)(*[int(b) for b in reversed(block)])
        dims = (ctypes.c_uint64 * 5)(*[int(s) for s in reversed(shape)])
        pitches = (ctypes.c_uint64 * 5)()
        for i in range(rank - 1):
            pitches[rank - i - 2] = elem_size * int(strides[i])
        ones = (ctypes.c_uint32 * 5)(1, 1, 1, 1, 1)
        result = encode(ctypes.c_void_p(id(desc) + 128), ctypes.c_int(elem_type), ctypes.c_uint32(rank),
                        ctypes.c_void_p(ptr), dims, pitches, boxes, ones, ctypes.c_int(0), ctypes.c_int(swizzle),
                        ctypes.c_int(level), ctypes.c_int(1 if padding == 1 else 0))
        if result != 0:
            raise RuntimeError(f"cuTensorMapEncodeTiled failed: {result}")

    def fill(ptr, swizzle, elem_size, elem_type, block, shape, strides, padding):
        desc = original(ptr, swizzle, elem_size, elem_type, block, shape, strides, padding)
        if not checked:  # the re-encoding reproduces Triton's bytes at Triton's own promotion
            before = ctypes.string_at(id(desc) + 128, 128)
            encoded(desc, ptr, swizzle, elem_size, elem_type, block, shape, strides, padding, PROMOTION["128"])
            if ctypes.string_at(id(desc) + 128, 128) != before:
                raise RuntimeError("the re-encoded descriptor differs from Triton's at 128-byte promotion")
            checked.append(True)
            print(f"probe_promotion: descriptors re-encoded with L2 promotion level {promotion}", flush=True)
        encoded(desc, ptr, swizzle, elem_size, elem_type, block, shape, strides, padding, promotion)
        return desc

    utils.fill_tma_descriptor = fill


def install_cp_async_prefetch(size: str) -> None:
    """A PTX pass: every ``cp.async.cg``/``.ca`` global-to-shared copy with ``.L2::{size}B``."""
    import ptx_pass

    def edit(ptx, metadata):
        count = ptx.count("cp.async.cg.shared.global") + ptx.count("cp.async.ca.shared.global")
        if count:
            print(f"probe_promotion: {metadata.get('name', '?')}: {count} cp.async with .L2::{size}B", flush=True)
        return re.sub(r"cp\.async\.(cg|ca)\.shared\.global(\s)", rf"cp.async.\1.shared.global.L2::{size}B\2", ptx)

    ptx_pass.install(edit)


def main() -> None:
    split = sys.argv.index("--")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tma", choices=sorted(PROMOTION), help="the descriptors' L2 promotion (Triton: 128)")
    parser.add_argument("--cp-async", choices=("64", "128", "256"), help="an L2 prefetch size on every cp.async")
    args = parser.parse_args(sys.argv[1:split])
    rest = sys.argv[split + 1:]
    if args.tma:
        install(PROMOTION[args.tma])
    if args.cp_async:
        install_cp_async_prefetch(args.cp_async)
    if rest[0] == "-m":
        sys.argv = [rest[1], *rest[2:]]
        runpy.run_module(rest[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = rest
        runpy.run_path(rest[0], run_name="__main__")


if __name__ == "__main__":
    main()
