"""The benchmark's named problems, grouped in suites.

Shapes are N,C,H,W -> K, RxS, stride, padding, groups. A :class:`BenchCase` is
layout- and dtype-free; :meth:`BenchCase.problem` turns it into a
:class:`~tileconv.problem.ConvProblem` for one run's dtype, layout, epilogue and batch.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..epilogue import Activation, Epilogue
from ..problem import ConvProblem

EPILOGUES = {
    "none": Epilogue(),
    "bias_relu": Epilogue(Activation.parse("relu"), has_bias=True),
    "bias_add_relu": Epilogue(Activation.parse("relu"), has_bias=True, has_residual=True),
}


@dataclass(frozen=True)
class BenchCase:
    suite: str
    name: str
    n: int
    c: int
    h: int
    w: int
    k: int
    r: int
    s: int
    stride: int = 1
    padding: int = 0
    groups: int = 1
    dilation: int = 1

    def problem(
        self,
        dtype: torch.dtype = torch.float16,
        layout: str = "nhwc",
        epilogue: str = "none",
        batch: int | None = None,
        allow_tf32: bool = False,
    ) -> ConvProblem:
        return ConvProblem(
            n=batch if batch is not None else self.n, c=self.c, h=self.h, w=self.w, k=self.k,
            r=self.r, s=self.s, stride=(self.stride,) * 2, padding=(self.padding,) * 2,
            dilation=(self.dilation,) * 2, groups=self.groups, dtype=dtype, layout=layout,
            epilogue=EPILOGUES[epilogue], allow_tf32=allow_tf32 and dtype == torch.float32,
        )


def _conv(suite, name, n, c, hw, k, rs, stride=1, padding=None, groups=1):
    return BenchCase(suite, name, n, c, hw, hw, k, rs, rs, stride, rs // 2 if padding is None else padding, groups)


def _seed() -> list[BenchCase]:
    cases = [_conv("seed", "seed000", 256, 256, 14, 512, 3)]
    for c in (32, 64):
        for hw in (64, 128):
            for k in (128, 256):
                cases.append(_conv("seed", f"seed001 c{c} hw{hw} k{k}", 8, c, hw, k, 3))
    cases.append(BenchCase("seed", "seed003", 1, 6, 768, 512, 6, 6, 6, 1, 0))
    return cases


def _resnet50(batch: int = 32) -> list[BenchCase]:
    """The distinct convolutions of torchvision's ResNet-50 (v1.5: stride on the 3x3) at 224x224.

    Stem, then per stage (input hw, in-channels, width, out-channels): the first block's
    1x1 reduce, strided 3x3 (stage 1: stride 1) and strided 1x1 downsample, the 1x1
    expand, and the later blocks' 1x1 reduce and 3x3. 23 in all; the downsample of stage 1
    has the expand's shape and is counted once.
    """
    cases = [_conv("resnet50", "r50 stem 7x7/2", batch, 3, 224, 64, 7, 2, 3)]
    stages = [(56, 64, 64, 256, 1), (56, 256, 128, 512, 2), (28, 512, 256, 1024, 2), (14, 1024, 512, 2048, 2)]
    for hw, cin, width, cout, stride in stages:
        out_hw = hw // stride
        rows = [
            (cin, hw, width, 1, 1),  # first block 1x1 reduce
            (width, hw, width, 3, stride),  # first block 3x3 (strided)
            (width, out_hw, cout, 1, 1),  # 1x1 expand
            (cin, hw, cout, 1, stride),  # downsample
            (cout, out_hw, width, 1, 1),  # later blocks 1x1 reduce
            (width, out_hw, width, 3, 1),  # later blocks 3x3
        ]
        for c, h, k, rs, s in rows:
            name = f"r50 c{c} hw{h} k{k} {rs}x{rs}/{s}"
            if any(case.name == name for case in cases):
                continue
            cases.append(_conv("resnet50", name, batch, c, h, k, rs, s))
    return cases


def _depthwise(batch: int = 32) -> list[BenchCase]:
    cases = []
    # MobileNetV2's 3x3 depthwise layers (224x224 input): (channels, input hw, stride).
    for c, hw, s in [(32, 112, 1), (96, 112, 2), (144, 56, 1), (144, 56, 2), (192, 28, 1), (192, 28, 2),
                     (384, 14, 1), (576, 14, 1), (576, 14, 2), (960, 7, 1)]:
        cases.append(_conv("depthwise", f"mbv2 dw3x3 c{c} hw{hw}/{s}", batch, c, hw, c, 3, s, 1, c))
    # ConvNeXt-T's 7x7 depthwise.
    for c, hw in [(96, 56), (192, 28), (384, 14), (768, 7)]:
        cases.append(_conv("depthwise", f"convnext dw7x7 c{c} hw{hw}", batch, c, hw, c, 7, 1, 3, c))
    # RepLKNet's large-kernel depthwise.
    for rs, c, hw in [(31, 128, 56), (31, 256, 28), (27, 512, 14), (13, 1024, 7)]:
        cases.append(_conv("depthwise", f"replknet dw{rs}x{rs} c{c} hw{hw}", batch, c, hw, c, rs, 1, rs // 2, c))
    return cases


def _grouped(batch: int = 32) -> list[BenchCase]:
    """ResNeXt-50 32x4d's grouped 3x3 convolutions: (width, input hw, stride), 32 groups."""
    rows = [(128, 56, 1), (256, 56, 2), (256, 28, 1), (512, 28, 2), (512, 14, 1), (1024, 14, 2), (1024, 7, 1)]
    return [_conv("grouped", f"resnext g32 c{c} hw{hw}/{s}", batch, c, hw, c, 3, s, 1, 32) for c, hw, s in rows]


def _vae() -> list[BenchCase]:
    """Stable Diffusion VAE decoder's 3x3 convolutions for a 512x512 image, batch 1."""
    rows = [(4, 64, 512), (512, 64, 512), (512, 128, 512), (512, 256, 256), (256, 256, 256),
            (256, 512, 128), (128, 512, 128), (128, 512, 3)]
    return [_conv("vae", f"vae c{c} hw{hw} k{k}", 1, c, hw, k, 3) for c, hw, k in rows]


SUITES: dict[str, list[BenchCase]] = {
    "seed": _seed(),
    "resnet50": _resnet50(),
    "depthwise": _depthwise(),
    "grouped": _grouped(),
    "vae": _vae(),
}
SUITE_NAMES = tuple(SUITES) + ("all",)


def get_suite(name: str) -> list[BenchCase]:
    """The cases of suite ``name`` ('all': every suite, in order)."""
    if name == "all":
        return [case for cases in SUITES.values() for case in cases]
    if name not in SUITES:
        raise ValueError(f"suite={name!r} is not known; expected one of {', '.join(SUITE_NAMES)}")
    return list(SUITES[name])


def select_cases(suite: str, text: str | None) -> list[BenchCase]:
    """The cases of ``suite`` whose name contains ``text`` (all of them for None): what the
    commands' ``--case`` picks. Raises ValueError, naming the suite's cases, when none matches."""
    cases = [case for case in get_suite(suite) if text is None or text in case.name]
    if not cases:
        names = ", ".join(case.name for case in get_suite(suite))
        raise ValueError(f"--case {text!r} matches no case of suite {suite!r} (its cases: {names})")
    return cases
