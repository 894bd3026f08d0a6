"""Facts about where tileconv runs, read once at import."""

import os

# Triton reads TRITON_INTERPRET when a kernel is decorated, so this must match import time.
INTERPRET: bool = os.environ.get("TRITON_INTERPRET", "0") == "1"

INT32_LIMIT = 2**31  # element counts at or past this need int64 index math


def cdiv(a: int, b: int) -> int:
    """Ceiling division on the host (``triton.cdiv`` costs microseconds a call there: it is a
    constexpr_function)."""
    return -(-a // b)


def kernel_strides(tensor) -> tuple[int, ...]:
    """``tensor.stride()`` as a kernel should see it: a dimension of size 1 is never
    stepped along, so its stride is given as 0. PyTorch reports 1 there for a contiguous
    [K, C, 1, 1] weight; a kernel computing ``r * stride_r`` with such a 1 cannot prove
    the address 16-byte aligned and falls back to 2-byte loads (seen in the SASS of the
    1x1 convolutions), while Triton marks 0 as divisible by 16."""
    return tuple([0 if size == 1 else stride for size, stride in zip(tensor.shape, tensor.stride(), strict=True)])
