"""The float64 reference of the whole op: conv2d plus epilogue, computed on the CPU.

Tests, ``verify`` and ``bench`` compare tileconv against this. It deliberately takes the
user's original arguments and hands them to ``torch.nn.functional.conv2d``, so that it
shares none of tileconv's argument normalisation: PyTorch's meaning is the spec.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .epilogue import Activation, ActivationArg
from .problem import IntPair, PaddingArg


def conv2d_reference(
    input: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None = None,
    stride: IntPair = 1,
    padding: PaddingArg = 0,
    dilation: IntPair = 1,
    groups: int = 1,
    *,
    activation: ActivationArg = None,
    residual: torch.Tensor | None = None,
    device: str | torch.device = "cpu",
) -> torch.Tensor:
    """``activation(conv2d(input, weight) + bias + residual)`` in float64.

    Computed on ``device`` (the CPU by default; a GPU computes float64 too, much faster
    for the large random problems of ``verify``)."""

    def f64(t: torch.Tensor | None) -> torch.Tensor | None:
        return None if t is None else t.detach().to(device=device, dtype=torch.float64)

    out = F.conv2d(f64(input), f64(weight), f64(bias), stride, padding, dilation, groups)
    if residual is not None:
        out = out + f64(residual)
    return Activation.parse(activation).torch_apply(out)
