"""``python -m tileconv verify``: tileconv.conv2d against the float64 reference on random problems.

Each case draws every option at random: dtype (float16, bfloat16, float32 with and without
TF32), layout, stride, padding (ints, pairs, 'same', 'valid'), dilation, groups (dense,
grouped, depthwise with channel multipliers 1-3), kernel size (square, 1xN, Nx1, even),
odd sizes, activation, bias and residual; the algorithm is the one ``tileconv.conv2d``
picks (``--algo`` forces one, or ``each`` rotates through those that compute the case). The output is allocated poisoned (NaN) and compared with
:func:`tileconv.conv2d_reference` through :mod:`tileconv.testing`, as the test suite does.

``--pass bwd`` checks the backward instead: the input and weight gradients of the same
random convolutions (their epilogues left out: the gradient of the pre-activation), through
``tileconv.functional.conv2d_backward_problem`` with the backward algorithm auto dispatch
picks (or ``--algo``: a backward algorithm, or ``each``), against PyTorch's
``convolution_backward`` in float64, both gradients poisoned before the call.

Case ``i`` of seed ``S`` is drawn from its own generator, so ``--seed S --only i`` replays
it alone. On a CPU the kernels run through Triton's interpreter (this command restarts
itself with ``TRITON_INTERPRET=1`` when needed) on small sizes.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import json
import math
import multiprocessing
import os
import random
import subprocess
import sys
import time
import warnings
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

HELP = "check tileconv.conv2d (or, --pass bwd, its gradients) against the float64 reference on random problems"

DTYPE_CHOICES = ("float16", "bfloat16", "float32", "float32+tf32")
KERNELS = [(1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (7, 7), (1, 3), (3, 1), (1, 7), (7, 1), (2, 3), (3, 5)]
STRIDES = [1, 1, 1, 2, (1, 2), (2, 1), 3]
DILATIONS = [1, 1, 1, 2, (1, 2), (2, 1), 3]
PADDINGS = [0, 1, 2, (1, 0), (0, 2), (3, 1), "same", "same", "valid"]


@dataclass(frozen=True)
class Limits:
    """Largest sizes drawn: batch, channels (C and K), image height and width."""

    batch: int
    channels: int
    image: int


# Through the interpreter a case costs about a second at these sizes.
LIMITS = {"cuda": Limits(batch=4, channels=96, image=40), "cpu": Limits(batch=2, channels=16, image=9)}
DEFAULT_CASES = {"cuda": 300, "cpu": 40}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cases", type=int, default=None, metavar="N",
                        help="random problems to check (default: 300 on cuda, 40 on cpu)")
    parser.add_argument("--seed", type=int, default=0, metavar="S", help="seed of the draw (default: 0)")
    parser.add_argument("--device", choices=("cuda", "cpu"), default=None,
                        help="where to run (default: cuda if available, else cpu through TRITON_INTERPRET=1)")
    parser.add_argument("--pass", dest="pass_", choices=("fwd", "bwd"), default="fwd",
                        help="fwd: the output (the default); bwd: the input and weight gradients")
    parser.add_argument("--algo", default="auto", metavar="NAME",
                        help="'auto' (tileconv.conv2d's choice, the default), 'each' (rotate through the "
                             "algorithms that compute each case) or an algorithm name (with --pass bwd a "
                             "backward algorithm's)")
    parser.add_argument("--only", type=int, default=None, metavar="I", help="run only case I of this seed")
    parser.add_argument("--json", type=Path, default=None, metavar="PATH", help="write the per-case results here")
    parser.add_argument("--jobs", type=int, default=None, metavar="J",
                        help="worker processes sharing the GPU (default: up to 8 on cuda, 1 on cpu); random "
                             "problems mostly cost Triton compiles, which run in parallel across processes")


# --------------------------------------------------------------------- drawing a case
@dataclass
class Case:
    """One random conv2d call, in the forms a user passes (``padding='same'`` stays a string)."""

    index: int
    n: int
    c: int
    h: int
    w: int
    k: int
    r: int
    s: int
    stride: int | tuple[int, int]
    padding: int | tuple[int, int] | str
    dilation: int | tuple[int, int]
    groups: int
    dtype: str  # one of DTYPE_CHOICES
    layout: str  # 'nchw' or 'nhwc'
    activation: None | str | tuple
    bias: bool
    residual: bool

    @property
    def arguments(self) -> tuple:
        return (self.stride, self.padding, self.dilation, self.groups)


def _draw_channels(rng: random.Random, most: int) -> tuple[int, int, int]:
    """(C, K, groups): dense half the time, else grouped or depthwise (multiplier 1-3)."""
    kind = rng.choices(["dense", "grouped", "depthwise"], weights=[5, 2, 3])[0]
    if kind == "dense":
        return rng.randint(1, most), rng.randint(1, most), 1
    if kind == "grouped":
        groups = rng.choice([2, 3, 4])
        return groups * rng.randint(1, most // groups), groups * rng.randint(1, most // groups), groups
    multiplier = rng.choice([1, 1, 2, 3])
    c = rng.randint(1, most // multiplier)
    return c, c * multiplier, c


def _draw_activation(rng: random.Random):
    from .epilogue import ACTIVATION_NAMES

    name = rng.choice([None, None, *ACTIVATION_NAMES])
    if name == "clamp":
        lo = round(rng.uniform(-2.0, 0.5), 2)
        return ("clamp", lo, round(lo + rng.uniform(0.0, 2.0), 2))
    if name == "leaky_relu" and rng.random() < 0.5:
        return ("leaky_relu", round(rng.uniform(0.0, 0.5), 3))
    return name


def draw_case(seed: int, index: int, limits: Limits, algo: str = "auto", pass_: str = "fwd") -> Case:
    """Case ``index`` of ``seed``: random options until PyTorch's rules accept them (and the
    forced algorithm ``algo``, unless 'auto' or 'each', computes them; a backward algorithm
    with ``pass_`` 'bwd')."""
    from .kernels import ALGORITHMS, BACKWARD_ALGORITHMS

    registry = BACKWARD_ALGORITHMS if pass_ == "bwd" else ALGORITHMS

    rng = random.Random(f"tileconv-verify:{seed}:{index}")
    while True:
        c, k, groups = _draw_channels(rng, limits.channels)
        r, s = rng.choice(KERNELS)
        case = Case(
            index=index, n=rng.randint(1, limits.batch), c=c, h=rng.randint(1, limits.image),
            w=rng.randint(1, limits.image), k=k, r=r, s=s, stride=rng.choice(STRIDES),
            padding=rng.choice(PADDINGS), dilation=rng.choice(DILATIONS), groups=groups,
            dtype=rng.choice(DTYPE_CHOICES), layout=rng.choice(["nchw", "nhwc"]),
            activation=_draw_activation(rng), bias=rng.random() < 0.5, residual=rng.random() < 0.5,
        )
        # The problem as the run will read it: its dtype, layout and TF32 flag (a forced
        # channels_last-only kernel never computed a problem drawn from an NCHW float32 tensor),
        # and its epilogue (a forced kernel that adds no residual was drawn one: session 55).
        try:
            with _tf32_of(case):
                _, problem = _case_problem(case, epilogue=pass_ == "fwd")
        except ValueError:  # output size <= 0, or 'same' with a stride: draw again
            continue
        if algo in registry and registry[algo].unsupported_reason(problem) is not None:
            continue
        return case


# --------------------------------------------------------------------- running a case
@dataclass
class Result:
    """What one case gave; ``to_json`` is a row of ``--json``."""

    case: Case
    problem: str = ""
    layout: str = ""  # the problem's: an ambiguous channels_last tensor (C = 1, 1x1 image) is NCHW
    epilogue: str = ""
    algorithm: str = ""
    config: str = ""
    rel_err: float = math.nan
    tolerance: float = math.nan
    message: str = ""
    error: str | None = None  # an exception, or a wrong output layout
    seconds: float = 0.0
    ok: bool = False
    extra: dict = field(default_factory=dict)

    @property
    def ratio(self) -> float:
        """rel_err / tolerance; infinite for an exception, a NaN/Inf mismatch or a bad layout."""
        if self.error is not None or self.extra.get("nonfinite_mismatches") or math.isnan(self.rel_err):
            return math.inf
        return self.rel_err / self.tolerance

    def to_json(self) -> dict:
        row = asdict(self.case)
        row.update(problem=self.problem, layout=self.layout, epilogue=self.epilogue, algorithm=self.algorithm, config=self.config,
                   rel_err=_finite_or_none(self.rel_err), tolerance=_finite_or_none(self.tolerance),
                   ok=self.ok, message=self.message, error=self.error, seconds=round(self.seconds, 4))
        row.update(self.extra)
        return row


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


# Cases per task handed to a worker process.
CHUNK = 20


def _run_chunk(indices: list[int], seed: int, limits: Limits, algo: str, device: str,
               pass_: str = "fwd") -> list[Result]:
    """Draw and run the cases ``indices`` (in a worker process, or inline)."""
    run = run_backward_case if pass_ == "bwd" else run_case
    return [run(draw_case(seed, index, limits, algo, pass_), device, seed, algo) for index in indices]


def _checked(case: Case, check) -> Result:
    """``check(result)`` for ``case`` under its TF32 setting, timed; an exception is a failed
    case (its text the error), not the end of the run."""
    result = Result(case)
    start = time.perf_counter()
    with _tf32_of(case):
        try:
            check(result)
        except Exception as error:  # a crash is a failed case, not the end of the run
            result.ok, result.error = False, f"{type(error).__name__}: {error}"
    result.seconds = time.perf_counter() - start
    return result


@contextlib.contextmanager
def _tf32_of(case: Case):
    """PyTorch's TF32 flag set as ``case`` asks (its dtype 'float32+tf32' or not) while inside."""
    import torch

    previous = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = case.dtype == "float32+tf32"
    try:
        yield
    finally:
        torch.backends.cudnn.allow_tf32 = previous


def _meta_operands(case: Case):
    """(dtype, x, weight) of ``case`` as meta tensors in its layout: what the problem is read from."""
    import torch

    dtype = getattr(torch, case.dtype.split("+")[0])
    fmt = torch.channels_last if case.layout == "nhwc" else torch.contiguous_format
    x = torch.empty(case.n, case.c, case.h, case.w, dtype=dtype, device="meta").contiguous(memory_format=fmt)
    return dtype, x, torch.empty(case.k, case.c // case.groups, case.r, case.s, dtype=dtype, device="meta")


def _case_problem(case: Case, epilogue: bool = True):
    """(dtype, problem) of ``case`` as the run reads it: its operands' dtype and layout (meta
    tensors: :func:`_meta_operands`) and, with ``epilogue`` (the forward pass), its bias,
    activation and residual."""
    import torch

    from .problem import problem_from_arguments

    dtype, x, weight = _meta_operands(case)
    if not epilogue:
        return dtype, problem_from_arguments(x, weight, None, *case.arguments)
    bias = torch.empty(case.k, dtype=dtype, device="meta") if case.bias else None
    problem = problem_from_arguments(x, weight, bias, *case.arguments, case.activation)
    if case.residual:
        problem = problem.with_epilogue(replace(problem.epilogue, has_residual=True))
    return dtype, problem


def run_case(case: Case, device: str, seed: int, algo: str = "auto") -> Result:
    """Run ``case`` (poisoned output) through tileconv.conv2d, or with ``algo`` forced through
    conv2d_problem, and compare with the reference."""
    import torch

    from . import dispatch
    from .functional import conv2d, conv2d_problem, poison_outputs
    from .kernels import supported_algorithms
    from .problem import problem_from_arguments
    from .reference import conv2d_reference
    from .testing import compare, random_inputs, tolerance

    def check(result: Result, algo: str = algo) -> None:
        _, problem = _case_problem(case)
        result.problem, result.layout, result.epilogue = problem.describe(), problem.layout, str(problem.epilogue)
        result.tolerance = tolerance(problem)
        if algo == "each":
            names = supported_algorithms(problem)
            algo = names[case.index % len(names)]
        algorithm, config = dispatch.select(problem, algo, torch.device(device))
        result.algorithm, result.config = algorithm.name, str(config)
        inputs = random_inputs(problem, device, seed=seed * 1_000_003 + case.index)
        with poison_outputs():
            if algo == "auto":  # the public entry point, as users call it
                out = conv2d(inputs.x, inputs.weight, inputs.bias, *case.arguments,
                             activation=case.activation, residual=inputs.residual)
            else:
                real = problem_from_arguments(inputs.x, inputs.weight, inputs.bias, *case.arguments,
                                              case.activation, inputs.residual)
                out = conv2d_problem(real, inputs.x, inputs.weight, inputs.bias, inputs.residual, algo=algo)
        if device == "cuda":
            torch.cuda.synchronize()
        with warnings.catch_warnings():  # PyTorch notes that 'same' with an even kernel copies
            warnings.simplefilter("ignore", UserWarning)
            ref = conv2d_reference(inputs.x, inputs.weight, inputs.bias, *case.arguments,
                                   activation=case.activation, residual=inputs.residual, device=device)
        comparison = compare(out, ref, result.tolerance)
        result.rel_err, result.message, result.ok = comparison.rel_err, comparison.message(), comparison.ok
        result.extra = {"nonfinite_mismatches": comparison.nonfinite_mismatches,
                        "worst_index": list(comparison.worst_index), "max_abs_err": comparison.max_abs_err}
        fmt = torch.channels_last if problem.layout == "nhwc" else torch.contiguous_format
        if not out.is_contiguous(memory_format=fmt):
            result.ok, result.error = False, f"output strides {out.stride()} do not follow the {problem.layout} input"
    return _checked(case, check)


def run_backward_case(case: Case, device: str, seed: int, algo: str = "auto") -> Result:
    """The input and weight gradients of ``case``'s convolution (its epilogue left out) for a
    random upstream gradient, through ``conv2d_backward_problem`` with ``algo`` (auto, each,
    or a backward algorithm), both poisoned, against float64 ``convolution_backward``. The
    result's error is the worse of the two, each against its own reduction's tolerance
    (dgrad: K/g*R*S products a value; wgrad: N*P*Q)."""
    import torch

    from . import dispatch
    from .functional import conv2d_backward_problem, poison_outputs
    from .kernels import BACKWARD_ALGORITHMS
    from .kernels.backward import aten_convolution_backward
    from .testing import compare, random_inputs, tolerance

    def check(result: Result, algo: str = algo) -> None:
        dtype, problem = _case_problem(case, epilogue=False)
        result.problem, result.layout, result.epilogue = problem.describe(), problem.layout, "none (gradients)"
        if algo == "each":
            names = [name for name, a in BACKWARD_ALGORITHMS.items()
                     if name != "aten" and a.unsupported_reason(problem) is None]
            algo = names[case.index % len(names)]
        inputs = random_inputs(problem, device, seed=seed * 1_000_003 + case.index)
        generator = torch.Generator().manual_seed(seed * 1_000_003 + case.index + 1)
        grad = torch.randn(problem.output_shape, generator=generator).to(device=device, dtype=dtype)
        grad = grad.contiguous(memory_format=torch.channels_last if problem.layout == "nhwc" else torch.contiguous_format)
        chosen = dispatch.select_backward(problem, algo)
        result.algorithm = chosen.name
        if chosen.name != "aten":
            result.config = f"wgrad {dispatch.backward_config(problem, chosen, 'wgrad')}"
        with poison_outputs():
            got_x, got_w = conv2d_backward_problem(problem, grad, inputs.x, inputs.weight, True, True, algo=algo)
        if device == "cuda":
            torch.cuda.synchronize()
        ref_x, ref_w = aten_convolution_backward(problem, grad.double(), inputs.x.double(), inputs.weight.double(),
                                                 True, True)
        checks = {"dgrad": compare(got_x, ref_x, tolerance(problem, problem.k_per_group * problem.r * problem.s)),
                  "wgrad": compare(got_w, ref_w, tolerance(problem, problem.gemm_m))}
        worst_name, worst = max(checks.items(), key=lambda item: item[1].rel_err / item[1].tolerance
                                if math.isfinite(item[1].rel_err) else math.inf)
        result.rel_err, result.tolerance = worst.rel_err, worst.tolerance
        result.ok = all(c.ok for c in checks.values())
        result.message = "; ".join(f"{name}: {c.message()}" for name, c in checks.items() if not c.ok)
        result.extra = {f"{name}_rel_err": _finite_or_none(c.rel_err) for name, c in checks.items()}
        result.extra["nonfinite_mismatches"] = sum(c.nonfinite_mismatches for c in checks.values())
        result.extra["worst"] = worst_name
        if problem.layout == "nhwc" and not got_x.is_contiguous(memory_format=torch.channels_last):
            result.ok, result.error = False, f"grad_input strides {got_x.stride()} do not follow the nhwc input"
    return _checked(case, check)


# --------------------------------------------------------------------- report
def _summary_table(results: list[Result], pass_: str = "fwd"):
    from rich.table import Table

    what = "tileconv's gradients (dgrad, wgrad)" if pass_ == "bwd" else "tileconv.conv2d"
    table = Table(title=f"{what} vs float64 reference")
    for name, justify in [("dtype", "left"), ("algorithm", "left"), ("cases", "right"), ("pass", "right"),
                          ("fail", "right"), ("worst err", "right"), ("tol", "right"), ("err/tol", "right")]:
        table.add_column(name, justify=justify, no_wrap=True)
    groups: dict[tuple[str, str], list[Result]] = {}
    for result in results:
        groups.setdefault((result.case.dtype, result.algorithm or "(none)"), []).append(result)
    for (dtype, algorithm), rows in sorted(groups.items()):
        worst = max(rows, key=lambda r: (r.ratio, r.rel_err if math.isfinite(r.rel_err) else 0.0))
        failed = sum(not r.ok for r in rows)
        ratio = "error" if worst.error else f"{worst.ratio:.3g}" if math.isfinite(worst.ratio) else "NaN/Inf"
        table.add_row(dtype, algorithm, str(len(rows)), str(len(rows) - failed),
                      f"[bold red]{failed}[/]" if failed else "0", f"{worst.rel_err:.2e}",
                      f"{worst.tolerance:.1e}", ratio)
    passed = sum(r.ok for r in results)
    table.caption = f"{passed} passed, {len(results) - passed} failed"
    return table


def _describe_worst(result: Result, args: argparse.Namespace, device: str) -> str:
    case = result.case
    verdict = "FAILED" if not result.ok else "passed"
    lines = [
        f"Worst case ({verdict}): case {case.index}",
        f"  problem     {result.problem or '?'}  (stride={case.stride!r}, padding={case.padding!r}, "
        f"dilation={case.dilation!r}, groups={case.groups})",
        f"  dtype       {case.dtype}",
        f"  layout      {result.layout or case.layout}",
        f"  epilogue    {result.epilogue or '?'}",
        f"  algorithm   {result.algorithm or '?'}  config {result.config or '?'}",
        f"  rel. error  {result.rel_err:.3e}  (tolerance {result.tolerance:.1e})",
    ]
    if result.error:
        lines.append(f"  error       {result.error}")
    if result.message:
        lines.append(f"  detail      {result.message}")
    algo = f" --algo {args.algo}" if args.algo != "auto" else ""
    algo += " --pass bwd" if getattr(args, "pass_", "fwd") == "bwd" else ""
    lines.append(f"  replay      python -m tileconv verify --seed {args.seed} --only {case.index} --device {device}{algo}")
    return "\n".join(lines)


def _write_json(path: Path, results: list[Result], args: argparse.Namespace, device: str) -> None:
    import torch
    import triton

    from . import __version__

    payload = {
        "seed": args.seed, "device": device, "algo": args.algo, "pass": getattr(args, "pass_", "fwd"),
        "cases": len(results), "passed": sum(r.ok for r in results),
        "failed": sum(not r.ok for r in results),
        "versions": {"tileconv": __version__, "torch": torch.__version__, "triton": triton.__version__},
        "gpu": torch.cuda.get_device_name() if device == "cuda" else None,
        "results": [r.to_json() for r in results],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=1) + "\n")


# --------------------------------------------------------------------- entry point
def _rerun_with_interpreter(args: argparse.Namespace) -> int:
    """Run this command again in a child with TRITON_INTERPRET=1: Triton and tileconv read it
    at import, so it cannot be switched on in this process."""
    argv = [sys.executable, "-m", "tileconv", "verify", "--seed", str(args.seed), "--device", "cpu", "--algo", args.algo,
            "--pass", getattr(args, "pass_", "fwd")]
    if args.cases is not None:
        argv += ["--cases", str(args.cases)]
    if args.only is not None:
        argv += ["--only", str(args.only)]
    if args.json is not None:
        argv += ["--json", str(args.json)]
    env = dict(os.environ, TRITON_INTERPRET="1")
    # The child imports tileconv from the same place this process did.
    package_root = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    sys.stdout.flush()
    return subprocess.call(argv, env=env)


def run(args: argparse.Namespace) -> int:
    import torch
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from ._runtime import INTERPRET
    from .kernels import ALGORITHMS, BACKWARD_ALGORITHMS

    console = Console()
    if not console.is_terminal:  # a CI log: room for the table instead of 80 columns
        console = Console(width=120)
    pass_ = getattr(args, "pass_", "fwd")
    registry = BACKWARD_ALGORITHMS if pass_ == "bwd" else ALGORITHMS
    if args.algo not in ("auto", "each", *registry):
        console.print(f"[red]--algo={args.algo!r} is not 'auto', 'each' or one of {', '.join(registry)}"
                      + (" (the backward algorithms: --pass bwd)" if pass_ == "bwd" else "") + "[/]")
        return 2
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        console.print("[red]--device cuda: no CUDA GPU is available[/]")
        return 2
    if device == "cpu" and not INTERPRET:
        return _rerun_with_interpreter(args)
    limits = LIMITS[device]
    cases = args.cases if args.cases is not None else DEFAULT_CASES[device]
    if cases < 1:
        console.print(f"[red]--cases={cases} must be at least 1[/]")
        return 2
    indices = [args.only] if args.only is not None else list(range(cases))
    console.print(f"tileconv verify{' --pass bwd' if pass_ == 'bwd' else ''}: {len(indices)} random problems, "
                  f"seed {args.seed}, on {device}"
                  + (" (Triton interpreter)" if device == "cpu" else f" ({torch.cuda.get_device_name()})")
                  + f"; sizes N<={limits.batch}, C,K<={limits.channels}, H,W<={limits.image}")

    results: list[Result] = []
    progress = Progress(TextColumn("[progress.description]{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TextColumn("{task.fields[failed]} failed"), TimeElapsedColumn(), console=console)
    jobs = args.jobs if args.jobs is not None else (min(8, max(1, (os.cpu_count() or 2) // 2)) if device == "cuda" else 1)
    chunks = [indices[i:i + CHUNK] for i in range(0, len(indices), CHUNK)]
    started = time.monotonic()
    with progress:
        task = progress.add_task("verifying", total=len(indices), failed=0)

        def record(chunk_results: list[Result]) -> None:
            for result in chunk_results:
                results.append(result)
                if not result.ok:
                    progress.console.print(f"[red]case {result.case.index} failed[/]: {result.problem} "
                                           f"{result.case.dtype} {result.case.layout} {result.epilogue} "
                                           f"{result.algorithm}: {result.error or result.message}")
            failed = sum(not r.ok for r in results)
            progress.update(task, advance=len(chunk_results), failed=failed)
            # A log (no terminal) sees no live bar: a line at every tenth of the cases instead.
            step = max(1, len(indices) // 10)
            if not console.is_terminal and len(results) // step != (len(results) - len(chunk_results)) // step:
                elapsed = time.monotonic() - started
                console.print(f"  {len(results)}/{len(indices)} cases, {failed} failed, {elapsed:.0f} s")

        if jobs <= 1 or len(chunks) == 1:
            for chunk in chunks:
                record(_run_chunk(chunk, args.seed, limits, args.algo, device, pass_))
        else:
            # Fresh interpreters (spawn): a CUDA context does not survive fork.
            context = multiprocessing.get_context("spawn")
            with concurrent.futures.ProcessPoolExecutor(jobs, mp_context=context) as pool:
                futures = [pool.submit(_run_chunk, chunk, args.seed, limits, args.algo, device, pass_)
                           for chunk in chunks]
                for future in concurrent.futures.as_completed(futures):
                    record(future.result())
    results.sort(key=lambda r: r.case.index)

    console.print(_summary_table(results, pass_))
    worst = max(results, key=lambda r: (not r.ok, r.ratio, r.rel_err if math.isfinite(r.rel_err) else 0.0))
    console.print(_describe_worst(worst, args, device), highlight=False)
    if args.json is not None:
        _write_json(args.json, results, args, device)
        console.print(f"per-case results written to {args.json}")
    return 1 if any(not r.ok for r in results) else 0
