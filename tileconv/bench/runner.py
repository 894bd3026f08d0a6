"""Rows of a benchmark run: one problem, tileconv and its peers, timed and checked.

For each :class:`BenchItem` the runner makes random inputs (never zeros), computes the
reference once, runs every requested tileconv algorithm once and compares its output with
the reference (:func:`tileconv.testing.compare` against
:func:`tileconv.testing.tolerance`), builds the peers (their first call is their
warm-up: cuDNN's algorithm search, Inductor's compile and autotuning), and then times
everything round-robin, ``repeat`` times each, keeping the median. One :class:`Row` per
tileconv algorithm; peers are timed once per item and shared by its rows.

Nothing here knows about GPUs: the device and the timer are arguments, so that the same
code runs the GPU benchmark, the interpreter demo (no timer) and the CPU unit tests (a
fake timer). A failure of one implementation is recorded in its row and never stops the
run.
"""

from __future__ import annotations

import functools
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..functional import conv2d_problem
from ..kernels import ALGORITHMS
from ..problem import ConvProblem
from ..testing import compare, random_inputs, tolerance
from .peers import PEER_CALLS, reference_output
from .suites import EPILOGUES

# (label, zero-argument call) -> microseconds. Labels: 'tileconv:<algo>', 'cudnn', 'compile'.
RowTimer = Callable[[str, Callable[[], object]], float]

# Why a row has no speedup: 'ok' rows count; the others are marked in the table.
STATUSES = ("ok", "fail", "error", "unsupported")


@dataclass(frozen=True)
class BenchItem:
    """One problem to measure, with the suite and name it is reported under."""

    suite: str
    name: str
    problem: ConvProblem


def dtype_label(problem: ConvProblem) -> str:
    """The benchmark's dtype name: float16, bfloat16, float32 or tf32."""
    return "tf32" if problem.dtype_name == "float32+tf32" else problem.dtype_name


def epilogue_label(problem: ConvProblem) -> str:
    """The benchmark's epilogue name (none, bias_relu, bias_add_relu) or the epilogue's own."""
    for name, epilogue in EPILOGUES.items():
        if epilogue == problem.epilogue:
            return name
    return str(problem.epilogue)


@dataclass
class Row:
    """One tileconv algorithm on one problem, beside the peers measured in the same run."""

    suite: str
    name: str
    problem: ConvProblem
    algo: str
    tileconv_us: float | None = None
    cudnn_us: float | None = None
    compile_us: float | None = None
    rel_err: float | None = None
    tolerance: float | None = None
    status: str = "error"
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def tflops_of(self, us: float | None) -> float | None:
        return None if us is None else self.problem.flops / (us * 1e-6) / 1e12

    @property
    def tflops(self) -> float | None:
        return self.tflops_of(self.tileconv_us)

    @property
    def gbps(self) -> float | None:
        """Bytes every kernel must move (:attr:`ConvProblem.min_bytes`) per second, in GB/s."""
        return None if self.tileconv_us is None else self.problem.min_bytes / (self.tileconv_us * 1e-6) / 1e9

    def speedup_vs(self, peer_us: float | None) -> float | None:
        """peer time / tileconv time; None when either is missing or tileconv is wrong."""
        if not self.ok or self.tileconv_us is None or peer_us is None:
            return None
        return peer_us / self.tileconv_us

    @property
    def speedup_vs_cudnn(self) -> float | None:
        return self.speedup_vs(self.cudnn_us)

    @property
    def speedup_vs_compile(self) -> float | None:
        return self.speedup_vs(self.compile_us)


def algorithms_for(choice: str) -> list[str]:
    """``--algo``: 'auto' (tileconv's own choice), one algorithm by name, or 'all' of them."""
    if choice == "all":
        return list(ALGORITHMS)
    if choice != "auto" and choice not in ALGORITHMS:
        raise ValueError(f"algo={choice!r} is not 'auto', 'all' or one of {', '.join(ALGORITHMS)}")
    return [choice]


def describe_error(error: BaseException) -> str:
    """``TypeName: first line of the message``, short enough for a table note."""
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"[:300]


def describe_peer_error(error: BaseException) -> str:
    if "NoValidChoicesError" in str(error):  # e.g. groups > 1: the template has no kernel for it
        return "Inductor's Triton conv template does not cover this problem (NoValidChoicesError)"
    return describe_error(error)


def _check_tileconv(row: Row, call: Callable[[], object], reference, tol: float) -> bool:
    """Run tileconv once and judge it; False if it could not run at all."""
    if row.algo != "auto":
        reason = ALGORITHMS[row.algo].unsupported_reason(row.problem)
        if reason is not None:
            row.status = "unsupported"
            row.notes.append(f"{row.algo}: {reason}")
            return False
    try:
        check = compare(call(), reference, tol)  # compare() synchronizes: device errors land here
    except Exception as error:  # recorded in the row; the run goes on
        row.status = "error"
        row.notes.append(f"tileconv {row.algo}: {describe_error(error)}")
        return False
    row.rel_err, row.tolerance = check.rel_err, tol
    row.status = "ok" if check.ok else "fail"
    if not check.ok:
        row.notes.append(f"tileconv {row.algo} wrong: {check.message()}")
    return True


def time_round_robin(
    calls: dict[str, Callable[[], object]], timer: RowTimer, repeat: int
) -> tuple[dict[str, float | None], dict[str, str]]:
    """Median microseconds per label over ``repeat`` rounds, each round timing every call
    once in turn (so that a drift of the clocks hits all of them alike), and the errors."""
    samples: dict[str, list[float]] = {label: [] for label in calls}
    errors: dict[str, str] = {}
    for _ in range(max(1, repeat)):
        for label, call in calls.items():
            if label in errors:
                continue
            try:
                samples[label].append(timer(label, call))
            except Exception as error:
                errors[label] = describe_error(error)
    medians = {label: statistics.median(values) if values else None for label, values in samples.items()}
    return medians, errors


def run_item(
    item: BenchItem,
    *,
    algos: Sequence[str],
    against: Sequence[str] = ("cudnn",),
    device: str = "cuda",
    timer: RowTimer | None = None,
    repeat: int = 1,
    reference: str = "float32",
) -> list[Row]:
    """The rows of one problem. Without a ``timer`` nothing is timed (the interpreter demo)."""
    problem = item.problem
    if len(algos) > 1:  # --algo all: an algorithm that cannot compute the problem has no row
        algos = [a for a in algos if a == "auto" or ALGORITHMS[a].unsupported_reason(problem) is None]
    rows = [Row(item.suite, item.name, problem, algo) for algo in algos]
    try:
        inputs = random_inputs(problem, device=device)
        ref = reference_output(problem, inputs, reference)
    except Exception as error:  # e.g. out of memory for the inputs themselves
        for row in rows:
            row.notes.append(f"inputs/reference: {describe_error(error)}")
        return rows
    tol = tolerance(problem)
    calls: dict[str, Callable[[], object]] = {}
    for row in rows:
        call = functools.partial(
            conv2d_problem, problem, inputs.x, inputs.weight, inputs.bias, inputs.residual, algo=row.algo
        )
        if _check_tileconv(row, call, ref, tol):
            calls[f"tileconv:{row.algo}"] = call
    del ref
    if timer is None:
        return rows
    peer_notes = []
    for peer in against:
        try:
            call = PEER_CALLS[peer](problem, inputs)
            call()  # warm-up: cuDNN's algorithm search, Inductor's compile and autotuning
            calls[peer] = call
        except Exception as error:
            peer_notes.append(f"{peer}: {describe_peer_error(error)}")
    times, errors = time_round_robin(calls, timer, repeat)
    peer_notes += [f"{label} timing: {text}" for label, text in errors.items() if not label.startswith("tileconv:")]
    for row in rows:
        row.tileconv_us = times.get(f"tileconv:{row.algo}")
        row.cudnn_us = times.get("cudnn")
        row.compile_us = times.get("compile")
        if f"tileconv:{row.algo}" in errors:
            row.status = "error"
            row.notes.append(f"tileconv {row.algo} timing: {errors[f'tileconv:{row.algo}']}")
        row.notes.extend(peer_notes)
    return rows


def run_items(
    items: Sequence[BenchItem],
    *,
    on_item_start: Callable[[int, BenchItem], None] | None = None,
    on_item_done: Callable[[int, BenchItem, list[Row]], None] | None = None,
    **options,
) -> list[Row]:
    """:func:`run_item` over ``items`` (``options`` are its keywords), calling back before
    and after each (progress). Ctrl-C stops the run and keeps the rows measured so far."""
    rows: list[Row] = []
    try:
        for index, item in enumerate(items):
            if on_item_start is not None:
                on_item_start(index, item)
            item_rows = run_item(item, **options)
            rows.extend(item_rows)
            if on_item_done is not None:
                on_item_done(index, item, item_rows)
    except KeyboardInterrupt:
        pass
    return rows
