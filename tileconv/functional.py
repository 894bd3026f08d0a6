"""``tileconv.conv2d``: PyTorch's conv2d with a fused epilogue, run by Triton kernels.

Flow of one call: :func:`~tileconv.problem.problem_from_arguments` validates and
describes the problem; :func:`tileconv.dispatch.select` picks the kernel and its launch
config; the launcher writes the output in the input's memory layout.

Where it runs:

- CUDA tensors run the Triton kernels.
- CPU tensors with ``TRITON_INTERPRET=1`` in the environment run the same Triton kernels
  through Triton's interpreter (that is how the test suite checks the kernels on a CPU).
- CPU tensors otherwise fall back to ``torch.nn.functional.conv2d`` followed by the same
  epilogue in PyTorch, so a model built on tileconv still runs, and can be tested, on a CPU.

Gradients: the forward is tileconv's; the backward applies the activation's derivative
and then PyTorch's ``convolution_backward`` for the input and weight gradients.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

import torch
import torch.nn.functional as F

from . import dispatch
from ._runtime import INTERPRET
from .epilogue import ActivationArg, Epilogue
from .kernels import LaunchConfig
from .problem import ConvProblem, IntPair, PaddingArg, problem_from_arguments

_POISON_OUTPUTS = False


@contextlib.contextmanager
def poison_outputs() -> Iterator[None]:
    """Within this block, outputs are allocated filled with NaN instead of left
    uninitialised, so that an element a kernel fails to write cannot pass a check."""
    global _POISON_OUTPUTS
    previous, _POISON_OUTPUTS = _POISON_OUTPUTS, True
    try:
        yield
    finally:
        _POISON_OUTPUTS = previous


def _allocate_output(problem: ConvProblem, like: torch.Tensor) -> torch.Tensor:
    fmt = torch.channels_last if problem.layout == "nhwc" else torch.contiguous_format
    if _POISON_OUTPUTS:
        out = torch.empty(problem.output_shape, dtype=problem.dtype, device=like.device, memory_format=fmt)
        return out.fill_(float("nan"))
    return torch.empty(problem.output_shape, dtype=problem.dtype, device=like.device, memory_format=fmt)


def uses_triton(x: torch.Tensor) -> bool:
    """True when ``x``'s device runs tileconv's Triton kernels (CUDA, or the interpreter)."""
    return x.is_cuda or (INTERPRET and x.device.type == "cpu")


def conv2d_problem(
    problem: ConvProblem,
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    residual: torch.Tensor | None,
    *,
    algo: str = "auto",
    config: LaunchConfig | None = None,
) -> torch.Tensor:
    """Run the forward of an already validated ``problem`` on the Triton kernels.

    The lower-level entry that ``bench``, ``tune`` and tests use: ``algo`` forces an
    algorithm by name (``tileconv.ALGORITHMS``), ``config`` a launch config; by default
    :func:`tileconv.dispatch.select` chooses both. No autograd, no argument checks.
    """
    out = _allocate_output(problem, x)
    if problem.n == 0:
        return out
    if bias is not None:
        bias = bias.contiguous()  # the kernels read bias[k] at bias_ptr + k (a strided view would be misread)
    algorithm, chosen = dispatch.select(problem, algo, x.device)
    algorithm.launch(problem, x, weight, bias, residual, out, config or chosen)
    return out


def _fallback(problem, x, weight, bias, residual, stride, padding, dilation, groups):
    """CPU without the interpreter: PyTorch's conv2d, then the epilogue in PyTorch."""
    conv = F.conv2d(x, weight, None, stride, padding, dilation, groups)
    return problem.epilogue.torch_apply(conv, bias, residual)


# Activations whose derivative is a function of their output: backward keeps the output
# instead of recomputing the pre-activation.
_GRAD_FROM_OUTPUT = {"none", "relu", "relu6", "clamp", "sigmoid", "tanh"}


def _activation_grad(problem: ConvProblem, grad: torch.Tensor, saved: torch.Tensor) -> torch.Tensor:
    """d(loss)/d(pre-activation), from the output (or the recomputed pre-activation)."""
    act = problem.epilogue.activation
    name = act.name
    if name == "none":
        return grad
    if name == "relu":
        return grad * (saved > 0)
    if name in ("relu6", "clamp"):
        lo, hi = (0.0, 6.0) if name == "relu6" else (act.alpha, act.beta)
        return grad * ((saved > lo) & (saved < hi))
    if name == "sigmoid":
        return grad * saved * (1 - saved)
    if name == "tanh":
        return grad * (1 - saved * saved)
    with torch.enable_grad():  # saved is the pre-activation: differentiate act there
        z = saved.detach().requires_grad_(True)
        (grad_z,) = torch.autograd.grad(act.torch_apply(z), z, grad)
    return grad_z


class _Conv2dFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, problem, x, weight, bias, residual):
        out = conv2d_problem(problem, x, weight, bias, residual)
        ctx.problem = problem
        if problem.epilogue.activation.name in _GRAD_FROM_OUTPUT:
            ctx.save_for_backward(x, weight, None, None, out)
        else:  # the pre-activation is recomputed in backward from these
            ctx.save_for_backward(x, weight, bias, residual, None)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        problem: ConvProblem = ctx.problem
        x, weight, bias, residual, saved = ctx.saved_tensors
        if saved is None:  # recompute the pre-activation with tileconv's own kernel
            plain = problem.with_epilogue(Epilogue(has_bias=bias is not None, has_residual=residual is not None))
            saved = conv2d_problem(plain, x, weight, bias, residual)
        grad_z = _activation_grad(problem, grad_out, saved)
        need_x, need_w, need_b = ctx.needs_input_grad[1], ctx.needs_input_grad[2], ctx.needs_input_grad[3]
        grad_x = grad_w = grad_b = None
        if need_x or need_w:
            grad_x, grad_w = _conv_backward(problem, grad_z, x, weight, need_x, need_w)
        if need_b:
            grad_b = grad_z.sum(dim=(0, 2, 3))
        grad_res = grad_z if ctx.needs_input_grad[4] else None
        return None, grad_x, grad_w, grad_b, grad_res


def _conv_backward(problem, grad_z, x, weight, need_x, need_w):
    """Input and weight gradients through PyTorch's convolution_backward."""
    pad_extra = (problem.padding_end[0] - problem.padding[0], problem.padding_end[1] - problem.padding[1])
    x_in = x
    if pad_extra != (0, 0):  # 'same' with an even kernel pads one more at the end
        x_in = F.pad(x, (0, pad_extra[1], 0, pad_extra[0]))
    grad_x, grad_w, _ = torch.ops.aten.convolution_backward(
        grad_z, x_in, weight, None, list(problem.stride), list(problem.padding), list(problem.dilation),
        False, [0, 0], problem.groups, [need_x, need_w, False],
    )
    if grad_x is not None and pad_extra != (0, 0):
        grad_x = grad_x[:, :, : problem.h, : problem.w]
    return grad_x, grad_w


def conv2d(
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
) -> torch.Tensor:
    """2D convolution with a fused epilogue: ``activation(conv2d(input, weight) + bias + residual)``.

    Arguments have ``torch.nn.functional.conv2d``'s meaning and forms: ``input`` is
    (N, C, H, W) or unbatched (C, H, W); ``weight`` is (K, C/groups, R, S); ``stride``,
    ``padding`` and ``dilation`` are ints or pairs, ``padding`` also ``'same'`` or
    ``'valid'``. Then the epilogue:

    - ``residual``: a tensor of the output's shape, added before the activation.
    - ``activation``: None, one of 'relu', 'relu6', 'leaky_relu' (slope 0.01), 'silu',
      'gelu' (erf), 'gelu_tanh', 'sigmoid', 'tanh', 'hardswish', or
      ``('leaky_relu', slope)`` / ``('clamp', lo, hi)``.

    dtypes float16, bfloat16 and float32 (accumulation in fp32; float32 uses TF32 tensor
    cores exactly when ``torch.backends.cudnn.allow_tf32`` is set, as PyTorch's conv does).
    A channels_last input gives a channels_last output; any other input gives a contiguous
    NCHW output. Differentiable in input, weight, bias and residual.

    Raises ValueError / TypeError / RuntimeError naming the offending argument when the
    arguments do not describe a valid convolution; nothing is computed in that case.
    """
    unbatched = isinstance(input, torch.Tensor) and input.dim() == 3
    if unbatched:
        input = input.unsqueeze(0)
        if isinstance(residual, torch.Tensor):
            if residual.dim() != 3:
                raise ValueError(
                    f"residual must have the output's shape (unbatched, 3D), got {tuple(residual.shape)}"
                )
            residual = residual.unsqueeze(0)
    problem = problem_from_arguments(input, weight, bias, stride, padding, dilation, groups, activation, residual)
    if not uses_triton(input):
        out = _fallback(problem, input, weight, bias, residual, stride, padding, dilation, groups)
    elif torch.is_grad_enabled() and any(
        t is not None and t.requires_grad for t in (input, weight, bias, residual)
    ):
        out = _Conv2dFunction.apply(problem, input, weight, bias, residual)
    else:
        out = conv2d_problem(problem, input, weight, bias, residual)
    return out.squeeze(0) if unbatched else out
