"""One measuring session on the GPU, shared by ``bench`` and ``sweep``.

Order of events: cuDNN flags (benchmark mode; TF32 exactly for ``--dtype tf32``), the
ceilings measured in this process, then the items under a progress bar, then the table
and the files asked for. Everything in one process, one run, so ratios are comparable.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence

import torch

from .options import DTYPES
from .report import BenchResult, output_path, write_csv, write_json
from .runner import BenchItem, Row, RowTimer, algorithms_for, run_items
from .timing import bench_us, environment, environment_line, measure_ceilings


def gpu_or_demo(args: argparse.Namespace, console, cpu_demo: Callable[[argparse.Namespace, object], int]) -> int | None:
    """The exit code of a GPU command that cannot measure here: ``cpu_demo(args, console)``
    without CUDA, 2 under ``TRITON_INTERPRET=1`` on a GPU machine (after saying why);
    None where it can measure."""
    if not torch.cuda.is_available():
        return cpu_demo(args, console)
    from .timing import refuses_interpreter

    return 2 if refuses_interpreter() else None


def start_gpu_session(console, dtype_name: str | None = None) -> dict:
    """cuDNN in benchmark mode (it picks its fastest algorithm per shape) and, given a
    ``--dtype`` name, PyTorch's float32 convolutions on TF32 exactly for ``tf32``; prints
    the environment line and returns the environment (for the JSON)."""
    torch.backends.cudnn.benchmark = True
    if dtype_name is not None:
        torch.backends.cudnn.allow_tf32 = DTYPES[dtype_name][1]  # the eager peer's float32 precision
    env = environment()
    console.print(environment_line(env), highlight=False)
    return env


def _row_timer(label: str, call: Callable[[], object]) -> float:
    return bench_us(call)


def _item_line(index: int, total: int, item: BenchItem, rows: list[Row]) -> str:
    """A log line per item, for when the output is not a terminal (no live progress bar)."""
    parts = []
    for row in rows:
        text = f"{row.algo} {'-' if row.tileconv_us is None else f'{row.tileconv_us:.1f} us'} {row.status}"
        if row.speedup_vs_cudnn is not None:
            text += f" {row.speedup_vs_cudnn:.2f}x"
        parts.append(text)
    cudnn = rows[0].cudnn_us if rows else None
    peer = "" if cudnn is None else f", cuDNN {cudnn:.1f} us"
    return f"[{index + 1}/{total}] {item.suite} {item.name}: " + "; ".join(parts) + peer


def measure(
    items: Sequence[BenchItem],
    args: argparse.Namespace,
    suite: str,
    console,
    device: str = "cuda",
    timer: RowTimer = _row_timer,
) -> BenchResult:
    """Measure ``items`` with ``args``' options (dtype, algo, against, repeat) on the GPU
    (``device`` and ``timer`` are there for tests)."""
    from rich.markup import escape
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    env = start_gpu_session(console, args.dtype)
    ceilings = measure_ceilings(args.dtype, device=device)
    console.print(
        f"ceilings measured now: {args.dtype} GEMM {ceilings.gemm_tflops:.0f} TFLOP/s, "
        f"copy {ceilings.copy_tbps:.2f} TB/s (read+write)"
    )
    log_lines = not console.is_terminal
    with torch.no_grad(), Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=console, transient=True,
    ) as progress:
        task = progress.add_task("measuring", total=len(items))

        def on_item_start(index: int, item: BenchItem) -> None:
            progress.update(task, completed=index, description=escape(f"{item.suite}: {item.name}"))

        def on_item_done(index: int, item: BenchItem, rows: list[Row]) -> None:
            progress.update(task, completed=index + 1)
            if log_lines:
                console.print(escape(_item_line(index, len(items), item, rows)), highlight=False)

        rows = run_items(
            items, algos=algorithms_for(args.algo, getattr(args, "pass_", "fwd")), against=args.against, device=device,
            timer=timer, repeat=args.repeat, reference="float32", pass_name=getattr(args, "pass_", "fwd"),
            on_item_start=on_item_start, on_item_done=on_item_done,
        )
    measured = len({(row.suite, row.name) for row in rows})
    notes = [] if measured == len(items) else [f"interrupted: {measured} of {len(items)} problems measured"]
    return BenchResult(
        env=env, suite=suite, dtype=args.dtype, layout=args.layout, epilogue=getattr(args, "epilogue", "none"),
        algo=args.algo, against=list(args.against), ceilings=ceilings, rows=rows, repeat=args.repeat,
        batch=getattr(args, "batch", None), notes=notes,
    )


def write_outputs(
    result: BenchResult,
    args: argparse.Namespace,
    console,
    stem: str,
    plot: Callable[[BenchResult, object], None] | None,
) -> None:
    """The files of ``--json``, ``--csv`` and ``--plot`` (skipped without a plot function)."""
    device_slug = result.env.get("device_slug", "unknown")
    if args.json:
        path = output_path(args.json, device_slug, stem, ".json")
        write_json(result, path)
        console.print(f"wrote {path}")
    if args.csv:
        path = output_path(args.csv, device_slug, stem, ".csv")
        write_csv(result, path)
        console.print(f"wrote {path}")
    if args.plot:
        if plot is None:
            console.print("--plot: nothing to plot without GPU timings; no chart written")
        else:
            path = output_path(args.plot, device_slug, stem, ".png")
            plot(result, path)
            console.print(f"wrote {path}")


def exit_code(result: BenchResult) -> int:
    """0 if every row ran and matched the reference ('unsupported' rows aside), else 1."""
    return 0 if all(row.status in ("ok", "unsupported") for row in result.rows) and result.rows else 1
