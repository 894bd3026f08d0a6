"""Gradients through tileconv.conv2d.

Two independent checks: (1) input, weight, bias and residual gradients against PyTorch's
autograd on float64 copies of the same tensors; (2) central differences of tileconv's own
forward (float32) on a few elements, which does not trust any backward formula.
"""

from __future__ import annotations

import dataclasses
import math
import re

import pytest
import torch
import torch.nn.functional as F

import tileconv
from tileconv.epilogue import Activation
from tileconv.kernels import BackwardConfig, LaunchConfig
from tileconv.kernels.config import WS_TMA
from tileconv.testing import assert_conv_close, compare

# Gradient tolerance (relative Frobenius error), by dtype. The backward (tileconv's dgrad and
# wgrad kernels) takes the pre-activation gradient in the tensors' dtype, so in
# float16/bfloat16 the gradients carry the dtype's rounding: where a reduction cancels (a bias gradient summing to near zero) even
# PyTorch's own autograd in that dtype is off by several percent. So the bar is the larger of
# this floor and 4x the error of PyTorch's own autograd in the same dtype on the same tensors.
GRAD_TOLERANCE = {torch.float32: 2e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}
TORCH_ERROR_FACTOR = 4

ACTIVATIONS = [None, "relu", "silu", "gelu", "sigmoid", "tanh", "gelu_tanh", "hardswish", "relu6",
               "leaky_relu", ("leaky_relu", 0.2), ("clamp", -0.5, 0.5)]

# (id, N, C, H, W, K, R, S, stride, padding, dilation, groups)
GEOMETRIES = [
    ("3x3_pad1", 2, 4, 7, 9, 6, 3, 3, 1, 1, 1, 1),
    ("same_even_2x2", 2, 3, 7, 9, 5, 2, 2, 1, "same", 1, 1),  # PyTorch pads 0 top/left, 1 bottom/right
    ("same_even_4x2_dilated", 1, 4, 9, 8, 4, 4, 2, 1, "same", (1, 3), 1),
    ("strided_groups2", 2, 6, 9, 7, 4, 3, 3, (2, 1), (1, 0), 1, 2),
    ("depthwise_x2", 2, 4, 7, 9, 8, 3, 3, 2, 1, 2, 4),
    ("1x1_valid", 2, 5, 5, 6, 3, 1, 1, 1, "valid", 1, 1),
]
# Which tensors require grad.
NEEDS = {
    "all": ("x", "weight", "bias", "residual"),
    "weight_only": ("weight",),
    "input_residual": ("x", "residual"),
    "bias_weight": ("weight", "bias"),
}


def _tensors(geometry, dtype, device, seed, layout="nchw"):
    _, n, c, h, w, k, r, s, stride, padding, dilation, groups = geometry
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, c, h, w, generator=gen)
    weight = torch.randn(k, c // groups, r, s, generator=gen) / math.sqrt(c // groups * r * s)
    bias = torch.randn(k, generator=gen)
    out_shape = F.conv2d(x, weight, None, stride, padding, dilation, groups).shape
    residual = torch.randn(out_shape, generator=gen)
    grad_out = torch.randn(out_shape, generator=gen)
    fmt = torch.channels_last if layout == "nhwc" else torch.contiguous_format
    cast = lambda t: t.to(dtype=dtype, device=device)
    return {
        "x": cast(x).contiguous(memory_format=fmt), "weight": cast(weight), "bias": cast(bias),
        "residual": cast(residual).contiguous(memory_format=fmt), "grad_out": cast(grad_out),
    }


def _reference_grads(geometry, tensors, activation, needs, dtype=torch.float64):
    """PyTorch autograd on copies in ``dtype``: float64 is what tileconv must reproduce; the
    tensors' own dtype tells how close PyTorch itself gets in that precision."""
    _, _, _, _, _, _, _, _, stride, padding, dilation, groups = geometry
    leaf = {name: t.detach().to(dtype).requires_grad_(name in needs) for name, t in tensors.items()}
    if dtype == torch.float64:
        leaf = {name: t.detach().cpu().requires_grad_(name in needs) for name, t in leaf.items()}
    pre = F.conv2d(leaf["x"], leaf["weight"], leaf["bias"], stride, padding, dilation, groups) + leaf["residual"]
    out = Activation.parse(activation).torch_apply(pre)
    out.backward(leaf["grad_out"])
    return {name: leaf[name].grad for name in needs}


def _tileconv_grads(geometry, tensors, activation, needs):
    _, _, _, _, _, _, _, _, stride, padding, dilation, groups = geometry
    leaf = {name: t.detach().clone().requires_grad_(name in needs) for name, t in tensors.items()}
    out = tileconv.conv2d(leaf["x"], leaf["weight"], leaf["bias"], stride, padding, dilation, groups,
                          activation=activation, residual=leaf["residual"])
    out.backward(leaf["grad_out"])
    for name, t in leaf.items():
        if name not in needs and name != "grad_out":
            assert t.grad is None, f"{name} does not require grad but got one"
    return {name: leaf[name].grad for name in needs}


@pytest.fixture(autouse=True)
def strict_float32(allow_tf32):
    """float32 means float32 here: on a GPU, cuDNN's backward (and tileconv's forward) would
    otherwise round the operands to TF32, 1e-3 off. The allow_tf32 fixture restores it."""
    torch.backends.cudnn.allow_tf32 = False


def _check(geometry, dtype, activation, needs_key, device, seed, layout="nchw"):
    needs = NEEDS[needs_key]
    tensors = _tensors(geometry, dtype, device, seed, layout)
    got = _tileconv_grads(geometry, tensors, activation, needs)
    want = _reference_grads(geometry, tensors, activation, needs)
    torch_own = _reference_grads(geometry, tensors, activation, needs, dtype) if dtype != torch.float32 else {}
    for name in needs:
        assert got[name] is not None, f"no gradient for {name}"
        assert got[name].shape == tensors[name].shape and got[name].dtype == dtype, (
            f"grad of {name}: {tuple(got[name].shape)} {got[name].dtype}"
        )
        tol = GRAD_TOLERANCE[dtype]
        if name in torch_own:
            tol = max(tol, TORCH_ERROR_FACTOR * compare(torch_own[name], want[name], tol).rel_err)
        assert_conv_close(got[name], want[name], tol,
                          context=f"grad of {name}, {geometry[0]}, {activation}, {dtype} (seed {seed})")


# Every activation over the geometries in turn (float32, all four gradients).
ACTIVATION_CASES = [(act, GEOMETRIES[i % len(GEOMETRIES)]) for i, act in enumerate(ACTIVATIONS)]


@pytest.mark.parametrize("activation,geometry", ACTIVATION_CASES,
                         ids=[f"{a}-{g[0]}" for a, g in ACTIVATION_CASES])
def test_gradients_per_activation(activation, geometry, device: str, seed: int):
    _check(geometry, torch.float32, activation, "all", device, seed)


# Every geometry with the five activations the brief singles out, and each subset of
# tensors requiring grad; dtypes and layouts rotate.
GEOMETRY_CASES = [
    (g, act, needs, dtype, layout)
    for i, g in enumerate(GEOMETRIES)
    for j, (act, needs) in enumerate(zip([None, "relu", "silu", "gelu", "sigmoid"], [*NEEDS, "all"], strict=True))
    for dtype, layout in [[(torch.float32, "nchw"), (torch.float32, "nhwc"), (torch.float16, "nchw"),
                           (torch.bfloat16, "nhwc"), (torch.float32, "nchw")][(i + j) % 5]]
]


@pytest.mark.parametrize(
    "geometry,activation,needs,dtype,layout", GEOMETRY_CASES,
    ids=[f"{g[0]}-{a}-{n}-{str(d)[6:]}-{lay}" for g, a, n, d, lay in GEOMETRY_CASES],
)
def test_gradients_per_geometry(geometry, activation, needs, dtype, layout, device: str, seed: int):
    _check(geometry, dtype, activation, needs, device, seed, layout)


# --------------------------------------------------------------------- central differences
@pytest.mark.parametrize("activation,geometry", [("silu", GEOMETRIES[1]), ("gelu", GEOMETRIES[3]),
                                                 ("sigmoid", GEOMETRIES[4])],
                         ids=["silu-same_even", "gelu-groups2", "sigmoid-depthwise"])
def test_central_differences_float32(activation, geometry, device: str, seed: int):
    """d(sum(out * g))/d(t[i]) ~ (L(t[i] + eps) - L(t[i] - eps)) / 2 eps on a few elements of
    each tensor, with the loss summed in float64 from tileconv's float32 forward."""
    _, _, _, _, _, _, _, _, stride, padding, dilation, groups = geometry
    tensors = _tensors(geometry, torch.float32, device, seed)
    grads = _tileconv_grads(geometry, tensors, activation, NEEDS["all"])
    grad_out = tensors["grad_out"].double()

    def loss(t: dict) -> float:
        out = tileconv.conv2d(t["x"], t["weight"], t["bias"], stride, padding, dilation, groups,
                              activation=activation, residual=t["residual"])
        return float((out.double() * grad_out).sum())

    # eps: truncation error ~ eps^2 |L'''| / 6 ~ 1e-5 and float32 rounding of the touched
    # outputs / (2 eps) ~ 1e-5, both well inside the 2e-3 allowed.
    eps = 1e-2
    gen = torch.Generator().manual_seed(seed)
    for name in NEEDS["all"]:
        flat = tensors[name].reshape(-1)  # a view when contiguous, which these tensors are
        for index in torch.randint(flat.numel(), (3,), generator=gen).tolist():
            original = flat[index].item()
            values = []
            for step in (eps, -eps):
                flat[index] = original + step
                values.append(loss(tensors))
            flat[index] = original
            numeric = (values[0] - values[1]) / (2 * eps)
            analytic = grads[name].reshape(-1)[index].item()
            assert abs(numeric - analytic) <= 2e-3 * max(1.0, abs(numeric)), (
                f"d loss / d {name}[{index}]: autograd {analytic:.6g}, central difference {numeric:.6g} "
                f"({activation}, {geometry[0]}, seed {seed})"
            )


# --------------------------------------------------------------------- the backward kernels
# Each backward kernel directly against float64 (dgrad: the input gradient; wgrad: the weight
# gradient), with outputs poisoned with NaN so that an element a kernel fails to write fails.
# (id, N, C, H, W, K, R, S, stride, padding, dilation, groups)
BACKWARD_GEOMETRIES = [
    ("3x3_pad1_tails", 2, 5, 7, 9, 6, 3, 3, 1, 1, 1, 1),  # C, K below one 16-wide tile
    ("wide_channels", 1, 40, 5, 6, 36, 3, 3, 1, 1, 1, 1),  # several channel blocks, ragged tails
    ("stride2_pad1", 2, 4, 9, 8, 6, 3, 3, 2, 1, 1, 1),  # 4 phases, 1 to 4 taps each
    ("stride3_dil2", 1, 4, 13, 11, 5, 3, 3, 3, 2, 2, 1),  # tap step 3, output step 2
    ("stride2_dil3_rect", 1, 3, 12, 10, 4, 2, 3, (2, 3), (1, 2), 3, 1),
    ("stride2x1_groups2", 2, 6, 9, 7, 4, 3, 3, (2, 1), (1, 0), 1, 2),
    ("stride3_1x1_empty_phases", 2, 4, 8, 7, 6, 1, 1, 3, 0, 1, 1),  # 8 of 9 phases have no tap
    ("stride4_kernel_smaller", 1, 3, 10, 9, 4, 2, 2, 4, 1, 1, 1),  # H, W not multiples of U
    ("same_even_4x2_dilated", 1, 4, 9, 8, 4, 4, 2, 1, "same", (1, 3), 1),
    ("7x1_1x7", 1, 4, 9, 10, 4, 7, 1, 1, (3, 0), 1, 1),
    ("grouped_thin", 1, 8, 6, 7, 8, 3, 3, 1, 1, 1, 4),  # C/g = K/g = 2
    ("depthwise_x1_s2", 2, 6, 9, 8, 6, 3, 3, 2, 1, 1, 6),
    ("depthwise_x2_dil2", 2, 4, 7, 9, 8, 3, 3, 2, 1, 2, 4),
    ("depthwise_5x5_s1", 1, 5, 8, 8, 5, 5, 5, 1, 2, 1, 5),
]
BACKWARD_TOLERANCE = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}


def _backward_case(geometry, dtype, layout, device, seed, view=False, weight_layout="nchw"):
    _, n, c, h, w, k, r, s, stride, padding, dilation, groups = geometry
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, c, h, w + (1 if view else 0), generator=gen)
    weight = torch.randn(k, c // groups, r, s, generator=gen) / math.sqrt(c // groups * r * s)
    fmt = torch.channels_last if layout == "nhwc" else torch.contiguous_format
    x = x.to(dtype=dtype, device=device).contiguous(memory_format=fmt)
    if view:  # a strided view: neither NCHW- nor NHWC-contiguous
        x = x[..., 1:]
    weight = weight.to(dtype=dtype, device=device)
    if weight_layout == "nhwc":  # a model moved to channels_last has its weights so
        weight = weight.contiguous(memory_format=torch.channels_last)
    problem = tileconv.problem_from_arguments(x, weight, None, stride, padding, dilation, groups)
    grad_shape = problem.output_shape[:3] + (problem.output_shape[3] + (1 if view else 0),)
    grad = torch.randn(grad_shape, generator=gen).to(dtype=dtype, device=device)
    grad = grad.contiguous(memory_format=fmt)
    if view:  # the upstream gradient a strided view too: the kernels address its pixels through its strides
        grad = grad[..., 1:]
    x64, w64 = x.detach().cpu().double().requires_grad_(), weight.detach().cpu().double().requires_grad_()
    F.conv2d(x64, w64, None, stride, padding, dilation, groups).backward(grad.cpu().double())
    return problem, x, weight, grad, x64.grad, w64.grad


def _check_backward(problem, x, weight, grad, want_x, want_w, context, algo="auto", **configs):
    from tileconv.functional import conv2d_backward_problem

    with tileconv.poison_outputs():
        got_x, got_w = conv2d_backward_problem(problem, grad, x, weight, algo=algo, **configs)
    tol = BACKWARD_TOLERANCE[problem.dtype]
    assert got_x.shape == x.shape and got_x.dtype == x.dtype
    assert got_w.shape == weight.shape and got_w.dtype == weight.dtype
    if problem.layout == "nhwc":
        assert got_x.is_contiguous(memory_format=torch.channels_last), "grad_input does not follow the input's layout"
    weight_cl = weight.is_contiguous(memory_format=torch.channels_last) and not weight.is_contiguous()
    if problem.layout == "nhwc" or weight_cl:  # PyTorch's rule for cuDNN: channels_last if either is
        assert got_w.is_contiguous(memory_format=torch.channels_last), \
            f"grad_weight strides {got_w.stride()}: channels_last expected (input {problem.layout}, weight_cl {weight_cl})"
    else:
        assert got_w.is_contiguous(), f"grad_weight strides {got_w.stride()} for a contiguous input and weight"
    assert_conv_close(got_x, want_x, tol, context=f"dgrad, {context}")
    assert_conv_close(got_w, want_w, tol, context=f"wgrad, {context}")


BACKWARD_CASES = [
    (g, *[(torch.float32, "nchw"), (torch.float32, "nhwc"), (torch.float16, "nhwc"), (torch.bfloat16, "nchw"),
          (torch.float16, "nchw")][i % 5])
    for i, g in enumerate(BACKWARD_GEOMETRIES)
]


@pytest.mark.parametrize("geometry,dtype,layout", BACKWARD_CASES,
                         ids=[f"{g[0]}-{str(d)[6:]}-{lay}" for g, d, lay in BACKWARD_CASES])
def test_backward_kernels_match_float64(geometry, dtype, layout, device: str, seed: int):
    """The default backward algorithm (depthwise kernels for groups = C, else the implicit
    GEMMs) over stride, padding, dilation, groups, layouts and dtypes."""
    problem, x, weight, grad, want_x, want_w = _backward_case(geometry, dtype, layout, device, seed)
    _check_backward(problem, x, weight, grad, want_x, want_w, f"{geometry[0]}, {dtype}, {layout} (seed {seed})")


@pytest.mark.parametrize("geometry", [g for g in BACKWARD_GEOMETRIES if g[0].startswith("depthwise")],
                         ids=lambda g: g[0])
def test_implicit_gemm_backward_covers_depthwise(geometry, device: str, seed: int):
    """The tensor-core kernels compute depthwise problems too (groups through the grid)."""
    problem, x, weight, grad, want_x, want_w = _backward_case(geometry, torch.float32, "nhwc", device, seed)
    _check_backward(problem, x, weight, grad, want_x, want_w, f"{geometry[0]} (seed {seed})", algo="implicit_gemm")


# Pinned configs: split-K (3 and 5 splits, the last one short), 16-wide tiles with ragged
# tails in every dimension, and a strided view of the input.
PINNED_CASES = [
    ("split3", BACKWARD_GEOMETRIES[2], "implicit_gemm",
     BackwardConfig(16, 16, 16, num_warps=1, num_stages=1), BackwardConfig(16, 16, 16, split_k=3, num_warps=1)),
    ("split5_wide", BACKWARD_GEOMETRIES[1], "implicit_gemm",
     BackwardConfig(16, 16, 16, num_warps=1, num_stages=1), BackwardConfig(16, 32, 16, split_k=5, num_warps=1)),
    ("split4_grouped", BACKWARD_GEOMETRIES[5], "implicit_gemm",
     BackwardConfig(32, 16, 16, num_warps=1), BackwardConfig(16, 16, 16, split_k=4, num_warps=1)),
    # wgrad's TAP_TILE case (C/g a multiple of the column tile) and FLAT case (1x1, dense pixels).
    ("tap_tiles", ("tap_tiles", 2, 32, 6, 5, 8, 3, 3, 1, 1, 1, 1), "implicit_gemm",
     BackwardConfig(16, 16, 16, num_warps=1), BackwardConfig(16, 16, 16, split_k=2, num_warps=1)),
    ("flat_1x1", ("flat_1x1", 2, 24, 5, 6, 20, 1, 1, 1, 0, 1, 1), "implicit_gemm",
     BackwardConfig(16, 16, 16, num_warps=1), BackwardConfig(16, 16, 16, split_k=3, num_warps=1)),
    ("split3_depthwise", BACKWARD_GEOMETRIES[12], "depthwise",
     BackwardConfig(16, 4, num_warps=1), BackwardConfig(16, 4, split_k=3, num_warps=1)),
    # Depthwise wgrad splits of four output rows each, a row in two 4-pixel tiles, 5 channels in
    # blocks of 4, a 5x5 filter (its rows' 5 taps padded to 8; rows in the padding skipped).
    ("tiles_depthwise", BACKWARD_GEOMETRIES[13], "depthwise",
     BackwardConfig(16, 4, num_warps=1), BackwardConfig(4, 4, split_k=2, num_warps=1)),
]


@pytest.mark.parametrize("name,geometry,algo,dgrad_config,wgrad_config", PINNED_CASES, ids=[c[0] for c in PINNED_CASES])
@pytest.mark.parametrize("view", [False, True], ids=["dense", "view"])
def test_backward_pinned_configs(name, geometry, algo, dgrad_config, wgrad_config, view, device: str, seed: int):
    dtype = torch.float16 if view else torch.float32
    problem, x, weight, grad, want_x, want_w = _backward_case(geometry, dtype, "nhwc", device, seed, view=view)
    _check_backward(problem, x, weight, grad, want_x, want_w, f"{name}, view={view} (seed {seed})", algo=algo,
                    dgrad_config=dgrad_config, wgrad_config=wgrad_config)


# A channels_last weight (a model moved to channels_last): its gradient comes back
# channels_last, where the GEMM's columns (r, s, c) are the weight's own order, so one split
# is written by the wgrad kernel itself (no partial sums) and more splits are summed into it.
CHANNELS_LAST_WEIGHT_CASES = [
    ("direct", BACKWARD_GEOMETRIES[2], BackwardConfig(16, 16, 16, split_k=1, num_warps=1)),
    ("split3", BACKWARD_GEOMETRIES[2], BackwardConfig(16, 16, 16, split_k=3, num_warps=1)),
    ("direct_grouped", BACKWARD_GEOMETRIES[5], BackwardConfig(16, 16, 16, split_k=1, num_warps=1)),
    ("direct_7x1", BACKWARD_GEOMETRIES[9], BackwardConfig(16, 16, 16, split_k=1, num_warps=1)),
]


@pytest.mark.parametrize("name,geometry,wgrad_config", CHANNELS_LAST_WEIGHT_CASES,
                         ids=[c[0] for c in CHANNELS_LAST_WEIGHT_CASES])
def test_channels_last_weight_gets_a_channels_last_gradient(name, geometry, wgrad_config, device: str, seed: int):
    problem, x, weight, grad, want_x, want_w = _backward_case(geometry, torch.float16, "nhwc", device, seed,
                                                              weight_layout="nhwc")
    assert not weight.is_contiguous()
    _check_backward(problem, x, weight, grad, want_x, want_w, f"{name} (seed {seed})", algo="implicit_gemm",
                    wgrad_config=wgrad_config)


@pytest.mark.gpu
@pytest.mark.parametrize("input_layout,weight_layout", [("nhwc", "nchw"), ("nchw", "nhwc"), ("nhwc", "nhwc"),
                                                        ("nchw", "nchw")])
def test_weight_gradient_layout_is_pytorchs(input_layout, weight_layout, device: str, seed: int):
    """The weight gradient comes back in the layout PyTorch's cuDNN backward gives it
    (channels_last where the input or the weight is), checked against cuDNN itself."""
    from tileconv.functional import conv2d_backward_problem
    from tileconv.kernels.backward import aten_convolution_backward

    problem, x, weight, grad, _, _ = _backward_case(BACKWARD_GEOMETRIES[2], torch.float16, input_layout, device, seed,
                                                    weight_layout=weight_layout)
    _, theirs = aten_convolution_backward(problem, grad, x, weight, False, True)
    _, ours = conv2d_backward_problem(problem, grad, x, weight, False, True)
    assert ours.stride() == theirs.stride(), f"tileconv {ours.stride()}, cuDNN {theirs.stride()}"


def test_direct_column_stride():
    """When a wgrad's columns t = (r, s, c) lie evenly in the gradient: always for 1x1,
    for a channels_last weight, never for an NCHW 3x3."""
    from tileconv.kernels.wgrad import direct_column_stride

    problem = tileconv.ConvProblem(1, 8, 5, 5, 4, 3, 3, padding=(1, 1))
    assert direct_column_stride(problem, torch.empty(4, 8, 3, 3)) is None
    assert direct_column_stride(problem, torch.empty(4, 8, 3, 3).contiguous(memory_format=torch.channels_last)) == 1
    one = tileconv.ConvProblem(1, 8, 5, 5, 4, 1, 1)
    assert direct_column_stride(one, torch.empty(4, 8, 1, 1)) == 1
    assert direct_column_stride(one, torch.empty(8, 4, 1, 1).transpose(0, 1)) == 4


# The halo wgrad (Gluon: a GPU with cp.async; skipped under the interpreter, where the
# CUDA-core kernel is the depthwise default). Ragged 8x8 tiles over 13x10 outputs with three
# splits and a channel block wider than C; a 5x5 at stride 2 with uneven padding and dilated
# columns, C = 24 (copies masked at 16-byte groups); a 7x7 at two channels a thread on two
# warps (98 accumulators); Q = 8 (four pixels a step) at stride 2; fp32 and bf16; one and two
# buffers (num_stages); one filter row a program (tap_rows), dilated rows included.
HALO_WGRAD_CASES = [
    ("halo_3x3_ragged", ("halo_3x3", 2, 16, 13, 10, 16, 3, 3, 1, 1, 1, 16), torch.float16,
     BackwardConfig(64, 32, 8, split_k=3, num_warps=1, num_stages=2)),
    ("halo_5x5_s2_dil", ("halo_5x5", 2, 24, 11, 12, 24, 5, 5, 2, (2, 1), (1, 2), 24), torch.float16,
     BackwardConfig(32, 64, 8, split_k=2, num_warps=1, num_stages=1)),
    ("halo_7x7_two_warps", ("halo_7x7", 1, 64, 9, 14, 64, 7, 7, 1, 3, 1, 64), torch.bfloat16,
     BackwardConfig(16, 128, 4, num_warps=2, num_stages=2)),
    ("halo_3x3_s2_unroll4", ("halo_s2", 3, 8, 16, 16, 8, 3, 3, 2, 1, 1, 8), torch.float16,
     BackwardConfig(32, 32, 8, num_warps=1, num_stages=1)),
    ("halo_3x3_fp32", ("halo_fp32", 2, 12, 9, 9, 12, 3, 3, 1, 1, 1, 12), torch.float32,
     BackwardConfig(64, 32, 8, split_k=2, num_warps=1, num_stages=2)),
    ("halo_3x3_dil2_tap_rows", ("halo_dil2", 2, 16, 10, 11, 16, 3, 3, 1, 2, 2, 16), torch.float16,
     BackwardConfig(32, 32, 8, split_k=2, num_warps=1, num_stages=2, tap_rows=1)),
    ("halo_7x7_tap_rows", ("halo_7x7_rows", 3, 32, 7, 7, 32, 7, 7, 1, 3, 1, 32), torch.float16,
     BackwardConfig(64, 32, 8, num_warps=1, num_stages=1, tap_rows=1)),
    ("halo_13x13_tap_rows", ("halo_13x13", 2, 16, 9, 10, 16, 13, 13, 1, 6, 1, 16), torch.float16,
     BackwardConfig(64, 32, 8, split_k=2, num_warps=1, num_stages=2, tap_rows=1)),
]


# The warp-specialized wgrad (Gluon for Hopper: skipped elsewhere). A 3x3 over ragged pixel
# steps (13x10 outputs: steps cross rows and images) with three splits and K = 72 (a ragged
# channel tile); stride 2 with dilation and uneven padding over 192 channels (a 128 tile halved
# to 64, one tap a tile); 1x1s at stride 1, gathered (ws=1) and by TMA as a matrix (WS_TMA:
# wgrad_ws.input_is_pixel_matrix); with WS_TMA, boxes of output rows for the rest; 8 MMA warps
# and a deeper ring; tiles of 256 channels; the pixels in one split (the last step past N*P*Q:
# dy's copy zero-fills it).
WS_WGRAD_CASES = [
    ("ws_3x3_ragged_split3", ("ws_3x3", 2, 64, 13, 10, 72, 3, 3, 1, 1, 1, 1), torch.float16,
     BackwardConfig(64, 64, 32, split_k=3, num_warps=4, num_stages=3, ws=1)),
    ("ws_3x3_s2_dil", ("ws_s2", 3, 192, 15, 14, 64, 3, 3, 2, (2, 1), (1, 2), 1), torch.float16,
     BackwardConfig(128, 128, 64, split_k=2, num_warps=4, num_stages=4, ws=1)),
    ("ws_1x1_bf16", ("ws_1x1", 2, 128, 9, 11, 128, 1, 1, 1, 0, 1, 1), torch.bfloat16,
     BackwardConfig(128, 128, 64, num_warps=4, num_stages=4, ws=1)),
    # The input by TMA (1x1, stride 1, unpadded): ragged K (72) and pixels (297, three splits),
    # C = 192 (a 128 tile halved to 64); one split written straight into a channels_last gradient.
    ("ws_1x1_tma_split3", ("ws_1x1t", 3, 192, 9, 11, 72, 1, 1, 1, 0, 1, 1), torch.float16,
     BackwardConfig(64, 128, 64, split_k=3, num_warps=4, num_stages=8, ws=WS_TMA)),
    ("ws_1x1_tma_direct_cl", ("ws_1x1c", 2, 64, 7, 7, 128, 1, 1, 1, 0, 1, 1), torch.bfloat16,
     BackwardConfig(64, 64, 64, split_k=1, num_warps=4, num_stages=8, ws=WS_TMA), "nhwc"),
    # Boxes of output rows (wgrad_ws.input_by_tma): a 1x1 at stride 2 whose images merge (H even)
    # and one whose do not (H odd); a padded 1x1; a dilated 3x3 whose taps reach 2 pixels past every edge.
    ("ws_1x1_s2_merged", ("ws_1x1s2", 2, 128, 14, 10, 64, 1, 1, 2, 0, 1, 1), torch.float16,
     BackwardConfig(64, 128, 64, split_k=2, num_warps=4, num_stages=8, ws=WS_TMA)),
    ("ws_1x1_s2_odd", ("ws_1x1s2o", 2, 64, 9, 11, 128, 1, 1, 2, 0, 1, 1), torch.bfloat16,
     BackwardConfig(128, 64, 32, split_k=1, num_warps=4, num_stages=6, ws=WS_TMA)),
    ("ws_1x1_padded", ("ws_1x1p", 2, 64, 6, 7, 64, 1, 1, 1, 1, 1, 1), torch.float16,  # (its images stay apart)
     BackwardConfig(64, 64, 64, split_k=2, num_warps=4, num_stages=8, ws=WS_TMA)),
    ("ws_3x3_dil2", ("ws_3x3d", 2, 128, 11, 9, 64, 3, 3, 1, 2, 2, 1), torch.float16,
     BackwardConfig(64, 128, 64, split_k=3, num_warps=4, num_stages=8, ws=WS_TMA)),
    ("ws_3x3_w8", ("ws_w8", 2, 128, 12, 12, 256, 3, 3, 1, 1, 1, 1), torch.bfloat16,
     BackwardConfig(128, 128, 32, split_k=4, num_warps=8, num_stages=5, ws=WS_TMA)),
    ("ws_5x5_wide", ("ws_5x5", 1, 256, 9, 9, 64, 5, 5, 1, 2, 1, 1), torch.float16,
     BackwardConfig(64, 256, 64, split_k=1, num_warps=4, num_stages=2, ws=WS_TMA)),
    # A channels_last weight: one split is written straight into its gradient; two are summed into it.
    ("ws_3x3_direct_cl", ("ws_cl", 2, 64, 13, 10, 72, 3, 3, 1, 1, 1, 1), torch.bfloat16,
     BackwardConfig(64, 64, 32, split_k=1, num_warps=4, num_stages=3, ws=1), "nhwc"),
    ("ws_3x3_split2_cl", ("ws_cl2", 2, 128, 9, 9, 128, 3, 3, 1, 1, 1, 1), torch.float16,
     BackwardConfig(128, 128, 64, split_k=2, num_warps=4, num_stages=3, ws=WS_TMA), "nhwc"),
    # 192-channel tiles (three MMA warpgroups of 64 channels): gathered at stride 2 over K = 200
    # (the second tile's first slice 8 channels deep, its other two wholly past K: dy's copies
    # there are zero fill) in two splits; the input by TMA as a matrix over K = 136 (the third
    # slice ragged), three splits, bf16; boxes of rows, one split written into a channels_last gradient.
    ("ws_192_gather_s2", ("ws_192g", 2, 128, 15, 14, 200, 3, 3, 2, 1, 1, 1), torch.float16,
     BackwardConfig(192, 128, 64, split_k=2, num_warps=4, num_stages=4, ws=1)),
    ("ws_192_1x1_tma_split3", ("ws_192m", 3, 64, 9, 11, 136, 1, 1, 1, 0, 1, 1), torch.bfloat16,
     BackwardConfig(192, 64, 64, split_k=3, num_warps=4, num_stages=5, ws=WS_TMA)),
    ("ws_192_boxes_cl", ("ws_192b", 2, 128, 9, 9, 192, 3, 3, 1, 1, 1, 1), torch.float16,
     BackwardConfig(192, 128, 32, split_k=1, num_warps=4, num_stages=8, ws=WS_TMA), "nhwc"),
]


def _ws_wgrad_reason() -> str | None:
    from tileconv.kernels.wgrad_ws import wgrad_ws_unsupported_reason

    return wgrad_ws_unsupported_reason(
        tileconv.ConvProblem(2, 64, 8, 8, 64, 3, 3, padding=(1, 1), dtype=torch.float16, layout="nhwc"))


@pytest.mark.parametrize("case", WS_WGRAD_CASES, ids=[c[0] for c in WS_WGRAD_CASES])
def test_ws_wgrad_matches_float64(case, device: str, seed: int):
    """The warp-specialized wgrad (dy by TMA, the input gathered, wgmma on both operands
    transposed) against float64 on pinned tiles."""
    name, geometry, dtype, config, *weight_layout = case
    reason = _ws_wgrad_reason()
    if reason is not None:
        pytest.skip(f"wgrad ws: {reason}")
    problem, x, weight, grad, want_x, want_w = _backward_case(geometry, dtype, "nhwc", device, seed,
                                                              weight_layout=(weight_layout or ["nchw"])[0])
    _check_backward(problem, x, weight, grad, want_x, want_w, f"{name} (seed {seed})",
                    algo="implicit_gemm", wgrad_config=config)


def test_ws_wgrad_refuses_what_it_cannot_run():
    """A pinned ws config on a problem the Gluon kernel cannot run says why, naming the config."""
    from tileconv.kernels.wgrad_ws import launch_wgrad_ws

    problem = tileconv.ConvProblem(2, 48, 8, 8, 64, 3, 3, padding=(1, 1), dtype=torch.float16, layout="nhwc")
    with pytest.raises(ValueError, match="config ws=1"):
        launch_wgrad_ws(problem, torch.empty(0), torch.empty(0), torch.empty(0), BackwardConfig(ws=1))

@pytest.mark.parametrize("config, fragment", [
    (BackwardConfig(192, 128, 64, num_warps=8, num_stages=4, ws=1), "num_warps 4"),
    (BackwardConfig(192, 256, 64, num_warps=4, num_stages=2, ws=WS_TMA), "block_n <= 128"),
    (BackwardConfig(96, 128, 64, num_warps=4, num_stages=4, ws=1), "block_m 64, 128, 192 or 256"),
])
def test_ws_wgrad_refuses_tiles_it_cannot_run(config: BackwardConfig, fragment: str):
    """The ws wgrad's 192-channel tiles are three MMA warpgroups whose accumulators hold at most
    128 columns; other tiles are powers of two. The launcher says so, naming the config, before
    it touches a tensor (so this runs on any machine), and writes nothing."""
    from tileconv.kernels.wgrad_ws import launch_wgrad_ws

    problem = tileconv.ConvProblem(2, 64, 8, 8, 192, 3, 3, padding=(1, 1), dtype=torch.float16, layout="nhwc")
    grad_weight = torch.full(problem.weight_shape, 7.0, dtype=torch.float16)
    with pytest.raises(ValueError, match=re.escape(fragment)):
        launch_wgrad_ws(problem, torch.empty(0), torch.empty(0), grad_weight, config)
    assert bool((grad_weight == 7.0).all())


def test_ws_wgrad_192_tile_falls_back_on_an_undescribable_input(device: str, seed: int):
    """An input the copy engine cannot address (a channel slice starting 2 bytes past a 16-byte
    boundary) sends the ws wgrad to the Triton kernel; its 192-channel config becomes 128 there
    (the Triton kernel's tiles are powers of two). Same result, into a poisoned gradient."""
    from tileconv.kernels.wgrad_ws import launch_wgrad_ws

    reason = _ws_wgrad_reason()
    if reason is not None:
        pytest.skip(f"wgrad ws: {reason}")
    gen = torch.Generator().manual_seed(seed)
    big = torch.randn(2, 65, 7, 9, generator=gen).to(device=device, dtype=torch.float16).contiguous(
        memory_format=torch.channels_last)
    x = big[:, 1:]  # 64 channels from the second: every pixel's row starts 2 bytes past 16
    grad = torch.randn(2, 192, 7, 9, generator=gen).to(device=device, dtype=torch.float16).contiguous(
        memory_format=torch.channels_last)
    problem = tileconv.ConvProblem(2, 64, 7, 9, 192, 3, 3, padding=(1, 1), dtype=torch.float16, layout="nhwc")
    grad_weight = torch.full(problem.weight_shape, float("nan"), dtype=torch.float16, device=device)
    launch_wgrad_ws(problem, grad, x, grad_weight, BackwardConfig(192, 128, 64, split_k=2, num_warps=4,
                                                                   num_stages=4, ws=1))
    x64 = x.detach().cpu().double().requires_grad_()
    w64 = torch.zeros(problem.weight_shape, dtype=torch.float64, requires_grad=True)
    F.conv2d(x64, w64, None, 1, 1).backward(grad.cpu().double())
    assert_conv_close(grad_weight.cpu(), w64.grad, BACKWARD_TOLERANCE[torch.float16])


# The columns wgrad (few input channels: each filter row's S x C values one run of a padded copy):
# ResNet's 7x7/2 stem over three splits with one filter row a 32-column tile; a 4x4/4 patchify
# stem in fp32 (3xTF32), all four rows in one tile; one grayscale channel, 5x5 at stride (1, 2)
# with dilated rows, bf16 NCHW; six channels (padded to 8) of a 6x6 at K = 6, the
# heuristics' launch; asymmetric 'same' padding of an even filter.
COLUMNS_WGRAD_CASES = [
    ("stem_7x7_s2", ("stem_7x7_s2", 2, 3, 19, 22, 16, 7, 7, 2, 3, 1, 1), torch.float16, "nhwc",
     BackwardConfig(16, 32, 16, split_k=3, num_warps=1, num_stages=1)),
    ("patchify_4x4_s4", ("patchify_4x4_s4", 2, 3, 16, 12, 24, 4, 4, 4, 0, 1, 1), torch.float32, "nhwc",
     BackwardConfig(32, 64, 16, split_k=2, num_warps=1, num_stages=1)),
    ("gray_5x5_dil_rows", ("gray_5x5_dil_rows", 1, 1, 13, 11, 16, 5, 5, (1, 2), (4, 2), (2, 1), 1),
     torch.bfloat16, "nchw", BackwardConfig(16, 16, 32, split_k=2, num_warps=1, num_stages=1)),
    ("c6_6x6_k6", ("c6_6x6_k6", 1, 6, 12, 11, 6, 6, 6, 1, 2, 1, 1), torch.float16, "nhwc", None),
    ("same_even_4x4", ("same_even_4x4", 1, 3, 9, 10, 16, 4, 4, 1, "same", 1, 1), torch.float16, "nchw", None),
]


@pytest.mark.parametrize("name,geometry,dtype,layout,config", COLUMNS_WGRAD_CASES,
                         ids=[c[0] for c in COLUMNS_WGRAD_CASES])
def test_columns_wgrad_matches_float64(name, geometry, dtype, layout, config, device: str, seed: int):
    """The columns wgrad (``im2row``'s) against float64, pinned tiles and the heuristics' own."""
    problem, x, weight, grad, want_x, want_w = _backward_case(geometry, dtype, layout, device, seed)
    _check_backward(problem, x, weight, grad, want_x, want_w, f"{name} (seed {seed})",
                    algo="im2row", wgrad_config=config)


def test_columns_wgrad_is_the_default_for_few_input_channels():
    """auto dispatch: 'im2row' for a dense convolution whose input pixel is shorter than one
    16-byte copy and whose filter rows are undilated; the implicit GEMM otherwise."""
    from tileconv import dispatch

    def problem(**kw):
        args = dict(n=2, c=3, h=32, w=32, k=64, r=7, s=7, stride=(2, 2), padding=(3, 3), dtype=torch.float16,
                    layout="nhwc")
        args.update(kw)
        return tileconv.ConvProblem(**args)

    assert dispatch.select_backward(problem()).name == "im2row"
    assert dispatch.select_backward(problem(c=7, layout="nchw")).name == "im2row"
    assert dispatch.select_backward(problem(c=3, dtype=torch.float32)).name == "im2row"
    assert dispatch.select_backward(problem(c=8)).name == "implicit_gemm"  # a 16-byte pixel
    assert dispatch.select_backward(problem(c=4, dtype=torch.float32)).name == "implicit_gemm"
    assert dispatch.select_backward(problem(dilation=(1, 2))).name == "implicit_gemm"
    assert dispatch.select_backward(problem(c=4, k=4, groups=2)).name == "implicit_gemm"


def test_columns_wgrad_refuses_what_it_cannot_run(device: str):
    """Dilated filter columns, and a column tile that splits a filter row, are refused by name."""
    from tileconv.functional import conv2d_backward_problem
    from tileconv.kernels.wgrad_columns import launch_wgrad_columns

    def tensors(problem):
        return [torch.randn(shape, dtype=torch.float16, device=device).contiguous(memory_format=torch.channels_last)
                for shape in (problem.output_shape, problem.input_shape, problem.weight_shape)]

    dilated = tileconv.ConvProblem(1, 3, 9, 9, 16, 3, 3, dilation=(1, 2), dtype=torch.float16, layout="nhwc")
    grad, x, weight = tensors(dilated)
    with pytest.raises(ValueError, match="backward algo='im2row'.*dilation_w=1, got 2"):
        conv2d_backward_problem(dilated, grad, x, weight, False, True, algo="im2row")
    stem = tileconv.ConvProblem(1, 3, 9, 9, 16, 7, 7, stride=(2, 2), padding=(3, 3), dtype=torch.float16,
                                layout="nhwc")
    grad, x, weight = tensors(stem)
    out = torch.full_like(weight, float("nan"))
    with pytest.raises(ValueError, match="config block_n=16: .* multiple of 32"):
        launch_wgrad_columns(stem, grad, x, out, BackwardConfig(16, 16, 16))
    assert out.isnan().all()  # nothing written


# The Toeplitz wgrad (tensor cores; the default past 49 taps where the halo wgrad cannot run):
# a 7x5 at stride 2 with dilated columns and multiplier 2 in fp32 (3xTF32) over three splits;
# a 9x9 in fp16 channels_last (the heuristics' launch); a 13x13 in bf16 NCHW, 32 columns a step.
TOEPLITZ_WGRAD_CASES = [
    ("toeplitz_7x5_s2_x2", ("toeplitz_7x5", 1, 2, 10, 9, 4, 7, 5, 2, (3, 2), (1, 2), 2), torch.float32, "nchw",
     BackwardConfig(16, 16, 16, split_k=3, num_warps=1, num_stages=1)),
    ("toeplitz_9x9", ("toeplitz_9x9", 2, 4, 8, 12, 4, 9, 9, 1, 4, 1, 4), torch.float16, "nhwc", None),
    ("toeplitz_13x13", ("toeplitz_13x13", 1, 2, 7, 7, 2, 13, 13, 1, 6, 1, 2), torch.bfloat16, "nchw",
     BackwardConfig(16, 16, 32, split_k=2, num_warps=1, num_stages=1)),
]


@pytest.mark.parametrize("name,geometry,dtype,layout,config", TOEPLITZ_WGRAD_CASES,
                         ids=[c[0] for c in TOEPLITZ_WGRAD_CASES])
def test_toeplitz_wgrad_matches_float64(name, geometry, dtype, layout, config, device: str, seed: int):
    """The Toeplitz wgrad (a GEMM a channel and output row, its band from dy) against float64."""
    problem, x, weight, grad, want_x, want_w = _backward_case(geometry, dtype, layout, device, seed)
    _check_backward(problem, x, weight, grad, want_x, want_w, f"{name} (seed {seed})",
                    algo="depthwise_toeplitz", wgrad_config=config)


def test_toeplitz_wgrad_keeps_non_finite_inputs_where_pytorch_has_them(device: str, seed: int):
    """The band's structural zeros times an Inf input would be NaN in taps whose true sum never
    holds it: the kernel redoes such a program term by term, so Inf and NaN land where
    PyTorch's float64 gradient has them, and only there."""
    from tileconv.functional import conv2d_backward_problem

    geometry = ("toeplitz_inf", 2, 4, 9, 10, 4, 9, 9, 1, 4, 1, 4)
    problem, x, weight, grad, _, _ = _backward_case(geometry, torch.float32, "nhwc", device, seed)
    x = x.clone()
    x[1, 2, 4, 3] = float("inf")
    x[0, 1, 0, 0] = float("nan")
    x64, w64 = x.detach().cpu().double().requires_grad_(), weight.detach().cpu().double().requires_grad_()
    F.conv2d(x64, w64, None, 1, 4, 1, 4).backward(grad.cpu().double())
    got = conv2d_backward_problem(problem, grad, x, weight, False, True, algo="depthwise_toeplitz")[1].cpu()
    want = w64.grad
    assert torch.equal(torch.isnan(got), torch.isnan(want)) and torch.equal(torch.isinf(got), torch.isinf(want))
    finite = torch.isfinite(want)
    assert not finite.all() and finite.any()
    torch.testing.assert_close(got[finite].double(), want[finite], rtol=1e-4, atol=1e-4)


def _halo_wgrad_reason() -> str | None:
    from tileconv.kernels import BACKWARD_ALGORITHMS

    return BACKWARD_ALGORITHMS["depthwise_halo"].unsupported_reason(
        tileconv.ConvProblem(2, 16, 8, 8, 16, 3, 3, padding=(1, 1), groups=16, dtype=torch.float16, layout="nhwc"))


@pytest.mark.parametrize("name,geometry,dtype,config", HALO_WGRAD_CASES, ids=[c[0] for c in HALO_WGRAD_CASES])
@pytest.mark.parametrize("grad_layout", ["nhwc", "nchw"])
def test_halo_wgrad_matches_float64(name, geometry, dtype, config, grad_layout, device: str, seed: int):
    """The halo wgrad (every tap's accumulator in registers) against float64, on pinned tiles;
    an upstream gradient that is not channels_last (its 16-byte copies cannot read it) is
    copied to channels_last first."""
    reason = _halo_wgrad_reason()
    if reason is not None:
        pytest.skip(f"depthwise_halo: {reason}")
    problem, x, weight, grad, want_x, want_w = _backward_case(geometry, dtype, "nhwc", device, seed)
    if grad_layout == "nchw":
        grad = grad.contiguous()
    _check_backward(problem, x, weight, grad, want_x, want_w, f"{name}, grad {grad_layout} (seed {seed})",
                    algo="depthwise_halo", wgrad_config=config)


def test_halo_wgrad_is_the_depthwise_default_where_it_runs():
    """auto dispatch: the halo wgrad for a channels_last depthwise problem of up to 7x7 where
    the GPU runs it (larger ones a filter row a program on narrow outputs); the Toeplitz wgrad
    past 49 taps on outputs 14 wide and up; the CUDA-core kernels otherwise (a multiplier,
    NCHW, the interpreter)."""
    from tileconv import dispatch

    def problem(**kw):
        args = dict(n=2, c=16, h=8, w=8, k=16, r=3, s=3, padding=(1, 1), groups=16, dtype=torch.float16, layout="nhwc")
        args.update(kw)
        return tileconv.ConvProblem(**args)

    halo = "depthwise_halo" if _halo_wgrad_reason() is None else "depthwise"
    assert dispatch.select_backward(problem()).name == halo
    assert dispatch.select_backward(problem(r=7, s=7, padding=(3, 3))).name == halo
    assert dispatch.select_backward(problem(k=32)).name == "depthwise"  # channel multiplier 2
    assert dispatch.select_backward(problem(layout="nchw")).name == "depthwise"
    # 81 taps 16 wide: the Toeplitz wgrad (tensor cores), either layout; 8 wide: the halo's filter
    # rows where it runs, else the CUDA cores; 25 taps in NCHW: CUDA cores
    big = dict(r=9, s=9, padding=(4, 4))
    assert dispatch.select_backward(problem(h=16, w=16, **big)).name == "depthwise_toeplitz"
    assert dispatch.select_backward(problem(h=16, w=16, layout="nchw", **big)).name == "depthwise_toeplitz"
    assert dispatch.select_backward(problem(**big)).name == halo
    assert dispatch.select_backward(problem(r=5, s=5, padding=(2, 2), layout="nchw")).name == "depthwise"


def test_stride1_dgrad_runs_as_a_forward_convolution(device, seed, monkeypatch):
    """auto dispatch runs a stride-1 dgrad as the forward convolution of
    ConvProblem.dgrad_as_forward (asymmetric 'same' padding and dilation included); strided
    ones, over-padded ones and depthwise ones with a multiplier stay on the phase kernels."""
    from tileconv import dispatch
    from tileconv.kernels import backward

    def forbidden(*args, **kwargs):
        raise AssertionError("the phase dgrad kernel ran for a stride-1 problem")

    phase = backward.BACKWARD_ALGORITHMS["implicit_gemm"]
    monkeypatch.setitem(backward.BACKWARD_ALGORITHMS, "implicit_gemm", dataclasses.replace(phase, dgrad=forbidden))
    for geometry in (BACKWARD_GEOMETRIES[8], BACKWARD_GEOMETRIES[10]):  # 'same' even 4x2 dilated; grouped
        problem, x, weight, grad, want_x, want_w = _backward_case(geometry, torch.float16, "nhwc", device, seed)
        forward = dispatch.dgrad_forward(problem)
        assert forward is not None and forward.input_shape == problem.output_shape[:1] + (problem.k,) + \
            problem.output_shape[2:] and forward.output_shape == problem.input_shape, geometry[0]
        _check_backward(problem, x, weight, grad, want_x, want_w, f"{geometry[0]} as forward (seed {seed})")
    strided = _backward_case(BACKWARD_GEOMETRIES[3], torch.float16, "nhwc", device, seed)[0]
    multiplier = _backward_case(BACKWARD_GEOMETRIES[12], torch.float16, "nhwc", device, seed)[0]
    assert dispatch.dgrad_forward(strided) is None and dispatch.dgrad_forward(multiplier) is None
    over_padded = tileconv.ConvProblem(1, 4, 5, 5, 4, 1, 1, padding=(1, 1))  # 1x1 with padding 1: reach 0
    assert over_padded.dgrad_as_forward() is None


@pytest.mark.parametrize("geometry", [
    BACKWARD_GEOMETRIES[6],  # 1x1, stride 3: H = 8, W = 7 not multiples of it; K = 6 (no TMA rows)
    ("1x1_s2_groups2_rect", 2, 8, 9, 6, 12, 1, 1, (2, 1), 0, 1, 2),
    ("1x1_s2_odd", 2, 8, 9, 7, 16, 1, 1, 2, 0, 1, 1),  # gemm_1x1 zeroes the off-grid pixels itself
    ("1x1_s3x2_ragged", 1, 4, 8, 11, 24, 1, 1, (3, 2), 0, 1, 1),  # (H, W) = (3P - 1, 2Q - 1)
], ids=lambda g: g[0])
@pytest.mark.parametrize("layout", ["nhwc", "nchw"])
def test_strided_1x1_dgrad_runs_as_a_forward_convolution(geometry, layout, device, seed, monkeypatch):
    """auto dispatch runs an unpadded strided 1x1's dgrad as a forward convolution onto
    dx[:, :, ::U, ::V] (ConvProblem.dgrad_as_strided_forward), the rest of dx zeroed (the
    output arrives NaN-poisoned): by gemm_1x1's own tiles where it runs the forward problem
    (channels_last, rows of 16 bytes, groups 1), else by a launch of their own; the phase
    kernel never runs."""
    from tileconv import dispatch, functional
    from tileconv.kernels import backward
    from tileconv.kernels.launch import gemm_1x1_unsupported_reason

    def forbidden(*args, **kwargs):
        raise AssertionError("the phase dgrad kernel ran for an unpadded strided 1x1 problem")

    phase = backward.BACKWARD_ALGORITHMS["implicit_gemm"]
    monkeypatch.setitem(backward.BACKWARD_ALGORITHMS, "implicit_gemm", dataclasses.replace(phase, dgrad=forbidden))
    problem, x, weight, grad, want_x, want_w = _backward_case(geometry, torch.float16, layout, device, seed)
    forward = dispatch.dgrad_forward(problem)
    u, v = problem.stride
    assert forward is not None and forward.output_shape == tuple(x[:, :, ::u, ::v].shape), geometry[0]
    fused = gemm_1x1_unsupported_reason(forward) is None
    assert fused == (layout == "nhwc" and geometry[0] in ("1x1_s2_odd", "1x1_s3x2_ragged")), geometry[0]
    if fused:
        monkeypatch.setattr(functional, "zero_off_grid", lambda *a: pytest.fail("a separate zero fill ran"))
    _check_backward(problem, x, weight, grad, want_x, want_w, f"{geometry[0]} {layout} as forward (seed {seed})")
    padded = tileconv.ConvProblem(1, 4, 6, 6, 4, 1, 1, stride=2, padding=(1, 1))
    assert padded.dgrad_as_strided_forward() is None and dispatch.dgrad_forward(padded) is None


SUBPIXEL_GEOMETRIES = [
    ("stem_7x7_s2", 2, 3, 14, 12, 8, 7, 7, 2, 3, 1, 1),  # ResNet's stem, small: U*V*C = 12 (the heuristics' case)
    ("3x3_s2_pad1_odd", 1, 4, 9, 11, 6, 3, 3, 2, 1, 1, 1),  # H, W odd: the last cells' second phase is cut
    ("5x3_s3x2_rect", 1, 3, 11, 13, 5, 5, 3, (3, 2), (2, 0), 1, 1),  # phases with 1 and 2 taps a row
    ("2x2_s4_phases_empty", 1, 3, 10, 9, 4, 2, 2, 4, 1, 1, 1),  # half the phases read no tap: zeros
    ("3x3_s3_pad0", 1, 2, 8, 8, 3, 3, 3, 3, 0, 1, 1),  # trailing padding past the 1x1 cell filter
]


def test_subpixel_geometry_matches_pytorch_in_float64():
    """ConvProblem.dgrad_as_subpixel_forward and subpixel_dgrad_weight, in PyTorch alone: the
    cells convolution (F.conv2d over the padded dy) spread onto dx is dx, to float64 rounding."""
    from tileconv.kernels.weights import subpixel_dgrad_weight

    gen = torch.Generator().manual_seed(7)
    for name, n, c, h, w, k, r, s, stride, padding, _, _ in SUBPIXEL_GEOMETRIES:
        x = torch.randn(n, c, h, w, generator=gen, dtype=torch.float64, requires_grad=True)
        weight = torch.randn(k, c, r, s, generator=gen, dtype=torch.float64)
        problem = tileconv.ConvProblem(n, c, h, w, k, r, s, stride=stride, padding=padding)
        forward = problem.dgrad_as_subpixel_forward()
        y = F.conv2d(x, weight, stride=problem.stride, padding=problem.padding)
        y.backward(dy := torch.randn(y.shape, generator=gen, dtype=torch.float64))
        padded = F.pad(dy, (forward.padding[1], forward.padding_end[1], forward.padding[0], forward.padding_end[0]))
        cells = F.conv2d(padded, subpixel_dgrad_weight(weight, problem.stride, problem.padding, forward.k))
        assert cells.shape == forward.output_shape, name
        (u, v), dx = problem.stride, torch.full((n, c, cells.shape[2] * problem.stride[0],
                                                 cells.shape[3] * problem.stride[1]), float("nan"), dtype=torch.float64)
        for a in range(u):
            for b in range(v):
                dx[:, :, a::u, b::v] = cells[:, (a * v + b) * c:(a * v + b + 1) * c]
        torch.testing.assert_close(dx[:, :, :h, :w], x.grad, rtol=0, atol=1e-12, msg=name)
    assert tileconv.ConvProblem(1, 2, 9, 9, 3, 1, 1, stride=(3, 3), padding=(1, 1)).dgrad_as_subpixel_forward() is None
    assert tileconv.ConvProblem(1, 2, 9, 9, 3, 3, 3, stride=(2, 2), dilation=(2, 2)).dgrad_as_subpixel_forward() is None


@pytest.mark.parametrize("geometry", SUBPIXEL_GEOMETRIES, ids=lambda g: g[0])
@pytest.mark.parametrize("dtype,layout", [(torch.float16, "nhwc"), (torch.float32, "nchw"), (torch.bfloat16, "nhwc")],
                         ids=["f16-nhwc", "f32-nchw", "bf16-nhwc"])
def test_subpixel_dgrad_matches_float64(geometry, dtype, layout, device, seed, monkeypatch):
    """auto dispatch's 'subpixel' route (every strided dgrad made to take it here, whatever
    share of its taps the filter fills): the cells convolution through the forward kernels,
    then shuffle_subpixels onto dx (poisoned); the phase kernel never runs."""
    from tileconv import dispatch
    from tileconv.kernels import backward

    def forbidden(*args, **kwargs):
        raise AssertionError("the phase dgrad kernel ran on the sub-pixel route")

    phase = backward.BACKWARD_ALGORITHMS["implicit_gemm"]
    monkeypatch.setitem(backward.BACKWARD_ALGORITHMS, "implicit_gemm", dataclasses.replace(phase, dgrad=forbidden))
    monkeypatch.setattr(dispatch, "prefers_subpixel_dgrad", lambda problem, forward: True)
    dispatch.clear_selection_cache()
    problem, x, weight, grad, want_x, want_w = _backward_case(geometry, dtype, layout, device, seed)
    route = dispatch.dgrad_route(problem)
    assert route is not None and route.kind == "subpixel", geometry[0]
    _check_backward(problem, x, weight, grad, want_x, want_w, f"{geometry[0]} sub-pixel (seed {seed})")
    dispatch.clear_selection_cache()


def test_fold_cells_into_places_each_phase_where_dx_has_it():
    """fold_cells_into's view and fold, applied as implicit_gemm_ws's epilogue applies them
    (channel k at the view's address of k plus (k // fold_k) * jump), put cell (i, j)'s
    channel (a*V + b)*C + c at dx[n, c, U*i + a, V*j + b]; None where they cannot."""
    from tileconv.kernels.dgrad import fold_cells_into

    gen = torch.Generator().manual_seed(3)
    for (n, c, h, w, stride) in [(2, 8, 6, 8, (2, 2)), (1, 16, 9, 4, (3, 2)), (2, 8, 4, 6, (1, 3))]:
        u, v = stride
        cells = torch.randn(n, u * v * c, h // u, w // v, generator=gen)
        dx = torch.full((n, c, h, w), float("nan")).contiguous(memory_format=torch.channels_last)
        view, (fold_k, jump) = fold_cells_into(dx, stride, u * v * c, block_n=c)
        assert view.data_ptr() == dx.data_ptr() and view.shape == cells.shape
        for a in range(u * v * c // fold_k):  # the kernel's tiles of one fold at a time
            torch.as_strided(dx, (n, fold_k, h // u, w // v), view.stride(),
                             a * (fold_k * view.stride(1) + jump)).copy_(cells[:, a * fold_k:(a + 1) * fold_k])
        want = torch.empty(n, c, h, w)
        for a in range(u):
            for b in range(v):
                want[:, :, a::u, b::v] = cells[:, (a * v + b) * c:(a * v + b + 1) * c]
        assert torch.equal(dx, want), stride
    dx = torch.empty(1, 8, 6, 6).contiguous(memory_format=torch.channels_last)
    assert fold_cells_into(dx, (2, 2), 32, block_n=16) is not None
    assert fold_cells_into(dx, (2, 2), 32, block_n=32) is None  # a tile would straddle two row phases
    assert fold_cells_into(dx, (2, 2), 40, block_n=16) is None  # cells rounded up past U*V*C
    assert fold_cells_into(dx, (4, 2), 64, block_n=16) is None  # H not a multiple of U
    assert fold_cells_into(dx.contiguous(), (2, 2), 32, block_n=16) is None  # NCHW: phases are not channels


FOLD_CONFIGS = [LaunchConfig(128, 128, 64, 8, 4, 4), LaunchConfig(128, 256, 64, 8, 8, 3),
                LaunchConfig(128, 128, 64, 8, 4, 4, pingpong=1)]


@pytest.mark.gpu
@pytest.mark.parametrize("config", FOLD_CONFIGS, ids=lambda c: str(c).replace(" ", "_"))
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["f16", "bf16"])
def test_subpixel_dgrad_folded_into_dx(config, dtype, device, seed, monkeypatch):
    """The sub-pixel route on implicit_gemm_ws writes dx itself (fold_cells_into), no cells
    and no shuffle, where a tile's channels stay in one row phase; the same route with H odd
    (dx's last row phase cut) or with C*V not a multiple of the tile's channels shuffles."""
    from tileconv import dispatch, functional
    from tileconv.kernels import ALGORITHMS

    ws = ALGORITHMS["implicit_gemm_ws"]
    monkeypatch.setattr(dispatch, "select", lambda problem, algo, dev: (ws, config))
    folds = []
    real = functional.launch_implicit_gemm_ws
    monkeypatch.setattr(functional, "launch_implicit_gemm_ws",
                        lambda *args, **kwargs: folds.append(kwargs.get("fold")) or real(*args, **kwargs))
    shuffles = []
    shuffle = functional.shuffle_subpixels
    monkeypatch.setattr(functional, "shuffle_subpixels", lambda *args: shuffles.append(1) or shuffle(*args))
    geometries = [("3x3_s2_fold", 2, 128, 12, 10, 64, 3, 3, 2, 1, 1, 1),  # V*C = 256
                  ("3x3_s2_odd_shuffles", 1, 128, 11, 10, 64, 3, 3, 2, 1, 1, 1),
                  ("3x3_s2_narrow", 2, 64, 8, 8, 32, 3, 3, 2, 1, 1, 1)]  # V*C = 128
    for geometry in geometries:
        folds.clear()
        shuffles.clear()
        problem, x, weight, grad, want_x, want_w = _backward_case(geometry, dtype, "nhwc", device, seed)
        assert dispatch.dgrad_route(problem).kind == "subpixel"
        _check_backward(problem, x, weight, grad, want_x, want_w, f"{geometry[0]} {config} (seed {seed})")
        folded = geometry[0] == "3x3_s2_fold" or (geometry[0] == "3x3_s2_narrow" and config.block_n == 128)
        row_phase = problem.stride[1] * problem.c  # V*C channels: one row phase of a cell
        want = ([(row_phase, problem.w * problem.c - row_phase)], []) if folded else ([], [1])
        assert (folds, shuffles) == want, geometry[0]
    # Replayed (call_plans): the fold's view of dx is dx's slot; fresh upstream gradients each call.
    from tileconv import call_plans
    from tileconv.functional import conv2d_backward_problem

    problem, x, weight, _, _, _ = _backward_case(geometries[0], dtype, "nhwc", device, seed)
    replays = call_plans.stats()["replays"]
    for call in range(3):
        grad = torch.randn(problem.output_shape, device=device, dtype=dtype).contiguous(memory_format=torch.channels_last)
        torch.full(problem.input_shape, float("nan"), device=device, dtype=dtype)  # a freed block, NaN
        got, _ = conv2d_backward_problem(problem, grad, x, weight, need_weight=False)
        want = torch.ops.aten.convolution_backward(grad.double(), x.double(), weight.double(), None, problem.stride,
                                                   problem.padding, problem.dilation, False, (0, 0), 1,
                                                   (True, False, False))[0]
        assert_conv_close(got, want, BACKWARD_TOLERANCE[dtype], context=f"folded dgrad, call {call}")
    assert call_plans.stats()["replays"] >= replays + 2, "the folded dgrad was not replayed"
    dispatch.clear_selection_cache()


def test_subpixel_dgrad_heuristic():
    from tileconv import dispatch

    stem = tileconv.ConvProblem(32, 3, 224, 224, 64, 7, 7, stride=(2, 2), padding=(3, 3))
    assert dispatch.dgrad_route(stem).kind == "subpixel" and dispatch.dgrad_forward(stem).k == 16
    wide = tileconv.ConvProblem(32, 128, 56, 56, 128, 3, 3, stride=(2, 2), padding=(1, 1))
    assert dispatch.dgrad_route(wide).kind == "subpixel"  # 9 of the 2x2 cell filter's 16 taps a cell
    sparse = tileconv.ConvProblem(1, 8, 16, 16, 8, 2, 2, stride=(4, 4), padding=(1, 1))
    assert sparse.dgrad_as_subpixel_forward() is not None and dispatch.dgrad_route(sparse) is None  # 4 of 64


@pytest.mark.parametrize("layout", ["nhwc", "nchw"])
@pytest.mark.parametrize("stride", [(2, 2), (3, 1), (1, 2)])
def test_zero_off_grid_zeroes_exactly_the_pixels_off_the_stride_grid(layout, stride, device):
    from tileconv.kernels.dgrad import zero_off_grid

    fmt = torch.channels_last if layout == "nhwc" else torch.contiguous_format
    t = torch.full((2, 3, 7, 5), float("nan"), device=device).contiguous(memory_format=fmt)
    zero_off_grid(t, stride)
    on_grid = torch.zeros(7, 5, dtype=torch.bool)
    on_grid[::stride[0], ::stride[1]] = True
    assert torch.isnan(t[:, :, on_grid.to(t.device)]).all(), "a pixel on the grid was written"
    assert (t[:, :, ~on_grid.to(t.device)] == 0).all(), "a pixel off the grid was not zeroed"
    with pytest.raises(ValueError, match="dense"):
        zero_off_grid(t[:, :, ::2], stride)


def test_split_k_choice():
    from tileconv.kernels.wgrad import choose_split_k

    assert choose_split_k(100_352, 64, tiles=8) > 1  # ResNet 56x56 at batch 32, few tiles: split
    assert choose_split_k(256, 64, tiles=8) == 1  # a short reduction is not split
    assert choose_split_k(100_352, 64, tiles=10_000) == 1  # enough tiles already
    assert choose_split_k(100, 16, tiles=1, requested=50) == 7  # never more splits than steps
    assert choose_split_k(100_352, 64, tiles=8, cap=3) == 3  # the partial sums' cap


def test_partial_sum_cap_holds_a_1x1_wgrad_to_its_inputs_bytes():
    from tileconv.kernels.wgrad import choose_split_k, partial_sum_cap

    # ResNet-50 at batch 32: K*C partial sums against N*P*Q*(K + C) input elements.
    assert partial_sum_cap(tileconv.ConvProblem(32, 512, 7, 7, 2048, 1, 1)) == 1
    assert partial_sum_cap(tileconv.ConvProblem(32, 512, 28, 28, 1024, 1, 1, stride=(2, 2))) == 4
    assert partial_sum_cap(tileconv.ConvProblem(32, 64, 56, 56, 64, 1, 1)) > 196  # a small weight: uncapped
    three = tileconv.ConvProblem(32, 512, 7, 7, 512, 3, 3, padding=(1, 1))
    assert partial_sum_cap(three) >= 256 and choose_split_k(1568, 64, tiles=144, cap=partial_sum_cap(three)) == 2


def test_aten_backward_is_a_named_fallback_and_not_the_default(device, seed, monkeypatch):
    """'aten' computes the same gradients; tileconv.conv2d's backward does not call it."""
    from tileconv import dispatch
    from tileconv.kernels import backward

    problem, x, weight, grad, want_x, want_w = _backward_case(BACKWARD_GEOMETRIES[2], torch.float32, "nchw", device, seed)
    _check_backward(problem, x, weight, grad, want_x, want_w, "aten", algo="aten")
    assert dispatch.select_backward(problem).name == "implicit_gemm"
    dw_problem = _backward_case(BACKWARD_GEOMETRIES[11], torch.float32, "nchw", device, seed)[0]
    assert dispatch.select_backward(dw_problem).name == "depthwise"

    def forbidden(*args, **kwargs):
        raise AssertionError("aten.convolution_backward was called by the default backward")

    monkeypatch.setattr(backward.torch.ops.aten, "convolution_backward", forbidden)
    _check(GEOMETRIES[3], torch.float32, "silu", "all", device, seed)


# --------------------------------------------------------------------- torch.compile
@pytest.mark.parametrize("activation", [None, "relu", "gelu"])
def test_compile_fullgraph_with_gradients(activation, device: str, seed: int):
    """torch.compile(fullgraph=True) traces tileconv.conv2d as the custom op tileconv::conv2d
    (no graph break), and its backward as tileconv::conv2d_backward."""
    torch._dynamo.reset()
    geometry = GEOMETRIES[1]  # 'same' with an even kernel: asymmetric padding through the op
    _, _, _, _, _, _, _, _, stride, padding, dilation, groups = geometry
    tensors = _tensors(geometry, torch.float32, device, seed, layout="nhwc")
    needs = NEEDS["all"]

    def step(x, weight, bias, residual, grad_out):
        out = tileconv.conv2d(x, weight, bias, stride, padding, dilation, groups, activation=activation,
                              residual=residual)
        return out, (out * grad_out).sum()

    compiled = torch.compile(step, backend="aot_eager", fullgraph=True)
    leaf = {name: t.detach().clone().requires_grad_(name in needs) for name, t in tensors.items()}
    out, loss = compiled(leaf["x"], leaf["weight"], leaf["bias"], leaf["residual"], leaf["grad_out"])
    loss.backward()
    assert out.is_contiguous(memory_format=torch.channels_last)
    want = _reference_grads(geometry, tensors, activation, needs)
    for name in needs:
        assert_conv_close(leaf[name].grad, want[name], GRAD_TOLERANCE[torch.float32],
                          context=f"compiled grad of {name}, {activation} (seed {seed})")


def test_custom_op_fake_gives_shape_and_layout():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        x = torch.empty(2, 3, 9, 8).contiguous(memory_format=torch.channels_last)
        weight = torch.empty(5, 3, 2, 2)
        out = torch.ops.tileconv.conv2d(x, weight, None, None, [1, 1], [0, 0], [1, 1], [1, 1], 1, "relu", 0.0, 0.0)
    assert tuple(out.shape) == (2, 5, 9, 8) and out.is_contiguous(memory_format=torch.channels_last)


@pytest.mark.parametrize("c_per_group,groups,r,s,split", [(48, 2, 3, 3, 3), (40, 1, 1, 1, 1), (4, 2, 3, 2, 5),
                                                          (64, 1, 5, 5, 37)])
def test_split_sums_land_in_the_weights_order(c_per_group, groups, r, s, split, device: str, seed: int):
    """sum_splits: the [split, K, C/g*R*S] partial sums (columns t = (r, s, c)) summed in
    float32 and written to the weight's (k, c, r, s), by the per-tap kernel (C/g >= 32) or
    the per-element one; 37 splits take several steps of the split loop."""
    from tileconv.kernels.wgrad import sum_splits

    k = 2 * groups
    problem = tileconv.ConvProblem(1, c_per_group * groups, 8, 8, k, r, s, groups=groups, dtype=torch.float16)
    gen = torch.Generator().manual_seed(seed)
    workspace = torch.randn(split, k, c_per_group * r * s, generator=gen).to(device)
    grad_weight = torch.full(problem.weight_shape, float("nan"), dtype=torch.float16, device=device)
    sum_splits(problem, workspace, grad_weight, split)
    want = workspace.double().sum(0).reshape(k, r, s, c_per_group).permute(0, 3, 1, 2)
    torch.testing.assert_close(grad_weight.double().cpu(), want.cpu(), rtol=1e-3, atol=1e-3)


@pytest.mark.gpu
@pytest.mark.parametrize("config", [BackwardConfig(128, 128, 64, split_k=8, num_warps=4, num_stages=4, ws=WS_TMA),
                                    BackwardConfig(64, 64, 32, split_k=8, num_warps=4, num_stages=3)],
                         ids=["ws", "triton"])
def test_split_sums_wait_on_a_programmatic_launch(config: BackwardConfig, seed: int):
    """On Hopper the split sums are a programmatic dependent launch (tileconv._runtime.programmatic_launch):
    scheduled once every program of the weight gradient has started, they wait in the kernel
    (griddepcontrol.wait) for its partial sums. Eight splits into a NaN-poisoned gradient, three
    calls with fresh inputs (the first records, the others replay the plan), and the same inside
    a CUDA graph: every result the float64 one; the recorded sums launch is programmatic."""
    from tileconv import call_plans
    from tileconv._runtime import programmatic_launch
    from tileconv.functional import conv2d_backward_problem
    from tileconv.kernels import fast_launch
    from tileconv.kernels.backward import aten_convolution_backward

    if not programmatic_launch(torch.device("cuda")):
        pytest.skip("programmatic dependent launch needs compute capability 9.0 (and TILECONV_PDL unset or 1)")
    if config.ws and _ws_wgrad_reason() is not None:
        pytest.skip(f"wgrad ws: {_ws_wgrad_reason()}")
    gen = torch.Generator(device="cuda").manual_seed(seed)
    problem = tileconv.ConvProblem(4, 128, 14, 14, 128, 3, 3, padding=(1, 1), dtype=torch.float16, layout="nhwc")
    weight = torch.randn(problem.weight_shape, generator=gen, device="cuda", dtype=torch.float16)

    def fresh():
        x = torch.randn(problem.input_shape, generator=gen, device="cuda", dtype=torch.float16)
        grad = torch.randn(problem.output_shape, generator=gen, device="cuda", dtype=torch.float16)
        return (x.contiguous(memory_format=torch.channels_last), grad.contiguous(memory_format=torch.channels_last))

    def check(got, x, grad, context):
        want = aten_convolution_backward(problem, grad.double(), x.double(), weight.double(), False, True)[1]
        assert_conv_close(got, want, BACKWARD_TOLERANCE[problem.dtype], context=f"{context} (seed {seed})")

    def call():
        torch.full((4 << 20,), float("nan"), device="cuda")  # freed: the workspace's blocks poisoned
        return conv2d_backward_problem(problem, grad, x, weight, False, True, algo="implicit_gemm",
                                       wgrad_config=config)[1]

    x, grad = fresh()
    replays = call_plans.set_enabled(False)  # (a plan's own recording would leave this one empty)
    try:
        with fast_launch.recording() as record:
            got = call()
    finally:
        call_plans.set_enabled(replays)
    check(got, x, grad, "recorded")
    compiled = record.steps[-1][0]
    assert compiled.metadata.launch_pdl and compiled.name.startswith("wgrad_finish"), compiled.name
    for attempt in range(3):  # the first records a plan, the others replay it
        x, grad = fresh()
        check(call(), x, grad, f"call {attempt}")
    x, grad = fresh()
    static = {"x": x, "grad": grad}
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        _, static["out"] = conv2d_backward_problem(problem, static["grad"], static["x"], weight, False, True,
                                                   algo="implicit_gemm", wgrad_config=config)
    for replay in range(2):
        x, grad = fresh()
        static["x"].copy_(x)
        static["grad"].copy_(grad)
        static["out"].fill_(float("nan"))
        graph.replay()
        check(static["out"], x, grad, f"graph replay {replay}")
