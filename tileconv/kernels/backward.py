"""The backward algorithms: who computes the input (dgrad) and weight (wgrad) gradients.

The registry beside the forward's ``ALGORITHMS``; :mod:`tileconv.dispatch` picks from it
(``choose_backward_algorithm``) and tuning can grow to it. Every launcher writes into a
tensor the caller allocated:

    dgrad(problem, grad, weight, grad_input, config)   grad = d loss / d pre-activation
    wgrad(problem, grad, x, grad_weight, config)

- ``implicit_gemm``: tensor-core kernels of :mod:`.dgrad` and :mod:`.wgrad` (or, with a
  config's ``ws``, the warp-specialized Hopper wgrad of :mod:`.wgrad_ws`), every problem
  (groups through a grid axis: with thin groups a tile is partly padding, which costs
  FLOPs and not bytes, and wgrad's columns flatten (r, s, c) so a 3x3 group of 4 channels
  still fills 36 columns).
- ``im2row``: the implicit GEMM's dgrad; the wgrad over each filter row's S x C input values
  as one contiguous run of a channel-padded copy of the input (:mod:`.wgrad_columns`): few
  input channels (the stems), where the implicit GEMM's wgrad gathers 2-byte values.
- ``depthwise``: CUDA-core kernels for groups = C (any multiplier), where a tensor-core
  tile would be almost all padding.
- ``depthwise_toeplitz``: the same dgrad; the wgrad of large filters on the tensor cores, a
  Toeplitz GEMM a channel over each output row (:mod:`.wgrad_toeplitz`; filters up to 64x64).
- ``depthwise_halo``: the same dgrad; the wgrad from shared-memory halos (Gluon, a GPU with
  cp.async; multiplier 1, channels_last, filters of up to 49 taps), every tap's accumulator
  in registers (:mod:`.wgrad_halo`).
- ``aten``: PyTorch's ``aten.convolution_backward`` (cuDNN on a GPU), kept as a named
  fallback to compare with; never chosen by default where the Triton kernels run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from .._runtime import INTERPRET
from ..problem import ConvProblem
from .config import BackwardConfig
from .dgrad import launch_dgrad_depthwise, launch_dgrad_implicit_gemm
from .launch import has_cp_async
from .wgrad import launch_wgrad_depthwise, launch_wgrad_implicit_gemm
from .wgrad_columns import columns_wgrad_unsupported_reason, launch_wgrad_columns
from .wgrad_halo import launch_wgrad_depthwise_halo, wgrad_halo_unsupported_reason
from .wgrad_toeplitz import launch_wgrad_depthwise_toeplitz, wgrad_toeplitz_unsupported_reason
from .wgrad_ws import launch_wgrad_ws

BackwardLauncher = Callable[[ConvProblem, torch.Tensor, torch.Tensor, torch.Tensor, BackwardConfig], object]


@dataclass(frozen=True)
class BackwardAlgorithm:
    """A named pair of gradient kernels."""

    name: str
    summary: str
    dgrad: BackwardLauncher  # dgrad(problem, grad, weight, grad_input, config)
    wgrad: BackwardLauncher  # wgrad(problem, grad, x, grad_weight, config)
    unsupported_reason: Callable[[ConvProblem], str | None]


def aten_convolution_backward(
    problem: ConvProblem, grad: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, need_x: bool, need_w: bool,
) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """(grad_input, grad_weight) through PyTorch's ``aten.convolution_backward``; the
    asymmetric padding of 'same' with an even kernel is an explicit pad of the input."""
    pad_extra = (problem.padding_end[0] - problem.padding[0], problem.padding_end[1] - problem.padding[1])
    x_in = x
    if pad_extra != (0, 0):
        x_in = F.pad(x, (0, pad_extra[1], 0, pad_extra[0]))
    grad_x, grad_w, _ = torch.ops.aten.convolution_backward(
        grad, x_in, weight, None, list(problem.stride), list(problem.padding), list(problem.dilation),
        False, [0, 0], problem.groups, [need_x, need_w, False],
    )
    if grad_x is not None and pad_extra != (0, 0):
        grad_x = grad_x[:, :, : problem.h, : problem.w]
    return grad_x, grad_w


def _aten_dgrad(problem, grad, weight, grad_input, config):
    # The input itself is not read for dgrad; an empty stand-in of its shape suffices.
    x = torch.empty(0, device=grad.device, dtype=grad.dtype).expand(problem.input_shape)
    grad_input.copy_(aten_convolution_backward(problem, grad, x, weight, True, False)[0])


def _aten_wgrad(problem, grad, x, grad_weight, config):
    weight = torch.empty(0, device=grad.device, dtype=grad.dtype).expand(problem.weight_shape)
    grad_weight.copy_(aten_convolution_backward(problem, grad, x, weight, False, True)[1])


def _wgrad_implicit_gemm(problem, grad, x, grad_weight, config):
    """implicit_gemm's wgrad: the Triton kernel (:mod:`.wgrad`), or with ``config.ws`` the
    warp-specialized Hopper kernel (:mod:`.wgrad_ws`), the same GEMM."""
    if config.ws:
        return launch_wgrad_ws(problem, grad, x, grad_weight, config)
    return launch_wgrad_implicit_gemm(problem, grad, x, grad_weight, config)


def _always(problem: ConvProblem) -> str | None:
    return None


def _depthwise_only(problem: ConvProblem) -> str | None:
    if not problem.is_depthwise:
        return "it needs groups == C (one input channel per group)"
    return None


def _halo_reason(problem: ConvProblem) -> str | None:
    if INTERPRET:
        return "its wgrad is a Gluon kernel (shared memory, cp.async): it does not run under Triton's interpreter"
    if not has_cp_async():
        return "its wgrad is a Gluon kernel built on cp.async: it needs an NVIDIA GPU of compute capability 8.0 or newer"
    return wgrad_halo_unsupported_reason(problem)


BACKWARD_ALGORITHMS: dict[str, BackwardAlgorithm] = {
    "implicit_gemm": BackwardAlgorithm(
        "implicit_gemm",
        "tensor-core dgrad (output-phase transposed implicit GEMM) and wgrad (split-K GEMM over N*P*Q)",
        launch_dgrad_implicit_gemm, _wgrad_implicit_gemm, _always,
    ),
    "im2row": BackwardAlgorithm(
        "im2row",
        "the implicit GEMM's dgrad; wgrad over each filter row's S x C input values, one run of a padded copy",
        launch_dgrad_implicit_gemm, launch_wgrad_columns, columns_wgrad_unsupported_reason,
    ),
    "depthwise": BackwardAlgorithm(
        "depthwise",
        "CUDA-core depthwise dgrad (output phases) and wgrad (a filter row's taps a program, reduced over N*P*Q)",
        launch_dgrad_depthwise, launch_wgrad_depthwise, _depthwise_only,
    ),
    "depthwise_toeplitz": BackwardAlgorithm(
        "depthwise_toeplitz",
        "the depthwise dgrad; wgrad of large filters on the tensor cores (a Toeplitz GEMM a channel and output row)",
        launch_dgrad_depthwise, launch_wgrad_depthwise_toeplitz, wgrad_toeplitz_unsupported_reason,
    ),
    "depthwise_halo": BackwardAlgorithm(
        "depthwise_halo",
        "the depthwise dgrad; wgrad from shared-memory halos (Gluon), every tap's accumulator in registers",
        launch_dgrad_depthwise, launch_wgrad_depthwise_halo, _halo_reason,
    ),
    "aten": BackwardAlgorithm(
        "aten",
        "PyTorch's aten.convolution_backward (cuDNN on a GPU): the reference peer",
        _aten_dgrad, _aten_wgrad, _always,
    ),
}


def get_backward_algorithm(name: str) -> BackwardAlgorithm:
    if name not in BACKWARD_ALGORITHMS:
        raise ValueError(
            f"backward algo={name!r} is not a tileconv backward algorithm; known: {', '.join(BACKWARD_ALGORITHMS)}"
        )
    return BACKWARD_ALGORITHMS[name]
