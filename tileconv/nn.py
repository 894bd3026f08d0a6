"""``tileconv.nn.Conv2d``: a drop-in for ``torch.nn.Conv2d`` that runs on tileconv."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .epilogue import Activation, ActivationArg
from .functional import conv2d


class Conv2d(torch.nn.Conv2d):
    """``torch.nn.Conv2d`` with tileconv's forward and an optional fused activation.

    Same constructor, parameters, state_dict keys and ``padding_mode`` values as
    ``torch.nn.Conv2d``; ``activation=`` (keyword only) names an activation that
    :func:`tileconv.conv2d` applies in the kernel's epilogue. ``forward`` also takes
    ``residual=``, a tensor of the output's shape added before the activation.
    """

    def __init__(self, *args, activation: ActivationArg = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.activation = Activation.parse(activation)

    def extra_repr(self) -> str:
        text = super().extra_repr()
        if not self.activation.is_identity:
            text += f", activation={self.activation}"
        return text

    def forward(self, input: torch.Tensor, residual: torch.Tensor | None = None) -> torch.Tensor:
        if self.padding_mode != "zeros":
            # Same as torch.nn.Conv2d: pad explicitly in the requested mode, then convolve unpadded.
            input = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            padding = 0
        else:
            padding = self.padding
        return conv2d(
            input, self.weight, self.bias, self.stride, padding, self.dilation, self.groups,
            activation=self.activation, residual=residual,
        )
