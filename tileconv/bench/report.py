"""What a run's rows add up to, and how they are shown: geomeans, JSON, CSV, the table.

The JSON schema is read by other tools; its keys are fixed (extra keys are allowed):

    {"device", "torch", "triton", "cudnn", "tileconv", "date", "suite", "dtype", "layout",
     "epilogue", "ceilings": {"gemm_tflops", "copy_tbps"},
     "rows": [{"suite", "name", "n", "c", "h", "w", "k", "r", "s", "stride": [sh, sw],
               "padding": [ph, pw], "dilation": [dh, dw], "groups", "dtype", "layout",
               "epilogue", "algo", "tileconv_us", "cudnn_us", "compile_us",
               "speedup_vs_cudnn", "tflops", "gbps", "rel_err", "ok"}],
     "geomean_speedup_vs_cudnn"}

Speedups are peer time / tileconv time; rows whose output is wrong (``ok`` false) have
none and are left out of every geomean. With several algorithms per problem
(``--algo all``) the headline geomeans take the fastest correct algorithm of each
problem; ``geomean_by_algo`` has each algorithm on its own.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from .runner import Row, dtype_label, epilogue_label
from .timing import Ceilings, roofline

ROW_KEYS = (
    "suite", "name", "n", "c", "h", "w", "k", "r", "s", "stride", "padding", "dilation", "groups",
    "dtype", "layout", "epilogue", "algo", "pass", "tileconv_us", "cudnn_us", "compile_us",
    "speedup_vs_cudnn", "tflops", "gbps", "rel_err", "ok",
)
TOP_KEYS = (
    "device", "torch", "triton", "cudnn", "tileconv", "date", "suite", "dtype", "layout", "epilogue",
    "ceilings", "rows", "geomean_speedup_vs_cudnn",
)


# --------------------------------------------------------------------- geomeans
def geomean(values: Iterable[float | None]) -> float | None:
    """exp(mean(log v)) over the values that are present; None if there are none."""
    present = [v for v in values if v is not None]
    if not present:
        return None
    if any(v <= 0 for v in present):
        raise ValueError(f"geomean of non-positive values {present}")
    return math.exp(sum(math.log(v) for v in present) / len(present))


def best_per_problem(rows: Iterable[Row]) -> list[Row]:
    """Per (suite, name), the fastest correct row; problems with no correct row drop out."""
    best: dict[tuple[str, str], Row] = {}
    for row in rows:
        if row.speedup_vs_cudnn is None and row.speedup_vs_compile is None:
            continue
        key = (row.suite, row.name)
        if key not in best or row.tileconv_us < best[key].tileconv_us:
            best[key] = row
    return list(best.values())


def geomean_speedup(rows: Iterable[Row], peer: str = "cudnn") -> float | None:
    """Geomean of tileconv's speedup over ``peer`` ('cudnn' or 'compile'), best algorithm per problem."""
    return geomean(getattr(row, f"speedup_vs_{peer}") for row in best_per_problem(rows))


def suites_of(rows: Iterable[Row]) -> list[str]:
    return list(dict.fromkeys(row.suite for row in rows))


def geomean_by_suite(rows: list[Row], peer: str = "cudnn") -> dict[str, float | None]:
    return {suite: geomean_speedup([r for r in rows if r.suite == suite], peer) for suite in suites_of(rows)}


def geomean_by_algo(rows: list[Row], peer: str = "cudnn") -> dict[str, float | None]:
    algos = dict.fromkeys(row.algo for row in rows)
    return {algo: geomean(getattr(r, f"speedup_vs_{peer}") for r in rows if r.algo == algo) for algo in algos}


# --------------------------------------------------------------------- the result
@dataclass
class BenchResult:
    """A whole run: where and how it was measured, and its rows."""

    env: dict  # timing.environment()
    suite: str
    dtype: str
    layout: str
    epilogue: str
    algo: str
    against: list[str]
    ceilings: Ceilings | None
    rows: list[Row]
    repeat: int = 1
    batch: int | None = None
    notes: list[str] = field(default_factory=list)

    def row_dict(self, row: Row) -> dict:
        p = row.problem
        data = {
            "suite": row.suite, "name": row.name,
            "n": p.n, "c": p.c, "h": p.h, "w": p.w, "k": p.k, "r": p.r, "s": p.s,
            "stride": list(p.stride), "padding": list(p.padding), "dilation": list(p.dilation),
            "groups": p.groups, "dtype": dtype_label(p), "layout": p.layout, "epilogue": epilogue_label(p),
            "algo": row.algo, "pass": row.pass_name,
            "tileconv_us": row.tileconv_us, "cudnn_us": row.cudnn_us, "compile_us": row.compile_us,
            "speedup_vs_cudnn": row.speedup_vs_cudnn,
            "tflops": row.tflops, "gbps": row.gbps, "rel_err": row.rel_err, "ok": row.ok,
        }
        bound, percent = (None, None)
        if self.ceilings is not None and row.tileconv_us is not None:
            bound, percent = roofline(row.flops, p.min_bytes, row.tileconv_us, self.ceilings)
        data.update({  # extras beyond the fixed schema
            "shape": p.describe(), "status": row.status, "tolerance": row.tolerance,
            "speedup_vs_compile": row.speedup_vs_compile,
            "cudnn_tflops": row.tflops_of(row.cudnn_us), "compile_tflops": row.tflops_of(row.compile_us),
            "flops": row.flops, "min_bytes": p.min_bytes, "arithmetic_intensity": p.arithmetic_intensity,
            "bound": bound, "percent_of_ceiling": percent, "notes": list(row.notes),
        })
        return data

    def to_json(self) -> dict:
        env = self.env
        data = {key: env.get(key) for key in ("device", "torch", "triton", "cudnn", "tileconv", "date")}
        data.update({
            "suite": self.suite, "dtype": self.dtype, "layout": self.layout, "epilogue": self.epilogue,
            "ceilings": self.ceilings.to_dict() if self.ceilings is not None else {"gemm_tflops": None, "copy_tbps": None},
            "rows": [self.row_dict(row) for row in self.rows],
            "geomean_speedup_vs_cudnn": geomean_speedup(self.rows, "cudnn"),
        })
        data.update({  # extras
            "geomean_by_suite": geomean_by_suite(self.rows, "cudnn"),
            "geomean_by_algo": geomean_by_algo(self.rows, "cudnn"),
            "geomean_speedup_vs_compile": geomean_speedup(self.rows, "compile"),
            "geomean_by_suite_vs_compile": geomean_by_suite(self.rows, "compile"),
            "device_slug": env.get("device_slug"), "cuda": env.get("cuda"), "python": env.get("python"),
            "algo": self.algo, "against": list(self.against), "repeat": self.repeat, "batch": self.batch,
            "failed_rows": sum(not row.ok for row in self.rows), "notes": list(self.notes),
        })
        return data

    @classmethod
    def from_json(cls, data: dict) -> BenchResult:
        """A run as :meth:`to_json` wrote it, read back (``bench --replot``): its rows, peers,
        ceilings and environment as measured. A ``ValueError`` names what it cannot read."""
        from ..problem import ConvProblem
        from .options import DTYPES
        from .suites import EPILOGUES

        env_keys = ("device", "torch", "triton", "cudnn", "tileconv", "date", "device_slug", "cuda", "python")
        rows = []
        for index, row in enumerate(data.get("rows", [])):
            for key, known in (("dtype", DTYPES), ("epilogue", EPILOGUES)):
                if row.get(key) not in known:
                    raise ValueError(f"rows[{index}] {key}={row.get(key)!r}: not one of {', '.join(known)}")
            dtype, allow_tf32 = DTYPES[row["dtype"]]
            problem = ConvProblem(
                row["n"], row["c"], row["h"], row["w"], row["k"], row["r"], row["s"], stride=tuple(row["stride"]),
                padding=tuple(row["padding"]), dilation=tuple(row["dilation"]), groups=row["groups"], dtype=dtype,
                layout=row["layout"], epilogue=EPILOGUES[row["epilogue"]], allow_tf32=allow_tf32,
            )
            rows.append(Row(row["suite"], row["name"], problem, row["algo"], row.get("tileconv_us"),
                            row.get("cudnn_us"), row.get("compile_us"), row.get("rel_err"), row.get("tolerance"),
                            row.get("status") or ("ok" if row.get("ok") else "error"), list(row.get("notes") or []),
                            row.get("pass", "fwd")))
        ceilings = data.get("ceilings") or {}
        measured = ceilings.get("gemm_tflops") is not None and ceilings.get("copy_tbps") is not None
        return cls(
            env={key: data.get(key) for key in env_keys}, suite=data["suite"], dtype=data["dtype"],
            layout=data["layout"], epilogue=data["epilogue"], algo=data.get("algo", "auto"),
            against=list(data.get("against") or ["cudnn"]),
            ceilings=Ceilings(ceilings["gemm_tflops"], ceilings["copy_tbps"], ceilings.get("gemm_dtype", "float16"))
            if measured else None,
            rows=rows, repeat=data.get("repeat", 1), batch=data.get("batch"), notes=list(data.get("notes") or []),
        )


def output_path(template: str, device_slug: str, stem: str, suffix: str) -> Path:
    """Where ``--json/--csv/--plot PATH`` writes: ``{device}`` in PATH becomes the device's
    slug; a directory (existing, or PATH ending in '/') gets ``<stem>-<slug><suffix>``."""
    text = template.replace("{device}", device_slug)
    path = Path(text)
    if text.endswith(("/", "\\")) or path.is_dir():
        path = path / f"{stem}-{device_slug}{suffix}"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def write_json(result: BenchResult, path: Path) -> None:
    path.write_text(json.dumps(result.to_json(), indent=2) + "\n")


CSV_KEYS = (
    "suite", "name", "n", "c", "h", "w", "k", "r", "s", "stride_h", "stride_w", "pad_h", "pad_w",
    "dilation_h", "dilation_w", "groups", "dtype", "layout", "epilogue", "algo", "pass", "tileconv_us", "cudnn_us",
    "compile_us", "speedup_vs_cudnn", "speedup_vs_compile", "tflops", "gbps", "bound", "percent_of_ceiling",
    "rel_err", "tolerance", "ok", "status", "notes",
)


def write_csv(result: BenchResult, path: Path) -> None:
    """One line per row; the pairs are split into _h/_w columns, missing values are empty."""
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_KEYS)
        writer.writeheader()
        for row in result.rows:
            data = result.row_dict(row)
            for key, (h_key, w_key) in {"stride": ("stride_h", "stride_w"), "padding": ("pad_h", "pad_w"),
                                        "dilation": ("dilation_h", "dilation_w")}.items():
                data[h_key], data[w_key] = data.pop(key)
            data["notes"] = "; ".join(data["notes"])
            writer.writerow({key: "" if data[key] is None else data[key] for key in CSV_KEYS})


# --------------------------------------------------------------------- the table
def _us(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f}"


def _num(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _speedup(value: float | None) -> str:
    if value is None:
        return "-"
    color = "green" if value >= 1.0 else "red"
    return f"[{color}]{value:.2f}x[/{color}]"


def _error_cell(row: Row) -> str:
    if row.status == "ok":
        return f"{row.rel_err:.1e}"
    if row.status == "fail":
        return f"[bold red]FAIL {row.rel_err:.1e}[/bold red]"
    if row.status == "unsupported":
        return "[yellow]unsupported[/yellow]"
    return "[bold red]ERROR[/bold red]"


def make_console():
    """A rich console; when the output is not a terminal, wide enough not to fold the table."""
    from rich.console import Console

    console = Console()
    return console if console.is_terminal else Console(width=220)


def render_table(result: BenchResult, console, title: str | None = None, timed: bool = True) -> None:
    """The rows as a rich table, then the geomean footer and the rows' notes."""
    from rich.markup import escape
    from rich.table import Table

    several_algos = len({row.algo for row in result.rows}) > 1
    has_compile = "compile" in result.against
    table = Table(title=title, header_style="bold", show_lines=False, pad_edge=False)
    table.add_column("case", no_wrap=True)
    table.add_column("N,C,H,W -> K, RxS/stride, pad, groups", no_wrap=True)
    if several_algos or result.algo != "auto":
        table.add_column("algo", no_wrap=True)
    if timed:
        table.add_column("tileconv us", justify="right")
        if "cudnn" in result.against:
            table.add_column("cuDNN us", justify="right")
        if has_compile:
            table.add_column("compile us", justify="right")
        table.add_column("TFLOP/s", justify="right")
        table.add_column("GB/s", justify="right")
        table.add_column("% ceiling", justify="right")
        if "cudnn" in result.against:
            table.add_column("vs cuDNN", justify="right")
        if has_compile:
            table.add_column("vs compile", justify="right")
    else:
        table.add_column("tolerance", justify="right")
    table.add_column("rel err", justify="right")
    previous_suite = None
    for row in result.rows:
        if previous_suite is not None and row.suite != previous_suite:
            table.add_section()
        previous_suite = row.suite
        cells = [escape(row.name), row.problem.describe()]
        if several_algos or result.algo != "auto":
            cells.append(row.algo)
        if timed:
            cells.append(_us(row.tileconv_us))
            if "cudnn" in result.against:
                cells.append(_us(row.cudnn_us))
            if has_compile:
                cells.append(_us(row.compile_us))
            cells += [_num(row.tflops), _num(row.gbps, 0)]
            percent = "-"
            if result.ceilings is not None and row.tileconv_us is not None:
                bound, value = roofline(row.problem.flops, row.problem.min_bytes, row.tileconv_us, result.ceilings)
                percent = f"{value:.0f}% {'C' if bound == 'compute' else 'M'}"
            cells.append(percent)
            if "cudnn" in result.against:
                cells.append(_speedup(row.speedup_vs_cudnn))
            if has_compile:
                cells.append(_speedup(row.speedup_vs_compile))
        else:
            cells.append("-" if row.tolerance is None else f"{row.tolerance:.1e}")
        cells.append(_error_cell(row))
        table.add_row(*cells)
    console.print(table)
    for line in footer_lines(result, timed):
        console.print(line)


def footer_lines(result: BenchResult, timed: bool = True) -> list[str]:
    """Geomean speedups per suite (and overall), failures, and the rows' notes."""
    rows = result.rows
    lines = []
    if timed and result.ceilings is not None:
        c = result.ceilings
        lines.append(
            f"% ceiling: of {c.gemm_tflops:.0f} TFLOP/s ({c.gemm_dtype} GEMM, C) or {c.copy_tbps:.2f} TB/s "
            "(copy, M), whichever the row's arithmetic intensity says bounds it"
        )
    if timed:
        for peer, label in (("cudnn", "cuDNN"), ("compile", "torch.compile")):
            if peer not in result.against:
                continue
            parts = []
            for suite, value in geomean_by_suite(rows, peer).items():
                counted = len([r for r in best_per_problem(r for r in rows if r.suite == suite)
                               if getattr(r, f"speedup_vs_{peer}") is not None])
                problems = len({r.name for r in rows if r.suite == suite})
                shown = "-" if value is None else f"{value:.2f}x"
                parts.append(f"{suite} {shown} ({counted}/{problems})")
            overall = geomean_speedup(rows, peer)
            if len(parts) > 1:
                parts.append(f"overall {'-' if overall is None else f'{overall:.2f}x'}")
            best = " (fastest correct algorithm per problem)" if len({r.algo for r in rows}) > 1 else ""
            lines.append(f"[bold]geomean speedup vs {label}{best}:[/bold] " + ", ".join(parts))
    failed = [row for row in rows if row.status in ("fail", "error")]
    unsupported = [row for row in rows if row.status == "unsupported"]
    if failed:
        lines.append(f"[bold red]{len(failed)} of {len(rows)} rows wrong or failed[/bold red] (left out of the speedups)")
    elif rows and not unsupported:
        lines.append(f"all {len(rows)} rows match the reference")
    if unsupported:
        lines.append(f"{len(unsupported)} rows unsupported by the algorithm asked for")
    if len({row.algo for row in rows}) > 1:
        lines.append("--algo all: an algorithm that cannot compute a problem has no row for it")
    from rich.markup import escape  # notes quote error messages, which may hold [brackets]

    notes = [f"{row.name}: {note}" for row in rows for note in row.notes] + list(result.notes)
    lines += [f"  note: {escape(note)}" for note in dict.fromkeys(notes)]  # peers' notes repeat per algo
    return lines
