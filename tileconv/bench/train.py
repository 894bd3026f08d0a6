"""``python -m tileconv bench --train NAME``: a real training step, PyTorch beside tileconv.

A torchvision model (``resnet50``, ``resnet18``, any classification model by name; ``tiny``:
the built-in :class:`~tileconv.bench.models.TinyResNet`) is trained from the same random
initialisation (``--seed``) on the same fixed random data: ``DISTINCT_BATCHES`` batches of
``--batch`` images (standard normal, 224 x 224) with random labels, cycled, so that every run
sees the same sequence. The step is eager PyTorch, channels_last, ``torch.autocast`` bfloat16,
cross-entropy, ``torch.optim.SGD`` (momentum 0.9, weight decay 1e-4) at the linearly scaled
learning rate ``0.1 * batch / 256`` (Goyal et al.; 0.0125 at batch 32, stable over 200 steps
of random data, where the net memorises its 8 batches).

Runs, each from a fresh copy of the same initial model (``pytorch``, ``pytorch_rerun`` and
``tileconv`` stepped in turn, so that their step times are taken under the same conditions:
:func:`run_interleaved`; the other two after them):

- ``pytorch``: the model as PyTorch runs it (cuDNN convolutions, ``cudnn.benchmark``);
- ``pytorch_rerun``: the same again, to measure PyTorch's run-to-run spread (cuDNN picks
  algorithms by timing and some reduce with atomics: two runs need not agree bit for bit);
- ``pytorch_fp32``: the same in float32 without autocast or TF32: the spread that bfloat16
  rounding itself makes;
- ``pytorch_nudged``, ``pytorch_nudged_down``, ``pytorch_nudged_2x``: PyTorch again with every
  initial weight scaled by ``1 + NUDGE``, ``1 - NUDGE`` and ``1 + 2 NUDGE`` (a few float32
  ulps, :data:`NUDGES`): the spread of trajectories started a rounding error away. Training
  on random data is chaotic: on an H200, inputs moved by 1e-6 changed ResNet-50's float32 loss
  by 3e-2 within two steps (benchmarks/train_check.py), and cuDNN's deterministic reruns
  (spread 0) say nothing about it. Any other summation order starts such a trajectory. Three
  of them, because one is one draw of a spread that varies from draw to draw: on an H200
  (session 31) a single nudged run's largest tail difference was 0.47 in one process and
  0.29 in the next, with the same code;
- ``tileconv``: ``tileconv.convert(model, fuse=False)``: every ``nn.Conv2d`` swapped for a
  :class:`tileconv.nn.Conv2d` with the same weights, nothing else changed. Not the fusing
  convert: a training-mode BatchNorm normalises with the batch's statistics, so it cannot
  be folded, and ``fuse=False`` keeps the model's own class and modules (BatchNorm, ReLU,
  adds) exactly as they were, so that only the convolutions differ between the runs.

"Within noise", the verdict: over the last ``TAIL_STEPS`` steps (once the trajectories have
had time to diverge), the largest |loss(tileconv) - loss(pytorch)| is at most
``NOISE_FACTOR`` times the largest of PyTorch's spreads, |pytorch - pytorch_rerun|,
|pytorch - pytorch_fp32| and |pytorch - pytorch_nudged|, measured in the same process. The factor allows for a maximum of
chaotic differences fluctuating from run to run; the numbers are printed beside the verdict,
with each run's mean loss over the same steps.

Step time: CUDA events around each step (zero_grad, forward, backward, optimizer step); the
median over the steps after the first ``WARMUP_STEPS`` (Triton JIT, cuDNN's algorithm search,
the allocator's first growth). Losses stay on the GPU until the run ends, so that no step
waits on the host. After the ``pytorch`` and ``tileconv`` runs, ``PROFILE_STEPS`` more steps
run under ``torch.profiler`` (:func:`profile_steps`): wall time and GPU kernel time per step
and the largest kernels, printed and kept in the JSON rows ("profile"), to show where the
step time goes (kernels, or a step waiting on the host).

Without a GPU: one line saying so, then ``tiny`` for a few steps on the CPU (PyTorch's
fallback, or the interpreter under ``TRITON_INTERPRET=1``), losses only, no timings.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import statistics
import time
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

DEFAULT_STEPS = 200
DEFAULT_BATCH = 32
CPU_STEPS = 5  # the no-GPU demo
CPU_BATCH = 8
DISTINCT_BATCHES = 8  # fixed random batches, cycled
WARMUP_STEPS = 10  # excluded from the step-time median
TAIL_STEPS = 50  # the window of the verdict
NOISE_FACTOR = 1.5
MOMENTUM = 0.9
WEIGHT_DECAY = 1e-4
SEED = 0  # the initial weights: torch.manual_seed(SEED); the data: SEED + 1
NUDGE = 2.0**-20  # pytorch_nudged: initial weights scaled by 1 + NUDGE (about 8 float32 ulps)
NUDGES = {"pytorch_nudged": NUDGE, "pytorch_nudged_down": -NUDGE, "pytorch_nudged_2x": 2 * NUDGE}
RUNS = ("pytorch", "pytorch_rerun", "pytorch_fp32", *NUDGES, "tileconv")
PROFILED = ("pytorch", "tileconv")  # runs followed by a few profiled steps (profile_steps)
INTERLEAVED = ("pytorch", "pytorch_rerun", "tileconv")  # the timed runs, stepped in turn (run_interleaved)
PROFILE_STEPS = 5
PROFILE_TOP = 10  # kernels listed per profiled run


def default_lr(global_batch: int) -> float:
    """0.1 per 256 images (the linear scaling rule): 0.0125 at batch 32."""
    return 0.1 * global_batch / 256


# --------------------------------------------------------------------- model and data
def build_model(name: str) -> tuple[nn.Module, int, int]:
    """(model with random weights, image size, number of classes) for ``name``."""
    from .models import IMAGE_SIZES, TinyResNet, build_torchvision_model

    if name == "tiny":
        return TinyResNet(num_classes=10), 16, 10
    model = build_torchvision_model(name)
    return model, IMAGE_SIZES.get(name, 224), 1000


def fixed_batches(count: int, batch: int, image_size: int, classes: int, seed: int,
                  device: torch.device | str = "cpu") -> list[tuple[torch.Tensor, torch.Tensor]]:
    """``count`` (images, labels) batches drawn from a CPU generator seeded with ``seed``:
    the same numbers on every machine and in every process (DDP ranks slice them)."""
    generator = torch.Generator().manual_seed(seed)
    batches = []
    for _ in range(count):
        images = torch.randn(batch, 3, image_size, image_size, generator=generator)
        labels = torch.randint(0, classes, (batch,), generator=generator)
        batches.append((images.to(device).contiguous(memory_format=torch.channels_last), labels.to(device)))
    return batches


def initial_model(name: str, seed: int) -> tuple[nn.Module, int, int]:
    """The model every run starts from: built after ``torch.manual_seed(seed)``, on the CPU."""
    torch.manual_seed(seed)
    return build_model(name)


def prepare(model: nn.Module, kind: str, device: torch.device | str) -> nn.Module:
    """A fresh training copy of ``model`` for run ``kind``, on ``device``, channels_last."""
    import tileconv

    model = copy.deepcopy(model).to(device=device, memory_format=torch.channels_last).train()
    if kind in NUDGES:
        with torch.no_grad():
            for param in model.parameters():
                param.mul_(1 + NUDGES[kind])
    if kind == "tileconv":
        model = tileconv.convert(model, fuse=False, inplace=True)
    return model


# --------------------------------------------------------------------- one run
@dataclass
class RunResult:
    """One training run: the loss of every step, the time of every step (ms, None on a CPU)."""

    name: str
    losses: list[float]
    step_ms: list[float] | None = None
    profile: StepProfile | None = None  # where a step's time goes (pytorch and tileconv runs on a GPU)

    @property
    def median_step_ms(self) -> float | None:
        timed = (self.step_ms or [])[WARMUP_STEPS:]
        return statistics.median(timed) if timed else None


@dataclass
class StepProfile:
    """A few more steps of a trained run under ``torch.profiler``: the host's wall time per
    step (synchronised at the end), the GPU's kernel time per step, and the kernels that
    take most of it. A wall time well above the kernel time means the step waits on the host."""

    steps: int
    wall_ms: float
    kernel_ms: float  # every device activity (kernels, memsets, copies), per step
    launches: float  # device activities per step
    top: list[tuple[str, float, float]] = field(default_factory=list)  # (name, ms per step, launches per step)


def profile_steps(model: nn.Module, batches: Sequence[tuple[torch.Tensor, torch.Tensor]], lr: float,
                  amp_dtype: torch.dtype | None, steps: int = PROFILE_STEPS, top: int = PROFILE_TOP) -> StepProfile:
    """``steps`` SGD steps of ``model`` under ``torch.profiler`` (see :class:`StepProfile`). On
    a CPU only the wall time is measured (no device activity)."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    device = batches[0][0].device
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities) as prof:
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        start = time.perf_counter()
        train(model, batches, steps, lr, amp_dtype, timed=False)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        wall_ms = (time.perf_counter() - start) * 1e3 / steps
    on_device = [event for event in prof.key_averages() if event.device_type == DeviceType.CUDA]
    on_device.sort(key=lambda event: event.self_device_time_total, reverse=True)
    return StepProfile(
        steps, wall_ms,
        kernel_ms=sum(event.self_device_time_total for event in on_device) / 1e3 / steps,
        launches=sum(event.count for event in on_device) / steps,
        top=[(event.key, event.self_device_time_total / 1e3 / steps, event.count / steps) for event in on_device[:top]],
    )


def _profile_or_warn(kind: str, model: nn.Module, batches, lr: float, amp_dtype) -> StepProfile | None:
    """:func:`profile_steps` of run ``kind``, or None with a warning if it fails: a diagnostic
    must not cost the run its timings."""
    try:
        return profile_steps(model, batches, lr, amp_dtype)
    except Exception as error:  # noqa: BLE001
        warnings.warn(f"{kind}: the step profile failed ({type(error).__name__}: {error}); "
                      "the run's timings and losses stand", stacklevel=3)
        return None


class Trainer:
    """One run's model, SGD optimizer and step (zero_grad, forward under autocast, backward,
    optimizer step): what :func:`train` loops over, and what :func:`run_interleaved` steps in
    turn with other runs."""

    def __init__(self, model: nn.Module, batches: Sequence[tuple[torch.Tensor, torch.Tensor]], lr: float,
                 amp_dtype: torch.dtype | None, params: Sequence[nn.Parameter] | None = None) -> None:
        self.model, self.batches, self.amp_dtype = model, batches, amp_dtype
        self.device = batches[0][0].device
        self.optimizer = torch.optim.SGD(params if params is not None else model.parameters(), lr=lr,
                                         momentum=MOMENTUM, weight_decay=WEIGHT_DECAY)

    def step(self, step: int) -> torch.Tensor:
        """Step ``step`` (on batch ``step`` modulo their count); its loss, detached, on the device."""
        images, labels = self.batches[step % len(self.batches)]
        self.optimizer.zero_grad(set_to_none=True)
        with torch.autocast(self.device.type, dtype=self.amp_dtype or torch.bfloat16,
                            enabled=self.amp_dtype is not None):
            loss = F.cross_entropy(self.model(images), labels)
        loss.backward()
        self.optimizer.step()
        return loss.detach().float()


def train(model: nn.Module, batches: Sequence[tuple[torch.Tensor, torch.Tensor]], steps: int, lr: float,
          amp_dtype: torch.dtype | None, timed: bool = True,
          params: Sequence[nn.Parameter] | None = None) -> tuple[torch.Tensor, list[float] | None]:
    """``steps`` SGD steps of ``model`` (possibly DDP-wrapped) over ``batches`` cycled.

    Returns (the per-step losses as one tensor on the model's device, per-step milliseconds
    from CUDA events or None). ``amp_dtype`` None: no autocast."""
    trainer = Trainer(model, batches, lr, amp_dtype, params)
    timed = timed and trainer.device.type == "cuda"
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(steps)] if timed else []
    losses = []
    for step in range(steps):
        if timed:
            events[step][0].record()
        losses.append(trainer.step(step))
        if timed:
            events[step][1].record()
    if timed:
        torch.cuda.synchronize(trainer.device)
    return torch.stack(losses), [start.elapsed_time(end) for start, end in events] if timed else None


def run_interleaved(initial: nn.Module, kinds: Sequence[str], batches, steps: int, lr: float,
                    device) -> dict[str, RunResult]:
    """The bfloat16 runs ``kinds`` stepped in turn (step 1 of each, then step 2 of each, ...),
    each from its own copy of ``initial`` with its own optimizer: the same trajectories as
    one after the other, but timed under the same conditions. An eager ResNet-50 step waits on
    the host (GPU kernels ~11 ms of a 20-45 ms step on the H200 machines), and the host's
    speed drifted by up to 2x within a run (session 20: PyTorch's median step 23.8 ms, its
    rerun's 32.2 ms minutes later); runs measured back to back compared those phases."""
    trainers = {kind: Trainer(prepare(initial, kind, device), batches, lr, torch.bfloat16) for kind in kinds}
    timed = torch.device(device).type == "cuda"
    events = {kind: [] for kind in kinds}
    losses = {kind: [] for kind in kinds}
    for step in range(steps):
        for kind, trainer in trainers.items():
            if timed:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
            losses[kind].append(trainer.step(step))
            if timed:
                end.record()
                events[kind].append((start, end))
    if timed:
        torch.cuda.synchronize(device)
    runs = {}
    for kind, trainer in trainers.items():
        profiled = None
        if kind in PROFILED and timed:
            profiled = _profile_or_warn(kind, trainer.model, batches, lr, torch.bfloat16)
        step_ms = [start.elapsed_time(end) for start, end in events[kind]] if timed else None
        runs[kind] = RunResult(kind, torch.stack(losses[kind]).cpu().tolist(), step_ms, profiled)
    return runs


def run_kind(initial: nn.Module, kind: str, batches, steps: int, lr: float, device) -> RunResult:
    """Run ``kind`` (one of :data:`RUNS`) from a copy of ``initial``; float32 runs without TF32."""
    fp32 = kind == "pytorch_fp32"
    saved = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = not fp32 and saved[0]
    profiled = None
    try:
        model = prepare(initial, kind, device)
        amp = None if fp32 else torch.bfloat16
        losses, step_ms = train(model, batches, steps, lr, amp)
        if kind in PROFILED and torch.device(device).type == "cuda":
            profiled = _profile_or_warn(kind, model, batches, lr, amp)
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved
    return RunResult(kind, losses.cpu().tolist(), step_ms, profiled)


# --------------------------------------------------------------------- the verdict
def abs_diff(a: Sequence[float], b: Sequence[float]) -> list[float]:
    return [abs(x - y) for x, y in zip(a, b, strict=True)]


def max_or_nan(values: Sequence[float]) -> float:
    """max, NaN-propagating (a NaN loss must not hide behind max's comparisons)."""
    if not values or any(math.isnan(v) for v in values):
        return math.nan
    return max(values)


@dataclass
class Verdict:
    """tileconv's loss against PyTorch's, and PyTorch's own spreads, over the run and its tail."""

    max_diff: float  # max |tileconv - pytorch| over every step
    max_diff_tail: float  # the same over the last TAIL_STEPS steps
    noise: dict[str, float] = field(default_factory=dict)  # reference -> max |pytorch - reference| in the tail
    noise_all: dict[str, float] = field(default_factory=dict)  # the same over every step
    tail_means: dict[str, float] = field(default_factory=dict)  # run -> its mean loss over the tail
    tail_steps: int = TAIL_STEPS
    factor: float = NOISE_FACTOR
    ok: bool = False

    @property
    def noise_tail(self) -> float:
        return max(self.noise.values(), default=math.nan)

    def line(self) -> str:
        spreads = ", ".join(f"|pytorch - {name}| {value:.4g}" for name, value in self.noise.items())
        return (f"loss: max |tileconv - pytorch| = {self.max_diff:.4g} over the run, {self.max_diff_tail:.4g} over the "
                f"last {self.tail_steps} steps; PyTorch's own spread there: {spreads}; "
                f"{'PASS' if self.ok else 'FAIL'} (within noise: <= {self.factor:g} x {self.noise_tail:.4g}); mean loss "
                f"over those steps: " + ", ".join(f"{name} {value:.4g}" for name, value in self.tail_means.items()))


def judge(runs: dict[str, RunResult], tail: int = TAIL_STEPS, factor: float = NOISE_FACTOR,
          subject: str = "tileconv", reference: str = "pytorch") -> Verdict:
    """The verdict of :data:`NOISE_FACTOR` on ``runs`` (which must hold ``subject`` and
    ``reference``; the noise references are the other ``pytorch*`` runs present)."""
    ref = runs[reference].losses
    diff = abs_diff(runs[subject].losses, ref)
    tail = min(tail, len(diff))
    noise, noise_all = {}, {}
    for name, run in runs.items():
        if name.startswith("pytorch") and name != reference:
            spread = abs_diff(run.losses, ref)
            noise[name], noise_all[name] = max_or_nan(spread[-tail:]), max_or_nan(spread)
    means = {name: statistics.fmean(run.losses[-tail:]) for name, run in runs.items() if run.losses}
    verdict = Verdict(max_or_nan(diff), max_or_nan(diff[-tail:]), noise, noise_all, means, tail, factor)
    finite = not math.isnan(verdict.max_diff_tail) and not math.isnan(verdict.noise_tail)
    verdict.ok = finite and verdict.max_diff_tail <= factor * verdict.noise_tail
    return verdict


# --------------------------------------------------------------------- outputs
def result_json(model: str, batch: int, steps: int, lr: float, seed: int, runs: dict[str, RunResult],
                verdict: Verdict | None, env: dict, notes: Sequence[str] = ()) -> dict:
    """The JSON of a training run: environment, settings, one row per run, the verdict."""
    data = {key: env.get(key) for key in ("device", "device_slug", "torch", "triton", "cudnn", "cuda", "tileconv",
                                          "python", "date")}
    pytorch = runs.get("pytorch")
    tileconv = runs.get("tileconv")
    speedup = None
    if pytorch and tileconv and pytorch.median_step_ms and tileconv.median_step_ms:
        speedup = pytorch.median_step_ms / tileconv.median_step_ms
    data.update({
        "suite": "train", "model": model, "batch": batch, "steps": steps, "lr": lr, "seed": seed,
        "momentum": MOMENTUM, "weight_decay": WEIGHT_DECAY, "distinct_batches": DISTINCT_BATCHES,
        "dtype": "bfloat16 autocast", "layout": "nhwc", "warmup_steps": WARMUP_STEPS,
        "rows": [{"name": run.name, "median_step_ms": run.median_step_ms, "losses": run.losses,
                  "step_ms": run.step_ms, "profile": None if run.profile is None else asdict(run.profile)}
                 for run in runs.values()],
        "speedup_vs_pytorch": speedup,
        "verdict": None if verdict is None else {**asdict(verdict), "noise_tail": verdict.noise_tail},
        "ok": None if verdict is None else verdict.ok,
        "notes": list(notes),
    })
    return data


def plot_losses(runs: dict[str, RunResult], path, title: str, tail: int = TAIL_STEPS) -> None:
    """Two panels: every run's loss per step; |run - pytorch| per step (tileconv bold)."""
    from .plot import COLORS, _pyplot

    plt = _pyplot()
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 7), sharex=True)
    colors = {"pytorch": COLORS["cudnn"], "tileconv": COLORS["tileconv"], "pytorch_rerun": "#bbbbbb",
              "pytorch_fp32": COLORS["compile"], "pytorch_nudged": "#8c6bb1", "pytorch_nudged_down": "#b39ddb",
              "pytorch_nudged_2x": "#5e3c99"}
    ref = runs["pytorch"].losses
    for name, run in runs.items():
        steps = range(1, len(run.losses) + 1)
        bold = name in ("pytorch", "tileconv")
        top.plot(steps, run.losses, label=name, color=colors.get(name), linewidth=1.6 if bold else 0.9)
        if name != "pytorch":
            bottom.plot(steps, abs_diff(run.losses, ref), label=f"|{name} - pytorch|", color=colors.get(name),
                        linewidth=1.6 if name == "tileconv" else 0.9)
    bottom.axvspan(max(len(ref) - tail, 0) + 0.5, len(ref) + 0.5, color="#eeeeee", zorder=0,
                   label=f"last {tail} steps")
    top.set_ylabel("training loss")
    bottom.set_ylabel("|loss difference|")
    bottom.set_xlabel("step")
    top.set_title(title, fontsize=10)
    top.legend(fontsize=8)
    bottom.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_outputs(data: dict, runs: dict[str, RunResult], args: argparse.Namespace, console) -> None:
    from .report import output_path

    stem = f"bench-train-{data['model']}-b{data['batch']}-s{data['steps']}"
    slug = data.get("device_slug") or "unknown"
    if getattr(args, "json", None):
        path = output_path(args.json, slug, stem, ".json")
        path.write_text(json.dumps(data, indent=2) + "\n")
        console.print(f"wrote {path}", highlight=False)
    if getattr(args, "plot", None) and "pytorch" in runs:
        path = output_path(args.plot, slug, stem, ".png")
        try:
            plot_losses(runs, path, f"{data['model']}, batch {data['batch']}, bf16 autocast, SGD lr {data['lr']:g}: "
                                    f"{data['device']}")
            console.print(f"wrote {path}", highlight=False)
        except ImportError as error:  # matplotlib is an optional extra
            console.print(f"no plot: {error} (pip install -e .[bench])", highlight=False)


def _table(runs: dict[str, RunResult], console, title: str) -> None:
    from rich.table import Table

    table = Table(title=title, header_style="bold")
    for column in ("run", "median step ms", "vs pytorch", "first loss", "last loss"):
        table.add_column(column, justify="left" if column == "run" else "right")
    base = runs["pytorch"].median_step_ms if "pytorch" in runs else None
    for run in runs.values():
        ms = run.median_step_ms
        table.add_row(run.name, "-" if ms is None else f"{ms:.2f}",
                      "-" if ms is None or base is None else f"{base / ms:.2f}x",
                      f"{run.losses[0]:.4f}", f"{run.losses[-1]:.4f}")
    console.print(table)


def _profile_tables(runs: dict[str, RunResult], console) -> None:
    """Where a profiled run's step goes: wall time, kernel time, the largest kernels."""
    from rich.table import Table

    for run in runs.values():
        prof = run.profile
        if prof is None:
            continue
        table = Table(title=f"{run.name}: {prof.steps} profiled steps, per step: wall {prof.wall_ms:.2f} ms, "
                            f"GPU {prof.kernel_ms:.2f} ms in {prof.launches:.0f} launches", header_style="bold")
        for column in ("kernel", "ms / step", "launches / step"):
            table.add_column(column, justify="left" if column == "kernel" else "right")
        for name, ms, count in prof.top:
            table.add_row(name if len(name) <= 90 else name[:87] + "...", f"{ms:.3f}", f"{count:.0f}")
        console.print(table)


# --------------------------------------------------------------------- the command
def run_cpu_demo(args: argparse.Namespace, console) -> int:
    """No GPU: ``tiny`` for a few steps on the CPU, PyTorch beside tileconv, losses only."""
    from .._runtime import INTERPRET
    from .timing import environment

    path = "Triton interpreter" if INTERPRET else "PyTorch fallback"
    seed = getattr(args, "seed", None) or SEED
    steps = min(args.steps or CPU_STEPS, CPU_STEPS)
    batch = min(args.batch or CPU_BATCH, CPU_BATCH)
    console.print(f"No CUDA GPU: no timings; training TinyResNet (instead of {args.train}) for {steps} steps at "
                  f"batch {batch} on the CPU through tileconv's {path} as a demo.", highlight=False, markup=False)
    initial, size, classes = initial_model("tiny", seed)
    batches = fixed_batches(DISTINCT_BATCHES, batch, size, classes, seed + 1)
    lr = args.lr or default_lr(batch)
    runs = {}
    for kind in ("pytorch", "tileconv"):
        model = prepare(initial, kind, "cpu")
        losses, _ = train(model, batches, steps, lr, torch.bfloat16, timed=False)
        runs[kind] = RunResult(kind, losses.tolist())
    diff = abs_diff(runs["tileconv"].losses, runs["pytorch"].losses)
    for step, (a, b) in enumerate(zip(runs["pytorch"].losses, runs["tileconv"].losses, strict=True), 1):
        console.print(f"step {step}: loss pytorch {a:.5f}  tileconv {b:.5f}", highlight=False)
    # Both runs compute in bfloat16 on the CPU; the fallback is PyTorch's own conv, the
    # interpreter tileconv's kernels with fp32 accumulation: a few bf16 ulps of the loss.
    ok = max_or_nan(diff) <= 0.05 * max(abs(runs["pytorch"].losses[0]), 1.0)
    console.print(f"max |loss difference| = {max_or_nan(diff):.3g}: {'ok' if ok else 'MISMATCH'}", highlight=False)
    data = result_json("tiny", batch, steps, lr, seed, runs, None, environment(),
                       notes=[f"no GPU: {path} on the CPU, bfloat16 autocast, losses only (no timings)"])
    data["ok"] = ok
    write_outputs(data, runs, args, console)
    return 0 if ok else 1


def run_train_bench(args: argparse.Namespace) -> int:
    """``bench --train NAME``: on a GPU the runs of :data:`RUNS`; without one, the CPU demo."""
    from .report import make_console
    from .session import gpu_or_demo, start_gpu_session

    console = make_console()
    early = gpu_or_demo(args, console, run_cpu_demo)
    if early is not None:
        return early
    env = start_gpu_session(console)
    steps, batch = args.steps or DEFAULT_STEPS, args.batch or DEFAULT_BATCH
    lr, seed = args.lr or default_lr(batch), getattr(args, "seed", None) or SEED
    try:
        initial, size, classes = initial_model(args.train, seed)
    except (RuntimeError, ValueError) as error:
        console.print(str(error), highlight=False, markup=False)
        return 2
    batches = fixed_batches(DISTINCT_BATCHES, batch, size, classes, seed + 1, "cuda")
    console.print(f"training {args.train}: batch {batch}, {steps} steps, SGD lr {lr:g} momentum {MOMENTUM} "
                  f"wd {WEIGHT_DECAY}, bf16 autocast, channels_last; {DISTINCT_BATCHES} fixed random batches",
                  highlight=False)
    runs: dict[str, RunResult] = run_interleaved(initial, INTERLEAVED, batches, steps, lr, "cuda")
    for kind in RUNS:
        if kind not in runs:
            runs[kind] = run_kind(initial, kind, batches, steps, lr, "cuda")
        ms = runs[kind].median_step_ms
        console.print(f"  {kind}: last loss {runs[kind].losses[-1]:.4f}, median step "
                      f"{'-' if ms is None else f'{ms:.2f} ms'}", highlight=False)
        torch.cuda.empty_cache()
    verdict = judge(runs)
    _table(runs, console, f"bench --train {args.train}: batch {batch}, {steps} steps, bf16 autocast, "
                          f"median step after {WARMUP_STEPS} warm-up steps")
    console.print(verdict.line(), highlight=False)
    _profile_tables(runs, console)
    data = result_json(args.train, batch, steps, lr, seed, runs, verdict, env)
    if data["speedup_vs_pytorch"] is not None:
        console.print(f"step time: tileconv {runs['tileconv'].median_step_ms:.2f} ms, pytorch "
                      f"{runs['pytorch'].median_step_ms:.2f} ms: speedup {data['speedup_vs_pytorch']:.2f}x",
                      highlight=False)
    write_outputs(data, runs, args, console)
    return 0 if verdict.ok else 1

