"""``tileconv.tune`` and ``python -m tileconv tune``: measure candidates, cache the winners.

For each problem (skipped if the cache already has it, unless ``force``):

1. random inputs on the device, and the float64 reference of the whole op computed on the
   same device (cuDNN in double: milliseconds, where the CPU would take seconds);
2. the candidates of :mod:`.candidates` (the heuristics' choice first) each run once into
   a NaN-filled output: this compiles them (in a thread pool on a GPU: Triton releases
   the GIL while its MLIR passes and ptxas run, which is what its own
   ``AsyncCompileMode`` relies on) and checks each output against the reference with
   :func:`tileconv.testing.tolerance`. A candidate that raises (out of shared memory or
   registers, a compile error) or computes a wrong result is dropped, never timed;
3. the correct candidates are timed in order, each captured in a CUDA graph and replayed
   under ``triton.testing.do_bench`` (median, L2 flushed before each run; the kernels'
   time without the host's, see :func:`cuda_timer`), until the problem's time limit is spent;
   the few within 5% of the fastest are timed twice more, taking turns, and compared by
   their medians (:func:`_confirm`);
4. the fastest is written to the cache at once (so an interrupted run keeps what it
   measured), together with the heuristics' time for the record.

Measured on an H200 (2026-11-22, torch 2.11, Triton 3.6, empty Triton cache): the 23
ResNet-50 problems (fp16 NHWC, batch 32) tune in 18 s with 8 compile threads and 25 s
with one; a second run finds all 23 cached in 0.1 s. Winners were 1.20x faster than the
heuristics' configs (geometric mean).

Tests run all of this on the CPU through ``TRITON_INTERPRET=1`` with a wall-clock
``timer``; the command line refuses without a CUDA GPU (exit code 2), because interpreter
timings say nothing about a GPU.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import math
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F

from .._runtime import INTERPRET
from ..kernels import ALGORITHMS, LaunchConfig
from ..problem import ConvProblem
from ..testing import ConvInputs, random_inputs, tolerance
from . import cache, clear_selection_cache
from .candidates import DEFAULT_MAX_CANDIDATES, DeviceLimits, candidates

# A timer runs ``fn`` as often as it likes and returns its time in milliseconds.
Timer = Callable[[Callable[[], Any]], float]

# do_bench windows. 25 ms of repetitions gives a median stable to ~1-2% for the
# 20 us - 2 ms kernels of the suites, and keeps 23 problems x 10 candidates near 10 s.
BENCH_WARMUP_MS = 5
BENCH_REP_MS = 25
DEFAULT_MAX_SECONDS = 15.0
# Candidates timed even when the time limit has passed (compiles can take most of it on a
# cold Triton cache): the heuristics' choice and the best-ranked alternative.
MIN_TIMED = 2
# Candidates within this fraction of the fastest are timed again, CONFIRM_ROUNDS more times
# each and taking turns, and the winner is the best median: one reading per candidate let
# noise decide between near-equal configs (on an H200, re-tuning moved a ResNet-50 dgrad row
# 0.97x -> 0.57x cuDNN between two runs, and a TF32 row 50.6 -> 59.6 us).
CONFIRM_MARGIN = 0.05
CONFIRM_ROUNDS = 2
CONFIRM_MAX = 3

HELP = "measure candidate kernels on a suite's problems and keep the fastest in the tuning cache"


class TuningUnavailable(RuntimeError):
    """Tuning cannot run here (no CUDA GPU, and not in Triton's interpreter)."""


def cuda_timer(fn: Callable[[], Any]) -> float:
    """Median GPU time of ``fn``'s launches in ms: ``fn`` captured once in a CUDA graph, the
    graph replayed under CUDA events with L2 flushed before each run.

    Launched directly, a candidate goes through the launchers' full host path (some 60 to
    100 us a call on an H200's host, more for the TMA kernel's descriptors), and once that
    exceeds the kernel's time the events time the host: configs were ranked by noise, and
    winners ran slower than the heuristics' choice in a later benchmark. A user's repeated
    call replays its launches (:mod:`tileconv.call_plans`) for some 15 us of host, below
    the kernel times being compared, so the kernels' own time is what ranks them."""
    import triton.testing

    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        fn()  # compiled and loaded outside the capture
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return float(triton.testing.do_bench(graph.replay, warmup=BENCH_WARMUP_MS, rep=BENCH_REP_MS,
                                         return_mode="median"))


def wall_clock_timer(fn: Callable[[], Any], repeats: int = 3) -> float:
    """Median wall-clock time of ``fn`` in ms (for CPU runs, where CUDA events do not exist)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


@dataclass
class Rejected:
    """A candidate that was not timed, and why."""

    algorithm: str
    config: LaunchConfig
    reason: str


@dataclass
class TuneResult:
    """What tuning did for one problem."""

    problem: ConvProblem
    key: str  # the cache key
    status: str  # "tuned", "cached" (already in the cache, not measured) or "failed"
    algorithm: str | None = None  # the winner (for "cached": the cached one)
    config: LaunchConfig | None = None
    time_ms: float | None = None
    default_ms: float | None = None  # the heuristics' choice, same run
    timings: list[tuple[str, LaunchConfig, float]] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    skipped: int = 0  # correct candidates left untimed by the time limit
    seconds: float = 0.0
    message: str = ""

    @property
    def speedup(self) -> float | None:
        """Heuristics' time / winner's time."""
        if self.time_ms and self.default_ms:
            return self.default_ms / self.time_ms
        return None


# --------------------------------------------------------------------- helpers
def _resolve_device(device: torch.device | str | int | None) -> torch.device:
    if device is None:
        if INTERPRET:
            return torch.device("cpu")
        if not torch.cuda.is_available():
            raise TuningUnavailable(
                "tuning measures kernels on a CUDA GPU and torch.cuda.is_available() is False "
                "(Triton's interpreter, TRITON_INTERPRET=1, runs them on the CPU for tests)"
            )
        return torch.device("cuda", torch.cuda.current_device())
    device = torch.device(device) if not isinstance(device, int) else torch.device("cuda", device)
    if device.type == "cuda":
        if INTERPRET:
            raise TuningUnavailable("TRITON_INTERPRET=1 runs kernels on CPU tensors; tune on device='cpu'")
        if device.index is None:
            device = torch.device("cuda", torch.cuda.current_device())
        return device
    if device.type == "cpu" and INTERPRET:
        return device
    raise TuningUnavailable(f"tileconv's kernels do not run on {device} (CUDA, or the CPU with TRITON_INTERPRET=1)")


def _device_context(device: torch.device) -> contextlib.AbstractContextManager:
    """Make ``device`` current in this thread (worker threads start on GPU 0)."""
    return torch.cuda.device(device) if device.type == "cuda" else contextlib.nullcontext()


def _reference(problem: ConvProblem, inputs: ConvInputs) -> torch.Tensor:
    """The whole op in float64 on the inputs' device (contiguous NCHW)."""
    x = inputs.x.to(torch.float64).contiguous()
    top, left = problem.padding
    bottom, right = problem.padding_end
    padding: tuple[int, int] = (top, left)
    if (top, left) != (bottom, right):  # 'same' with an even kernel: conv2d pads symmetrically only
        x = F.pad(x, (left, right, top, bottom))
        padding = (0, 0)
    conv = F.conv2d(x, inputs.weight.to(torch.float64), None, problem.stride, padding, problem.dilation, problem.groups)
    bias = inputs.bias.to(torch.float64) if inputs.bias is not None else None
    residual = inputs.residual.to(torch.float64) if inputs.residual is not None else None
    return problem.epilogue.torch_apply(conv, bias, residual)


def _wrong_result(out: torch.Tensor, reference: torch.Tensor, tol: float) -> str | None:
    """None if ``out`` matches the reference (relative Frobenius error within ``tol``, no
    NaN/Inf: outputs start as NaN, so an element left unwritten fails); else why not."""
    got = out.to(torch.float64)
    bad = int((~torch.isfinite(got)).sum())
    if bad:
        return f"wrong result: {bad} NaN/Inf (or unwritten) elements"
    ref_norm = float(reference.norm())
    rel = float((got - reference).norm()) / (ref_norm if ref_norm > 0 else 1.0)
    if not rel <= tol:
        return f"wrong result: relative error {rel:.2e} > tolerance {tol:.1e}"
    return None


def _empty_output(problem: ConvProblem, device: torch.device) -> torch.Tensor:
    fmt = torch.channels_last if problem.layout == "nhwc" else torch.contiguous_format
    out = torch.empty(problem.output_shape, dtype=problem.dtype, device=device, memory_format=fmt)
    return out.fill_(float("nan"))


def _describe_error(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return f"{type(err).__name__}: {text[:200]}"


# --------------------------------------------------------------------- one problem
@dataclass
class _Candidate:
    algorithm: str
    config: LaunchConfig
    output: torch.Tensor | None = None
    error: str | None = None


def _first_runs(
    problem: ConvProblem,
    inputs: ConvInputs,
    device: torch.device,
    cands: list[_Candidate],
    workers: int,
) -> None:
    """Run every candidate once into its own NaN-filled output (compiling it), recording
    exceptions. The first runs alone so that Triton's per-device state exists before
    threads touch it; the rest run in ``workers`` threads."""

    def run_one(cand: _Candidate) -> None:
        try:
            with _device_context(device):
                out = _empty_output(problem, device)
                ALGORITHMS[cand.algorithm].launch(
                    problem, inputs.x, inputs.weight, inputs.bias, inputs.residual, out, cand.config
                )
            cand.output = out
        except Exception as err:  # noqa: BLE001 - any failure disqualifies the candidate
            cand.error = _describe_error(err)

    if not cands:
        return
    run_one(cands[0])
    if workers <= 1 or len(cands) == 2:
        for cand in cands[1:]:
            run_one(cand)
    else:
        with concurrent.futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tileconv-compile") as pool:
            list(pool.map(run_one, cands[1:]))
    if device.type == "cuda":
        try:
            torch.cuda.synchronize(device)
        except RuntimeError as err:
            # A kernel that faulted leaves the CUDA context unusable: nothing later can run.
            listed = "; ".join(f"{c.algorithm} {c.config}" for c in cands)
            raise RuntimeError(
                f"a candidate for {problem.describe()} crashed the GPU ({err}); the process cannot "
                f"use the GPU any more. Candidates that were running: {listed}"
            ) from err


def _tune_one(
    problem: ConvProblem,
    device: torch.device,
    limits: DeviceLimits,
    *,
    timer: Timer,
    max_seconds: float,
    max_candidates: int,
    workers: int,
    seed: int,
    status: Callable[[str], None],
) -> TuneResult:
    start = time.perf_counter()
    key = cache.entry_key(problem, cache.device_name(device))
    result = TuneResult(problem, key, "failed")
    inputs = random_inputs(problem, device, seed, draw_on_device=True)
    reference = _reference(problem, inputs)
    tol = tolerance(problem)
    cands = [_Candidate(name, config) for name, config in candidates(problem, limits, max_candidates)]

    status(f"compiling {len(cands)} candidates")
    _first_runs(problem, inputs, device, cands, workers)
    correct: list[_Candidate] = []
    for cand in cands:
        if cand.error is None and cand.output is not None:
            cand.error = _wrong_result(cand.output, reference, tol)
        cand.output = None  # free it: only one output buffer is needed for timing
        if cand.error is None:
            correct.append(cand)
        else:
            result.rejected.append(Rejected(cand.algorithm, cand.config, cand.error))
    del reference

    out = _empty_output(problem, device)
    launches: list[Callable[[], None]] = []  # launches[i] ran result.timings[i]
    for index, cand in enumerate(correct):
        if index >= MIN_TIMED and time.perf_counter() - start > max_seconds:
            result.skipped = len(correct) - index
            break
        status(f"timing {index + 1}/{len(correct)}: {cand.algorithm} {cand.config}")
        algorithm = ALGORITHMS[cand.algorithm]

        def launch(algorithm=algorithm, config=cand.config) -> None:
            algorithm.launch(problem, inputs.x, inputs.weight, inputs.bias, inputs.residual, out, config)

        try:
            with _device_context(device):
                ms = timer(launch)
        except Exception as err:  # noqa: BLE001
            result.rejected.append(Rejected(cand.algorithm, cand.config, _describe_error(err)))
            continue
        if not math.isfinite(ms) or ms <= 0:
            result.rejected.append(Rejected(cand.algorithm, cand.config, f"timer returned {ms!r}"))
            continue
        launches.append(launch)
        result.timings.append((cand.algorithm, cand.config, ms))
        if cand is cands[0]:
            result.default_ms = ms

    if not result.timings:
        result.seconds = time.perf_counter() - start
        reasons = "; ".join(f"{r.algorithm} {r.config}: {r.reason}" for r in result.rejected[:3])
        result.message = f"no candidate ran correctly ({reasons})"
        return result
    status("confirming the closest")
    with _device_context(device):
        name, config, ms = _confirm(result.timings, launches, timer)
    result.seconds = time.perf_counter() - start
    result.status, result.algorithm, result.config, result.time_ms = "tuned", name, config, ms
    return result


def _confirm(timings: list[tuple[str, LaunchConfig, float]], launches: list[Callable[[], None]],
             timer: Timer) -> tuple[str, LaunchConfig, float]:
    """The winner among ``timings`` (one reading each, taken by running ``launches``, in
    the same order): the candidates within
    CONFIRM_MARGIN of the fastest (at most CONFIRM_MAX) are timed CONFIRM_ROUNDS more times,
    taking turns so that drift hits them alike; their entries in ``timings`` become their
    medians, and the fastest entry wins."""
    order = sorted(range(len(timings)), key=lambda i: timings[i][2])
    fastest = timings[order[0]][2]
    close = [i for i in order[:CONFIRM_MAX] if timings[i][2] <= fastest * (1 + CONFIRM_MARGIN)]
    readings = {i: [timings[i][2]] for i in close}
    if len(close) > 1:
        for _ in range(CONFIRM_ROUNDS):
            for i in close:
                try:
                    ms = timer(launches[i])
                except Exception:  # noqa: BLE001 - it ran once already: keep its first reading
                    continue
                if math.isfinite(ms) and ms > 0:
                    readings[i].append(ms)
    # The re-timed candidates' entries become their medians (the record then shows what
    # decided), and the fastest entry wins.
    for i in close:
        name, config, _ = timings[i]
        timings[i] = (name, config, statistics.median(readings[i]))
    return min(timings, key=lambda row: row[2])


def _best_per_algorithm(result: TuneResult) -> dict[str, tuple[LaunchConfig, float]]:
    best: dict[str, tuple[LaunchConfig, float]] = {}
    for name, config, ms in result.timings:
        if name not in best or ms < best[name][1]:
            best[name] = (config, ms)
    return best


# --------------------------------------------------------------------- progress display
class _Progress:
    """A rich progress bar when rich is installed and wanted; plain lines otherwise."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.enabled = enabled
        self.total = total
        self._rich: Any = None
        self._stack = contextlib.ExitStack()
        self._prefix = ""
        if not enabled:
            return
        try:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                SpinnerColumn,
                TextColumn,
                TimeElapsedColumn,
            )
        except ImportError:
            return
        self._rich = Progress(
            SpinnerColumn(), BarColumn(bar_width=24), MofNCompleteColumn(), TimeElapsedColumn(),
            TextColumn("{task.description}"),
        )
        self._task = self._rich.add_task("", total=total)

    def __enter__(self) -> _Progress:
        if self._rich is not None:
            self._stack.enter_context(self._rich)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def start(self, problem: ConvProblem) -> None:
        self._prefix = f"{problem.describe()} {problem.dtype_name} {problem.layout}"
        self.status("")

    def status(self, text: str) -> None:
        if self._rich is not None:
            self._rich.update(self._task, description=f"{self._prefix}: {text}" if text else self._prefix)

    def done(self, result: TuneResult) -> None:
        if not self.enabled:
            return
        line = _result_line(result)
        if self._rich is not None:
            self._rich.console.print(line, highlight=False, markup=False)
            self._rich.advance(self._task)
        else:
            print(line, flush=True)


def _result_line(result: TuneResult) -> str:
    what = f"{result.problem.describe()} {result.problem.dtype_name} {result.problem.layout}"
    if result.status == "failed":
        return f"FAILED {what}: {result.message}"
    if result.status == "cached":
        return f"cached {what}: {result.algorithm} {result.config}"
    speedup = f", {result.speedup:.2f}x the heuristics" if result.speedup else ""
    return (
        f"tuned  {what}: {result.algorithm} {result.config} {result.time_ms * 1e3:.1f} us{speedup} "
        f"({len(result.timings)} timed, {len(result.rejected)} rejected, {result.seconds:.1f} s)"
    )


# --------------------------------------------------------------------- the public call
def tune(
    problems: Sequence[ConvProblem],
    *,
    device: torch.device | str | int | None = None,
    force: bool = False,
    max_seconds: float = DEFAULT_MAX_SECONDS,
    max_candidates: int = DEFAULT_MAX_CANDIDATES,
    timer: Timer | None = None,
    compile_workers: int | None = None,
    progress: bool = True,
    seed: int = 0,
    store: bool = True,
) -> list[TuneResult]:
    """Measure candidate kernels for each problem and keep the fastest correct one in the
    tuning cache (:mod:`tileconv.dispatch.cache`), where later ``tileconv.conv2d`` calls
    on the same GPU model and Triton version find it.

    Args:
        problems: the problems; duplicates (same cache key) are tuned once.
        device: the CUDA device to tune on (default: the current one). ``'cpu'`` is
            accepted with ``TRITON_INTERPRET=1`` (tests); winners are then keyed ``cpu``.
        force: measure problems that the cache already holds (default: skip them).
        max_seconds: time limit per problem, compiles included; once spent, untimed
            candidates are skipped (the first ``MIN_TIMED`` are always timed).
        max_candidates: at most this many (algorithm, config) pairs per problem.
        timer: ``timer(fn) -> milliseconds``; default ``do_bench`` (median) on a GPU, a
            wall-clock median on the CPU.
        compile_workers: threads that compile candidates (default: min(8, CPUs); 1 runs
            them one after the other; always 1 on the CPU).
        progress: show a progress bar (rich) and one line per problem.
        seed: seed of the random inputs.
        store: write winners to the cache (False: measure only).

    Returns one :class:`TuneResult` per distinct problem, in order.

    Raises :class:`TuningUnavailable` where kernels cannot run (no CUDA GPU and no
    interpreter).
    """
    device = _resolve_device(device)
    timer = timer or (cuda_timer if device.type == "cuda" else wall_clock_timer)
    if device.type != "cuda":
        workers = 1  # the interpreter is Python: threads would only contend for the GIL
    else:
        workers = compile_workers if compile_workers is not None else min(8, os.cpu_count() or 1)
    limits = DeviceLimits.of(device)
    name = cache.device_name(device)

    unique: dict[str, ConvProblem] = {}
    for problem in problems:
        unique.setdefault(cache.entry_key(problem, name), problem)
    cache.reload()  # see winners other processes wrote since this one last looked
    results: list[TuneResult] = []
    with _Progress(len(unique), progress) as bar, _device_context(device):
        for key, problem in unique.items():
            bar.start(problem)
            tuned = None if force else cache.lookup(problem, device, sibling=False)
            if tuned is not None:
                result = TuneResult(problem, key, "cached", tuned.algorithm, tuned.config, tuned.time_ms)
            elif problem.n == 0:
                result = TuneResult(problem, key, "failed", message="an empty batch has nothing to measure")
            else:
                result = _tune_one(
                    problem, device, limits, timer=timer, max_seconds=max_seconds,
                    max_candidates=max_candidates, workers=workers, seed=seed, status=bar.status,
                )
                if result.status == "tuned" and store:
                    assert result.algorithm is not None and result.config is not None
                    entry = cache.make_entry(
                        result.algorithm, result.config, time_ms=result.time_ms,
                        default_ms=result.default_ms, best_per_algorithm=_best_per_algorithm(result),
                        problem=problem,
                    )
                    cache.store({key: entry})
            results.append(result)
            bar.done(result)
    clear_selection_cache()  # this process's select() must see the new winners
    return results


def tune_model(model: torch.nn.Module, example_inputs, **options) -> list[TuneResult]:
    """Tune every convolution ``model`` runs on tileconv (a :func:`tileconv.convert`-ed
    model, or one built from :class:`tileconv.nn.Conv2d`): the model runs once on
    ``example_inputs`` (a tensor or a tuple of tensors, without gradients) while dispatch
    lists its problems (:func:`tileconv.dispatch.collect_problems`), then :func:`tune`
    measures them with ``options`` (``force``, ``max_seconds``, ...). Problems already in
    the tuning cache are not measured again. Returns :func:`tune`'s results; raises
    ValueError if the model runs no tileconv convolution (an unconverted model)."""
    from . import collect_problems

    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    with torch.no_grad(), collect_problems() as problems:
        model(*example_inputs)
    if not problems:
        raise ValueError(f"model ({type(model).__name__}) ran no tileconv convolution on example_inputs: convert it "
                         "first (tileconv.convert), or build it from tileconv.nn.Conv2d")
    return tune(problems, **options)


# --------------------------------------------------------------------- command line
_DTYPES = {"float16": (torch.float16, False), "bfloat16": (torch.bfloat16, False),
           "float32": (torch.float32, False), "tf32": (torch.float32, True)}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..bench.suites import EPILOGUES, SUITE_NAMES

    parser.add_argument("--suite", default="resnet50", choices=SUITE_NAMES, help="problems to tune (default resnet50)")
    parser.add_argument("--case", metavar="TEXT", default=None,
                        help="only the suite's cases whose name contains TEXT (e.g. seed003)")
    parser.add_argument("--dtype", default="float16", choices=tuple(_DTYPES),
                        help="tf32: float32 tensors on TF32 tensor cores (default float16)")
    parser.add_argument("--layout", default="nhwc", choices=("nhwc", "nchw"), help="memory layout (default nhwc)")
    parser.add_argument("--batch", type=int, default=None, help="batch size (default: the suite's)")
    parser.add_argument("--epilogue", default="none", choices=tuple(EPILOGUES),
                        help="fused epilogue while measuring (default none; the cache key ignores it)")
    parser.add_argument("--force", action="store_true", help="re-tune problems the cache already holds")
    parser.add_argument("--max-seconds", type=float, default=DEFAULT_MAX_SECONDS,
                        help=f"time limit per problem, compiles included (default {DEFAULT_MAX_SECONDS:g})")
    parser.add_argument("--max-candidates", type=int, default=DEFAULT_MAX_CANDIDATES,
                        help=f"candidates per problem (default {DEFAULT_MAX_CANDIDATES})")
    parser.add_argument("--compile-workers", type=int, default=None,
                        help="threads compiling candidates (default min(8, CPUs); 1: one at a time)")
    parser.add_argument("--device", default=None, help="CUDA device, e.g. cuda:1 (default: the current one)")
    parser.add_argument("--pass", dest="pass_", default="fwd", choices=("fwd", "dgrad", "wgrad", "bwd"),
                        help="what to tune: the forward (default), the input gradient, the weight gradient, "
                             "or both gradients (bwd)")


def run(args: argparse.Namespace) -> int:
    """Exit codes: 0 all tuned (or cached); 1 some problem had no correct candidate;
    2 tuning cannot run here (no CUDA GPU, or TRITON_INTERPRET=1)."""
    from ..bench.suites import select_cases

    try:
        cases = select_cases(args.suite, getattr(args, "case", None))
    except ValueError as error:
        print(f"tileconv tune: {error}", file=sys.stderr)
        return 2
    if INTERPRET or not torch.cuda.is_available():
        why = ("TRITON_INTERPRET=1 is set: interpreter timings say nothing about a GPU" if INTERPRET
               else "no CUDA GPU is available (torch.cuda.is_available() is False)")
        print(f"tileconv tune: tuning measures kernels on a CUDA GPU, and {why}; nothing was tuned.",
              file=sys.stderr)
        return 2
    dtype, allow_tf32 = _DTYPES[args.dtype]
    problems = [case.problem(dtype, args.layout, args.epilogue, args.batch, allow_tf32) for case in cases]
    device = torch.device(args.device) if args.device else None
    print(f"tileconv tune: {len(problems)} problems of suite {args.suite!r} on "
          f"{cache.device_name(device)}; cache {cache.cache_file()}", flush=True)
    start = time.perf_counter()
    if getattr(args, "pass_", "fwd") != "fwd":
        return _run_backward(problems, device, args, start)
    results = tune(
        problems, device=device, force=args.force, max_seconds=args.max_seconds,
        max_candidates=args.max_candidates, compile_workers=args.compile_workers,
    )
    _print_summary(results, time.perf_counter() - start)
    return 1 if any(r.status == "failed" for r in results) else 0


def _run_backward(problems: list[ConvProblem], device, args: argparse.Namespace, start: float) -> int:
    """``tune --pass dgrad|wgrad|bwd``: :func:`tileconv.dispatch.tune_backward.tune_backward`."""
    from .tune_backward import result_line, tune_backward

    gradients = ("dgrad", "wgrad") if args.pass_ == "bwd" else (args.pass_,)
    results = tune_backward(problems, gradients=gradients, device=device, force=args.force,
                            max_candidates=args.max_candidates,
                            report=lambda result: print(result_line(result), flush=True))
    print(_summary_line(results, time.perf_counter() - start))
    return 1 if any(r.status == "failed" for r in results) else 0


def _summary_line(results: Sequence, seconds: float) -> str:
    """'N tuned, N already cached, N failed in S s; geometric-mean speedup ...; cache: PATH'
    for forward or backward results (each has ``status`` and ``speedup``)."""
    counts = {status: sum(r.status == status for r in results) for status in ("tuned", "cached", "failed")}
    speedups = [r.speedup for r in results if r.speedup]
    line = (f"{counts['tuned']} tuned, {counts['cached']} already cached, {counts['failed']} failed "
            f"in {seconds:.1f} s")
    if speedups:
        geomean = math.exp(sum(math.log(s) for s in speedups) / len(speedups))
        line += f"; geometric-mean speedup over the heuristics {geomean:.2f}x"
    return line + f"; cache: {cache.cache_file()}"


def _print_summary(results: list[TuneResult], seconds: float) -> None:
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        Console = None  # type: ignore[assignment,misc]
    if Console is not None and any(r.status == "tuned" for r in results):
        table = Table(title="tileconv tune")
        for column in ("problem", "algorithm", "config", "heuristics us", "tuned us", "speedup"):
            table.add_column(column, justify="right" if column.endswith(("us", "speedup")) else "left")
        for r in results:
            if r.status != "tuned":
                continue
            table.add_row(
                r.problem.describe(), r.algorithm or "", str(r.config),
                f"{r.default_ms * 1e3:.1f}" if r.default_ms else "-",
                f"{r.time_ms * 1e3:.1f}" if r.time_ms else "-",
                f"{r.speedup:.2f}x" if r.speedup else "-",
            )
        console = Console()
        if not console.is_terminal:  # a log file: do not fold rows into 80 columns
            console = Console(width=160)
        console.print(table)
    print(_summary_line(results, seconds))
    for r in results:
        if r.status == "failed":
            print(f"  failed: {r.problem.describe()}: {r.message}")
