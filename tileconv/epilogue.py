"""The fused epilogue: ``out = activation(conv + bias + residual)``.

One place defines every activation tileconv knows: its name, its integer code (the
``ACTIVATION`` constexpr the kernels specialise on), its two float parameters, and its
PyTorch meaning (used by the reference, the CPU fallback and autograd). The Triton
side lives in :mod:`tileconv.kernels.common` and switches on the same codes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Union

import torch

# name -> (code, default alpha, default beta). Codes are what kernels specialise on.
_ACTIVATIONS: dict[str, tuple[int, float, float]] = {
    "none": (0, 0.0, 0.0),
    "relu": (1, 0.0, 0.0),
    "relu6": (2, 0.0, 6.0),  # a clamp to [0, 6]
    "leaky_relu": (3, 0.01, 0.0),  # alpha = negative slope, PyTorch's default 0.01
    "silu": (4, 0.0, 0.0),
    "gelu": (5, 0.0, 0.0),  # exact (erf) form, torch's approximate='none'
    "gelu_tanh": (6, 0.0, 0.0),  # torch's approximate='tanh'
    "sigmoid": (7, 0.0, 0.0),
    "tanh": (8, 0.0, 0.0),
    "hardswish": (9, 0.0, 0.0),
    "clamp": (10, 0.0, 0.0),  # alpha = lo, beta = hi
}

ACTIVATION_NAMES: tuple[str, ...] = tuple(n for n in _ACTIVATIONS if n != "none")

ActivationArg = Union[None, str, tuple]


@dataclass(frozen=True)
class Activation:
    """A parsed activation: ``name`` plus the two float parameters kernels receive."""

    name: str = "none"
    alpha: float = 0.0
    beta: float = 0.0

    @property
    def code(self) -> int:
        return _ACTIVATIONS[self.name][0]

    @property
    def is_identity(self) -> bool:
        return self.name == "none"

    def __str__(self) -> str:
        if self.name == "leaky_relu" and self.alpha != 0.01:
            return f"leaky_relu({self.alpha:g})"
        if self.name == "clamp":
            return f"clamp({self.alpha:g},{self.beta:g})"
        return self.name

    @classmethod
    def parse(cls, activation: ActivationArg) -> Activation:
        """Turn the user's ``activation=`` argument into an :class:`Activation`
        (:func:`parse_activation`'s name and parameters; an Activation is returned as is)."""
        if isinstance(activation, Activation):
            return activation
        return cls(*parse_activation(activation))

    def torch_apply(self, x: torch.Tensor) -> torch.Tensor:
        """The activation in PyTorch (any dtype): the definition kernels must match."""
        name = self.name
        if name == "none":
            return x
        if name == "relu":
            return torch.relu(x)
        if name == "relu6":
            return torch.clamp(x, 0.0, 6.0)
        if name == "leaky_relu":
            return torch.nn.functional.leaky_relu(x, self.alpha)
        if name == "silu":
            return torch.nn.functional.silu(x)
        if name == "gelu":
            return torch.nn.functional.gelu(x)
        if name == "gelu_tanh":
            return torch.nn.functional.gelu(x, approximate="tanh")
        if name == "sigmoid":
            return torch.sigmoid(x)
        if name == "tanh":
            return torch.tanh(x)
        if name == "hardswish":
            return torch.nn.functional.hardswish(x)
        if name == "clamp":
            return torch.clamp(x, self.alpha, self.beta)
        raise AssertionError(name)


def parse_activation(activation: ActivationArg) -> tuple[str, float, float]:
    """The user's ``activation=`` argument as (name, alpha, beta), the parameters kernels
    receive. Accepts None, a name from :data:`ACTIVATION_NAMES`, ``('leaky_relu', slope)``
    or ``('clamp', lo, hi)``; anything else raises ValueError naming the value. Plain
    values only, so that torch.compile traces it (see ``tileconv.conv2d``)."""
    if activation is None:
        return ("none", 0.0, 0.0)
    if isinstance(activation, Activation):
        return (activation.name, activation.alpha, activation.beta)
    if isinstance(activation, str):
        if activation == "clamp":
            raise ValueError("activation='clamp' needs bounds: pass ('clamp', lo, hi)")
        if activation not in _ACTIVATIONS or activation == "none":
            raise ValueError(
                f"activation={activation!r} is not known; expected None, one of "
                f"{', '.join(ACTIVATION_NAMES)}, ('leaky_relu', slope) or ('clamp', lo, hi)"
            )
        _, alpha, beta = _ACTIVATIONS[activation]
        return (activation, alpha, beta)
    if isinstance(activation, tuple) and activation and isinstance(activation[0], str):
        name, params = activation[0], activation[1:]
        numbers = all(isinstance(p, (int, float)) and not isinstance(p, bool) for p in params)
        if name == "leaky_relu" and len(params) == 1 and numbers:
            if not math.isfinite(params[0]):
                raise ValueError(f"activation={activation!r}: leaky_relu needs a finite slope")
            return ("leaky_relu", float(params[0]), 0.0)
        if name == "clamp" and len(params) == 2 and numbers:
            lo, hi = float(params[0]), float(params[1])
            if math.isnan(lo) or math.isnan(hi) or lo > hi:
                raise ValueError(f"activation={activation!r}: clamp needs lo <= hi")
            return ("clamp", lo, hi)
    raise ValueError(
        f"activation={activation!r} is not known; expected None, one of "
        f"{', '.join(ACTIVATION_NAMES)}, ('leaky_relu', slope) or ('clamp', lo, hi)"
    )


@dataclass(frozen=True)
class Epilogue:
    """What follows the convolution inside the kernel: bias, residual, activation."""

    activation: Activation = Activation()
    has_bias: bool = False
    has_residual: bool = False

    def __str__(self) -> str:
        parts = (["bias"] if self.has_bias else []) + (["residual"] if self.has_residual else [])
        if not self.activation.is_identity:
            parts.append(str(self.activation))
        return "+".join(parts) if parts else "none"

    def torch_apply(
        self, conv: torch.Tensor, bias: torch.Tensor | None, residual: torch.Tensor | None
    ) -> torch.Tensor:
        """``activation(conv + bias + residual)`` in PyTorch, in ``conv``'s dtype."""
        out = conv
        if bias is not None:
            out = out + bias.view(1, -1, 1, 1).to(out.dtype)
        if residual is not None:
            out = out + residual.to(out.dtype)
        return self.activation.torch_apply(out)
