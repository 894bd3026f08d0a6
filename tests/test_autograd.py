"""Gradients through tileconv.conv2d.

Two independent checks: (1) input, weight, bias and residual gradients against PyTorch's
autograd on float64 copies of the same tensors; (2) central differences of tileconv's own
forward (float32) on a few elements, which does not trust any backward formula.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

import tileconv
from tileconv.epilogue import Activation
from tileconv.testing import assert_conv_close, compare

# Gradient tolerance (relative Frobenius error), by dtype. The backward runs PyTorch's
# convolution_backward in the tensors' dtype, so in float16/bfloat16 the gradients carry the
# dtype's rounding: where a reduction cancels (a bias gradient summing to near zero) even
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
