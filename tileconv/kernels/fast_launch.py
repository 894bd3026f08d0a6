"""Kernel launches that skip Triton's per-call dispatch when nothing about it has changed.

``kernel[grid](*args, **kwargs)`` binds every argument, specialises each one (integers on
being 1 or a multiple of 16, pointers on 16-byte alignment), hashes the result and looks
the compiled kernel up. On an H200's host that came to about 60 us a call for tileconv's
forward kernel (40 arguments), against 26 us for all of ``F.conv2d``; the issue's budget
for a whole call is 20 us, and a benchmark row whose kernel runs for less than the host
takes to launch it measures the host.

:func:`launch` keys the compiled kernel on each tensor's dtype and 16-byte alignment and
every other argument's value (a finer key than Triton's own), and calls the compiled
kernel directly when the key was seen before. Anything else (a first call, the
interpreter) goes through Triton's own launch, so the two cannot disagree on which
binary runs: a new key always asks Triton, and a key only ever maps to the binary Triton
chose for it.
"""

from __future__ import annotations

import torch

from .._runtime import INTERPRET

_plans: dict[tuple, tuple] = {}
# A key is built from argument values, so a caller whose values never repeat (every shape
# different) would grow the table without bound: past this many plans it starts over.
MAX_PLANS = 4096
_counts = {"hits": 0, "misses": 0}


def stats() -> dict[str, int]:
    """Launches served from a plan ('hits') and through Triton's dispatch ('misses') since
    the process started, and the plans held. ``bench --host-cost`` prints them: on a steady
    workload the misses stop growing after the first call of each shape."""
    return {**_counts, "plans": len(_plans)}


def launch(kernel, grid: tuple, *args: object, **kwargs: object):
    """``kernel[grid](*args, **kwargs)``, through the compiled kernel when the same
    arguments (tensors by dtype and 16-byte alignment, everything else by value) were
    launched before. Returns the compiled kernel. Arguments must be tensors, numbers,
    strings, booleans or None (TMA descriptors go through ``kernel[grid]`` directly)."""
    if INTERPRET:
        return kernel[grid](*args, **kwargs)
    # One comprehension, no call per argument: this key is the whole cost of a repeat.
    # Values are a finer key than Triton's own (a multiple of 16, a 1), never a coarser one.
    # Tensors enter the key as (dtype, alignment) only, positional or keyword: a tensor
    # object in the key would never match again and would be kept alive by the cache.
    key = (kernel, torch.cuda.current_device() if torch.cuda.is_initialized() else None,
           *[(a.dtype, a.data_ptr() % 16 == 0) if isinstance(a, torch.Tensor) else a for a in args],
           *[(k, (v.dtype, v.data_ptr() % 16 == 0) if isinstance(v, torch.Tensor) else v) for k, v in kwargs.items()])
    plan = _plans.get(key)
    if plan is None:
        _counts["misses"] += 1
        compiled = kernel[grid](*args, **kwargs)
        if compiled is None or hasattr(compiled, "result"):  # nothing, or compiling asynchronously
            return compiled
        defaults = {p.name: p.default for p in kernel.params}
        tail = [(name, defaults[name]) for name in kernel.arg_names[len(args):]]
        if len(_plans) >= MAX_PLANS:
            _plans.clear()
        _plans[key] = (compiled, tail)
        return compiled
    _counts["hits"] += 1
    compiled, tail = plan
    # The compiled kernel's launcher reads all three grid dimensions.
    compiled[(*grid, 1, 1)[:3]](*args, *[kwargs.get(name, default) for name, default in tail])
    return compiled
