"""tileconv.convert on hand-built ResNet-like models, and ``bench --model`` without a GPU.

The converted models run tileconv's kernels (CUDA, or the interpreter on a CPU: conftest
sets TRITON_INTERPRET=1); the PyTorch fallback is exercised by ``bench --model``'s no-GPU
demo, run in a subprocess without the interpreter. Sizes are tiny (1x3x16x16, <= 16 channels).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import tileconv
from tileconv.bench import cli_bench
from tileconv.bench.models import (
    ModelRow,
    TinyBlock,
    TinyResNet,
    model_names,
    randomize_batchnorm,
    result_json,
    within_fp_error,
)
from tileconv.convert import ConversionReport, ResidualConv2d, summary

REPO_ROOT = Path(__file__).resolve().parents[1]
HAS_CUDA = torch.cuda.is_available()


def assert_close(out: torch.Tensor, ref: torch.Tensor, rtol: float = 1e-4, context: str = "") -> None:
    """Within ``rtol`` of the reference's largest magnitude; says where and how much otherwise."""
    assert out.shape == ref.shape, f"{context}: shape {tuple(out.shape)} != {tuple(ref.shape)}"
    diff = (out.double() - ref.double()).abs()
    scale = max(ref.abs().max().item(), 1.0)
    worst = diff.argmax().item()
    index = tuple(int(i) for i in torch.unravel_index(torch.tensor(worst), diff.shape))
    assert not torch.isnan(out).any(), f"{context}: NaN in the output"
    assert diff.max().item() <= rtol * scale, (
        f"{context}: max |out - ref| = {diff.max().item():.3g} at {index} (out {out.flatten()[worst].item():.6g}, "
        f"ref {ref.flatten()[worst].item():.6g}), allowed {rtol * scale:.3g}")


@pytest.fixture(autouse=True)
def strict_fp32():
    """These tests hold converted float32 models to the originals at 1e-4, so both sides run in
    strict float32: under PyTorch's default (TF32 allowed) tileconv and cuDNN each multiply in
    TF32 where they choose to, and a 2**-11 rounding carried through a few layers passes that
    (on an H200, session 12: 1e-4 to 1.6e-3 on nine tests). TF32 is tested against its own
    tolerance elsewhere."""
    previous = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cudnn.allow_tf32 = previous


def tiny_resnet(seed: int, device: str) -> nn.Module:
    torch.manual_seed(seed)
    return randomize_batchnorm(TinyResNet()).to(device).eval()


def conv_types(model: nn.Module) -> set[type]:
    return {type(m) for m in model.modules() if isinstance(m, nn.Conv2d)}


# --------------------------------------------------------------------- the fx path
@pytest.mark.parametrize("with_example", [False, True], ids=["runtime-guard", "shape-prop"])
def test_tiny_resnet_fuses_everything_and_matches(device, seed, with_example):
    model = tiny_resnet(seed, device)
    x = torch.randn(1, 3, 16, 16, device=device)
    converted = tileconv.convert(model, example_inputs=x if with_example else None)
    report = converted.tileconv_report
    counts = (report.traced, report.convs_replaced, report.bn_folded, report.activations_fused,
              report.residual_adds_fused)
    assert counts == (True, 8, 8, 7, 2), summary(report)
    assert report.not_fused == [], summary(report)
    assert "block1.conv3 + bn3 + add + relu" in report.fused and "block2.conv2 + bn2 + silu" in report.fused
    assert conv_types(converted) <= {tileconv.nn.Conv2d, ResidualConv2d}
    assert (ResidualConv2d in conv_types(converted)) is not with_example  # shapes known: plain modules
    assert not any(isinstance(m, nn.BatchNorm2d) for m in converted.modules())
    assert conv_types(model) == {nn.Conv2d}  # inplace=False left the original alone
    with torch.no_grad():
        assert_close(converted(x), model(x), context="TinyResNet")
    assert all(p.device == x.device and p.dtype == torch.float32 for p in converted.parameters())


class FunctionalNet(nn.Module):
    """Activations as functions and methods, adds in both orders, and values read twice."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.bn_a = nn.Conv2d(4, 8, 3, padding=1), nn.BatchNorm2d(8)
        self.b, self.bn_b = nn.Conv2d(8, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8)
        self.c = nn.Conv2d(8, 8, 1)
        self.d = nn.Conv2d(8, 8, 3, padding=1, padding_mode="reflect")
        self.bn_d = nn.BatchNorm2d(8)
        self.e = nn.Conv2d(8, 8, 3, padding=1, groups=2)
        self.f = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.gelu = nn.GELU(approximate="tanh")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.bn_a(self.a(x)), inplace=True)  # a + bn_a + relu
        z = torch.relu(y + self.bn_b(self.b(y)))  # b + bn_b + add (residual first) + relu
        c = self.c(z)  # read twice: nothing fuses after it
        w = self.gelu(torch.add(self.bn_d(self.d(c)), c))  # reflect padding + bn + add + gelu_tanh
        v = F.silu(self.e(w)) * 0.5  # e + silu
        u = self.f(v).relu_()  # depthwise + relu (in-place method)
        return u + c


def test_functions_methods_and_both_add_orders(device, seed):
    torch.manual_seed(seed)
    model = randomize_batchnorm(FunctionalNet()).to(device).eval()
    x = torch.randn(1, 4, 12, 12, device=device)
    converted = tileconv.convert(model, example_inputs=(x,))
    report = converted.tileconv_report
    assert (report.convs_replaced, report.bn_folded, report.activations_fused, report.residual_adds_fused) == (
        6, 3, 5, 2), summary(report)
    assert set(report.fused) == {"a + bn_a + relu", "b + bn_b + add + relu", "d + bn_d + add + gelu_tanh",
                                 "e + silu", "f + relu"}, report.fused
    assert converted.d.padding_mode == "reflect"
    with torch.no_grad():
        assert_close(converted(x), model(x), context="FunctionalNet")


class BroadcastAdd(nn.Module):
    """conv + bn + (a per-channel map that broadcasts) + relu: not the residual's shape."""

    def __init__(self) -> None:
        super().__init__()
        self.conv, self.bn = nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8)
        self.shift = nn.Parameter(torch.randn(1, 8, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.bn(self.conv(x)) + self.shift)


def test_a_broadcasting_add_is_not_fused_with_shapes_and_guarded_without(device, seed):
    torch.manual_seed(seed)
    model = randomize_batchnorm(BroadcastAdd()).to(device).eval()
    x = torch.randn(2, 3, 8, 8, device=device)
    with torch.no_grad():
        expected = model(x)
        known = tileconv.convert(model, example_inputs=x)
        assert known.tileconv_report.residual_adds_fused == 0 and known.tileconv_report.bn_folded == 1
        assert any("shape" in why for _, why in known.tileconv_report.not_fused)
        assert_close(known(x), expected, context="shape-prop")
        guarded = tileconv.convert(model)  # fused; ResidualConv2d finds the shape wrong at run time
        assert guarded.tileconv_report.residual_adds_fused == 1 and isinstance(guarded.conv, ResidualConv2d)
        assert_close(guarded(x), expected, context="runtime guard")


# --------------------------------------------------------------------- what is not fused
class Untraceable(nn.Module):
    """Data-dependent control flow: torch.fx cannot trace it."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU6())
        self.block = TinyBlock(8, 4, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.features(x)
        if x.sum() > 0:
            x = self.block(x)
        return x


def test_untraceable_model_falls_back_to_modules_with_a_warning(device, seed):
    torch.manual_seed(seed)
    model = randomize_batchnorm(Untraceable()).to(device).eval()
    x = torch.rand(1, 3, 8, 8, device=device)
    with pytest.warns(UserWarning, match="not traceable") as caught:
        converted = tileconv.convert(model)
    report = converted.tileconv_report
    assert not report.traced and type(converted) is Untraceable
    assert (report.convs_replaced, report.bn_folded, report.activations_fused, report.residual_adds_fused) == (
        4, 1, 1, 0), summary(report)
    assert report.fused == ["features.0 + 1 + relu6"]
    assert "block.bn1" in str(caught[0].message)  # the BatchNorms it could not fold, by name
    assert conv_types(converted) == {tileconv.nn.Conv2d}
    with torch.no_grad():
        assert_close(converted(x), model(x), context="untraceable")


@pytest.mark.parametrize("fuse", [True, False])
def test_a_bare_conv2d_is_converted(fuse, device, seed):
    """A model that is one nn.Conv2d (no parent to swap it in) becomes a tileconv.nn.Conv2d
    with its parameters, and the original is left as it was."""
    torch.manual_seed(seed)
    conv = nn.Conv2d(3, 8, 3, stride=2, padding=1, groups=1).to(device)
    converted = tileconv.convert(conv, fuse=fuse)
    assert type(converted) is tileconv.nn.Conv2d and type(conv) is nn.Conv2d
    assert converted.tileconv_report.convs_replaced == 1
    assert converted.weight.requires_grad and torch.equal(converted.weight, conv.weight)
    x = torch.rand(2, 3, 9, 9, device=device)
    with torch.no_grad():
        assert_close(converted(x), conv(x), context="bare conv")


def test_training_mode_batchnorm_is_not_folded(device, seed):
    torch.manual_seed(seed)
    model = randomize_batchnorm(TinyResNet()).to(device).train()
    reference = TinyResNet().to(device)
    reference.load_state_dict(model.state_dict())
    converted = tileconv.convert(model)
    report = converted.tileconv_report
    assert (report.convs_replaced, report.bn_folded, report.residual_adds_fused) == (8, 0, 0), summary(report)
    assert len(report.not_fused) == 8 and all("training mode" in why for _, why in report.not_fused)
    assert sum(isinstance(m, nn.BatchNorm2d) for m in converted.modules()) == 8
    x = torch.randn(2, 3, 16, 16, device=device)
    with torch.no_grad():
        assert_close(converted(x), reference.train()(x), context="train mode")


def test_fuse_false_only_replaces(device):
    converted = tileconv.convert(TinyResNet().to(device).eval(), fuse=False)
    report = converted.tileconv_report
    assert (report.convs_replaced, report.bn_folded, report.activations_fused) == (8, 0, 0)
    assert type(converted) is TinyResNet and conv_types(converted) == {tileconv.nn.Conv2d}


def test_inplace_and_dtype():
    model = TinyResNet().eval().to(torch.bfloat16)
    converted = tileconv.convert(model, inplace=True)
    assert {p.dtype for p in converted.parameters()} == {torch.bfloat16}
    with pytest.raises(TypeError, match="nn.Module"):
        tileconv.convert(lambda x: x)


# --------------------------------------------------------------------- saving, compiling
def test_state_dict_and_pickle_round_trip(device, seed):
    model = tiny_resnet(seed, device)
    converted = tileconv.convert(model)
    x = torch.randn(1, 3, 16, 16, device=device)
    with torch.no_grad():
        expected = converted(x)
        other = tileconv.convert(tiny_resnet(seed + 1, device))  # same structure, other weights
        other.load_state_dict(converted.state_dict())
        assert_close(other(x), expected, rtol=0, context="state_dict round trip")
        buffer = io.BytesIO()
        torch.save(converted, buffer)
        buffer.seek(0)
        loaded = torch.load(buffer, weights_only=False)
        assert_close(loaded(x), expected, rtol=0, context="torch.save / torch.load")
        assert loaded.tileconv_report.residual_adds_fused == 2
        unpickled = pickle.loads(pickle.dumps(converted))
        assert_close(unpickled(x), expected, rtol=0, context="pickle")


def test_torch_compile_eager_backend(device, seed):
    model = tiny_resnet(seed, device)
    compiled = torch.compile(tileconv.convert(model), backend="eager")
    x = torch.randn(1, 3, 16, 16, device=device)
    with torch.no_grad():
        assert_close(compiled(x), model(x), context="torch.compile(backend='eager')")


@pytest.mark.parametrize("with_example", [False, True], ids=["runtime-guard", "shape-prop"])
def test_torch_compile_fullgraph_has_no_graph_break(device, seed, with_example):
    """fullgraph=True fails on any graph break: every converted convolution (fused residual,
    runtime-guarded residual) traces as the custom op tileconv::conv2d."""
    torch._dynamo.reset()
    model = tiny_resnet(seed, device)
    x = torch.randn(1, 3, 16, 16, device=device)
    converted = tileconv.convert(model, example_inputs=(x,) if with_example else None)
    seen: list = []

    def backend(graph_module: torch.fx.GraphModule, example_inputs):
        seen.extend(node.target for node in graph_module.graph.nodes if node.op == "call_function")
        return graph_module.forward

    compiled = torch.compile(converted, backend=backend, fullgraph=True)
    with torch.no_grad():
        assert_close(compiled(x), model(x), context=f"torch.compile(fullgraph=True), {with_example=}")
    ops = (torch.ops.tileconv.conv2d, torch.ops.tileconv.conv2d.default)
    assert sum(target in ops for target in seen) == 8, seen


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")
def test_torch_compile_reduce_overhead_captures_the_convolutions_in_cuda_graphs(seed):
    """mode='reduce-overhead': inductor captures the converted model, tileconv's kernels
    included, in a CUDA graph (no cudagraph skip), and its replays match eager."""
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    model = tiny_resnet(seed, "cuda").half().to(memory_format=torch.channels_last)
    x = torch.randn(4, 3, 32, 32, device="cuda", dtype=torch.half).to(memory_format=torch.channels_last)
    converted = tileconv.convert(model, example_inputs=(x,))
    compiled = torch.compile(converted, mode="reduce-overhead", fullgraph=True)
    with torch.no_grad():
        want = converted(x).float()
        for _ in range(3):  # warm-up, record, replay
            out = compiled(x)
        torch.cuda.synchronize()
    assert counters["inductor"]["cudagraph_skips"] == 0, dict(counters["inductor"])
    assert_close(out.float(), want, rtol=1e-2, context="torch.compile(mode='reduce-overhead')")


def test_summary_text():
    report = ConversionReport(traced=True, convs_replaced=3, bn_folded=2, activations_fused=1,
                              residual_adds_fused=1, not_fused=[("layer.bn", "training mode")])
    text = tileconv.convert.summary(report)
    assert text == report.summary()
    assert "3 convolutions replaced, 2 BatchNorms folded, 1 activations fused, 1 residual adds fused" in text
    assert "layer.bn: training mode" in text


# --------------------------------------------------------------------- bench --model
def test_bench_model_option_round_trips():
    parser = argparse.ArgumentParser()
    cli_bench.add_arguments(parser)
    args = parser.parse_args(["--model", "resnet50", "--batch", "8"])
    assert args.model == "resnet50" and args.batch == 8
    assert vars(parser.parse_args(cli_bench.bench_argv(args))) == vars(args)
    assert parser.parse_args([]).model is None


def test_model_rows_json():
    row = ModelRow("resnet50", 32, 224, "float16", "nhwc",
                   times_us={"eager": 10.0, "cuda_graph": 8.0, "compile": 6.0, "tileconv": 8.0, "tileconv_graph": 5.0},
                   max_abs_diff={"eager": 0.01, "tileconv": 0.02}, reference_max_abs=5.0, ok=True)
    data = result_json([row], {"device": "NVIDIA H100", "device_slug": "nvidia-h100"})
    (first,) = data["rows"]
    assert data["suite"] == first["suite"] == "model" and data["geomean_speedup_vs_cudnn"] == pytest.approx(1.25)
    assert first["speedup_vs_eager"] == pytest.approx(1.25) and first["speedup_graph_vs_graph"] == pytest.approx(1.6)
    assert first["speedup_vs_compile"] == pytest.approx(1.2) and first["tileconv_graph_us"] == 5.0
    json.dumps(data)
    other = ModelRow("mobilenet_v2", 32, 224, "float16", "nhwc", times_us={"eager": 10.0, "tileconv": 12.5},
                     max_abs_diff={"tileconv": 0.02}, reference_max_abs=5.0, ok=True)
    both = result_json([row, other], {"device": "NVIDIA H100"})
    assert [r["name"] for r in both["rows"]] == ["resnet50", "mobilenet_v2"]
    assert both["geomean_speedup_vs_cudnn"] == pytest.approx((1.25 * 0.8) ** 0.5)
    assert model_names(" resnet50, mobilenet_v2,resnet50 ,") == ["resnet50", "mobilenet_v2"]
    with pytest.raises(ValueError, match="--model"):
        model_names(" , ")
    assert within_fp_error(0.02, 0.01, 5.0) and not within_fp_error(1.0, 0.01, 5.0)
    assert not within_fp_error(float("nan"), 0.01, 5.0)


@pytest.mark.skipif(HAS_CUDA, reason="the no-GPU path")
def test_bench_model_without_gpu_converts_through_the_fallback(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run(
        [sys.executable, "-m", "tileconv", "bench", "--model", "resnet50", "--json", str(tmp_path) + "/"],
        cwd=tmp_path, env=dict(env, PYTHONPATH=str(REPO_ROOT)), capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("No CUDA GPU: no timings") and "PyTorch fallback" in lines[0]
    assert "time ms" not in done.stdout and " us" not in done.stdout
    assert "ok" in done.stdout
    (path,) = tmp_path.glob("bench-model-*.json")
    data = json.loads(path.read_text())
    (row,) = data["rows"]
    assert data["suite"] == row["suite"] == "model" and row["ok"] is True
    assert all(row[f"{v}_us"] is None for v in ("eager", "cuda_graph", "compile", "tileconv", "tileconv_graph"))
    assert row["conversion"]["convs_replaced"] > 0
