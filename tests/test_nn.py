"""tileconv.nn.Conv2d is a drop-in for torch.nn.Conv2d.

Same constructor, parameters, state_dict keys and repr; loads a torch.nn.Conv2d's
state_dict and then computes what that module computes (checked against the torch module
run in float64), for every padding_mode; plus the fused ``activation=`` and ``residual=``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import tileconv
from tileconv.problem import problem_from_arguments
from tileconv.testing import assert_conv_close, tolerance

REPO_ROOT = Path(__file__).resolve().parents[1]

# (in, out, kernel, constructor keywords) covering stride, padding forms, dilation, groups.
MODULES = [
    (4, 6, 3, dict(padding=1)),
    (6, 4, (3, 2), dict(stride=(2, 1), padding=(1, 2), groups=2, bias=False)),
    (3, 5, 5, dict(padding=2, dilation=(1, 2))),
    (4, 8, 2, dict(padding="same")),  # even kernel: PyTorch pads one more at the bottom/right
    (4, 4, 3, dict(padding="valid", groups=4)),
    (8, 16, 3, dict(stride=2, padding=(2, 1), groups=8)),  # depthwise, multiplier 2
]
PADDING_MODES = ["zeros", "reflect", "replicate", "circular"]


def _pair(make_args, device: str, dtype: torch.dtype, **extra):
    """A torch.nn.Conv2d and a tileconv.nn.Conv2d that loaded its state_dict."""
    cin, cout, kernel, kwargs = make_args
    reference = torch.nn.Conv2d(cin, cout, kernel, **kwargs)
    module = tileconv.nn.Conv2d(cin, cout, kernel, **kwargs, **extra)
    module.load_state_dict(reference.state_dict())
    return reference, module.to(device=device, dtype=dtype)


def _tolerance(module: torch.nn.Conv2d, x: torch.Tensor) -> float:
    return tolerance(problem_from_arguments(x, module.weight, None, 1, 0, module.dilation, module.groups))


def _ids(rows):
    def text(value):
        return "x".join(map(str, value)) if isinstance(value, tuple) else str(value)

    return [f"{c}to{k}-{text(kern)}-" + "-".join(f"{a}{text(b)}" for a, b in kw.items()) for c, k, kern, kw in rows]


DTYPES = [torch.float16, torch.bfloat16, torch.float32]
# Every module in every padding_mode, the dtype rotating so each pair meets each dtype.
MODE_CASES = [(m, mode, DTYPES[(i + j) % 3]) for i, m in enumerate(MODULES) for j, mode in enumerate(PADDING_MODES)]


@pytest.mark.parametrize(
    "make_args,padding_mode,dtype", MODE_CASES,
    ids=[f"{name}-{mode}-{str(dt)[6:]}" for name, (_, mode, dt) in zip(_ids([c[0] for c in MODE_CASES]), MODE_CASES, strict=True)],
)
def test_matches_torch_conv2d(make_args, padding_mode: str, dtype: torch.dtype, device: str, seed: int):
    cin, cout, kernel, kwargs = make_args
    make_args = (cin, cout, kernel, {**kwargs, "padding_mode": padding_mode})
    torch.manual_seed(seed)
    reference, module = _pair(make_args, device, dtype)
    x = torch.randn(2, cin, 7, 9).to(device=device, dtype=dtype)
    with tileconv.poison_outputs():
        out = module(x)
    expected = reference.double()(x.double().cpu())
    assert out.dtype == dtype and out.device == x.device
    assert_conv_close(out, expected, _tolerance(module, x), context=f"{padding_mode} {kwargs} {dtype} (seed {seed})")


def test_is_a_torch_conv2d_with_the_same_state_dict():
    for cin, cout, kernel, kwargs in MODULES:
        reference = torch.nn.Conv2d(cin, cout, kernel, **kwargs)
        module = tileconv.nn.Conv2d(cin, cout, kernel, **kwargs, activation="relu")
        assert isinstance(module, torch.nn.Conv2d)
        assert list(module.state_dict()) == list(reference.state_dict()), kwargs
        for key, value in reference.state_dict().items():
            assert module.state_dict()[key].shape == value.shape, key
        assert [n for n, _ in module.named_parameters()] == [n for n, _ in reference.named_parameters()]


def test_load_state_dict_is_strict_and_round_trips():
    reference = torch.nn.Conv2d(4, 6, 3, padding=1)
    module = tileconv.nn.Conv2d(4, 6, 3, padding=1, activation="silu")
    result = module.load_state_dict(reference.state_dict(), strict=True)
    assert not result.missing_keys and not result.unexpected_keys
    assert torch.equal(module.weight, reference.weight) and torch.equal(module.bias, reference.bias)
    back = torch.nn.Conv2d(4, 6, 3, padding=1)
    back.load_state_dict(module.state_dict())
    assert torch.equal(back.weight, reference.weight)
    with pytest.raises(RuntimeError, match="bias"):
        tileconv.nn.Conv2d(4, 6, 3, bias=False).load_state_dict(reference.state_dict())


@pytest.mark.parametrize("activation", ["relu", "gelu", ("leaky_relu", 0.2), ("clamp", -0.5, 0.5)])
@pytest.mark.parametrize("padding_mode", ["zeros", "reflect"])
def test_activation_and_residual(activation, padding_mode: str, device: str, seed: int):
    """``activation=`` is fused after ``residual=``: act(conv(x) + bias + residual)."""
    torch.manual_seed(seed)
    reference, module = _pair((4, 6, 3, dict(padding=1, padding_mode=padding_mode)), device, torch.float16,
                              activation=activation)
    x = torch.randn(2, 4, 7, 9).to(device=device, dtype=torch.float16)
    residual = torch.randn(2, 6, 7, 9).to(device=device, dtype=torch.float16)
    with tileconv.poison_outputs():
        out = module(x, residual=residual)
    expected = tileconv.Activation.parse(activation).torch_apply(reference.double()(x.double().cpu()) + residual.double().cpu())
    assert_conv_close(out, expected, _tolerance(module, x), context=f"{activation} {padding_mode} (seed {seed})")
    # Without a residual: the activation alone.
    with tileconv.poison_outputs():
        out = module(x)
    expected = tileconv.Activation.parse(activation).torch_apply(reference.double()(x.double().cpu()))
    assert_conv_close(out, expected, _tolerance(module, x), context=f"{activation} {padding_mode} no residual")


def test_channels_last_module_input(device: str, seed: int):
    torch.manual_seed(seed)
    reference, module = _pair((8, 8, 3, dict(padding=1, groups=2)), device, torch.bfloat16)
    x = torch.randn(2, 8, 7, 9).to(device=device, dtype=torch.bfloat16).contiguous(memory_format=torch.channels_last)
    out = module(x)
    assert out.is_contiguous(memory_format=torch.channels_last), out.stride()
    assert_conv_close(out, reference.double()(x.double().cpu()), _tolerance(module, x))


def test_unbatched_module_input(device: str, seed: int):
    torch.manual_seed(seed)
    reference, module = _pair((4, 6, 3, dict(padding=1, padding_mode="circular")), device, torch.float32)
    x = torch.randn(4, 7, 9, device=device)
    out = module(x)
    assert out.shape == (6, 7, 9)
    assert_conv_close(out, reference.double()(x.double().cpu()), _tolerance(module, x[None]))


def test_repr():
    reference = torch.nn.Conv2d(4, 8, 3, stride=2, padding=1, groups=2, bias=False, padding_mode="reflect")
    module = tileconv.nn.Conv2d(4, 8, 3, stride=2, padding=1, groups=2, bias=False, padding_mode="reflect")
    assert repr(module) == repr(reference)
    fused = tileconv.nn.Conv2d(4, 8, 3, padding=1, activation="relu")
    assert repr(fused) == "Conv2d(4, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), activation=relu)"
    leaky = tileconv.nn.Conv2d(4, 8, 1, activation=("leaky_relu", 0.2))
    assert repr(leaky).endswith("activation=leaky_relu(0.2))"), repr(leaky)
    clamp = tileconv.nn.Conv2d(4, 8, 1, activation=("clamp", -1, 1))
    assert repr(clamp).endswith("activation=clamp(-1,1))"), repr(clamp)


def test_gradients_reach_the_parameters(device: str, seed: int, allow_tf32):
    torch.backends.cudnn.allow_tf32 = False  # float32 gradients, not TF32 ones, on a GPU
    torch.manual_seed(seed)
    reference, module = _pair((4, 6, 3, dict(padding=1, padding_mode="replicate")), device, torch.float32,
                              activation="silu")
    x = torch.randn(2, 4, 7, 9, device=device, requires_grad=True)
    module(x).square().sum().backward()
    ref_module = reference.double()
    x64 = x.detach().double().cpu().requires_grad_(True)
    torch.nn.functional.silu(ref_module(x64)).square().sum().backward()
    for name, got, want in [("input", x.grad, x64.grad), ("weight", module.weight.grad, ref_module.weight.grad),
                            ("bias", module.bias.grad, ref_module.bias.grad)]:
        assert_conv_close(got, want, 1e-4, context=f"grad of {name}")


FALLBACK_SCRIPT = textwrap.dedent(
    """
    import torch, tileconv, tileconv.functional as functional
    assert not functional.uses_triton(torch.empty(0)), "TRITON_INTERPRET is unset: the CPU must fall back"
    def tripwire(*args, **kwargs):
        raise AssertionError("the Triton path ran on the CPU without TRITON_INTERPRET")
    functional.conv2d_problem = tripwire
    torch.manual_seed(0)
    for mode in ("zeros", "reflect"):
        reference = torch.nn.Conv2d(4, 6, 3, padding=1, padding_mode=mode)
        module = tileconv.nn.Conv2d(4, 6, 3, padding=1, padding_mode=mode, activation="relu")
        module.load_state_dict(reference.state_dict())
        x = torch.randn(2, 4, 7, 9)
        residual = torch.randn(2, 6, 7, 9)
        out = module(x, residual=residual)
        expected = torch.relu(reference(x) + residual)
        assert torch.allclose(out, expected, atol=1e-5), (out - expected).abs().max()
        out.sum().backward()  # the fallback is plain PyTorch: autograd works too
        assert module.weight.grad is not None
    print("fallback ok")
    """
)


def test_cpu_falls_back_to_pytorch_without_the_interpreter():
    """With TRITON_INTERPRET unset a CPU tensor runs PyTorch's conv2d plus the epilogue."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["CUDA_VISIBLE_DEVICES"] = ""  # a CPU process even on a GPU machine
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), env.get("PYTHONPATH", "")])
    result = subprocess.run([sys.executable, "-c", FALLBACK_SCRIPT], env=env, cwd=REPO_ROOT,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and "fallback ok" in result.stdout, result.stdout + result.stderr
