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

import torch

from ..functional import conv2d_as_called, conv2d_backward_problem, conv2d_problem
from ..kernels import ALGORITHMS, BACKWARD_ALGORITHMS
from ..problem import ConvProblem
from ..testing import Comparison, ConvInputs, compare, random_inputs, tolerance
from .peers import PASSES, PEER_CALLS, cudnn_pass_call, pass_gradients, reference_output, reference_pass
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
    pass_name: str = "fwd"  # what is timed: one of peers.PASSES

    @property
    def flops(self) -> int:
        """FLOPs of the pass: dgrad and wgrad each cost the forward's; fwd+bwd all three."""
        return self.problem.flops * (3 if self.pass_name == "fwd+bwd" else 1)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def tflops_of(self, us: float | None) -> float | None:
        return None if us is None else self.flops / (us * 1e-6) / 1e12

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


def algorithms_for(choice: str, pass_name: str = "fwd") -> list[str]:
    """``--algo``: 'auto' (tileconv's own choice), one algorithm by name, or 'all' of them:
    the seed's ladder first, in step order, then the production kernels (implicit_gemm,
    the ladder's last step, leads them), so that rows and chart bars read step by step."""
    if choice == "all" and pass_name in ("dgrad", "wgrad"):  # the backward algorithms, PyTorch's aside
        return [name for name in BACKWARD_ALGORITHMS if name != "aten"]
    if choice == "all":
        return sorted(ALGORITHMS, key=lambda name: not ALGORITHMS[name].teaching)  # stable sort
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


def _unsupported(algo: str, problem: ConvProblem, pass_name: str) -> str | None:
    """Why ``algo`` cannot run ``pass_name`` of ``problem`` (None: it can). For dgrad/wgrad
    the name is looked up among the backward algorithms, for fwd+bwd among both."""
    if algo == "auto":
        return None
    registries = {"fwd": [ALGORITHMS], "dgrad": [BACKWARD_ALGORITHMS], "wgrad": [BACKWARD_ALGORITHMS],
                  "fwd+bwd": [ALGORITHMS, BACKWARD_ALGORITHMS]}[pass_name]
    if not any(algo in registry for registry in registries):
        return f"no {pass_name} algorithm of that name"
    for registry in registries:
        if algo in registry:
            reason = registry[algo].unsupported_reason(problem)
            if reason is not None:
                return reason
    return None


def _compare_all(outputs, references, tols) -> Comparison:
    """The worst (failures first, then by error over tolerance) of each output's comparison."""
    outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
    references = references if isinstance(references, (list, tuple)) else [references]
    tols = tols if isinstance(tols, (list, tuple)) else [tols]
    checks = [compare(out, ref, tol) for out, ref, tol in zip(outputs, references, tols, strict=True)]
    return max(checks, key=lambda c: (not c.ok, c.rel_err / c.tolerance if c.tolerance else 0.0))


def _check_tileconv(row: Row, call: Callable[[], object], reference, tol) -> bool:
    """Run tileconv once and judge it; False if it could not run at all. ``reference`` and
    ``tol`` are lists for a pass with several outputs."""
    reason = _unsupported(row.algo, row.problem, row.pass_name)
    if reason is not None:
        row.status = "unsupported"
        row.notes.append(f"{row.algo}: {reason}")
        return False
    try:
        check = _compare_all(call(), reference, tol)  # compare() synchronizes: device errors land here
    except Exception as error:  # recorded in the row; the run goes on
        row.status = "error"
        row.notes.append(f"tileconv {row.algo}: {describe_error(error)}")
        return False
    row.rel_err, row.tolerance = check.rel_err, check.tolerance
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
    pass_name: str = "fwd",
) -> list[Row]:
    """The rows of one problem. Without a ``timer`` nothing is timed (the interpreter demo).
    ``pass_name`` (one of :data:`PASSES`) is what tileconv and the peers compute and time."""
    if pass_name not in PASSES:
        raise ValueError(f"pass_name={pass_name!r} must be one of {', '.join(PASSES)}")
    problem = item.problem
    if len(algos) > 1:  # --algo all: an algorithm that cannot compute the problem has no row
        algos = [a for a in algos if _unsupported(a, problem, pass_name) is None]
    rows = [Row(item.suite, item.name, problem, algo, pass_name=pass_name) for algo in algos]
    try:
        inputs = random_inputs(problem, device=device)
        grad = None if pass_name == "fwd" else _random_grad(problem, device)
        if pass_name == "fwd":
            ref = reference_output(problem, inputs, reference)
        else:
            ref = reference_pass(problem, inputs, grad, pass_name, reference)
    except Exception as error:  # e.g. out of memory for the inputs themselves
        for row in rows:
            row.notes.append(f"inputs/reference: {describe_error(error)}")
        return rows
    tol = _pass_tolerances(problem, pass_name)
    calls: dict[str, Callable[[], object]] = {}
    for row in rows:
        if pass_name == "fwd" and row.algo == "auto" and _callable_as_user(problem):
            # What a user pays: tileconv.conv2d itself (checks, dispatch, repeated-call replay).
            call = functools.partial(conv2d_as_called, problem, inputs.x, inputs.weight, inputs.bias, inputs.residual)
        elif pass_name == "fwd":
            call = functools.partial(
                conv2d_problem, problem, inputs.x, inputs.weight, inputs.bias, inputs.residual, algo=row.algo
            )
        else:
            call = _tileconv_pass_call(problem, inputs, grad, pass_name, row.algo)
        if _check_tileconv(row, call, ref, tol):
            calls[f"tileconv:{row.algo}"] = call
    del ref
    if timer is None:
        return rows
    peer_notes = []
    for peer in against:
        try:
            if pass_name == "fwd":
                call = PEER_CALLS[peer](problem, inputs)
            elif peer == "cudnn":
                call = cudnn_pass_call(problem, inputs, grad, pass_name)
            else:
                raise ValueError(f"the {peer} peer times the forward pass only")
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


def _callable_as_user(problem: ConvProblem) -> bool:
    """Whether ``tileconv.conv2d`` called now would describe ``problem`` itself: its
    padding is symmetric and the TF32 flag agrees."""
    tf32 = problem.dtype == torch.float32 and torch.backends.cudnn.allow_tf32
    return problem.allow_tf32 == tf32 and problem.padding_end == problem.padding


def _random_grad(problem: ConvProblem, device: str) -> torch.Tensor:
    """An upstream gradient of the output's shape and layout (random, never zeros)."""
    fmt = torch.channels_last if problem.layout == "nhwc" else torch.contiguous_format
    grad = torch.randn(problem.output_shape, dtype=torch.float32).to(problem.dtype)
    return grad.to(device).contiguous(memory_format=fmt)


def _pass_tolerances(problem: ConvProblem, pass_name: str) -> float | list[float]:
    """Tolerances of a pass's outputs, in :func:`_tileconv_pass_call`'s order; each grows
    with its own reduction (dgrad: K/g*R*S; wgrad and the bias: N*P*Q)."""
    if pass_name == "fwd":
        return tolerance(problem)
    need_x, need_w = pass_gradients(problem, pass_name)
    tols = [tolerance(problem)] if pass_name == "fwd+bwd" else []
    if need_x:
        tols.append(tolerance(problem, problem.k_per_group * problem.r * problem.s))
    if need_w:
        tols.append(tolerance(problem, problem.gemm_m))
    if pass_name == "fwd+bwd" and problem.epilogue.has_bias:
        tols.append(tolerance(problem, problem.gemm_m))
    return tols


def _tileconv_pass_call(problem: ConvProblem, inputs: ConvInputs, grad: torch.Tensor, pass_name: str,
                        algo: str) -> Callable[[], list]:
    """tileconv's outputs of a backward pass, in the reference's order: [out] (fwd+bwd),
    grad_input (dgrad, fwd+bwd), grad_weight (wgrad, fwd+bwd), grad_bias (fwd+bwd, with bias).
    ``algo`` names the forward and/or backward algorithm of that name ('auto' otherwise)."""
    need_x, need_w = pass_gradients(problem, pass_name)
    forward_algo = algo if algo in ALGORITHMS else "auto"
    backward_algo = algo if algo in BACKWARD_ALGORITHMS else "auto"

    def call() -> list:
        outputs = []
        if pass_name == "fwd+bwd":
            outputs.append(conv2d_problem(problem, inputs.x, inputs.weight, inputs.bias, inputs.residual,
                                          algo=forward_algo))
        grads = conv2d_backward_problem(problem, grad, inputs.x, inputs.weight, need_x, need_w, algo=backward_algo)
        outputs += [t for t in grads if t is not None]
        if pass_name == "fwd+bwd" and inputs.bias is not None:
            outputs.append(grad.sum(dim=(0, 2, 3)))
        return outputs

    return call


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
