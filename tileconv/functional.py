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

Gradients: the backward applies the activation's derivative (from the output where it is
a function of it, else from the pre-activation recomputed by the forward kernel), then
tileconv's dgrad and wgrad kernels (:mod:`tileconv.kernels.backward`); the bias gradient
is a sum, the residual's the pre-activation gradient itself. Under ``torch.compile`` the
same code runs as the custom ops ``tileconv::conv2d`` / ``tileconv::conv2d_backward``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
import torch.nn.functional as F

from . import call_plans, dispatch
from ._runtime import INTERPRET
from .epilogue import Activation, ActivationArg, Epilogue, parse_activation
from .kernels import BackwardConfig, LaunchConfig
from .kernels.backward import aten_convolution_backward
from .kernels.dgrad import fold_cells_into, shuffle_subpixels, zero_off_grid
from .kernels.fast_launch import workspace
from .kernels.launch import implicit_gemm_ws_reads, launch_gemm_1x1, launch_implicit_gemm_ws
from .kernels.weights import dgrad_weight, subpixel_dgrad_weight
from .problem import (
    ConvProblem,
    IntPair,
    PaddingArg,
    layout_of,
    normal_geometry,
    problem_from_arguments,
    weight_gradient_layout,
)

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


def _allocate_like(shape, layout: str, like: torch.Tensor, scratch: bool = False) -> torch.Tensor:
    """An output of ``shape`` in ``layout`` with ``like``'s dtype and device (NaN-filled
    inside :func:`poison_outputs`); ``scratch``: a tensor the call's launches share and
    nobody keeps (:func:`~tileconv.kernels.fast_launch.workspace`: a replayed call
    allocates it afresh)."""
    fmt = torch.channels_last if layout == "nhwc" else torch.contiguous_format
    if scratch:
        out = workspace(shape, like.dtype, like.device, memory_format=fmt)
    else:
        out = torch.empty(shape, dtype=like.dtype, device=like.device, memory_format=fmt)
    return out.fill_(float("nan")) if _POISON_OUTPUTS else out


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
    A repeated call replays its recorded launches (:mod:`tileconv.call_plans`).
    """
    key = None if _POISON_OUTPUTS else call_plans.problem_key(problem, x, weight, bias, residual, algo, config)
    if key is None:
        return _run_problem(problem, x, weight, bias, residual, algo, config)
    return call_plans.replay_or_record(key, lambda: _run_problem(problem, x, weight, bias, residual, algo, config),
                                       x, weight, bias, residual)


def _run_problem(problem, x, weight, bias, residual, algo, config, out=None) -> torch.Tensor:
    """:func:`conv2d_problem`'s normal path: allocate (or write ``out``, any strides), select,
    launch."""
    if out is None:
        out = _allocate_like(problem.output_shape, problem.layout, x)
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


# ----------------------------------------------------------------------------- backward
def conv2d_backward_problem(
    problem: ConvProblem,
    grad: torch.Tensor,
    x: torch.Tensor,
    weight: torch.Tensor,
    need_input: bool = True,
    need_weight: bool = True,
    *,
    algo: str = "auto",
    dgrad_config: BackwardConfig | None = None,
    wgrad_config: BackwardConfig | None = None,
) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """(grad_input, grad_weight) of the convolution of ``problem`` given ``grad``, the
    gradient of the pre-activation (the epilogue's derivative already applied).

    The lower-level entry that ``bench`` and tests use: ``algo`` forces a backward
    algorithm by name (``tileconv.kernels.BACKWARD_ALGORITHMS``: 'implicit_gemm',
    'im2row', 'depthwise', 'aten', ...), the configs pin launch choices. grad_input follows the input's
    layout; grad_weight is channels_last where the input or the weight is, else contiguous
    (:func:`~tileconv.problem.weight_gradient_layout`: PyTorch's cuDNN convolutions' rule).
    CPU tensors without the interpreter use 'aten'.
    """
    if not uses_triton(grad):
        algo = "aten"
    algorithm = dispatch.select_backward(problem, algo)
    if algorithm.name == "aten":
        return aten_convolution_backward(problem, grad, x, weight, need_input, need_weight)

    def run():
        return _run_backward(problem, algorithm, algo, grad, x, weight, need_input, need_weight,
                             dgrad_config, wgrad_config)

    key = None if _POISON_OUTPUTS else call_plans.backward_key(
        problem, grad, x, weight, need_input, need_weight, algo, dgrad_config, wgrad_config)
    if key is None:
        return run()
    return call_plans.replay_or_record(key, run, grad, x, weight, weight_slot=2)


def _run_backward(problem, algorithm, algo, grad, x, weight, need_input, need_weight, dgrad_config, wgrad_config):
    """:func:`conv2d_backward_problem`'s normal path: allocate, select, launch. Nothing but
    allocations, derived weights and Triton launches (a replay repeats only those)."""
    grad_input = grad_weight = None
    if need_input:
        grad_input = _dgrad(problem, algorithm, algo, grad, weight, x, dgrad_config)
    if need_weight:
        grad_weight = _allocate_like(problem.weight_shape, weight_gradient_layout(problem, weight), weight)
        if problem.n == 0:
            grad_weight.zero_()
        else:
            config = wgrad_config or dispatch.backward_config(problem, algorithm, "wgrad")
            algorithm.wgrad(problem, grad, x, grad_weight, config)
    return grad_input, grad_weight


def _dgrad(problem, algorithm, algo, grad, weight, x, config) -> torch.Tensor:
    """The input gradient, in the input's layout: as a forward convolution where ``auto``
    dispatch routes it there (:func:`tileconv.dispatch.dgrad_route`), else through
    ``algorithm``'s dgrad kernel (a forced ``algo`` or a pinned ``config`` always does).

    - 'forward' (stride 1): the forward convolution's output is dx.
    - 'grid' (an unpadded strided 1x1): the forward writes dx[:, :, ::U, ::V]; the other
      pixels' zeros leave with gemm_1x1's tiles where it runs the forward problem
      (channels_last), else from a launch of their own first.
    - 'subpixel' (strided, dense): the forward writes each cell's U*V phases as channels of
      a scratch tensor, which one launch spreads onto dx; where implicit_gemm_ws runs it on a
      channels_last dx, straight into dx (:func:`~tileconv.kernels.dgrad.fold_cells_into`)."""
    route = dispatch.dgrad_route(problem) if algo == "auto" and config is None and problem.n else None
    if route is not None:
        forward = route.problem
        if layout_of(grad) != problem.layout:  # the kernels read any strides; gemm_1x1 wants a view
            fmt = torch.channels_last if problem.layout == "nhwc" else torch.contiguous_format
            grad = grad.contiguous(memory_format=fmt)
        if route.kind == "forward":
            return conv2d_problem(forward, grad, dgrad_weight(weight, problem.groups), None, None)
        grad_input = _allocate_like(problem.input_shape, problem.layout, x)
        if route.kind == "subpixel":
            cell_weight = subpixel_dgrad_weight(weight, problem.stride, problem.padding, forward.k)
            algorithm, chosen = dispatch.select(forward, "auto", x.device)
            folded = (fold_cells_into(grad_input, problem.stride, forward.k, chosen.block_n)
                      if algorithm.name == "implicit_gemm_ws" and implicit_gemm_ws_reads(forward, grad, cell_weight)
                      else None)
            if folded is not None:
                launch_implicit_gemm_ws(forward, grad, cell_weight, None, None, folded[0], chosen, fold=folded[1])
                return grad_input
            cells = _allocate_like(forward.output_shape, problem.layout, x, scratch=True)
            algorithm.launch(forward, grad, cell_weight, None, None, cells, chosen)
            shuffle_subpixels(cells, grad_input, problem.stride)
            return grad_input
        weight_t = dgrad_weight(weight, problem.groups)
        u, v = problem.stride
        on_grid = grad_input[:, :, ::u, ::v]
        if route.fused_config is not None:
            launch_gemm_1x1(forward, grad, weight_t, None, None, on_grid, route.fused_config,
                            onto=grad_input, onto_stride=problem.stride)
        else:
            zero_off_grid(grad_input, problem.stride)
            _run_problem(forward, grad, weight_t, None, None, "auto", None, out=on_grid)
        return grad_input
    grad_input = _allocate_like(problem.input_shape, problem.layout, x)
    if problem.n == 0:
        return grad_input.zero_()
    algorithm.dgrad(problem, grad, weight, grad_input, config or dispatch.backward_config(problem, algorithm, "dgrad"))
    return grad_input


def _saves_output(problem: ConvProblem) -> bool:
    """Whether backward takes the activation's derivative from the output (which the
    caller holds anyway: no extra memory) rather than from the pre-activation, which it
    then recomputes from x, weight, bias and residual (kept for wgrad/dgrad anyway, bar
    bias and residual) instead of storing an N*K*P*Q tensor. Identity needs neither."""
    act = problem.epilogue.activation
    if act.name == "leaky_relu":  # sign(out) = sign(pre-activation) iff the slope is positive
        return act.alpha > 0
    return act.name in ("relu", "relu6", "clamp", "sigmoid", "tanh")


def _activation_grad(problem: ConvProblem, grad: torch.Tensor, saved: torch.Tensor | None) -> torch.Tensor:
    """d(loss)/d(pre-activation), from the output (see :func:`_saves_output`) or the
    recomputed pre-activation; identity needs neither."""
    act = problem.epilogue.activation
    name = act.name
    if name == "none":
        return grad
    if name == "relu":
        return grad * (saved > 0)
    if name == "leaky_relu" and _saves_output(problem):
        return grad * torch.where(saved > 0, 1.0, act.alpha).to(grad.dtype)
    if name in ("relu6", "clamp"):
        lo, hi = (0.0, 6.0) if name == "relu6" else (act.alpha, act.beta)
        return grad * ((saved > lo) & (saved < hi))
    if name == "sigmoid":
        return grad * saved * (1 - saved)
    if name == "tanh":
        return grad * (1 - saved * saved)
    # saved is the pre-activation: PyTorch's own derivative kernels (no autograd graph,
    # which a custom op's implementation could not record anyway).
    aten = torch.ops.aten
    if name == "silu":
        return aten.silu_backward(grad, saved)
    if name in ("gelu", "gelu_tanh"):
        return aten.gelu_backward(grad, saved, approximate="tanh" if name == "gelu_tanh" else "none")
    if name == "hardswish":
        return aten.hardswish_backward(grad, saved)
    if name == "leaky_relu":  # a slope <= 0: the output's sign does not tell the input's
        return aten.leaky_relu_backward(grad, saved, act.alpha, False)
    raise AssertionError(f"no derivative for activation {name!r}")


def _backward(problem, grad_out, x, weight, bias, residual, saved_out, needs):
    """(grad_x, grad_w, grad_b, grad_residual) for ``needs`` = which of the four to compute.

    The epilogue's backward: grad_z = grad_out * act'(pre-activation); grad_residual =
    grad_z; grad_b = sum of grad_z over (N, P, Q) (PyTorch's sum: one read of grad_z at
    memory speed, fp32 accumulation for 16-bit dtypes; not worth its own kernel); grad_x
    and grad_w from the dgrad and wgrad kernels.
    """
    if problem.epilogue.activation.name == "none":
        saved = None
    elif _saves_output(problem):
        saved = saved_out
    else:  # recompute the pre-activation with tileconv's own kernel
        plain = problem.with_epilogue(Epilogue(has_bias=bias is not None, has_residual=residual is not None))
        saved = conv2d_problem(plain, x, weight, bias, residual)
    grad_z = _activation_grad(problem, grad_out, saved)
    grad_x, grad_w = (None, None)
    if needs[0] or needs[1]:
        grad_x, grad_w = conv2d_backward_problem(problem, grad_z, x, weight, needs[0], needs[1])
    grad_b = grad_z.sum(dim=(0, 2, 3)) if needs[2] else None
    grad_res = grad_z if needs[3] else None
    return grad_x, grad_w, grad_b, grad_res


def _saved_for_backward(problem, x, weight, bias, residual, out):
    """What backward keeps: x and weight always (wgrad, dgrad); the output when the
    activation's derivative comes from it; bias and residual when it is recomputed."""
    if problem.epilogue.activation.name == "none":
        return x, weight, None, None, None
    if _saves_output(problem):
        return x, weight, None, None, out
    return x, weight, bias, residual, None


class _Conv2dFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, problem, x, weight, bias, residual):
        out = conv2d_problem(problem, x, weight, bias, residual)
        ctx.problem = problem
        ctx.save_for_backward(*_saved_for_backward(problem, x, weight, bias, residual, out))
        return out

    @staticmethod
    def backward(ctx, grad_out):
        x, weight, bias, residual, saved_out = ctx.saved_tensors
        grads = _backward(ctx.problem, grad_out, x, weight, bias, residual, saved_out, ctx.needs_input_grad[1:5])
        return (None, *grads)


# ----------------------------------------------------------------------------- torch.library
# tileconv::conv2d and its backward as PyTorch custom ops, so that torch.compile traces
# through tileconv.conv2d without a graph break (a fake implementation gives the output's
# shape and layout) and CUDA graphs capture it. Arguments are normalised: pairs as lists,
# padding as (top, left) and (bottom, right), the activation as (name, alpha, beta).
_OP_ARGS = (
    "int[] stride, int[] padding, int[] padding_end, int[] dilation, int groups, "
    "str activation, float alpha, float beta"
)


def _op_problem(x, weight, has_bias, has_residual, stride, padding, padding_end, dilation, groups,
                activation, alpha, beta) -> ConvProblem:
    n, c, h, w = x.shape
    k, _, r, s = weight.shape
    return ConvProblem(
        n=n, c=c, h=h, w=w, k=k, r=r, s=s, stride=tuple(stride), padding=tuple(padding),
        dilation=tuple(dilation), groups=groups, dtype=x.dtype, layout=layout_of(x),
        epilogue=Epilogue(Activation(activation, alpha, beta), has_bias, has_residual),
        allow_tf32=x.dtype == torch.float32 and torch.backends.cudnn.allow_tf32,
        padding_end=tuple(padding_end),
    )


def _validated_op_problem(x, weight, bias, residual, stride, padding, padding_end, dilation, groups,
                          activation, alpha, beta) -> ConvProblem:
    """tileconv::conv2d's arguments checked as tileconv.conv2d checks its own."""
    return problem_from_arguments(x, weight, bias, stride, padding, dilation, groups,
                                  Activation(activation, alpha, beta), residual, padding_end=padding_end)


@torch.library.custom_op(
    "tileconv::conv2d", mutates_args=(),
    schema=f"(Tensor input, Tensor weight, Tensor? bias, Tensor? residual, {_OP_ARGS}) -> Tensor",
)
def _conv2d_op(x, weight, bias, residual, *args):
    problem = _validated_op_problem(x, weight, bias, residual, *args)
    if not uses_triton(x):
        return _fallback(problem, x, weight, bias, residual, problem.stride, _explicit_padding(problem),
                         problem.dilation, problem.groups)
    return conv2d_problem(problem, x, weight, bias, residual)


@_conv2d_op.register_fake
def _(x, weight, bias, residual, *args):
    problem = _validated_op_problem(x, weight, bias, residual, *args)
    fmt = torch.channels_last if problem.layout == "nhwc" else torch.contiguous_format
    return torch.empty(problem.output_shape, dtype=x.dtype, device=x.device, memory_format=fmt)


@torch.library.custom_op(
    "tileconv::conv2d_backward", mutates_args=(),
    schema=(f"(Tensor grad, Tensor input, Tensor weight, Tensor? bias, Tensor? residual, Tensor? output, {_OP_ARGS}, "
            "bool[] output_mask) -> (Tensor, Tensor, Tensor, Tensor)"),
)
def _conv2d_backward_op(grad, x, weight, bias, residual, out, *args):
    *args, needs = args
    problem = _op_problem(x, weight, bias is not None, residual is not None, *args)
    # The bias/residual flags only shape the recomputed pre-activation; the problem's
    # epilogue for the activation is what matters here.
    grads = _backward(problem, grad, x, weight, bias, residual, out, needs)
    empty = grad.new_empty(0)
    # A custom op may not return an input: the residual gradient of an identity
    # activation is grad itself, which the autograd formula passes on without the op.
    return tuple(empty if g is None or g is grad else g for g in grads)


@_conv2d_backward_op.register_fake
def _(grad, x, weight, bias, residual, out, *args):
    *args, needs = args
    problem = _op_problem(x, weight, bias is not None, residual is not None, *args)
    empty = grad.new_empty(0)
    grad_z = grad if problem.epilogue.activation.name == "none" else torch.empty_like(grad)
    return (
        _allocate_like(problem.input_shape, problem.layout, x) if needs[0] else empty,
        _allocate_like(problem.weight_shape, weight_gradient_layout(problem, weight), weight) if needs[1] else empty,
        grad.new_empty((problem.k,)) if needs[2] else empty,
        torch.empty_like(grad_z) if needs[3] and grad_z is not grad else empty,
    )


def _op_setup_context(ctx, inputs, output):
    x, weight, bias, residual, *args = inputs
    problem = _op_problem(x, weight, bias is not None, residual is not None, *args)
    ctx.args = args
    ctx.save_for_backward(*_saved_for_backward(problem, x, weight, bias, residual, output))
    ctx.has_bias_residual = (bias is not None, residual is not None)


def _op_backward(ctx, grad):
    x, weight, bias, residual, saved_out = ctx.saved_tensors
    needs = list(ctx.needs_input_grad[:4])
    identity = ctx.args[5] == "none"
    op_needs = [needs[0], needs[1], needs[2], needs[3] and not identity]
    grad_x, grad_w, grad_b, grad_res = torch.ops.tileconv.conv2d_backward(
        grad, x, weight, bias, residual, saved_out, *ctx.args, op_needs)
    if needs[3] and identity:
        grad_res = grad
    grads = [g if need else None for g, need in zip((grad_x, grad_w, grad_b, grad_res), needs, strict=True)]
    return (*grads, *([None] * len(ctx.args)))


_conv2d_op.register_autograd(_op_backward, setup_context=_op_setup_context)


def conv2d_as_called(
    problem: ConvProblem,
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    residual: torch.Tensor | None,
) -> torch.Tensor:
    """:func:`conv2d` called the way a user would call it for ``problem`` (argument checks,
    dispatch and the replay of repeated calls included): what ``bench`` times for
    ``algo='auto'``, so its figures carry the host cost a user pays. ``problem`` must have
    symmetric padding (asymmetric padding has no argument form but 'same')."""
    return conv2d(x, weight, bias, problem.stride, _explicit_padding(problem), problem.dilation, problem.groups,
                  activation=problem.epilogue.activation, residual=residual)


def _explicit_padding(problem: ConvProblem):
    """The padding argument F.conv2d understands for ``problem`` ('same' when asymmetric)."""
    return "same" if problem.padding_end != problem.padding else problem.padding


_AUTOCAST_ELIGIBLE = (torch.float16, torch.bfloat16, torch.float32)


def _autocast_arguments(input, weight, bias, residual):
    """Under ``torch.autocast``, what autocast does to ``F.conv2d``'s arguments: every
    float16/bfloat16/float32 tensor cast to the autocast dtype (float64 is left alone, as
    autocast leaves it). Without it a bf16 activation would meet a float32 weight (the
    master copy) and fail tileconv's dtype check. The casts are differentiable: gradients
    reach the float32 parameters in float32."""
    if not isinstance(input, torch.Tensor) or not torch.is_autocast_enabled(input.device.type):
        return input, weight, bias, residual
    dtype = torch.get_autocast_dtype(input.device.type)

    def cast(t):
        return t.to(dtype) if isinstance(t, torch.Tensor) and t.dtype in _AUTOCAST_ELIGIBLE else t

    return cast(input), cast(weight), cast(bias), cast(residual)


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
    NCHW output. Differentiable in input, weight, bias and residual. Inside
    ``torch.autocast`` the tensors are first cast to the autocast dtype, as for ``F.conv2d``.

    Raises ValueError / TypeError / RuntimeError naming the offending argument when the
    arguments do not describe a valid convolution; nothing is computed in that case.
    """
    plan_key = None if _POISON_OUTPUTS else call_plans.plan_key(
        input, weight, bias, residual, stride, padding, dilation, groups, activation)
    if plan_key is not None:
        plan = call_plans.lookup(plan_key)
        if plan is not None:  # these exact arguments were seen: replay their launches
            return plan(input, weight, bias, residual)
    unbatched = isinstance(input, torch.Tensor) and input.dim() == 3
    if unbatched:
        input = input.unsqueeze(0)
        if isinstance(residual, torch.Tensor):
            if residual.dim() != 3:
                raise ValueError(
                    f"residual must have the output's shape (unbatched, 3D), got {tuple(residual.shape)}"
                )
            residual = residual.unsqueeze(0)
    input, weight, bias, residual = _autocast_arguments(input, weight, bias, residual)
    if torch.compiler.is_compiling():
        # The custom op: no graph break, autograd included. Dynamo traces this branch, so it
        # builds plain values only (torch 2.11's Dynamo failed on building the problem's
        # dataclasses); the op validates the arguments, its fake implementation while
        # torch.compile traces, with the same errors as below.
        if not isinstance(weight, torch.Tensor) or weight.dim() != 4:  # the errors of the eager path
            problem_from_arguments(input, weight, bias, stride, padding, dilation, groups, activation, residual)
        stride_p, pad, pad_end, dilation_p = normal_geometry(tuple(weight.shape[-2:]), stride, padding, dilation)
        out = torch.ops.tileconv.conv2d(input, weight, bias, residual, list(stride_p), list(pad), list(pad_end),
                                        list(dilation_p), groups, *parse_activation(activation))
        return out.squeeze(0) if unbatched else out
    problem = problem_from_arguments(input, weight, bias, stride, padding, dilation, groups, activation, residual)
    if not uses_triton(input):
        out = _fallback(problem, input, weight, bias, residual, stride, padding, dilation, groups)
    elif torch.is_grad_enabled() and any(
        t is not None and t.requires_grad for t in (input, weight, bias, residual)
    ):
        out = _Conv2dFunction.apply(problem, input, weight, bias, residual)
    elif plan_key is not None:  # no plan yet (checked above): record one, or run a call that cannot be
        out = call_plans.replay_or_record(plan_key, lambda: conv2d_problem(problem, input, weight, bias, residual),
                                          input, weight, bias, residual)
    else:
        out = conv2d_problem(problem, input, weight, bias, residual)
    return out.squeeze(0) if unbatched else out
