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

import contextlib
from collections.abc import Iterator

import torch
from triton import knobs

from .._runtime import INTERPRET

_plans: dict[tuple, tuple] = {}
# A key is built from argument values, so a caller whose values never repeat (every shape
# different) would grow the table without bound: past this many plans it starts over.
MAX_PLANS = 4096
_counts = {"hits": 0, "misses": 0}


class Recording:
    """What :func:`recording` saw: ``steps``, each (compiled kernel, 3D grid, every kernel
    argument in order) for a launch through :func:`launch`; ``workspaces``, the scratch
    tensors the call took from :func:`workspace`; ``triton_launches``, the
    Triton launches by any route (counted by Triton's launch hook). A call can be
    replayed from ``steps`` only when the two agree and ``complete`` is set."""

    def __init__(self) -> None:
        self.steps: list[tuple[object, tuple[int, int, int], list]] = []
        self.workspaces: list[torch.Tensor] = []
        self.triton_launches = 0
        self.complete = True

    def count(self, _metadata: object = None) -> None:
        self.triton_launches += 1

    @property
    def replayable(self) -> bool:
        return self.complete and self.triton_launches == len(self.steps)


_recording: Recording | None = None


def workspace(shape: tuple[int, ...], dtype: torch.dtype, device: torch.device,
              memory_format: torch.memory_format = torch.contiguous_format) -> torch.Tensor:
    """An uninitialised scratch tensor for the launches of one call (split-K's partial
    sums, the sub-pixel dgrad's cells). Taken from here, a recorded call knows it as scratch,
    which a replay allocates afresh, rather than as a tensor it cannot account for."""
    t = torch.empty(shape, dtype=dtype, device=device, memory_format=memory_format)
    if _recording is not None:
        _recording.workspaces.append(t)
    return t


@contextlib.contextmanager
def recording() -> Iterator[Recording]:
    """Within this block every launch through :func:`launch` is also written down (see
    :class:`Recording`), so that :mod:`tileconv.call_plans` can replay the launches of a
    whole ``tileconv.conv2d`` call. Not nested: an inner block records nothing."""
    global _recording
    if _recording is not None:
        record = Recording()
        record.complete = False
        yield record
        return
    record = _recording = Recording()
    hook = knobs.runtime.launch_enter_hook
    counted = hasattr(hook, "add")  # Triton 3.6's HookChain; without it launches cannot be counted
    if counted:
        hook.add(record.count)
    else:
        record.complete = False
    try:
        yield record
    finally:
        if counted:
            hook.remove(record.count)
        _recording = None


def stats() -> dict[str, int]:
    """Launches served from a plan ('hits') and through Triton's dispatch ('misses') since
    the process started, and the plans held. ``bench --host-cost`` prints them: on a steady
    workload the misses stop growing after the first call of each shape."""
    return {**_counts, "plans": len(_plans)}


def launch(kernel, grid: tuple, *args: object, **kwargs: object):
    """``kernel[grid](*args, **kwargs)``, through the compiled kernel when the same
    arguments (tensors by dtype and 16-byte alignment, everything else by value) were
    launched before. Returns the compiled kernel. A launch with an unhashable argument (a
    TMA descriptor) goes through Triton's dispatch every time, but is still recorded."""
    if INTERPRET:
        return kernel[grid](*args, **kwargs)
    # One comprehension, no call per argument: this key is the whole cost of a repeat.
    # Values are a finer key than Triton's own (a multiple of 16, a 1), never a coarser one.
    # Tensors enter the key as (dtype, alignment) only, positional or keyword: a tensor
    # object in the key would never match again and would be kept alive by the cache.
    key = (kernel, torch.cuda.current_device() if torch.cuda.is_initialized() else None,
           *[(a.dtype, a.data_ptr() % 16 == 0) if isinstance(a, torch.Tensor) else a for a in args],
           *[(k, (v.dtype, v.data_ptr() % 16 == 0) if isinstance(v, torch.Tensor) else v) for k, v in kwargs.items()])
    try:
        plan = _plans.get(key)
    except TypeError:  # an unhashable argument (a TMA descriptor): Triton's dispatch each time
        plan, key = None, None
    if plan is None:
        _counts["misses"] += 1
        compiled = kernel[grid](*args, **kwargs)
        if compiled is None or hasattr(compiled, "result"):  # nothing, or compiling asynchronously
            if _recording is not None:
                _recording.complete = False
            return compiled
        defaults = {p.name: p.default for p in kernel.params}
        tail = [(name, defaults[name]) for name in kernel.arg_names[len(args):]]
        if key is not None:
            if len(_plans) >= MAX_PLANS:
                _plans.clear()
            _plans[key] = (compiled, tail)
        if _recording is not None:
            _recording.steps.append(
                (compiled, (*grid, 1, 1)[:3], [*args, *[kwargs.get(name, default) for name, default in tail]]))
        return compiled
    _counts["hits"] += 1
    compiled, tail = plan
    # The compiled kernel's launcher reads all three grid dimensions.
    grid3 = (*grid, 1, 1)[:3]
    arguments = [*args, *[kwargs.get(name, default) for name, default in tail]]
    if _recording is not None:
        _recording.steps.append((compiled, grid3, arguments))
    compiled[grid3](*arguments)
    return compiled
