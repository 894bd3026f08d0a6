"""``python -m tileconv bench --model NAME``: a whole network, eager beside tileconv.convert.

On a GPU, for a torchvision model built by name with random weights (nothing is downloaded),
in ``--dtype`` (float16 by default) and ``--layout`` (channels_last by default) at batch
``--batch`` (default 32), it times, each with :func:`~tileconv.bench.timing.bench_us`
(CUDA-event medians, L2 cleared, interleaved over ``--repeat`` rounds):

- ``eager``: the model as PyTorch runs it (cuDNN convolutions);
- ``cuda_graph``: the same, captured once in a ``torch.cuda.CUDAGraph`` and replayed;
- ``compile``: ``torch.compile(mode="max-autotune")`` (minutes to compile a ResNet-50);
- ``tileconv``: :func:`tileconv.convert` of the model (BN folded, epilogues fused), eager;
- ``tileconv_graph``: the converted model captured in a CUDA graph.

Each output is compared with the float32 eager model on the same input (``max_abs_diff``),
and tileconv's also with eager in the run's dtype. Random weights leave BatchNorm's running
statistics at mean 0 and variance 1, with which activations grow block after block; they are
first set from a few random batches (train-mode forwards without gradients), so that the
network's values stay in range as they would in a trained one.

Without a GPU, it says so in one line and converts the model (or, without torchvision, a tiny
built-in ResNet-like one) on a tiny input through tileconv's CPU path: no timings.
"""

from __future__ import annotations

import argparse
import copy
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import nn

from .options import DTYPES

DEFAULT_BATCH = 32
IMAGE_SIZES = {"inception_v3": 299}  # the rest take 224 x 224
CALIBRATION_BATCHES = 4  # random batches that set BatchNorm's running statistics
VARIANTS = ("eager", "cuda_graph", "compile", "tileconv", "tileconv_graph")


# --------------------------------------------------------------------- the models
class TinyBlock(nn.Module):
    """A bottleneck: 1x1 -> 3x3 (grouped or depthwise) -> 1x1, BN after each, a residual add."""

    def __init__(self, channels: int, width: int, out_channels: int, stride: int = 1, groups: int = 1,
                 act: type[nn.Module] = nn.ReLU, final_act: type[nn.Module] = nn.ReLU) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.act1 = act()
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, groups=groups, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.act2 = act()
        self.conv3 = nn.Conv2d(width, out_channels, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out_channels)
        self.downsample = None
        if stride != 1 or channels != out_channels:
            self.downsample = nn.Sequential(
                nn.Conv2d(channels, out_channels, 1, stride=stride, bias=False), nn.BatchNorm2d(out_channels))
        self.act3 = final_act()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x
        out = self.act1(self.bn1(self.conv1(x)))
        out = self.act2(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.act3(out)


class TinyResNet(nn.Module):
    """A ResNet-like network small enough for Triton's interpreter (input 1x3x16x16).

    Stem conv+BN+ReLU; a bottleneck with ReLU; a strided bottleneck with a 1x1 downsample,
    ReLU6, a depthwise 3x3 with SiLU, and Hardswish after its add; pooling and a linear head.
    Converted: 8 convolutions, 8 BatchNorms folded, 7 activations and 2 residual adds fused.
    """

    def __init__(self, num_classes: int = 10) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(8),
                                  nn.ReLU(inplace=True))
        self.block1 = TinyBlock(8, 4, 8)
        self.block2 = TinyBlock(8, 8, 16, stride=2, groups=8, act=nn.ReLU6, final_act=nn.Hardswish)
        self.block2.act2 = nn.SiLU()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.block2(self.block1(self.stem(x)))
        return self.fc(torch.flatten(self.pool(x), 1))


def randomize_batchnorm(model: nn.Module, generator: torch.Generator | None = None) -> nn.Module:
    """Give every BatchNorm random affine parameters and running statistics (tests: folding
    with identity statistics would check nothing)."""
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.modules.batchnorm._BatchNorm):
                shape = module.running_mean.shape
                module.running_mean.copy_(torch.randn(shape, generator=generator) * 0.5)
                module.running_var.copy_(torch.rand(shape, generator=generator) + 0.5)
                module.weight.copy_(torch.rand(shape, generator=generator) + 0.5)
                module.bias.copy_(torch.randn(shape, generator=generator) * 0.5)
    return model


def build_torchvision_model(name: str) -> nn.Module:
    """torchvision's model ``name`` with random weights (``weights=None``: nothing downloaded)."""
    try:
        import torchvision
    except ImportError as error:  # also a torchvision built for another torch
        raise RuntimeError(f"bench --model needs torchvision (pip install torchvision): {error}") from error
    names = torchvision.models.list_models(module=torchvision.models)
    if name not in names:
        raise ValueError(f"--model {name!r} is not a torchvision classification model; e.g. "
                         f"{', '.join(n for n in names if n.startswith(('resnet', 'mobilenet')))}")
    extra = {"aux_logits": False, "init_weights": False} if name in ("inception_v3", "googlenet") else {}
    return torchvision.models.get_model(name, weights=None, **extra)


@torch.no_grad()
def calibrate_batchnorm(model: nn.Module, make_input: Callable[[], torch.Tensor],
                        batches: int = CALIBRATION_BATCHES) -> None:
    """Running statistics = the average over ``batches`` random batches (train-mode forwards)."""
    bns = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    momenta = [bn.momentum for bn in bns]
    for bn in bns:
        bn.reset_running_stats()
        bn.momentum = None  # a cumulative average
    model.train()
    for _ in range(batches):
        model(make_input())
    for bn, momentum in zip(bns, momenta, strict=True):
        bn.momentum = momentum
    model.eval()


# --------------------------------------------------------------------- measuring
@dataclass
class ModelRow:
    """One model in one run: times in microseconds (None: not measured or failed), errors."""

    name: str
    batch: int
    image_size: int
    dtype: str
    layout: str
    times_us: dict[str, float | None] = field(default_factory=dict)
    max_abs_diff: dict[str, float | None] = field(default_factory=dict)  # vs the float32 eager model
    tileconv_vs_eager: float | None = None  # max |tileconv - eager| in the run's dtype
    reference_max_abs: float | None = None  # the float32 output's largest magnitude, for scale
    conversion: dict = field(default_factory=dict)
    ok: bool = False
    notes: list[str] = field(default_factory=list)
    setup_s: float | None = None  # tileconv.convert + tileconv.tune_model (cached problems are not re-measured)
    tuned: dict = field(default_factory=dict)  # tune_model's result counts by status
    compile_s: float | None = None  # torch.compile(mode="max-autotune") and its first call

    def to_json(self) -> dict:
        eager, tileconv = self.times_us.get("eager"), self.times_us.get("tileconv")
        graph, tileconv_graph = self.times_us.get("cuda_graph"), self.times_us.get("tileconv_graph")
        compiled = self.times_us.get("compile")
        best_tileconv = min((t for t in (tileconv, tileconv_graph) if t is not None), default=None)

        def ratio(peer: float | None, ours: float | None) -> float | None:
            return None if peer is None or ours is None or not self.ok else peer / ours

        data = {"suite": "model", "name": self.name, "n": self.batch, "c": 3, "h": self.image_size,
                "w": self.image_size, "dtype": self.dtype, "layout": self.layout, "epilogue": "model",
                "algo": "auto", "ok": self.ok}
        data.update({f"{variant}_us": self.times_us.get(variant) for variant in VARIANTS})
        data.update({
            "tileconv_us": tileconv, "cudnn_us": eager,  # eager PyTorch runs its convolutions on cuDNN
            "compile_us": compiled,
            "speedup_vs_eager": ratio(eager, tileconv), "speedup_vs_cudnn": ratio(eager, tileconv),
            "speedup_graph_vs_graph": ratio(graph, tileconv_graph),
            "speedup_vs_compile": ratio(compiled, best_tileconv),
            "max_abs_diff": dict(self.max_abs_diff), "tileconv_vs_eager_max_abs_diff": self.tileconv_vs_eager,
            "reference_max_abs": self.reference_max_abs, "conversion": dict(self.conversion),
            "setup_s": self.setup_s, "tuned": dict(self.tuned), "compile_s": self.compile_s,
            "notes": list(self.notes),
        })
        return data


def max_abs_diff(out: torch.Tensor, ref: torch.Tensor) -> float:
    return (out.double() - ref.double()).abs().max().item()


def conversion_counts(report) -> dict:
    return {"traced": report.traced, "convs_replaced": report.convs_replaced, "bn_folded": report.bn_folded,
            "activations_fused": report.activations_fused, "residual_adds_fused": report.residual_adds_fused,
            "not_fused": [f"{where}: {why}" for where, why in report.not_fused]}


def within_fp_error(diff: float | None, eager_diff: float | None, scale: float) -> bool:
    """tileconv's error against float32 is of the order of eager's own in the run's dtype."""
    if diff is None or diff != diff:
        return False
    return diff <= 4 * (eager_diff or 0.0) + 1e-3 * max(scale, 1.0)


def cuda_graph_call(fn: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor) -> tuple[Callable[[], object], torch.Tensor]:
    """(replay, static output) of ``fn(x)`` captured in a CUDA graph, after warm-up on a side
    stream (JIT compilation and tuning happen there, outside the capture)."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn(x)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fn(x)
    graph.replay()
    torch.cuda.synchronize()
    return graph.replay, out


def measure_model(name: str, batch: int, dtype_name: str, layout: str, repeat: int, console,
                  timer: Callable[[Callable[[], object]], float] | None = None,
                  build: Callable[[str], nn.Module] = build_torchvision_model,
                  device: str = "cuda") -> ModelRow:
    """Every variant of :data:`VARIANTS` on ``device``; a variant that fails gets a note, not a time."""
    import tileconv

    from .timing import bench_us

    timer = timer or bench_us
    dtype = DTYPES[dtype_name][0]
    size = IMAGE_SIZES.get(name, 224)
    row = ModelRow(name, batch, size, dtype_name, layout)
    fmt = torch.channels_last if layout == "nhwc" else torch.contiguous_format

    def make_input(of: torch.dtype = torch.float32) -> torch.Tensor:
        return torch.randn(batch, 3, size, size, device=device).to(dtype=of, memory_format=fmt)

    reference_model = build(name).to(device=device, memory_format=fmt)
    calibrate_batchnorm(reference_model, make_input)
    model = copy.deepcopy(reference_model).to(dtype=dtype)
    x32 = make_input()
    x = x32.to(dtype)
    with torch.no_grad():
        reference = reference_model(x32).float()
        row.reference_max_abs = reference.abs().max().item()
        del reference_model
        start = time.perf_counter()
        converted = tileconv.convert(model, example_inputs=(x,))
        if device == "cuda":  # tune what the converted model runs (problems in the cache are skipped)
            results = tileconv.tune_model(converted, (x,), progress=False)
            row.tuned = {status: sum(r.status == status for r in results) for status in ("tuned", "cached", "failed")}
        row.setup_s = time.perf_counter() - start
        row.conversion = conversion_counts(converted.tileconv_report)
        console.print(tileconv.convert.summary(converted.tileconv_report), highlight=False)
        calls: dict[str, Callable[[], object]] = {}
        outputs: dict[str, torch.Tensor] = {}
        builders = {
            "eager": lambda: (lambda: model(x), None),
            "cuda_graph": lambda: cuda_graph_call(model, x),
            "compile": lambda: _compiled(model, x, row),
            "tileconv": lambda: (lambda: converted(x), None),
            "tileconv_graph": lambda: cuda_graph_call(converted, x),
        }
        for variant, make in builders.items():
            try:
                call, out = make()
                outputs[variant] = (call() if out is None else out).float().clone()
                calls[variant] = call
            except Exception as error:  # noqa: BLE001 - a failing variant is a note in the row
                row.notes.append(f"{variant} failed: {type(error).__name__}: {str(error).splitlines()[0][:200]}")
        for variant, out in outputs.items():
            row.max_abs_diff[variant] = max_abs_diff(out, reference)
        if "tileconv" in outputs and "eager" in outputs:
            row.tileconv_vs_eager = max_abs_diff(outputs["tileconv"], outputs["eager"])
        rounds: dict[str, list[float]] = {variant: [] for variant in calls}
        for _ in range(max(repeat, 1)):  # round robin: drift hits every variant alike
            for variant, call in calls.items():
                rounds[variant].append(timer(call))
        row.times_us = {variant: statistics.median(rounds[variant]) if variant in rounds else None
                        for variant in VARIANTS}
    eager_diff = row.max_abs_diff.get("eager")
    row.ok = all(within_fp_error(row.max_abs_diff.get(v), eager_diff, row.reference_max_abs)
                 for v in ("tileconv", "tileconv_graph") if v in row.max_abs_diff) and "tileconv" in outputs
    return row


def _compiled(model: nn.Module, x: torch.Tensor, row: ModelRow) -> tuple[Callable[[], object], None]:
    start = time.perf_counter()
    compiled = torch.compile(model, mode="max-autotune")
    compiled(x)
    torch.cuda.synchronize()
    row.compile_s = time.perf_counter() - start
    return (lambda: compiled(x)), None


# --------------------------------------------------------------------- the command
def _table(row: ModelRow, console) -> None:
    from rich.table import Table

    table = Table(title=f"bench --model {row.name}: batch {row.batch}, {row.image_size}x{row.image_size}, "
                        f"{row.dtype}, {row.layout}", header_style="bold")
    for column in ("variant", "time ms", "vs eager", "max |out - fp32 eager|"):
        table.add_column(column, justify="left" if column == "variant" else "right")
    eager = row.times_us.get("eager")
    for variant in VARIANTS:
        us = row.times_us.get(variant)
        diff = row.max_abs_diff.get(variant)
        table.add_row(variant, "-" if us is None else f"{us / 1000:.3f}",
                      "-" if us is None or eager is None else f"{eager / us:.2f}x",
                      "-" if diff is None else f"{diff:.3g}")
    console.print(table)
    if row.tileconv_vs_eager is not None:
        console.print(f"max |tileconv - eager {row.dtype}| = {row.tileconv_vs_eager:.3g} "
                      f"(fp32 output max |y| = {row.reference_max_abs:.3g})", highlight=False)
    if row.setup_s is not None:
        tuned = ", ".join(f"{count} {status}" for status, count in row.tuned.items() if count) or "not tuned"
        compiled = "-" if row.compile_s is None else f"{row.compile_s:.1f} s"
        console.print(f"set-up: tileconv convert + tune {row.setup_s:.1f} s ({tuned} problems); "
                      f"torch.compile max-autotune {compiled}", highlight=False)
    for note in row.notes:
        console.print(f"note: {note}", highlight=False, markup=False)


def result_json(rows: list[ModelRow], env: dict) -> dict:
    """The JSON of a model run: the same top keys as the other suites, rows of suite 'model'."""
    data = {key: env.get(key) for key in ("device", "torch", "triton", "cudnn", "tileconv", "date")}
    first = rows[0] if rows else None
    speedups = [r.to_json()["speedup_vs_eager"] for r in rows]
    data.update({
        "suite": "model", "dtype": first.dtype if first else None, "layout": first.layout if first else None,
        "epilogue": "model", "ceilings": {"gemm_tflops": None, "copy_tbps": None},
        "rows": [r.to_json() for r in rows],
        "geomean_speedup_vs_cudnn": (math.exp(sum(map(math.log, speedups)) / len(speedups))
                                     if speedups and None not in speedups else None),
        "device_slug": env.get("device_slug"), "cuda": env.get("cuda"), "python": env.get("python"),
        "batch": first.batch if first else None,
    })
    return data


def write_model_json(rows: list[ModelRow], args: argparse.Namespace, env: dict, console) -> None:
    import json

    from .report import output_path

    if not args.json:
        return
    first = rows[0]
    names = "-".join(row.name for row in rows)
    stem = f"bench-model-{names}-{first.dtype}-{first.layout}-b{first.batch}"
    path = output_path(args.json, env.get("device_slug", "unknown"), stem, ".json")
    path.write_text(json.dumps(result_json(rows, env), indent=2) + "\n")
    console.print(f"wrote {path}")


def run_cpu_demo(args: argparse.Namespace, console) -> int:
    """No GPU: convert the model (or TinyResNet without torchvision) on a tiny input on the CPU."""
    import tileconv

    from .._runtime import INTERPRET
    from .timing import environment

    path = "Triton interpreter" if INTERPRET else "PyTorch fallback"
    name = model_names(args.model)[0]  # the demo converts the first model named
    try:
        model, label, size = build_torchvision_model(name), name, 64
    except RuntimeError:
        model, label, size = TinyResNet(), "TinyResNet (torchvision is not installed)", 16
    console.print(f"No CUDA GPU: no timings; converting {label} on a 1x3x{size}x{size} input through tileconv's "
                  f"CPU path ({path}) as a demo.", highlight=False, markup=False)
    model = randomize_batchnorm(model).eval()
    x = torch.randn(1, 3, size, size)
    with torch.no_grad():
        reference = model(x)
        converted = tileconv.convert(model, example_inputs=(x,))
        out = converted(x)
    diff = max_abs_diff(out, reference)
    scale = reference.abs().max().item()
    console.print(tileconv.convert.summary(converted.tileconv_report), highlight=False, markup=False)
    ok = diff <= 1e-4 * max(scale, 1.0)
    console.print(f"max |converted - original| = {diff:.3g} (output max |y| = {scale:.3g}): "
                  f"{'ok' if ok else 'MISMATCH'}", highlight=False)
    row = ModelRow(label.split(" ")[0], 1, size, "float32", "nchw", times_us=dict.fromkeys(VARIANTS),
                   max_abs_diff={"tileconv": diff}, reference_max_abs=scale,
                   conversion=conversion_counts(converted.tileconv_report), ok=ok,
                   notes=[f"no GPU: {path} on the CPU, float32, correctness only (no timings)"])
    write_model_json([row], args, environment(), console)
    return 0 if ok else 1


def run_model_bench(args: argparse.Namespace) -> int:
    """``bench --model NAME``: on a GPU the five variants timed; without one, the CPU demo."""
    from .report import make_console
    from .session import gpu_or_demo, start_gpu_session

    console = make_console()
    early = gpu_or_demo(args, console, run_cpu_demo)
    if early is not None:
        return early
    env = start_gpu_session(console, args.dtype)
    rows = []
    for name in model_names(args.model):
        try:
            row = measure_model(name, args.batch or DEFAULT_BATCH, args.dtype, args.layout, args.repeat, console)
        except (RuntimeError, ValueError) as error:
            if "torchvision" not in str(error) and "--model" not in str(error):
                raise
            console.print(str(error), highlight=False, markup=False)
            return 2
        _table(row, console)
        rows.append(row)
        write_model_json(rows, args, env, console)  # after each model: a cut run keeps what it measured
    return 0 if all(row.ok for row in rows) else 1


def model_names(text: str) -> list[str]:
    """``--model resnet50,mobilenet_v2``: the models of one run, in order, once each."""
    names = list(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    if not names:
        raise ValueError(f"--model {text!r}: expected a torchvision model name or a comma list of them")
    return names
