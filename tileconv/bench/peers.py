"""The implementations tileconv is measured against, and the reference it is checked with.

- ``cudnn``: PyTorch eager, ``F.conv2d`` (cuDNN on a GPU, with
  ``torch.backends.cudnn.benchmark = True`` set by the session) followed by the row's
  epilogue as separate PyTorch ops (:meth:`Epilogue.torch_apply`): what a user without
  tileconv runs.
- ``compile``: the same function under ``torch.compile(mode="max-autotune")`` with
  Inductor's convolution backends limited to its Triton template
  (``max_autotune_conv_backends="TRITON"``). Slow to build (seconds per shape), opt-in.

The reference is the same eager function on the inputs' device, on inputs upcast to
float32 with TF32 off (far more precise than a float16, bfloat16 or TF32 result and much
cheaper than the float64 CPU reference on big shapes; float64 for strict float32 rows),
or :func:`tileconv.conv2d_reference` in float64 on the CPU (the interpreter demo).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import torch
import torch.nn.functional as F

from ..problem import ConvProblem
from ..reference import conv2d_reference
from ..testing import ConvInputs

PEERS = ("cudnn", "compile")
# What a row times (``bench --pass``): the forward with its epilogue; the input gradient;
# the weight gradient; or the forward, then both gradients (and the bias's) of an upstream
# gradient taken as the pre-activation's (the activation's derivative is not timed).
PASSES = ("fwd", "dgrad", "wgrad", "fwd+bwd")

ConvFunction = Callable[[torch.Tensor, torch.Tensor, torch.Tensor | None, torch.Tensor | None], torch.Tensor]


def eager_function(problem: ConvProblem) -> ConvFunction:
    """``f(x, weight, bias, residual)``: F.conv2d, then the epilogue's ops in PyTorch."""
    if problem.padding_end != problem.padding:
        raise ValueError(f"{problem.describe()}: asymmetric padding has no F.conv2d form")
    stride, padding, dilation, groups = problem.stride, problem.padding, problem.dilation, problem.groups
    epilogue = problem.epilogue

    def conv_then_epilogue(x, weight, bias, residual):
        return epilogue.torch_apply(F.conv2d(x, weight, None, stride, padding, dilation, groups), bias, residual)

    return conv_then_epilogue


def _arguments(inputs: ConvInputs) -> tuple:
    return inputs.x, inputs.weight, inputs.bias, inputs.residual


def cudnn_call(problem: ConvProblem, inputs: ConvInputs) -> Callable[[], torch.Tensor]:
    """The eager peer as a zero-argument call on ``inputs``."""
    function, args = eager_function(problem), _arguments(inputs)
    return lambda: function(*args)


def compile_call(problem: ConvProblem, inputs: ConvInputs) -> Callable[[], torch.Tensor]:
    """The Inductor peer: compiled (and autotuned) on its first call, which the caller makes."""
    import torch._dynamo
    import torch._inductor.config as inductor_config

    # Each row is a new shape: start from a clean slate instead of piling recompilations
    # onto one code object until Dynamo's recompile limit silently falls back to eager.
    torch._dynamo.reset()
    inductor_config.max_autotune_conv_backends = "TRITON"
    args = _arguments(inputs)
    for tensor in args:
        if tensor is not None:
            # mode="max-autotune" replays a CUDA graph; without this it would copy every
            # input into the graph's own buffers inside the timed region on each call.
            torch._dynamo.mark_static_address(tensor)
    compiled = torch.compile(eager_function(problem), mode="max-autotune", dynamic=False)
    return lambda: compiled(*args)


PEER_CALLS = {"cudnn": cudnn_call, "compile": compile_call}


def pass_gradients(problem: ConvProblem, pass_name: str) -> tuple[bool, bool]:
    """(input gradient, weight gradient) computed by ``pass_name``."""
    return pass_name in ("dgrad", "fwd+bwd"), pass_name in ("wgrad", "fwd+bwd")


def backward_outputs(problem: ConvProblem, inputs: ConvInputs, grad: torch.Tensor, pass_name: str) -> list:
    """PyTorch's ``aten.convolution_backward`` (cuDNN on a GPU) for the gradients of the
    pass, plus the bias gradient in fwd+bwd: the eager peer's backward."""
    from ..kernels.backward import aten_convolution_backward

    need_x, need_w = pass_gradients(problem, pass_name)
    grad_x, grad_w = aten_convolution_backward(problem, grad, inputs.x, inputs.weight, need_x, need_w)
    outputs = [t for t in (grad_x, grad_w) if t is not None]
    if pass_name == "fwd+bwd" and inputs.bias is not None:
        outputs.append(grad.sum(dim=(0, 2, 3)))
    return outputs


def cudnn_pass_call(problem: ConvProblem, inputs: ConvInputs, grad: torch.Tensor | None,
                    pass_name: str) -> Callable[[], object]:
    """The eager peer of one pass: ``aten.convolution_backward`` for the same gradients."""
    if pass_name == "fwd":
        return cudnn_call(problem, inputs)
    forward = cudnn_call(problem, inputs) if pass_name == "fwd+bwd" else None

    def call():
        out = [forward()] if forward is not None else []
        return out + backward_outputs(problem, inputs, grad, pass_name)

    return call


def reference_pass(problem: ConvProblem, inputs: ConvInputs, grad: torch.Tensor | None, pass_name: str,
                   precision: str = "float32") -> list[torch.Tensor]:
    """The reference outputs of a pass, widened as in :func:`reference_output`."""
    outputs = [reference_output(problem, inputs, precision)] if pass_name in ("fwd", "fwd+bwd") else []
    if pass_name == "fwd":
        return outputs
    strict_fp32 = problem.dtype == torch.float32 and not problem.allow_tf32
    wide = torch.float64 if precision == "float64" or strict_fp32 else torch.float32
    device = "cpu" if precision == "float64" else inputs.x.device

    def widen(t):
        return None if t is None else t.detach().to(device=device, dtype=wide)

    wide_inputs = ConvInputs(widen(inputs.x), widen(inputs.weight), widen(inputs.bias), widen(inputs.residual))
    with torch.no_grad(), cudnn_tf32(False):
        return outputs + backward_outputs(problem, wide_inputs, widen(grad), pass_name)


@contextlib.contextmanager
def cudnn_tf32(enabled: bool) -> Iterator[None]:
    """Within this block cuDNN's float32 convolutions use TF32 iff ``enabled``."""
    previous = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = enabled
    try:
        yield
    finally:
        torch.backends.cudnn.allow_tf32 = previous


def reference_output(problem: ConvProblem, inputs: ConvInputs, precision: str = "float32") -> torch.Tensor:
    """What tileconv's output is compared with: ``precision`` 'float32' (eager on the
    inputs' device, upcast, TF32 off; float64 for strict float32 problems) or 'float64'
    (:func:`tileconv.conv2d_reference` on the CPU)."""
    if precision == "float64":
        return conv2d_reference(
            inputs.x, inputs.weight, inputs.bias, problem.stride, problem.padding, problem.dilation,
            problem.groups, activation=problem.epilogue.activation, residual=inputs.residual,
        )
    if precision != "float32":
        raise ValueError(f"precision={precision!r} must be 'float32' or 'float64'")
    # Strict float32 results need a wider reference than float32 itself (and cuDNN may pick
    # an FFT or Winograd algorithm for it): those rows are upcast to float64, on the device.
    strict_fp32 = problem.dtype == torch.float32 and not problem.allow_tf32
    wide = torch.float64 if strict_fp32 else torch.float32
    upcast = [None if t is None else t.to(wide) for t in _arguments(inputs)]
    with torch.no_grad(), cudnn_tf32(False):
        return eager_function(problem)(*upcast)
