"""Kernel launches that skip Triton's per-call dispatch when nothing about it has changed.

``kernel[grid](*args, **kwargs)`` binds every argument, specialises each one (integers on
being 1 or a multiple of 16, pointers on 16-byte alignment), hashes the result and looks
the compiled kernel up. On an H200's host that came to about 60 us a call for tileconv's
forward kernel (40 arguments), against 26 us for all of ``F.conv2d``; the issue's budget
for a whole call is 20 us, and a benchmark row whose kernel runs for less than the host
takes to launch it measures the host.

:func:`launch` keys the compiled kernel on the same facts Triton specialises on (each
tensor's dtype and alignment, each integer's ==1 / %16 / 32-bit range, every keyword value),
computed more cheaply, and calls the compiled kernel directly when the key was seen
before. Anything else (a first call, the interpreter, TMA descriptor arguments) goes
through Triton's own launch, so the two cannot disagree on which binary runs: a new key
always asks Triton, and a key only ever maps to the binary Triton chose for it.
"""

from __future__ import annotations

import torch

from .._runtime import INTERPRET

_plans: dict[tuple, tuple] = {}
_UNCACHEABLE = object()


def _signature(value: object) -> object:
    """What Triton's specialisation can depend on for one argument value."""
    if isinstance(value, torch.Tensor):
        return (value.dtype, value.data_ptr() % 16 == 0)
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return (value == 1, value % 16 == 0, -(2**31) <= value < 2**31)
    if isinstance(value, float):
        return float
    return _UNCACHEABLE  # TMA descriptors and anything unforeseen: Triton's own launch


def launch(kernel, grid: tuple, *args: object, **kwargs: object):
    """``kernel[grid](*args, **kwargs)``, through the compiled kernel when this
    specialisation was launched before. Returns the compiled kernel."""
    if INTERPRET:
        return kernel[grid](*args, **kwargs)
    signature = tuple(_signature(a) for a in args)
    if any(s is _UNCACHEABLE for s in signature):
        return kernel[grid](*args, **kwargs)
    on_gpu = any(isinstance(a, torch.Tensor) and a.is_cuda for a in args)
    key = (kernel, torch.cuda.current_device() if on_gpu else None, signature, tuple(kwargs.items()))
    plan = _plans.get(key)
    if plan is None:
        compiled = kernel[grid](*args, **kwargs)
        if compiled is None or hasattr(compiled, "result"):  # nothing, or compiling asynchronously
            return compiled
        names = kernel.arg_names[len(args):]
        defaults = {p.name: p.default for p in kernel.params}
        tail = [(name, defaults[name]) for name in names]
        _plans[key] = (compiled, tail)
        return compiled
    compiled, tail = plan
    # The compiled kernel's launcher reads all three grid dimensions.
    compiled[(*grid, 1, 1)[:3]](*args, *(kwargs.get(name, default) for name, default in tail))
    return compiled
