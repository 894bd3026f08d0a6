"""Strided dgrads three ways, beside cuDNN: the sub-pixel route as ``auto`` runs it (its cells
written into dx itself where implicit_gemm_ws runs them: ``kernels.dgrad.fold_cells_into``), the
same convolution onto scratch cells and a shuffle onto dx (the route before the fold), and one
convolution per row phase written straight into dx.

Row phase a of dx (rows a, a + U, ...) reads only the filter rows of phase a, and in
channels_last memory dx[n, U*i + a, V*j + b, c] lies at ((n*H + U*i + a)*W + V*j)*C + b*C + c:
with W a multiple of V, the V column phases of a cell are V*C consecutive channels. So phase a
is one stride-1 forward convolution of dy (filter: phase a's rows by every column phase's
columns; output channels (b, c)) whose output is a strided view of dx itself: no cells, no
shuffle, and fewer zero taps (a 3x3/2 multiplies 12 of its cell filters' taps where the
sub-pixel convolution multiplies 16; 9 are the filter's), but U launches of shorter reductions.

    python benchmarks/probe_subpixel_forms.py

A kernel-development probe (cold L2, :func:`tileconv.bench.timing.bench_us`, ResNet-50's
strided 3x3 rows at batch 32, fp16 channels_last); every form is checked against cuDNN.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402

import tileconv  # noqa: E402
from tileconv import call_plans, dispatch, functional  # noqa: E402
from tileconv.bench.suites import SUITES  # noqa: E402
from tileconv.bench.timing import bench_us  # noqa: E402
from tileconv.dispatch.tune import tune  # noqa: E402
from tileconv.functional import _run_problem, conv2d_backward_problem  # noqa: E402
from tileconv.kernels.dgrad import shuffle_subpixels  # noqa: E402
from tileconv.kernels.weights import subpixel_dgrad_weight  # noqa: E402
from tileconv.problem import ConvProblem, _subpixel_reach, subpixel_taps  # noqa: E402


def row_phases(problem: ConvProblem):
    """[(a, forward problem, dy row offset, taps)] for each row phase a."""
    (u, v), (ph, pw) = problem.stride, problem.padding
    lo, _, rows = subpixel_taps(problem.r, u, ph)
    cols = _subpixel_reach(problem.w, problem.s, v, pw, problem.out_w)
    assert problem.w % v == 0 and cols is not None
    out = []
    for a in range(u):
        ts = [t for t, _ in rows[a]]
        tmin, taps = min(ts), max(ts) - min(ts) + 1
        top = -(lo + tmin)  # cell i, filter row t' reads dy row i - top + t'
        skip = max(0, -top)  # dy rows above the first one read
        top = max(0, top)
        cells = -(-(problem.h - a) // u)
        rows_used = min(problem.out_h - skip, cells - 1 + taps - top)
        bottom = cells - 1 + taps - 1 - top - (rows_used - 1)
        fwd = ConvProblem(n=problem.n, c=problem.k, h=rows_used, w=problem.out_w, k=v * problem.c, r=taps, s=cols[0],
                          stride=(1, 1), padding=(top, cols[1]), padding_end=(bottom, cols[2]), dtype=problem.dtype,
                          layout=problem.layout)
        assert fwd.out_h == cells and fwd.out_w == problem.w // v, (fwd, cells)
        out.append((a, fwd, skip, [(t - tmin, r) for t, r in rows[a]]))
    return out


def phase_weight(weight, problem, a_taps):
    """(V*C, K, T_a, T_w) channels_last: w'[b*C + c, k, t', u] = w[k, c, r, s]."""
    k, c, _, _ = weight.shape
    v = problem.stride[1]
    _, span_w, cols = subpixel_taps(problem.s, v, problem.padding[1])
    t_a = 1 + max(t for t, _ in a_taps)
    w = weight.new_zeros(v * c, k, t_a, span_w)
    for b in range(v):
        for t, r in a_taps:
            for uu, s in cols[b]:
                w[b * c:(b + 1) * c, :, t, uu] = weight[:, :, r, s].t()
    return w.contiguous(memory_format=torch.channels_last)


def measure(name: str, problem: ConvProblem, phases) -> None:
    """Time and check every form of ``problem``'s dgrad; one line of figures."""
    cl = torch.channels_last
    x = torch.randn(problem.input_shape, device="cuda", dtype=torch.float16).contiguous(memory_format=cl)
    weight = torch.randn(problem.weight_shape, device="cuda", dtype=torch.float16) / (problem.c * 9) ** 0.5
    grad = torch.randn(problem.output_shape, device="cuda", dtype=torch.float16).contiguous(memory_format=cl)

    def cudnn():
        return torch.ops.aten.convolution_backward(grad, x, weight, None, problem.stride, problem.padding,
                                                   problem.dilation, False, (0, 0), 1, (True, False, False))[0]

    def current():
        return conv2d_backward_problem(problem, grad, x, weight, need_weight=False)[0]

    def shuffled():  # the route without the fold: cells, then shuffle_subpixels
        fold = functional.fold_cells_into
        functional.fold_cells_into = lambda *args: None
        try:
            return current()
        finally:
            functional.fold_cells_into = fold

    def replayed(form):  # `form` timed through its own call plan (the plan key does not tell the forms apart)
        call_plans.clear()
        try:
            return bench_us(form, repeat=3)
        finally:
            call_plans.clear()

    forward = problem.dgrad_as_subpixel_forward()
    cells = torch.empty(forward.output_shape, device="cuda", dtype=torch.float16).contiguous(memory_format=cl)
    cell_w = subpixel_dgrad_weight(weight, problem.stride, problem.padding, forward.k)
    dx = torch.empty(problem.input_shape, device="cuda", dtype=torch.float16).contiguous(memory_format=cl)
    _, c, h, w = problem.input_shape
    u, v = problem.stride
    # Each row phase: its problem, dy's rows from `skip`, its weight, its view of dx.
    launches = [(fwd, skip, phase_weight(weight, problem, taps),
                 torch.as_strided(dx, fwd.output_shape, (h * w * c, 1, u * w * c, v * c), a * w * c))
                for a, fwd, skip, taps in phases]

    def one_phase(fwd, skip, wa, view):
        return _run_problem(fwd, grad[:, :, skip:skip + fwd.h], wa, None, None, "auto", None, out=view)

    def rowphase():
        for launch in launches:
            one_phase(*launch)
        return dx

    want = cudnn().float()

    def error(got):
        return ((got.float() - want).abs().max() / want.abs().max()).item()

    dx.fill_(float("nan"))
    with tileconv.poison_outputs():  # (outputs NaN-filled first; no call plans: each form runs its own path)
        errors = {"current": error(current()), "shuffled": error(shuffled()), "rowphase": error(rowphase())}
    t = {
        "cuDNN": bench_us(cudnn, repeat=3),
        "current": replayed(current),
        "shuffled": replayed(shuffled),
        "cells conv": bench_us(lambda: _run_problem(forward, grad, cell_w, None, None, "auto", None, out=cells),
                               repeat=3),
        "shuffle": bench_us(lambda: shuffle_subpixels(cells, dx, problem.stride), repeat=3),
        "rowphase": bench_us(rowphase, repeat=3),
    }
    for a, launch in enumerate(launches):
        t[f"phase {a} ({launch[0].r}x{launch[0].s})"] = bench_us(lambda launch=launch: one_phase(*launch), repeat=3)
    route = dispatch.dgrad_route(problem)
    print(f"{name} (route {route.kind if route else None}; errors "
          + ", ".join(f"{k} {e:.1e}" for k, e in errors.items()) + "): "
          + ", ".join(f"{k} {val:.1f}" for k, val in t.items())
          + " | cuDNN over: " + ", ".join(f"{k} {t['cuDNN'] / t[k]:.2f}x" for k in ("current", "shuffled", "rowphase")))
    for a, (fwd, *_rest) in enumerate(launches):
        algorithm, config = dispatch.select(fwd, "auto", torch.device("cuda"))
        print(f"    phase {a}: {fwd.describe()} -> {algorithm.name} {config}")


def main() -> None:
    torch.backends.cudnn.benchmark = True
    print(torch.cuda.get_device_name(), f"cuDNN {torch.backends.cudnn.version()}")
    cases = [(case.name, case.problem()) for case in SUITES["resnet50"] if "3x3/2" in case.name]
    phases = {name: row_phases(p) for name, p in cases}
    todo = [fwd for name, _ in cases for _, fwd, _, _ in phases[name]] + [p.dgrad_as_subpixel_forward() for _, p in cases]
    for result in tune(todo, progress=False, store=True):
        print(f"  tuned {result.problem.describe()}: {result.status} {result.algorithm} {result.time_ms} ms")
    for name, problem in cases:
        measure(name, problem, phases[name])


if __name__ == "__main__":
    main()
