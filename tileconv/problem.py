"""One object describes a convolution problem; everything else derives from it.

:class:`ConvProblem` holds the sizes (N, C, H, W -> K, R x S), stride, padding, dilation,
groups, dtype, memory layout and the fused epilogue. The output size, the FLOP count, the
fewest bytes a kernel must move, the implicit-GEMM view, the tuning-cache key and the
benchmark row's description are all properties of it: there is no second copy of the
output-size formula anywhere in tileconv.

:func:`problem_from_arguments` is the validation front door of ``tileconv.conv2d``: it
checks every argument against PyTorch's rules and raises a clear error naming the
argument and its value before anything is allocated or written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Union

import torch

from .epilogue import Activation, ActivationArg, Epilogue

IntPair = Union[int, Sequence[int]]
PaddingArg = Union[int, Sequence[int], str]

SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
DTYPE_NAMES = {torch.float16: "float16", torch.bfloat16: "bfloat16", torch.float32: "float32"}
LAYOUTS = ("nhwc", "nchw")


@dataclass(frozen=True)
class ConvProblem:
    """A 2D convolution: ``activation(conv2d(x, w) + bias + residual)``.

    Sizes follow the seeds' notation: batch ``n``, input channels ``c``, input ``h x w``,
    output channels ``k``, filter ``r x s``. ``padding`` is (top, left) and ``padding_end``
    (bottom, right); they differ only for ``padding='same'`` with an even effective kernel,
    where PyTorch puts the extra row/column at the end.
    """

    n: int
    c: int
    h: int
    w: int
    k: int
    r: int
    s: int
    stride: tuple[int, int] = (1, 1)
    padding: tuple[int, int] = (0, 0)
    dilation: tuple[int, int] = (1, 1)
    groups: int = 1
    dtype: torch.dtype = torch.float16
    layout: str = "nhwc"
    epilogue: Epilogue = field(default_factory=Epilogue)
    allow_tf32: bool = False
    padding_end: tuple[int, int] | None = None  # None: same as ``padding``

    def __post_init__(self) -> None:
        for name in ("stride", "padding", "dilation"):  # an int means that value along both axes
            if isinstance(getattr(self, name), int):
                object.__setattr__(self, name, (getattr(self, name),) * 2)
        if self.padding_end is None:
            object.__setattr__(self, "padding_end", tuple(self.padding))
        if self.layout not in LAYOUTS:
            raise ValueError(f"layout={self.layout!r} must be one of {LAYOUTS}")

    def __hash__(self) -> int:
        # A problem keys every dispatch memo and replayed call, several times a call: its
        # hash (over 16 fields and the epilogue's) is computed once and kept.
        kept = self.__dict__.get("_hash")
        if kept is None:
            kept = hash(tuple(getattr(self, f.name) for f in fields(self)))
            object.__setattr__(self, "_hash", kept)
        return kept

    def __getstate__(self) -> dict:
        # The kept hash stays behind: str and dtype hashes differ from process to process.
        return {name: value for name, value in self.__dict__.items() if name != "_hash"}

    # ----------------------------------------------------------------- output size
    @property
    def out_h(self) -> int:
        """P = floor((H + pad_top + pad_bottom - dilation*(R-1) - 1) / stride) + 1."""
        span = self.dilation[0] * (self.r - 1) + 1
        return (self.h + self.padding[0] + self.padding_end[0] - span) // self.stride[0] + 1

    @property
    def out_w(self) -> int:
        """Q = floor((W + pad_left + pad_right - dilation*(S-1) - 1) / stride) + 1."""
        span = self.dilation[1] * (self.s - 1) + 1
        return (self.w + self.padding[1] + self.padding_end[1] - span) // self.stride[1] + 1

    @property
    def input_shape(self) -> tuple[int, int, int, int]:
        return (self.n, self.c, self.h, self.w)

    @property
    def weight_shape(self) -> tuple[int, int, int, int]:
        return (self.k, self.c // self.groups, self.r, self.s)

    @property
    def output_shape(self) -> tuple[int, int, int, int]:
        return (self.n, self.k, self.out_h, self.out_w)

    # ----------------------------------------------------------------- GEMM view
    @property
    def c_per_group(self) -> int:
        return self.c // self.groups

    @property
    def k_per_group(self) -> int:
        return self.k // self.groups

    @property
    def gemm_m(self) -> int:
        """Output pixels: N * P * Q."""
        return self.n * self.out_h * self.out_w

    @property
    def gemm_n(self) -> int:
        """Output channels of one group."""
        return self.k_per_group

    @property
    def gemm_k(self) -> int:
        """Reduction length of one output element: C/groups * R * S."""
        return self.c_per_group * self.r * self.s

    @property
    def is_unpadded(self) -> bool:
        """No padding on any side: every filter tap of every output lies inside the input."""
        return self.padding == (0, 0) and self.padding_end == (0, 0)

    @property
    def is_depthwise(self) -> bool:
        """groups == C: each output channel sees one input channel (multiplier K/C)."""
        return self.groups == self.c and self.groups > 1

    # ----------------------------------------------------------------- cost model
    @property
    def flops(self) -> int:
        """Multiply-adds counted as 2 FLOPs, padding taps included (as cuDNN counts)."""
        return 2 * self.gemm_m * self.k * self.gemm_k

    @property
    def itemsize(self) -> int:
        return torch.empty((), dtype=self.dtype).element_size()

    @property
    def min_bytes(self) -> int:
        """Fewest bytes any kernel must move: each input, weight, output (and bias,
        residual) element once."""
        elems = self.n * self.c * self.h * self.w + self.k * self.c_per_group * self.r * self.s
        out = self.n * self.k * self.out_h * self.out_w
        elems += out * (2 if self.epilogue.has_residual else 1)
        elems += self.k if self.epilogue.has_bias else 0
        return elems * self.itemsize

    @property
    def arithmetic_intensity(self) -> float:
        return self.flops / max(self.min_bytes, 1)

    @property
    def max_elements(self) -> int:
        """Largest element count of any tensor the kernels index (decides int64 math)."""
        return max(
            self.n * self.c * self.h * self.w,
            self.n * self.k * self.out_h * self.out_w,
            self.k * self.c_per_group * self.r * self.s,
        )

    # ----------------------------------------------------------------- names
    @property
    def uses_tf32(self) -> bool:
        """float32 multiplied on the TF32 tensor cores (``allow_tf32``, as PyTorch's conv would)."""
        return self.dtype == torch.float32 and self.allow_tf32

    @property
    def dtype_name(self) -> str:
        name = DTYPE_NAMES[self.dtype]
        return name + "+tf32" if self.uses_tf32 else name

    def describe(self) -> str:
        """The benchmark-table form: ``256,256,14,14 -> 512, 3x3/1, p1, g1``."""
        stride = _pair_str(self.stride)
        pad = _pair_str(self.padding)
        if self.padding_end != self.padding:
            pad += "/" + _pair_str(self.padding_end)
        text = f"{self.n},{self.c},{self.h},{self.w} -> {self.k}, {self.r}x{self.s}/{stride}, p{pad}"
        if self.dilation != (1, 1):
            text += f", d{_pair_str(self.dilation)}"
        return text + f", g{self.groups}"

    def cache_key(self) -> str:
        """The tuning-cache key: everything that can change the best launch choice."""
        return (
            f"n{self.n}c{self.c}h{self.h}w{self.w}k{self.k}r{self.r}s{self.s}"
            f"u{self.stride[0]}v{self.stride[1]}"
            f"p{self.padding[0]}.{self.padding[1]}.{self.padding_end[0]}.{self.padding_end[1]}"
            f"d{self.dilation[0]}.{self.dilation[1]}g{self.groups}"
            f"-{self.dtype_name}-{self.layout}"
        )

    def with_epilogue(self, epilogue: Epilogue) -> ConvProblem:
        return replace(self, epilogue=epilogue)

    @property
    def unrolled_channels(self) -> int:
        """Channels of :meth:`columns_as_channels`' input: a filter row's S x C/g values,
        rounded up to a multiple of 16 (one ``tl.dot`` K-slice; 32 bytes of fp16)."""
        return -(-self.s * self.c_per_group // 16) * 16

    def columns_as_channels(self) -> ConvProblem:
        """This convolution with its filter columns unrolled into channels: the same output
        from an R x 1 convolution over ``xr``, where

            xr[n, s*C + c, h, q] = x[n, c, h, q*V - pad_left + s*dil_w]  (0 outside; 0 for
                                                                       s*C + c >= S*C)
            w'[k, s*C + c, r, 0] = w[k, c, r, s]  (0 for the padding channels).

        ``xr`` has :attr:`unrolled_channels` channels, H rows and Q (the output's width)
        columns, channels_last; the vertical geometry (R, stride, padding, dilation) is
        unchanged, the horizontal one is the identity. For few input channels (the 7x7
        stem's 3): each tap's reduction slice becomes a 16-byte-aligned run of
        ``unrolled_channels`` values instead of 3 (6 bytes, gathered 2 bytes at a time).
        Dense convolutions only (groups = 1): the unrolled channels span the whole filter row."""
        if self.groups != 1:
            raise ValueError(f"columns_as_channels needs groups=1, got groups={self.groups}")
        return ConvProblem(
            n=self.n, c=self.unrolled_channels, h=self.h, w=self.out_w, k=self.k, r=self.r, s=1,
            stride=(self.stride[0], 1), padding=(self.padding[0], 0), dilation=(self.dilation[0], 1),
            dtype=self.dtype, layout="nhwc", epilogue=self.epilogue, allow_tf32=self.allow_tf32,
            padding_end=(self.padding_end[0], 0),
        )

    def staged_channels_last(self) -> ConvProblem:
        """This convolution read from a channels_last copy of its input (``staged_nhwc``):
        the same problem with ``layout='nhwc'``; the output keeps the caller's layout (the
        kernels write it through its strides)."""
        return replace(self, layout="nhwc")

    @property
    def staged_channels(self) -> int:
        """Row length of ``staged_nhwc``'s copy: C rounded up to a multiple of 16 bytes, so
        that every pixel's channel run starts 16-byte aligned."""
        per_16_bytes = max(1, 16 // self.itemsize)
        return -(-self.c // per_16_bytes) * per_16_bytes

    def dgrad_as_forward(self) -> ConvProblem | None:
        """The input gradient of this (stride-1) convolution as a forward convolution, or
        None where it is not one.

        With stride 1, ``dx = conv2d(dy, w', padding = dil*(R-1) - pad, dilation = dil)``
        where ``w'[g*C/g + c, k, r, s] = w[g*K/g + k, c, R-1-r, S-1-s]``
        (:func:`tileconv.kernels.weights.dgrad_weight`): dy (K channels, P x Q) is the
        input, C the output channels, each side's padding the dilated kernel's reach
        minus the forward's padding on that side. Where the forward padding exceeds that
        reach (the new padding would be negative) or the stride is not 1, None: the
        output-phase dgrad kernel handles those. No epilogue: the activation's
        derivative is applied before."""
        if self.stride != (1, 1):
            return None
        reach = (self.dilation[0] * (self.r - 1), self.dilation[1] * (self.s - 1))
        padding = (reach[0] - self.padding[0], reach[1] - self.padding[1])
        padding_end = (reach[0] - self.padding_end[0], reach[1] - self.padding_end[1])
        if min(*padding, *padding_end) < 0:
            return None
        return ConvProblem(
            n=self.n, c=self.k, h=self.out_h, w=self.out_w, k=self.c, r=self.r, s=self.s,
            stride=(1, 1), padding=padding, dilation=self.dilation, groups=self.groups,
            dtype=self.dtype, layout=self.layout, allow_tf32=self.allow_tf32, padding_end=padding_end,
        )

    def dgrad_as_strided_forward(self) -> ConvProblem | None:
        """The input gradient of an unpadded 1x1 convolution of stride (U, V) other than 1 as a
        forward convolution onto dx's pixels (U*p, V*q), or None where it is not one.

        Each of those pixels is the input of output pixel (p, q) alone, so ``dx[:, :, ::U, ::V]
        = conv2d(dy, w')`` with ``w'`` the transposed weight (1x1, stride 1, no padding; the
        weight as :meth:`dgrad_as_forward` takes it); no output pixel reads dx's other pixels,
        whose gradient is zero. That view has the output's P x Q pixels: P = ceil(H / U)."""
        if self.stride == (1, 1) or (self.r, self.s) != (1, 1) or any(self.padding) or any(self.padding_end):
            return None
        return ConvProblem(
            n=self.n, c=self.k, h=self.out_h, w=self.out_w, k=self.c, r=1, s=1, stride=(1, 1), padding=(0, 0),
            dilation=(1, 1), groups=self.groups, dtype=self.dtype, layout=self.layout, allow_tf32=self.allow_tf32,
        )

    def dgrad_as_subpixel_forward(self) -> ConvProblem | None:
        """The input gradient of this strided convolution as one stride-1 forward convolution
        of dy onto sub-pixel cells (all of dx's U x V phases at once), or None where it is
        not one (stride 1, dilation, groups).

        dx's pixel (U*i + a, V*j + b) is phase (a, b) of cell (i, j). Every phase reads a few
        taps of the filter from a few rows and columns of dy around (i, j) (:func:`subpixel_taps`),
        so one convolution of dy with a T_h x T_w filter (the union of those reaches) gives
        every phase of a cell as its own group of C output channels, U*V*C in all, rounded up
        to a multiple of 8 (16-byte rows): channel (a*V + b)*C + c is dx[n, c, U*i + a, V*j + b]
        (:func:`tileconv.kernels.weights.subpixel_dgrad_weight` places each (r, s) tap of the
        weight; the taps a phase does not read are zero). Its output has ceil(H/U) x ceil(W/V)
        cells, which :func:`tileconv.kernels.dgrad.shuffle_subpixels` spreads onto dx (or which
        the kernel writes into dx itself: :func:`tileconv.kernels.dgrad.fold_cells_into`). Each dy
        tile then feeds all U*V phases: the phase kernel reads it once a phase."""
        if self.stride == (1, 1) or self.dilation != (1, 1) or self.groups != 1:
            return None
        rows = _subpixel_reach(self.h, self.r, self.stride[0], self.padding[0], self.out_h)
        cols = _subpixel_reach(self.w, self.s, self.stride[1], self.padding[1], self.out_w)
        if rows is None or cols is None:
            return None
        phases = self.stride[0] * self.stride[1]
        return ConvProblem(
            n=self.n, c=self.k, h=self.out_h, w=self.out_w, k=-(-phases * self.c // 8) * 8, r=rows[0], s=cols[0],
            stride=(1, 1), padding=(rows[1], cols[1]), padding_end=(rows[2], cols[2]), dtype=self.dtype,
            layout=self.layout, allow_tf32=self.allow_tf32,
        )


def subpixel_taps(taps: int, stride: int, pad: int) -> tuple[int, int, list[list[tuple[int, int]]]]:
    """Along one axis of a convolution (``taps`` filter taps, ``stride``, leading padding ``pad``,
    dilation 1), which filter taps each phase a of the input gradient reads, and from where:
    (lo, span, phases), phases[a] the pairs (t, r) of filter tap r read from dy's row
    i + lo + t for dx's row U*i + a, t < span (the sub-pixel filter's taps along the axis).

    dx row h = U*i + a reads dy row p = (h + pad - r) / U for each r with that division exact:
    r = r_a + U*m (r_a = (a + pad) mod U), p = i + d_a - m (d_a = (a + pad - r_a) / U). lo is
    the lowest offset d_a - m over all phases; t counts from it. One source for the sub-pixel
    problem's geometry and its weight."""
    reads = []
    for a in range(stride):
        first = (a + pad) % stride
        offset = (a + pad - first) // stride
        reads.append([(offset - m, first + stride * m) for m in range(-(-(taps - first) // stride))])
    lo = min(offset for phase in reads for offset, _ in phase)
    span = 1 + max(offset for phase in reads for offset, _ in phase) - lo
    return lo, span, [[(offset - lo, r) for offset, r in phase] for phase in reads]


def _subpixel_reach(size: int, taps: int, stride: int, pad: int, out: int) -> tuple[int, int, int] | None:
    """The sub-pixel problem's (filter taps, leading padding, trailing padding) along one axis
    (:meth:`ConvProblem.dgrad_as_subpixel_forward`): ceil(size / stride) cells from ``out`` rows
    of dy. None where a padding would be negative (dy rows no cell reads)."""
    lo, span, _ = subpixel_taps(taps, stride, pad)
    cells = -(-size // stride)
    before, after = -lo, cells - 1 + lo + span - 1 - (out - 1)
    return (span, before, after) if before >= 0 and after >= 0 else None


def _pair_str(pair: tuple[int, int]) -> str:
    return str(pair[0]) if pair[0] == pair[1] else f"{pair[0]}x{pair[1]}"


# --------------------------------------------------------------------- validation
def _as_pair(name: str, value: IntPair, minimum: int) -> tuple[int, int]:
    if isinstance(value, bool):
        raise TypeError(f"{name}={value!r} must be an int or a pair of ints")
    if isinstance(value, int):
        pair = (value, value)
    elif isinstance(value, (tuple, list, torch.Size)) and len(value) in (1, 2):
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            raise TypeError(f"{name}={value!r} must be an int or a pair of ints")
        pair = (value[0], value[0]) if len(value) == 1 else (value[0], value[1])
    else:
        raise TypeError(f"{name}={value!r} must be an int or a pair of ints")
    if min(pair) < minimum:
        bound = "positive" if minimum == 1 else "non-negative"
        raise ValueError(f"{name}={value!r} must be {bound}")
    return pair


def layout_of(x: torch.Tensor) -> str:
    """'nhwc' for a channels_last 4D tensor, else 'nchw' (the output format follows)."""
    if x.dim() == 4 and x.is_contiguous(memory_format=torch.channels_last) and not x.is_contiguous():
        return "nhwc"
    return "nchw"


def weight_gradient_layout(problem: ConvProblem, weight: torch.Tensor) -> str:
    """The layout of the weight gradient: channels_last when the input or the weight is
    channels_last, else contiguous. This is PyTorch's rule for its cuDNN convolutions
    (``cudnn_conv_suggest_memory_format``): a channels_last network's backward gives a
    channels_last weight gradient even for a contiguous weight (autograd's accumulation then
    copies it into the parameter's layout, as it does after cuDNN). A channels_last weight
    gradient has the wgrad GEMM's columns (r, s, c) in memory order, so the wgrad kernels
    write it directly; a contiguous one of a filter larger than 1x1 takes a reordering pass."""
    return "nhwc" if problem.layout == "nhwc" or layout_of(weight) == "nhwc" else "nchw"


def _check_tensor(name: str, t: torch.Tensor, like: torch.Tensor | None = None) -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.layout != torch.strided:
        raise TypeError(f"{name}.layout={t.layout} is not supported; tileconv reads dense (strided) tensors")
    if t.dtype not in SUPPORTED_DTYPES:
        raise TypeError(
            f"{name}.dtype={t.dtype} is not supported; tileconv computes float16, bfloat16 "
            "and float32"
        )
    if like is not None:
        if t.dtype != like.dtype:
            raise TypeError(f"{name}.dtype={t.dtype} does not match input.dtype={like.dtype}")
        if t.device != like.device:
            raise RuntimeError(f"{name}.device={t.device} does not match input.device={like.device}")


# problem_from_arguments is called on every tileconv.conv2d; a model calls it with the
# same arguments again and again. Validated problems are kept by everything validation
# looked at, so a repeat skips the checks and reuses the instance.
_VALIDATED: dict[tuple, ConvProblem] = {}
_VALIDATED_LIMIT = 4096


def tensor_key(t: object) -> object:
    """What a tensor argument contributes to :func:`validation_key`: type, shape, strides,
    dtype and device (None for None). :mod:`tileconv.call_plans` keys replays on it too."""
    return None if t is None else (type(t), t.shape, t.stride(), t.dtype, t.device)


def validation_key(input, weight, bias, residual, stride, padding, dilation, groups, activation) -> tuple | None:
    """What validation looks at, as a dict key (:func:`problem_from_arguments`' memo, and the
    base of :func:`tileconv.call_plans.plan_key`); None under torch.compile (which would guard
    on the memo's whole, growing contents; validation is cheap to trace) and for non-tensor
    arguments: those are simply validated."""
    if torch.compiler.is_compiling():
        return None
    try:
        return (tensor_key(input), tensor_key(weight), tensor_key(bias), tensor_key(residual),
                stride, padding, dilation, groups, activation, torch._C._get_cudnn_allow_tf32())
    except (AttributeError, RuntimeError):  # not a tensor; a sparse tensor has no strides
        return None


def normal_geometry(
    kernel: tuple[int, int], stride: IntPair, padding: PaddingArg, dilation: IntPair,
) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int], tuple[int, int]]:
    """(stride, padding, padding_end, dilation) as pairs of ints for a filter of size
    ``kernel`` = (R, S): the user's forms (ints, pairs, 'same', 'valid') in normal form,
    padding as (top, left) and padding_end as (bottom, right) ('same' with an even kernel
    pads more at the end, as PyTorch does). Raises the argument's error for a bad value.
    Plain values only, so that torch.compile traces it (see ``tileconv.conv2d``)."""
    r, s = kernel
    stride_p = _as_pair("stride", stride, 1)
    dilation_p = _as_pair("dilation", dilation, 1)
    if isinstance(padding, str):
        if padding == "valid":
            return stride_p, (0, 0), (0, 0), dilation_p
        if padding != "same":
            raise ValueError(f"padding={padding!r} must be 'same', 'valid', an int or a pair of ints")
        if stride_p != (1, 1):
            raise ValueError(f"padding='same' is not supported with stride={stride!r} (as in PyTorch)")
        total = (dilation_p[0] * (r - 1), dilation_p[1] * (s - 1))
        pad = (total[0] // 2, total[1] // 2)
        return stride_p, pad, (total[0] - pad[0], total[1] - pad[1]), dilation_p
    pad = _as_pair("padding", padding, 0)
    return stride_p, pad, pad, dilation_p


def problem_from_arguments(
    input: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None = None,
    stride: IntPair = 1,
    padding: PaddingArg = 0,
    dilation: IntPair = 1,
    groups: int = 1,
    activation: ActivationArg = None,
    residual: torch.Tensor | None = None,
    *,
    padding_end: IntPair | None = None,
) -> ConvProblem:
    """Validate ``tileconv.conv2d``'s arguments (4D input) and describe the problem.

    ``padding_end`` (internal: the custom op's normal form) makes ``padding`` the (top,
    left) pair and ``padding_end`` the (bottom, right) one.

    Every rule of ``torch.nn.functional.conv2d`` is checked here, with an error that names
    the argument and its value; nothing is allocated or launched before this returns.
    Arguments seen before (same shapes, strides, dtypes, devices and options) return the
    problem validated then.
    """
    key = None if padding_end is not None else validation_key(
        input, weight, bias, residual, stride, padding, dilation, groups, activation)
    try:
        known = _VALIDATED.get(key) if key is not None else None
    except TypeError:  # an unhashable argument form (a list): validated without the memo
        key = known = None
    if known is not None:
        return known
    _check_tensor("input", input)
    _check_tensor("weight", weight, input)
    if input.dim() != 4:
        raise ValueError(f"input must be 4D (N, C, H, W), got shape {tuple(input.shape)}")
    if weight.dim() != 4:
        raise ValueError(f"weight must be 4D (K, C/groups, R, S), got shape {tuple(weight.shape)}")
    if isinstance(groups, bool) or not isinstance(groups, int):
        raise TypeError(f"groups={groups!r} must be an int")
    if groups <= 0:
        raise ValueError(f"groups={groups} must be positive")
    n, c, h, w = input.shape
    k, c_per_group, r, s = weight.shape
    if c % groups != 0:
        raise ValueError(f"groups={groups} does not divide the input channels C={c} (input.shape[1])")
    if c != c_per_group * groups:
        raise ValueError(
            f"input has C={c} channels but weight.shape[1]={c_per_group} * groups={groups} "
            f"= {c_per_group * groups}"
        )
    if k % groups != 0:
        raise ValueError(f"groups={groups} does not divide the output channels weight.shape[0]={k}")
    if k == 0 or r == 0 or s == 0 or c_per_group == 0:
        raise ValueError(f"weight of shape {tuple(weight.shape)} has an empty dimension")
    if padding_end is None:
        stride_p, pad, pad_end, dilation_p = normal_geometry((r, s), stride, padding, dilation)
    else:  # the custom op's normal form: padding (top, left) and padding_end (bottom, right)
        stride_p, dilation_p = _as_pair("stride", stride, 1), _as_pair("dilation", dilation, 1)
        pad, pad_end = _as_pair("padding", padding, 0), _as_pair("padding_end", padding_end, 0)
    if bias is not None:
        _check_tensor("bias", bias, input)
        if tuple(bias.shape) != (k,):
            raise ValueError(f"bias must have shape ({k},), got {tuple(bias.shape)}")
    act = Activation.parse(activation)
    problem = ConvProblem(
        n=n, c=c, h=h, w=w, k=k, r=r, s=s,
        stride=stride_p, padding=pad, dilation=dilation_p, groups=groups,
        dtype=input.dtype, layout=layout_of(input),
        epilogue=Epilogue(act, bias is not None, residual is not None),
        allow_tf32=input.dtype == torch.float32 and torch.backends.cudnn.allow_tf32,
        padding_end=pad_end,
    )
    if problem.out_h <= 0 or problem.out_w <= 0:
        raise ValueError(
            f"the output would be {problem.out_h}x{problem.out_w}: the dilated kernel "
            f"({dilation_p[0] * (r - 1) + 1}x{dilation_p[1] * (s - 1) + 1}) is larger than the padded "
            f"input ({h + pad[0] + pad_end[0]}x{w + pad[1] + pad_end[1]})"
        )
    if residual is not None:
        _check_tensor("residual", residual, input)
        if tuple(residual.shape) != problem.output_shape:
            raise ValueError(
                f"residual must have the output's shape {problem.output_shape}, got {tuple(residual.shape)}"
            )
    if key is not None and len(_VALIDATED) < _VALIDATED_LIMIT:
        _VALIDATED[key] = problem
    return problem
