"""Checking tileconv against the float64 reference: inputs, tolerances, comparisons.

Used by the test suite, ``python -m tileconv verify`` and ``bench``'s error column, so
that all three judge a result the same way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from .problem import ConvProblem

# Relative (Frobenius-norm) error allowed for a reduction of length 256, by dtype. The
# inputs are already in the dtype, so the error is the output rounding plus fp32
# accumulation order, and, for tf32, the rounding of the operands to 10-bit mantissas.
BASE_TOLERANCE = {"float32": 2e-6, "float32+tf32": 3e-3, "float16": 2e-3, "bfloat16": 1.6e-2}


def tolerance(problem: ConvProblem, reduction: int | None = None) -> float:
    """Allowed relative error: by dtype, growing with the reduction length (C/g*R*S for
    the forward; ``reduction`` for another pass: K/g*R*S for dgrad, N*P*Q for wgrad)."""
    length = problem.gemm_k if reduction is None else reduction
    return BASE_TOLERANCE[problem.dtype_name] * max(1.0, math.sqrt(length / 256))


@dataclass
class ConvInputs:
    """Random inputs of a problem, in its layout; bias/residual present per its epilogue."""

    x: torch.Tensor
    weight: torch.Tensor
    bias: torch.Tensor | None
    residual: torch.Tensor | None


def random_inputs(
    problem: ConvProblem, device: str | torch.device = "cpu", seed: int | None = None, *, draw_on_device: bool = False,
) -> ConvInputs:
    """Fresh random inputs (never zeros) for ``problem``: N(0, 1) input, weights scaled by
    1/sqrt(C/g*R*S) so that outputs are O(1) whatever the reduction length. Drawn on the
    CPU and moved (the same numbers on every machine for a seed), or with
    ``draw_on_device`` on ``device`` itself (the benchmark suites' inputs reach 100 MB,
    which the CPU takes a while to draw)."""
    gen = torch.Generator(device=device if draw_on_device else "cpu")
    if seed is not None:
        gen.manual_seed(seed)
    else:
        gen.seed()

    def randn(shape, scale=1.0):
        return (torch.randn(shape, generator=gen, dtype=torch.float32, device=gen.device) * scale).to(problem.dtype).to(device)

    fmt = torch.channels_last if problem.layout == "nhwc" else torch.contiguous_format
    x = randn(problem.input_shape).contiguous(memory_format=fmt)
    weight = randn(problem.weight_shape, 1.0 / math.sqrt(problem.gemm_k))
    bias = randn((problem.k,)) if problem.epilogue.has_bias else None
    residual = randn(problem.output_shape).contiguous(memory_format=fmt) if problem.epilogue.has_residual else None
    return ConvInputs(x, weight, bias, residual)


@dataclass
class Comparison:
    """How far an output is from the reference, and where it is worst."""

    rel_err: float  # ||out - ref|| / ||ref|| over the finite reference elements
    max_abs_err: float
    worst_index: tuple[int, ...]
    worst_out: float
    worst_ref: float
    nonfinite_mismatches: int  # NaN/Inf where the reference has none, or the reverse
    tolerance: float

    @property
    def ok(self) -> bool:
        return self.nonfinite_mismatches == 0 and self.rel_err <= self.tolerance and not math.isnan(self.rel_err)

    def message(self) -> str:
        return (
            f"relative error {self.rel_err:.3e} (tolerance {self.tolerance:.1e}), "
            f"{self.nonfinite_mismatches} NaN/Inf mismatches, worst element at {self.worst_index}: "
            f"got {self.worst_out:.6g}, expected {self.worst_ref:.6g} (abs error {self.max_abs_err:.3e})"
        )


def compare(out: torch.Tensor, ref: torch.Tensor, tol: float) -> Comparison:
    """Compare ``out`` (any dtype/device) with the float64 reference ``ref``."""
    if tuple(out.shape) != tuple(ref.shape):
        raise AssertionError(f"output shape {tuple(out.shape)} != reference shape {tuple(ref.shape)}")
    got = out.detach().to(device="cpu", dtype=torch.float64)
    ref = ref.to(device="cpu", dtype=torch.float64)
    finite_ref = torch.isfinite(ref)
    # Where the reference is NaN/Inf the output must be the same NaN/Inf; elsewhere finite.
    same_nonfinite = (torch.isnan(got) & torch.isnan(ref)) | (torch.isinf(ref) & (got == ref))
    mismatches = int((~finite_ref & ~same_nonfinite).sum() + (finite_ref & ~torch.isfinite(got)).sum())
    diff = torch.where(finite_ref, got - ref, torch.zeros_like(ref))
    diff = torch.where(torch.isfinite(diff), diff, torch.full_like(diff, math.inf))
    ref_norm = torch.where(finite_ref, ref, torch.zeros_like(ref)).norm().item()
    diff_norm = diff.norm().item()
    rel = diff_norm / ref_norm if ref_norm > 0 else diff_norm
    if diff.numel() == 0:
        return Comparison(0.0, 0.0, (), 0.0, 0.0, 0, tol)
    flat = int(diff.abs().argmax())
    index = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), diff.shape))
    return Comparison(
        rel_err=rel,
        max_abs_err=diff.abs().max().item(),
        worst_index=index,
        worst_out=got[index].item(),
        worst_ref=ref[index].item(),
        nonfinite_mismatches=mismatches,
        tolerance=tol,
    )


def assert_conv_close(out: torch.Tensor, ref: torch.Tensor, tol: float, context: str = "") -> Comparison:
    """Raise AssertionError (saying where and how much) unless ``out`` matches ``ref``."""
    result = compare(out, ref, tol)
    if not result.ok:
        raise AssertionError(f"{context}: {result.message()}" if context else result.message())
    return result
