"""tileconv: 2D convolution for PyTorch on NVIDIA GPUs, written in Triton.

``tileconv.conv2d`` has torch.nn.functional.conv2d's meaning plus a fused epilogue
(bias, residual, activation); ``tileconv.nn.Conv2d`` is a drop-in for torch.nn.Conv2d.
"""

from . import nn
from .convert import convert
from .dispatch.tune import tune, tune_model
from .dispatch.tune_backward import tune_backward
from .epilogue import ACTIVATION_NAMES, Activation, Epilogue
from .functional import conv2d, poison_outputs
from .kernels import ALGORITHMS, LaunchConfig
from .problem import ConvProblem, problem_from_arguments
from .reference import conv2d_reference

__version__ = "0.1.0"

__all__ = [
    "ACTIVATION_NAMES",
    "ALGORITHMS",
    "Activation",
    "ConvProblem",
    "Epilogue",
    "LaunchConfig",
    "conv2d",
    "conv2d_reference",
    "convert",
    "nn",
    "poison_outputs",
    "problem_from_arguments",
    "tune",
    "tune_backward",
    "tune_model",
]
