"""Bad arguments raise a clear error that names the argument and its value, and nothing runs.

"Nothing runs" is checked by replacing the output allocator and the kernel dispatcher with
tripwires for the duration of each call: validation must finish before either is reached.
"""

from __future__ import annotations

import pytest
import torch

import tileconv
import tileconv.functional as functional
from tileconv.functional import conv2d_problem
from tileconv.problem import problem_from_arguments


def _x(*shape, dtype=torch.float32, device="cpu"):
    return torch.randn(shape).to(dtype=dtype, device=device)


X = (1, 4, 5, 5)  # default input shape
W = (6, 4, 3, 3)  # default weight shape: K=6, 3x3 -> 3x3 output without padding

# (id, input shape or tensor maker, weight, kwargs, exception type, message substrings)
CASES = [
    # rank
    ("input_2d", lambda: _x(4, 5), lambda: _x(*W), {}, ValueError, ["input must be 4D", "(4, 5)"]),
    ("input_5d", lambda: _x(1, 1, 4, 5, 5), lambda: _x(*W), {}, ValueError, ["input must be 4D", "(1, 1, 4, 5, 5)"]),
    ("weight_3d", lambda: _x(*X), lambda: _x(6, 4, 3), {}, ValueError, ["weight must be 4D", "(6, 4, 3)"]),
    ("input_not_tensor", lambda: [[1.0]], lambda: _x(*W), {}, TypeError, ["input must be a torch.Tensor", "list"]),
    ("weight_none", lambda: _x(*X), lambda: None, {}, TypeError, ["weight must be a torch.Tensor", "NoneType"]),
    # channels and groups
    ("c_mismatch", lambda: _x(1, 3, 5, 5), lambda: _x(*W), {}, ValueError, ["C=3", "weight.shape[1]=4", "groups=1"]),
    ("c_mismatch_groups", lambda: _x(1, 6, 5, 5), lambda: _x(6, 2, 3, 3), {"groups": 2}, ValueError,
     ["C=6", "weight.shape[1]=2", "groups=2"]),
    ("groups_not_dividing_c", lambda: _x(1, 6, 5, 5), lambda: _x(4, 1, 3, 3), {"groups": 4}, ValueError,
     ["groups=4", "does not divide", "C=6"]),
    ("groups_not_dividing_k", lambda: _x(*X), lambda: _x(5, 2, 3, 3), {"groups": 2}, ValueError,
     ["groups=2", "does not divide", "weight.shape[0]=5"]),
    ("groups_zero", lambda: _x(*X), lambda: _x(*W), {"groups": 0}, ValueError, ["groups=0", "positive"]),
    ("groups_negative", lambda: _x(*X), lambda: _x(*W), {"groups": -2}, ValueError, ["groups=-2", "positive"]),
    ("groups_float", lambda: _x(*X), lambda: _x(*W), {"groups": 1.5}, TypeError, ["groups=1.5", "int"]),
    ("empty_weight", lambda: _x(*X), lambda: _x(0, 4, 3, 3), {}, ValueError, ["(0, 4, 3, 3)", "empty"]),
    # bias
    ("bias_shape", lambda: _x(*X), lambda: _x(*W), {"bias": lambda: _x(5)}, ValueError, ["bias", "(6,)", "(5,)"]),
    ("bias_2d", lambda: _x(*X), lambda: _x(*W), {"bias": lambda: _x(6, 1)}, ValueError, ["bias", "(6,)", "(6, 1)"]),
    ("bias_dtype", lambda: _x(*X), lambda: _x(*W), {"bias": lambda: _x(6, dtype=torch.float16)}, TypeError,
     ["bias.dtype=torch.float16", "input.dtype=torch.float32"]),
    ("bias_device", lambda: _x(*X), lambda: _x(*W), {"bias": lambda: _x(6, device="meta")}, RuntimeError,
     ["bias.device=meta", "input.device=cpu"]),
    # residual
    ("residual_shape", lambda: _x(*X), lambda: _x(*W), {"residual": lambda: _x(1, 6, 5, 5)}, ValueError,
     ["residual", "(1, 6, 3, 3)", "(1, 6, 5, 5)"]),
    ("residual_dtype", lambda: _x(*X), lambda: _x(*W), {"residual": lambda: _x(1, 6, 3, 3, dtype=torch.bfloat16)},
     TypeError, ["residual.dtype=torch.bfloat16", "input.dtype=torch.float32"]),
    ("residual_device", lambda: _x(*X), lambda: _x(*W), {"residual": lambda: _x(1, 6, 3, 3, device="meta")},
     RuntimeError, ["residual.device=meta", "input.device=cpu"]),
    ("residual_4d_unbatched", lambda: _x(4, 5, 5), lambda: _x(*W), {"residual": lambda: _x(1, 6, 3, 3)},
     ValueError, ["residual", "unbatched", "(1, 6, 3, 3)"]),
    # geometry
    ("stride_zero", lambda: _x(*X), lambda: _x(*W), {"stride": 0}, ValueError, ["stride=0", "positive"]),
    ("stride_negative", lambda: _x(*X), lambda: _x(*W), {"stride": (1, -1)}, ValueError, ["stride=(1, -1)", "positive"]),
    ("stride_triple", lambda: _x(*X), lambda: _x(*W), {"stride": (1, 1, 1)}, TypeError, ["stride=(1, 1, 1)", "pair"]),
    ("stride_float", lambda: _x(*X), lambda: _x(*W), {"stride": 1.0}, TypeError, ["stride=1.0", "int"]),
    ("dilation_zero", lambda: _x(*X), lambda: _x(*W), {"dilation": 0}, ValueError, ["dilation=0", "positive"]),
    ("dilation_negative", lambda: _x(*X), lambda: _x(*W), {"dilation": (-1, 1)}, ValueError,
     ["dilation=(-1, 1)", "positive"]),
    ("padding_negative", lambda: _x(*X), lambda: _x(*W), {"padding": -1}, ValueError, ["padding=-1", "non-negative"]),
    ("padding_negative_pair", lambda: _x(*X), lambda: _x(*W), {"padding": (0, -2)}, ValueError,
     ["padding=(0, -2)", "non-negative"]),
    ("padding_unknown_string", lambda: _x(*X), lambda: _x(*W), {"padding": "full"}, ValueError,
     ["padding='full'", "'same'", "'valid'"]),
    ("same_with_stride_2", lambda: _x(*X), lambda: _x(*W), {"padding": "same", "stride": 2}, ValueError,
     ["padding='same'", "stride=2"]),
    ("same_with_stride_1x2", lambda: _x(*X), lambda: _x(*W), {"padding": "same", "stride": (1, 2)}, ValueError,
     ["padding='same'", "stride=(1, 2)"]),
    ("output_empty", lambda: _x(1, 4, 2, 2), lambda: _x(*W), {}, ValueError, ["output would be 0x0", "3x3", "2x2"]),
    ("output_negative_dilated", lambda: _x(*X), lambda: _x(*W), {"dilation": 3}, ValueError,
     ["output would be -1x-1", "7x7", "5x5"]),
    ("output_empty_height", lambda: _x(1, 4, 0, 5), lambda: _x(*W), {}, ValueError, ["output would be", "0x5"]),
    # dtypes
    ("int64", lambda: _x(*X).long(), lambda: _x(*W).long(), {}, TypeError, ["input.dtype=torch.int64", "not supported"]),
    ("int8", lambda: _x(*X).to(torch.int8), lambda: _x(*W), {}, TypeError, ["input.dtype=torch.int8"]),
    ("bool", lambda: _x(*X) > 0, lambda: _x(*W), {}, TypeError, ["input.dtype=torch.bool"]),
    ("complex64", lambda: _x(*X).to(torch.complex64), lambda: _x(*W).to(torch.complex64), {}, TypeError,
     ["input.dtype=torch.complex64", "not supported"]),
    ("float64", lambda: _x(*X).double(), lambda: _x(*W).double(), {}, TypeError, ["input.dtype=torch.float64"]),
    ("weight_int", lambda: _x(*X), lambda: _x(*W).int(), {}, TypeError, ["weight.dtype=torch.int32"]),
    ("input_sparse", lambda: _x(*X).to_sparse(), lambda: _x(*W), {}, TypeError,
     ["input.layout=torch.sparse_coo", "dense"]),
    ("weight_sparse", lambda: _x(*X), lambda: _x(*W).to_sparse(), {}, TypeError, ["weight.layout=torch.sparse_coo"]),
    ("mismatched_dtypes", lambda: _x(*X, dtype=torch.float16), lambda: _x(*W), {}, TypeError,
     ["weight.dtype=torch.float32", "input.dtype=torch.float16"]),
    ("weight_device", lambda: _x(*X), lambda: _x(*W, device="meta"), {}, RuntimeError,
     ["weight.device=meta", "input.device=cpu"]),
    # activation
    ("activation_unknown", lambda: _x(*X), lambda: _x(*W), {"activation": "swish"}, ValueError,
     ["activation='swish'", "not known", "relu"]),
    ("activation_int", lambda: _x(*X), lambda: _x(*W), {"activation": 5}, ValueError, ["activation=5"]),
    ("activation_params_on_relu", lambda: _x(*X), lambda: _x(*W), {"activation": ("relu", 1.0)}, ValueError,
     ["activation=('relu', 1.0)"]),
    ("leaky_slope_nan", lambda: _x(*X), lambda: _x(*W), {"activation": ("leaky_relu", float("nan"))}, ValueError,
     ["activation=('leaky_relu', nan)", "finite slope"]),
    ("leaky_slope_string", lambda: _x(*X), lambda: _x(*W), {"activation": ("leaky_relu", "x")}, ValueError,
     ["activation=('leaky_relu', 'x')"]),
    ("clamp_without_bounds", lambda: _x(*X), lambda: _x(*W), {"activation": "clamp"}, ValueError,
     ["activation='clamp'", "('clamp', lo, hi)"]),
    ("clamp_lo_above_hi", lambda: _x(*X), lambda: _x(*W), {"activation": ("clamp", 1.0, 0.0)}, ValueError,
     ["activation=('clamp', 1.0, 0.0)", "lo <= hi"]),
    ("clamp_nan_bound", lambda: _x(*X), lambda: _x(*W), {"activation": ("clamp", float("nan"), 1.0)}, ValueError,
     ["activation=('clamp', nan, 1.0)"]),
    ("clamp_one_bound", lambda: _x(*X), lambda: _x(*W), {"activation": ("clamp", 1.0)}, ValueError,
     ["activation=('clamp', 1.0)"]),
    ("clamp_string_bounds", lambda: _x(*X), lambda: _x(*W), {"activation": ("clamp", "a", "b")}, ValueError,
     ["activation=('clamp', 'a', 'b')"]),
]


@pytest.fixture
def tripwires(monkeypatch):
    """Fail the test if an output is allocated or a kernel is chosen."""
    reached = []

    def trip(name):
        def wire(*args, **kwargs):
            reached.append(name)
            raise AssertionError(f"{name} was reached: validation let bad arguments through")
        return wire

    monkeypatch.setattr(functional, "_allocate_like", trip("output allocation"))
    monkeypatch.setattr(functional.dispatch, "select", trip("kernel dispatch"))
    monkeypatch.setattr(functional, "_fallback", trip("PyTorch fallback"))
    return reached


@pytest.mark.parametrize(
    "make_input,make_weight,kwargs,error,fragments", [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_bad_argument(make_input, make_weight, kwargs, error, fragments, tripwires):
    x, w = make_input(), make_weight()
    kwargs = {k: v() if callable(v) else v for k, v in kwargs.items()}
    bias = kwargs.pop("bias", None)
    tensors = [t for t in (x, w, bias, kwargs.get("residual")) if isinstance(t, torch.Tensor)]
    before = [t.clone() for t in tensors]
    with pytest.raises(error) as info:
        tileconv.conv2d(x, w, bias, **kwargs)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, f"error message lacks {fragment!r}: {message!r}"
    assert not tripwires, f"reached {tripwires} before the error"
    def dense(t):
        return t.to_dense() if t.layout != torch.strided else t

    for t, old in zip(tensors, before, strict=True):
        assert t.device.type == "meta" or torch.equal(dense(t), dense(old)), "an argument tensor was modified"


def test_good_arguments_pass_the_tripwires_check(tripwires, device: str):
    """The tripwires do fire on a valid call (so the test above can fail)."""
    with pytest.raises(AssertionError, match="output allocation was reached"):
        tileconv.conv2d(_x(*X, device=device), _x(*W, device=device))
    assert tripwires == ["output allocation"]


@pytest.mark.parametrize("algo", ["winograd", "", "Direct"])
def test_unknown_algorithm_is_named(algo: str):
    x, w = _x(*X), _x(*W)
    problem = problem_from_arguments(x, w)
    with pytest.raises(ValueError, match=rf"algo={algo!r} is not a tileconv algorithm.*implicit_gemm"):
        conv2d_problem(problem, x, w, None, None, algo=algo)


def test_nn_conv2d_rejects_an_unknown_activation_at_construction():
    with pytest.raises(ValueError, match="activation='swish'"):
        tileconv.nn.Conv2d(4, 6, 3, activation="swish")


def test_messages_agree_with_pytorch_on_what_is_an_error():
    """Every case rejected above for its geometry or channels is rejected by PyTorch too (so
    tileconv is not stricter than the spec), except the dtypes tileconv does not compute."""
    tileconv_only = {"int64", "int8", "bool", "complex64", "float64", "weight_int", "mismatched_dtypes"}
    tileconv_only |= {c[0] for c in CASES if "activation" in c[3] or "bias" in c[3] or "residual" in c[3]}
    tileconv_only |= {"input_not_tensor", "weight_none", "weight_device", "groups_float", "stride_float"}
    for name, make_input, make_weight, kwargs, _, _ in CASES:
        if name in tileconv_only:
            continue
        args = {k: v for k, v in kwargs.items() if k in ("stride", "padding", "dilation", "groups")}
        with pytest.raises((RuntimeError, ValueError, TypeError)):
            torch.nn.functional.conv2d(make_input(), make_weight(), **args)
