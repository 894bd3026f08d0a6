"""ConvProblem's derived values and the benchmark suites' problems.

Output sizes are checked against PyTorch itself (shape inference on the meta device, so no
arithmetic is copied into the test); FLOPs and bytes against sums written out by hand.
"""

from __future__ import annotations

import dataclasses
import itertools
import warnings

import pytest
import torch
import torch.nn.functional as F

from tileconv import ConvProblem, Epilogue, problem_from_arguments
from tileconv.bench.suites import SUITE_NAMES, SUITES, get_suite
from tileconv.epilogue import Activation


def _meta_problem(n, c, h, w, k, r, s, stride=1, padding=0, dilation=1, groups=1, dtype=torch.float16):
    x = torch.empty(n, c, h, w, device="meta", dtype=dtype)
    weight = torch.empty(k, c // groups, r, s, device="meta", dtype=dtype)
    return problem_from_arguments(x, weight, None, stride, padding, dilation, groups), x, weight


def _torch_shape(x, weight, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 'same' with an even kernel: PyTorch notes a copy
        return tuple(F.conv2d(x, weight, None, *args).shape)


def test_output_size_matches_pytorch_over_a_grid():
    """Every (H, R, stride, padding, dilation) with H <= 8, R <= 4, stride/dilation <= 3, padding
    <= 2 or 'same'/'valid' that PyTorch accepts: same output size, same acceptance."""
    checked = 0
    for h, r, stride, dilation in itertools.product(range(1, 9), range(1, 5), range(1, 4), range(1, 4)):
        for padding in (0, 1, 2, "valid", "same"):
            if padding == "same" and stride != 1:
                continue
            # Width carries a different geometry at once, so the two axes are not confused.
            w, s = h + 3, max(1, r - 1)
            x = torch.empty(1, 2, h, w, device="meta")
            weight = torch.empty(3, 2, r, s, device="meta")
            try:
                expected = _torch_shape(x, weight, (stride, 1), padding, (dilation, 1))
            except RuntimeError:
                expected = None
            if expected is not None and 0 in expected:
                expected = None  # PyTorch returns an empty tensor for a zero size; tileconv rejects it
            try:
                problem = problem_from_arguments(x, weight, None, (stride, 1), padding, (dilation, 1))
            except ValueError:
                assert expected is None, f"rejected h={h} r={r} u={stride} p={padding} d={dilation}: torch gives {expected}"
                continue
            assert problem.output_shape == expected, (h, r, stride, padding, dilation)
            checked += 1
    assert checked > 500


@pytest.mark.parametrize(
    "r,dilation,pad,pad_end",
    [(2, 1, 0, 1), (3, 1, 1, 1), (4, 1, 1, 2), (4, 2, 3, 3), (6, 1, 2, 3), (1, 1, 0, 0), (2, 3, 1, 2)],
)
def test_same_padding_puts_the_extra_row_at_the_end(r, dilation, pad, pad_end):
    problem, x, weight = _meta_problem(1, 2, 7, 9, 3, r, r, padding="same", dilation=dilation)
    assert problem.padding == (pad, pad) and problem.padding_end == (pad_end, pad_end)
    assert problem.output_shape[2:] == (7, 9) == _torch_shape(x, weight, 1, "same", dilation)[2:]


def test_gemm_view_flops_and_bytes():
    # 2,8,10,12 -> 6, 3x5 stride (2,1) pad (1,2) dilation (1,2), groups 2, fp16, bias + residual.
    x = torch.empty(2, 8, 10, 12, device="meta", dtype=torch.float16)
    weight = torch.empty(6, 4, 3, 5, device="meta", dtype=torch.float16)
    bias = torch.empty(6, device="meta", dtype=torch.float16)
    residual = torch.empty(2, 6, 5, 8, device="meta", dtype=torch.float16)
    problem = problem_from_arguments(x, weight, bias, (2, 1), (1, 2), (1, 2), 2, "relu", residual)
    # P = (10 + 2 - 3) // 2 + 1 = 5, Q = (12 + 4 - 9) // 1 + 1 = 8
    assert (problem.out_h, problem.out_w) == (5, 8)
    assert (problem.gemm_m, problem.gemm_n, problem.gemm_k) == (2 * 5 * 8, 3, 4 * 3 * 5)
    assert problem.c_per_group == 4 and problem.k_per_group == 3 and not problem.is_depthwise
    # 80 output pixels x 6 channels x 60 taps, 2 FLOPs each (padding taps counted).
    assert problem.flops == 2 * 80 * 6 * 60 == 57600
    # input 1920 + weight 360 + output 480 + residual 480 + bias 6 elements, 2 bytes each
    assert problem.min_bytes == (1920 + 360 + 480 + 480 + 6) * 2 == 6492
    assert problem.arithmetic_intensity == pytest.approx(57600 / 6492)
    assert problem.max_elements == 1920
    assert problem.with_epilogue(Epilogue()).min_bytes == (1920 + 360 + 480) * 2
    assert problem.input_shape == (2, 8, 10, 12) and problem.weight_shape == (6, 4, 3, 5)


def test_itemsize_and_dtype_names():
    base = ConvProblem(1, 4, 5, 5, 4, 3, 3)
    sizes = {torch.float16: (2, "float16"), torch.bfloat16: (2, "bfloat16"), torch.float32: (4, "float32")}
    for dtype, (size, name) in sizes.items():
        problem = dataclasses.replace(base, dtype=dtype)
        assert (problem.itemsize, problem.dtype_name) == (size, name)
    assert dataclasses.replace(base, dtype=torch.float32, allow_tf32=True).dtype_name == "float32+tf32"
    assert dataclasses.replace(base, dtype=torch.float16, allow_tf32=True).dtype_name == "float16"


def test_depthwise_and_max_elements():
    problem, _, _ = _meta_problem(2, 8, 9, 9, 16, 3, 3, padding=1, groups=8)
    assert problem.is_depthwise and problem.gemm_n == 2 and problem.gemm_k == 9
    assert problem.max_elements == 2 * 16 * 9 * 9  # the output is the largest tensor here
    assert not _meta_problem(1, 1, 5, 5, 4, 3, 3)[0].is_depthwise  # groups == C == 1 is dense


def test_cache_key_tells_every_field_apart():
    base = ConvProblem(2, 16, 14, 14, 32, 3, 3, padding=(1, 1))
    variants = {
        "base": base,
        "n": dataclasses.replace(base, n=3), "c": dataclasses.replace(base, c=32),
        "h": dataclasses.replace(base, h=15), "w": dataclasses.replace(base, w=15),
        "k": dataclasses.replace(base, k=16), "r": dataclasses.replace(base, r=1),
        "s": dataclasses.replace(base, s=1),
        "stride_h": dataclasses.replace(base, stride=(2, 1)), "stride_w": dataclasses.replace(base, stride=(1, 2)),
        "pad_h": dataclasses.replace(base, padding=(0, 1)), "pad_w": dataclasses.replace(base, padding=(1, 0)),
        "pad_end": dataclasses.replace(base, padding_end=(1, 2)),
        "dil_h": dataclasses.replace(base, dilation=(2, 1)), "dil_w": dataclasses.replace(base, dilation=(1, 2)),
        "groups": dataclasses.replace(base, groups=2),
        "dtype": dataclasses.replace(base, dtype=torch.bfloat16),
        "fp32": dataclasses.replace(base, dtype=torch.float32),
        "tf32": dataclasses.replace(base, dtype=torch.float32, allow_tf32=True),
        "layout": dataclasses.replace(base, layout="nchw"),
    }
    keys = {name: p.cache_key() for name, p in variants.items()}
    clashes = [(a, b) for a, b in itertools.combinations(keys, 2) if keys[a] == keys[b]]
    assert not clashes, clashes
    # Numbers that run together must not collide: n=1,c=11 vs n=11,c=1.
    assert ConvProblem(1, 11, 5, 5, 4, 1, 1).cache_key() != ConvProblem(11, 1, 5, 5, 4, 1, 1).cache_key()
    # The same problem built twice has the same key (and is equal and hashable: dispatch keys on it).
    again = ConvProblem(2, 16, 14, 14, 32, 3, 3, padding=(1, 1))
    assert again.cache_key() == base.cache_key() and again == base and hash(again) == hash(base)


def test_describe():
    assert ConvProblem(256, 256, 14, 14, 512, 3, 3, padding=(1, 1)).describe() == "256,256,14,14 -> 512, 3x3/1, p1, g1"
    assert (ConvProblem(2, 8, 7, 9, 4, 3, 1, stride=(2, 1), padding=(1, 0), dilation=(2, 2), groups=2).describe()
            == "2,8,7,9 -> 4, 3x1/2x1, p1x0, d2, g2")
    same_even, _, _ = _meta_problem(1, 4, 7, 9, 4, 2, 2, padding="same")
    assert same_even.describe() == "1,4,7,9 -> 4, 2x2/1, p0/1, g1"


def test_layout_is_validated():
    with pytest.raises(ValueError, match="layout='nhcw'"):
        ConvProblem(1, 4, 5, 5, 4, 3, 3, layout="nhcw")


def test_layout_and_epilogue_come_from_the_arguments():
    x = torch.empty(2, 4, 5, 5, device="meta").contiguous(memory_format=torch.channels_last)
    weight = torch.empty(4, 4, 3, 3, device="meta")
    residual = torch.empty(2, 4, 3, 3, device="meta")
    problem = problem_from_arguments(x, weight, None, 1, 0, 1, 1, ("clamp", -1, 2), residual)
    assert problem.layout == "nhwc" and problem.dtype == torch.float32
    assert problem.epilogue == Epilogue(Activation("clamp", -1.0, 2.0), has_bias=False, has_residual=True)
    assert str(problem.epilogue) == "residual+clamp(-1,2)"
    # N=1 channels_last with C=1 is also NCHW-contiguous: treated as NCHW.
    ambiguous = torch.empty(1, 1, 5, 5, device="meta").contiguous(memory_format=torch.channels_last)
    assert problem_from_arguments(ambiguous, torch.empty(2, 1, 3, 3, device="meta")).layout == "nchw"


# --------------------------------------------------------------------- benchmark suites
EXPECTED_COUNTS = {"seed": 10, "resnet50": 23, "depthwise": 18, "grouped": 7, "vae": 8}


def test_suite_counts():
    assert {name: len(cases) for name, cases in SUITES.items()} == EXPECTED_COUNTS
    assert len(get_suite("all")) == sum(EXPECTED_COUNTS.values())
    assert SUITE_NAMES == (*EXPECTED_COUNTS, "all")
    with pytest.raises(ValueError, match="suite='resnet'"):
        get_suite("resnet")


@pytest.mark.parametrize("suite", list(SUITES))
def test_suite_cases_are_valid_problems(suite: str):
    """Each case's ConvProblem is the one tileconv's own validation derives from tensors of the
    case's shapes, PyTorch accepts it, and names are unique."""
    cases = SUITES[suite]
    assert len({case.name for case in cases}) == len(cases), "duplicate case names"
    shapes = set()
    for case in cases:
        problem = case.problem(dtype=torch.float16, layout="nchw")
        from_tensors, x, weight = _meta_problem(
            case.n, case.c, case.h, case.w, case.k, case.r, case.s,
            case.stride, case.padding, case.dilation, case.groups,
        )
        assert problem == from_tensors, case.name
        assert problem.output_shape == _torch_shape(x, weight, case.stride, case.padding, case.dilation, case.groups)
        assert problem.out_h > 0 and problem.out_w > 0 and problem.flops > 0
        shapes.add(problem.cache_key())
        assert case.problem(batch=3).n == 3
        assert case.problem(dtype=torch.float32, allow_tf32=True).dtype_name == "float32+tf32"
        assert case.problem(epilogue="bias_add_relu").epilogue.has_residual
    assert len(shapes) == len(cases), "two cases of the suite are the same problem"


def test_resnet50_suite_is_torchvisions_resnet50():
    """The suite holds exactly the distinct convolutions of torchvision's resnet50 at 224x224."""
    models = pytest.importorskip("torchvision.models", reason="torchvision is not installed")
    model = models.resnet50()
    seen = set()

    def record(module, inputs, output):
        _, c, h, w = inputs[0].shape
        seen.add((c, h, w, module.out_channels, module.kernel_size, module.stride, module.padding,
                  module.dilation, module.groups))

    hooks = [m.register_forward_hook(record) for m in model.modules() if isinstance(m, torch.nn.Conv2d)]
    with torch.no_grad():
        model.to("meta")(torch.empty(1, 3, 224, 224, device="meta"))
    for hook in hooks:
        hook.remove()
    suite = {
        (c.c, c.h, c.w, c.k, (c.r, c.s), (c.stride,) * 2, (c.padding,) * 2, (c.dilation,) * 2, c.groups)
        for c in SUITES["resnet50"]
    }
    assert suite == seen, f"only in the suite: {suite - seen}; only in torchvision: {seen - suite}"


@pytest.mark.parametrize("stride, padding, dilation", [(2, 3, 1), ((1, 2), (1, 2), (2, 3)), (1, "same", 1)])
def test_columns_as_channels_is_the_same_convolution(stride, padding, dilation):
    """ConvProblem.columns_as_channels' formula, in float64 PyTorch (no tileconv kernel): the
    R x 1 convolution of the unrolled input with the unrolled weight equals the original."""
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(2, 3, 10, 13, generator=gen, dtype=torch.float64)
    w = torch.randn(4, 3, 3, 4, generator=gen, dtype=torch.float64)
    problem = problem_from_arguments(x.float(), w.float(), None, stride, padding, dilation)
    unrolled = problem.columns_as_channels()
    assert unrolled.c == problem.unrolled_channels == 16 and (unrolled.s, unrolled.stride[1]) == (1, 1)
    assert (unrolled.out_h, unrolled.out_w) == (problem.out_h, problem.out_w)
    # xr[n, s*C + c, h, q] = x[n, c, h, q*V - pad_left + s*dil_w], zero outside and past S*C.
    padded = torch.nn.functional.pad(x, (problem.padding[1], problem.padding_end[1] + 64))
    xr = torch.zeros(unrolled.input_shape, dtype=torch.float64)
    wr = torch.zeros(unrolled.weight_shape, dtype=torch.float64)
    for s in range(problem.s):
        columns = torch.arange(problem.out_w) * problem.stride[1] + s * problem.dilation[1]
        xr[:, s * 3:(s + 1) * 3] = padded[:, :, :, columns]
        wr[:, s * 3:(s + 1) * 3, :, 0] = w[:, :, :, s]
    expected = torch.nn.functional.conv2d(x, w, None, stride, padding, dilation)
    got = torch.nn.functional.conv2d(torch.nn.functional.pad(xr, (0, 0, unrolled.padding[0], unrolled.padding_end[0])),
                                     wr, None, unrolled.stride, 0, unrolled.dilation)
    torch.testing.assert_close(got, expected)
