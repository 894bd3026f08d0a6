"""Charts of a run, written as PNG with matplotlib's Agg backend (no display needed).

- :func:`plot_bench`: top panel, grouped bars per problem, TFLOP/s of each implementation
  (the seeds' "Program N vs Program M" chart); bottom panel, tileconv's speedup over cuDNN
  per row, with the geomean. Rows whose output is wrong are marked "fail", not drawn.
  With ``--algo all`` the seed's ladder (teaching kernels) comes first, in step order, in
  shades of green from light to dark, then the production kernels: the step-by-step chart.
- :func:`plot_sweep`: TFLOP/s against the reduction length C for the 1x1 GEMM sweep, with
  the measured GEMM ceiling.
"""

from __future__ import annotations

from pathlib import Path

from ..kernels import ALGORITHMS
from .report import BenchResult, geomean_speedup
from .runner import Row

COLORS = {"tileconv": "#1f77b4", "cudnn": "#7f7f7f", "compile": "#ff7f0e"}
EXTRA_TILECONV_COLORS = ("#9467bd", "#17becf", "#8c564b", "#e377c2", "#bcbd22", "#2ca02c", "#c49c94", "#f7b6d2",
                         "#dbdb8d", "#9edae5", "#c5b0d5", "#393b79", "#8c6d31", "#637939", "#843c39", "#7b4173",
                         "#e7969c", "#3182bd", "#31a354", "#fdae6b", "#6b6ecf", "#b5cf6b", "#ce6dbd")
# The ladder's steps, light to dark: each step reads as a darker shade of the one before.
LADDER_COLORS = ("#b5e0ab", "#86cc7f", "#4fb060", "#2a8a44", "#0b6a2c", "#00441b")
FAIL_COLOR = "#d62728"


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _series(result: BenchResult) -> list[tuple[str, str, str | None]]:
    """(legend label, color, tileconv algo or None for a peer) of each bar in a group:
    the ladder's steps first (greens), then the other algorithms (the first in tileconv's
    blue), then the peers."""
    def teaching(algo: str) -> bool:
        return algo in ALGORITHMS and ALGORITHMS[algo].teaching

    algos = list(dict.fromkeys(row.algo for row in result.rows))
    steps = [algo for algo in ALGORITHMS if teaching(algo) and algo in algos]  # step order
    others = [algo for algo in algos if not teaching(algo)]
    series = []
    for index, algo in enumerate(steps):
        series.append((f"tileconv ({algo})", LADDER_COLORS[index % len(LADDER_COLORS)], algo))
    for index, algo in enumerate(others):
        color = COLORS["tileconv"] if index == 0 else EXTRA_TILECONV_COLORS[(index - 1) % len(EXTRA_TILECONV_COLORS)]
        series.append((f"tileconv ({algo})" if len(algos) > 1 or algo != "auto" else "tileconv", color, algo))
    if "cudnn" in result.against:
        series.append(("cuDNN", COLORS["cudnn"], None))
    if "compile" in result.against:
        series.append(("torch.compile", COLORS["compile"], None))
    return series


def _title(result: BenchResult, what: str) -> str:
    env = result.env
    return (
        f"{what}: {env.get('device')}, {result.dtype}, {result.layout}, epilogue {result.epilogue} "
        f"(torch {env.get('torch')}, triton {env.get('triton')}, cuDNN {env.get('cudnn')}, {str(env.get('date'))[:10]})"
    )


def _slots(count: int) -> list[float]:
    """x offsets of ``count`` bars sharing one problem's 0.8-wide slot, and their width."""
    width = 0.8 / max(count, 1)
    return [(i - (count - 1) / 2) * width for i in range(count)]


def plot_bench(result: BenchResult, path: Path) -> None:
    """Two panels: TFLOP/s per implementation per problem, and speedup over cuDNN per row."""
    from matplotlib.patches import Patch

    plt = _pyplot()
    rows = result.rows
    problems = list(dict.fromkeys((row.suite, row.name) for row in rows))
    by_key: dict[tuple[str, str, str], Row] = {(r.suite, r.name, r.algo): r for r in rows}
    series = _series(result)
    figure_width = min(60.0, max(10.0, 0.25 * len(problems) * (len(series) + 1)))
    fig, (top, bottom) = plt.subplots(
        2, 1, figsize=(figure_width, 9.5), sharex=True, gridspec_kw={"height_ratios": [3, 2]}
    )

    values_seen = []
    for x, key in enumerate(problems):
        first = next(r for r in rows if (r.suite, r.name) == key)
        bars = []  # (color, TFLOP/s or None for a wrong result) of each bar present
        for label, color, algo in series:
            if algo is None:
                bars.append((color, first.tflops_of(first.cudnn_us if label == "cuDNN" else first.compile_us)))
            elif (*key, algo) in by_key:
                row = by_key[(*key, algo)]
                bars.append((color, row.tflops if row.ok else None))
        width = 0.8 / len(bars)
        for offset, (color, value) in zip(_slots(len(bars)), bars, strict=True):
            if value is None:  # wrong, failed or unmeasured: no throughput to show
                top.text(x + offset, 0.01, "fail", color=FAIL_COLOR, rotation=90, ha="center", va="bottom",
                         fontsize=7, transform=top.get_xaxis_transform())
                continue
            values_seen.append(value)
            top.bar(x + offset, value, width, color=color)
    if values_seen and max(values_seen) / max(min(values_seen), 1e-9) > 30:
        top.set_yscale("log")  # depthwise (a few TFLOP/s) beside dense (hundreds)
    top.set_ylabel("TFLOP/s (higher is better)")
    if result.ceilings is not None:
        top.axhline(result.ceilings.gemm_tflops, color="black", linestyle=":", linewidth=1)
        top.text(1.0, result.ceilings.gemm_tflops, f"{result.ceilings.gemm_dtype} GEMM ceiling "
                 f"{result.ceilings.gemm_tflops:.0f} TFLOP/s ", transform=top.get_yaxis_transform(),
                 va="bottom", ha="right", fontsize=7)
    top.grid(axis="y", alpha=0.3)

    tileconv_series = [(label, color, algo) for label, color, algo in series if algo is not None]
    for x, key in enumerate(problems):
        present = [(color, by_key[(*key, algo)]) for _, color, algo in tileconv_series if (*key, algo) in by_key]
        width = 0.8 / len(present)
        for offset, (color, row) in zip(_slots(len(present)), present, strict=True):
            speedup = row.speedup_vs_cudnn
            if speedup is None:
                if not row.ok:
                    bottom.text(x + offset, 0.01, "fail", color=FAIL_COLOR, rotation=90, ha="center",
                                va="bottom", fontsize=7, transform=bottom.get_xaxis_transform())
                continue
            if len(tileconv_series) == 1:  # one algorithm: color says faster or slower
                color = "#2ca02c" if speedup >= 1 else FAIL_COLOR
            bottom.bar(x + offset, speedup, width, color=color)
            bottom.text(x + offset, speedup, f"{speedup:.2f}", ha="center", va="bottom", fontsize=6)
    bottom.axhline(1.0, color="black", linewidth=1)
    overall = geomean_speedup(rows, "cudnn")
    if overall is not None:
        bottom.axhline(overall, color="#1f77b4", linestyle="--", linewidth=1)
    best = ", fastest correct algorithm per problem" if len(tileconv_series) > 1 else ""
    geomean_text = "" if overall is None else f"; geomean {overall:.2f}x (dashed{best})"
    bottom.set_title(f"tileconv speedup vs cuDNN per row (above 1: tileconv faster){geomean_text}", fontsize=9)
    bottom.set_ylabel("speedup (x)")
    bottom.grid(axis="y", alpha=0.3)
    bottom.set_xticks(range(len(problems)))
    bottom.set_xticklabels([name for _, name in problems], rotation=50, ha="right", fontsize=7)
    bottom.set_xlim(-0.6, len(problems) - 0.4)

    suites = [suite for suite, _ in problems]
    if len(set(suites)) > 1:  # separate and name the suites
        for x in range(len(problems)):
            if x == 0 or suites[x] != suites[x - 1]:
                if x > 0:
                    for axis in (top, bottom):
                        axis.axvline(x - 0.5, color="black", linestyle=":", linewidth=0.8)
                top.text(x - 0.45, 0.99, suites[x], transform=top.get_xaxis_transform(), va="top",
                         fontsize=8, style="italic")
    handles = [Patch(color=color, label=label) for label, color, _ in series]
    fig.legend(handles=handles, loc="upper center", ncol=len(handles), fontsize=8, bbox_to_anchor=(0.5, 0.97),
               frameon=False)
    fig.suptitle(_title(result, "tileconv vs peers"), fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_sweep(result: BenchResult, path: Path) -> None:
    """TFLOP/s against the reduction length C (log2 axis), one line per implementation."""
    plt = _pyplot()
    fig, axis = plt.subplots(figsize=(8, 5))
    first_rows = [row for i, row in enumerate(result.rows) if row.name not in {r.name for r in result.rows[:i]}]
    for label, color, algo in _series(result):
        if algo is not None:
            points = [(row.problem.c, row.tflops) for row in result.rows if row.algo == algo and row.ok]
        else:
            points = [(row.problem.c, row.tflops_of(row.cudnn_us if label == "cuDNN" else row.compile_us))
                      for row in first_rows]
        points = sorted((c, v) for c, v in points if v is not None)
        if points:
            axis.plot(*zip(*points, strict=True), marker="o", color=color, label=label)
    if result.ceilings is not None:
        axis.axhline(result.ceilings.gemm_tflops, color="black", linestyle=":", linewidth=1,
                     label=f"{result.ceilings.gemm_dtype} GEMM 8192^3 ({result.ceilings.gemm_tflops:.0f})")
    axis.set_xscale("log", base=2)
    cs = sorted({row.problem.c for row in result.rows})
    axis.set_xticks(cs)
    axis.set_xticklabels([str(c) for c in cs])
    axis.set_xlabel("reduction length C (1x1 conv: M = N*H*W = 4096 pixels, K = 4096 channels)")
    axis.set_ylabel("TFLOP/s")
    axis.set_ylim(bottom=0)
    axis.grid(alpha=0.3)
    axis.legend(fontsize=8)
    axis.set_title(_title(result, "head/tail sweep"), fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
