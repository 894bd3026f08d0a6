"""The benchmark harness on the CPU: its math, its files, its rows, its no-GPU demo.

GPU timing itself cannot run here; the runner is exercised with fake timers (the same
code path the GPU takes, with ``timer`` and ``device`` injected), and the report, JSON,
CSV and plots from rows with made-up times.
"""

from __future__ import annotations

import argparse
import csv
import importlib
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tileconv.bench import cli_bench, cli_info, cli_sweep, peers, report, runner, timing
from tileconv.bench.demo import demo_cases, shrink
from tileconv.bench.report import CSV_KEYS, ROW_KEYS, TOP_KEYS, BenchResult, geomean
from tileconv.bench.runner import BenchItem, Row
from tileconv.bench.suites import get_suite
from tileconv.cli import COMMANDS
from tileconv.testing import tolerance

REPO_ROOT = Path(__file__).resolve().parents[1]
HAS_CUDA = torch.cuda.is_available()


# --------------------------------------------------------------------- fixtures
def fake_env() -> dict:
    env = timing.environment()
    env.update(device="NVIDIA H100 80GB HBM3", device_slug="nvidia-h100-80gb-hbm3", cudnn=91900)
    return env


def fake_result(suite: str = "seed", algos=("auto",), against=("cudnn",), failing: int | None = 1) -> BenchResult:
    """Rows with made-up but plausible times (cuDNN at 300 TFLOP/s on dense problems)."""
    rows = []
    for i, case in enumerate(get_suite(suite)):
        problem = case.problem()
        cudnn_us = problem.flops / (300e12 if problem.groups == 1 else 5e12) * 1e6
        for j, algo in enumerate(algos):
            factor = (0.75, 0.9, 1.1, 1.3)[(i + j) % 4]
            rows.append(Row(
                case.suite, case.name, problem, algo, tileconv_us=cudnn_us * factor, cudnn_us=cudnn_us,
                compile_us=cudnn_us * 1.25 if "compile" in against else None,
                rel_err=3e-4, tolerance=tolerance(problem), status="ok",
            ))
    if failing is not None:
        rows[failing].status, rows[failing].rel_err = "fail", 0.5
    return BenchResult(
        env=fake_env(), suite=suite, dtype="float16", layout="nhwc", epilogue="none", algo="auto",
        against=list(against), ceilings=timing.Ceilings(650.0, 3.3), rows=rows, repeat=3,
    )


def small_item(**overrides) -> BenchItem:
    case = shrink(get_suite("seed")[0])
    return BenchItem("seed", "seed000 small", case.problem(**overrides))


# --------------------------------------------------------------------- CLI wiring
@pytest.mark.parametrize("command", ["bench", "sweep", "info"])
def test_command_is_registered_with_the_cli_contract(command):
    module = importlib.import_module(COMMANDS[command])
    assert isinstance(module.HELP, str) and module.HELP
    parser = argparse.ArgumentParser()
    module.add_arguments(parser)
    assert callable(module.run)
    parser.parse_args([])  # every option has a default


def test_bench_options_parse_and_round_trip():
    parser = argparse.ArgumentParser()
    cli_bench.add_arguments(parser)
    words = ["--suite", "depthwise", "--dtype", "tf32", "--layout", "nchw", "--batch", "4", "--epilogue",
             "bias_add_relu", "--against", "cudnn,compile", "--algo", "all", "--json", "out/{device}.json",
             "--repeat", "5", "--plot", "p.png"]
    args = parser.parse_args(words)
    assert args.against == ["cudnn", "compile"] and args.batch == 4 and args.repeat == 5
    again = parser.parse_args(cli_bench.bench_argv(args))
    assert vars(again) == vars(args)  # the demo re-executes itself with these words
    with pytest.raises(SystemExit):
        parser.parse_args(["--against", "cudnn,tensorrt"])


# --------------------------------------------------------------------- math
def test_geomean():
    assert geomean([1.0, 4.0]) == pytest.approx(2.0)
    assert geomean([2.0, None, 8.0]) == pytest.approx(4.0)
    assert geomean([]) is None and geomean([None]) is None
    with pytest.raises(ValueError):
        geomean([1.0, 0.0])


def test_failed_rows_have_no_speedup_and_are_left_out_of_geomeans():
    result = fake_result(failing=1)
    failed = result.rows[1]
    assert not failed.ok and failed.speedup_vs_cudnn is None
    expected = geomean(r.cudnn_us / r.tileconv_us for r in result.rows if r.ok)
    assert report.geomean_speedup(result.rows) == pytest.approx(expected)
    data = result.to_json()
    assert data["geomean_speedup_vs_cudnn"] == pytest.approx(expected)
    assert data["geomean_by_suite"]["seed"] == pytest.approx(expected)
    assert data["rows"][1]["ok"] is False and data["rows"][1]["speedup_vs_cudnn"] is None


def test_geomean_takes_the_fastest_correct_algorithm_per_problem():
    result = fake_result(algos=("implicit_gemm", "direct"), failing=None)
    best = report.best_per_problem(result.rows)
    assert len(best) == len(get_suite("seed"))
    for row in best:
        peers_of = [r for r in result.rows if r.name == row.name]
        assert row.tileconv_us == min(r.tileconv_us for r in peers_of)
    by_algo = report.geomean_by_algo(result.rows)
    assert set(by_algo) == {"implicit_gemm", "direct"}
    assert report.geomean_speedup(result.rows) >= max(by_algo.values())


def test_geomean_per_suite():
    rows = fake_result("seed", failing=None).rows + fake_result("grouped", failing=None).rows
    by_suite = report.geomean_by_suite(rows)
    assert list(by_suite) == ["seed", "grouped"]
    for suite, value in by_suite.items():
        assert value == pytest.approx(geomean(r.speedup_vs_cudnn for r in rows if r.suite == suite))


def test_roofline_picks_the_bounding_ceiling():
    ceilings = timing.Ceilings(gemm_tflops=600.0, copy_tbps=3.0)  # ridge at 200 FLOP/byte
    # 1000 FLOP/byte, 1e12 FLOP in 5 ms = 200 TFLOP/s: compute bound, a third of 600.
    assert timing.roofline(10**12, 10**9, 5000.0, ceilings) == ("compute", pytest.approx(100 / 3))
    # 10 FLOP/byte: attainable 30 TFLOP/s; 1e10 FLOP in 1 ms = 10 TFLOP/s -> a third.
    bound, percent = timing.roofline(10**10, 10**9, 1000.0, ceilings)
    assert bound == "memory" and percent == pytest.approx(100 / 3)


def test_row_throughputs():
    problem = get_suite("seed")[0].problem()
    row = Row("seed", "seed000", problem, "auto", tileconv_us=178.0, cudnn_us=178.0, status="ok")
    assert row.tflops == pytest.approx(problem.flops / 178e-6 / 1e12)
    assert row.tflops == pytest.approx(665.2, rel=2e-3)  # ANCHORS.md: seed000 nhwc fp16
    assert row.gbps == pytest.approx(problem.min_bytes / 178e-6 / 1e9)
    assert row.speedup_vs_cudnn == pytest.approx(1.0)


# --------------------------------------------------------------------- timing wiring
def test_bench_us_is_a_median_of_event_medians_in_microseconds(monkeypatch):
    calls = []

    def fake_event_median_ms(fn):
        calls.append(fn)
        return [0.5, 0.2, 0.4][len(calls) - 1]

    monkeypatch.setattr(timing, "event_median_ms", fake_event_median_ms)
    assert timing.bench_us(print, repeat=3) == pytest.approx(400.0)
    assert calls == [print] * 3


@pytest.mark.gpu
def test_the_flush_hides_the_hosts_side_of_a_call():
    """A call whose host side (150 us of busy CPU) is far longer than its kernel is timed at
    its kernel's time: the host gets ahead of the GPU behind the L2 flush."""
    import time

    x = torch.zeros(1024, device="cuda")

    def slow_host_call():
        deadline = time.perf_counter() + 150e-6
        while time.perf_counter() < deadline:
            pass
        x.add_(1.0)

    assert timing.bench_us(slow_host_call) < 75.0


def test_ceiling_formulas_with_a_fake_timer():
    def one_ms(fn):
        fn()
        return 1000.0

    assert timing.measure_gemm_tflops(torch.float32, size=64, device="cpu", timer=one_ms) == pytest.approx(
        2 * 64**3 / 1e-3 / 1e12)
    assert timing.measure_copy_tbps(nbytes=2**20, device="cpu", timer=one_ms) == pytest.approx(2 * 2**20 / 1e-3 / 1e12)


def test_round_robin_interleaves_and_takes_medians():
    order, values = [], {"a": iter([3.0, 1.0, 2.0]), "b": iter([10.0, 30.0, 20.0])}

    def timer(label, call):
        order.append(label)
        return next(values[label])

    times, errors = runner.time_round_robin({"a": lambda: None, "b": lambda: None}, timer, repeat=3)
    assert order == ["a", "b"] * 3 and times == {"a": 2.0, "b": 20.0} and errors == {}


# --------------------------------------------------------------------- the runner on CPU
def test_runner_times_checks_and_survives_a_broken_peer(device, monkeypatch):
    def broken_compile(problem, inputs):
        raise RuntimeError("inductor failed [on purpose]")

    monkeypatch.setitem(peers.PEER_CALLS, "compile", broken_compile)
    fake_us = {"tileconv:auto": 8.0, "cudnn": 10.0}
    seen = []

    def timer(label, call):
        call()
        seen.append(label)
        return fake_us[label]

    item = small_item(epilogue="bias_add_relu")
    rows = runner.run_item(item, algos=["auto"], against=["cudnn", "compile"], device=device, timer=timer, repeat=2)
    (row,) = rows
    assert row.ok, row.notes
    assert row.rel_err < row.tolerance == tolerance(item.problem)
    assert (row.tileconv_us, row.cudnn_us, row.compile_us) == (8.0, 10.0, None)
    assert row.speedup_vs_cudnn == pytest.approx(1.25)
    assert any("compile" in note and "on purpose" in note for note in row.notes)
    assert seen == ["tileconv:auto", "cudnn"] * 2


def test_runner_marks_wrong_and_crashing_outputs(device, monkeypatch):
    def wrong(problem, x, weight, bias, residual, **_):
        return torch.zeros(problem.output_shape, dtype=problem.dtype, device=x.device)

    # algo 'auto' is timed through tileconv.conv2d itself, a named algorithm through conv2d_problem
    monkeypatch.setattr(runner, "conv2d_problem", wrong)
    monkeypatch.setattr(runner, "conv2d_as_called", wrong)
    (row,) = runner.run_item(small_item(), algos=["auto"], device=device, timer=lambda label, call: 5.0)
    assert row.status == "fail" and row.rel_err == pytest.approx(1.0) and row.speedup_vs_cudnn is None
    assert row.tileconv_us == 5.0  # still timed, but out of every speedup

    def crash(problem, x, weight, bias, residual, **_):
        raise RuntimeError("kernel crashed")

    monkeypatch.setattr(runner, "conv2d_problem", crash)
    monkeypatch.setattr(runner, "conv2d_as_called", crash)
    (row,) = runner.run_item(small_item(), algos=["auto"], device=device, timer=lambda label, call: 5.0)
    assert row.status == "error" and row.tileconv_us is None and "kernel crashed" in row.notes[0]


def test_runner_without_timer_only_checks(device):
    rows = runner.run_item(small_item(dtype=torch.float32), algos=runner.algorithms_for("all"), device=device,
                           timer=None, reference="float64")
    assert rows and all(row.ok and row.tileconv_us is None and row.cudnn_us is None for row in rows)


def test_gpu_session_flow_with_a_fake_timer(device, tmp_path, monkeypatch, allow_tf32):
    """What ``bench`` does on a GPU, end to end, with the clock and the ceilings faked."""
    from rich.console import Console

    from tileconv.bench import session
    from tileconv.bench.demo import demo_items
    from tileconv.bench.plot import plot_bench

    monkeypatch.setattr(torch.backends.cudnn, "benchmark", torch.backends.cudnn.benchmark)
    monkeypatch.setattr(session, "measure_ceilings", lambda dtype, device: timing.Ceilings(650.0, 3.3, dtype))
    parser = argparse.ArgumentParser()
    cli_bench.add_arguments(parser)
    args = parser.parse_args(["--repeat", "2", "--json", str(tmp_path / "{device}.json"), "--csv", str(tmp_path) + "/",
                              "--plot", str(tmp_path / "chart.png")])
    items = demo_items("seed", "float16", "nhwc", "none")
    console = Console(width=250, record=True)
    fake_us = {"tileconv:auto": 8.0, "cudnn": 10.0}
    result = session.measure(items, args, "seed", console, device=device,
                             timer=lambda label, call: fake_us[label])
    report.render_table(result, console, title="bench")
    session.write_outputs(result, args, console, "bench-seed", plot_bench)
    text = console.export_text()
    assert f"[{len(items)}/{len(items)}]" in text  # a log line per problem when not on a terminal
    assert "geomean speedup vs cuDNN: seed 1.25x" in text
    slug = result.env["device_slug"]
    data = json.loads((tmp_path / f"{slug}.json").read_text())
    assert data["geomean_speedup_vs_cudnn"] == pytest.approx(1.25) and data["ceilings"]["gemm_tflops"] == 650.0
    assert (tmp_path / f"bench-seed-{slug}.csv").exists() and (tmp_path / "chart.png").exists()
    assert session.exit_code(result) == 0


# --------------------------------------------------------------------- files
def test_json_schema(tmp_path):
    result = fake_result(against=("cudnn", "compile"))
    path = report.output_path(str(tmp_path) + "/", "nvidia-h100-80gb-hbm3", "bench-seed", ".json")
    assert path.name == "bench-seed-nvidia-h100-80gb-hbm3.json"
    report.write_json(result, path)
    data = json.loads(path.read_text())
    assert set(TOP_KEYS) <= set(data)
    assert set(data["ceilings"]) >= {"gemm_tflops", "copy_tbps"}
    assert (data["suite"], data["dtype"], data["layout"], data["epilogue"]) == ("seed", "float16", "nhwc", "none")
    assert data["device"] == "NVIDIA H100 80GB HBM3" and data["cudnn"] == 91900
    assert len(data["rows"]) == len(get_suite("seed"))
    for row in data["rows"]:
        assert set(ROW_KEYS) <= set(row)
        assert all(isinstance(row[key], list) and len(row[key]) == 2 for key in ("stride", "padding", "dilation"))
        assert isinstance(row["ok"], bool) and row["compile_us"] > 0
    first = data["rows"][0]
    assert (first["n"], first["c"], first["h"], first["w"], first["k"], first["r"], first["s"]) == (
        256, 256, 14, 14, 512, 3, 3)
    assert first["padding"] == [1, 1] and first["groups"] == 1 and first["algo"] == "auto"
    assert "seed" in data["geomean_by_suite"] and data["geomean_speedup_vs_compile"] > 0


def test_output_path_names_the_device(tmp_path):
    path = report.output_path(str(tmp_path / "r-{device}.json"), timing.slug("NVIDIA H200"), "x", ".json")
    assert path.name == "r-nvidia-h200.json"
    assert timing.slug("NVIDIA H100 80GB HBM3") == "nvidia-h100-80gb-hbm3"


def test_csv(tmp_path):
    result = fake_result()
    path = tmp_path / "rows.csv"
    report.write_csv(result, path)
    with path.open() as handle:
        reader = csv.DictReader(handle)
        lines = list(reader)
    assert tuple(reader.fieldnames) == CSV_KEYS and len(lines) == len(result.rows)
    assert lines[0]["name"] == "seed000" and lines[0]["stride_h"] == "1" and lines[0]["compile_us"] == ""
    assert float(lines[0]["tileconv_us"]) == pytest.approx(result.rows[0].tileconv_us)
    assert lines[1]["ok"] == "False" and lines[1]["speedup_vs_cudnn"] == ""


def test_table_renders_marks_and_footer():
    from rich.console import Console

    result = fake_result(against=("cudnn", "compile"))
    result.rows[2].notes.append("a note with [brackets] from an error message")
    console = Console(width=250, record=True)
    report.render_table(result, console, title="t")
    text = console.export_text()
    assert "FAIL" in text and "vs cuDNN" in text and "compile us" in text
    assert "geomean speedup vs cuDNN: seed" in text and "[brackets]" in text


@pytest.mark.parametrize("algos", [("auto",), ("implicit_gemm", "direct"), tuple(runner.algorithms_for("all"))])
def test_plot_bench_writes_a_png(tmp_path, algos):
    result = fake_result(algos=algos, against=("cudnn", "compile"))
    path = tmp_path / "bench.png"
    from tileconv.bench.plot import plot_bench

    plot_bench(result, path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 20_000


@pytest.mark.parametrize("record", ["nvidia-h200_depthwise_float16_nhwc.json", "nvidia-h200_resnet50_tf32_nhwc.json",
                                    "nvidia-h200_depthwise_float16_nhwc_wgrad.json"])
def test_a_recorded_run_reads_back_and_replots(tmp_path, record):
    """``bench --replot JSON --plot P.png``: a run of record (benchmarks/results/) read back
    gives the same JSON rows (times, speedups, roofline figures) and its chart, with no GPU."""
    path = REPO_ROOT / "benchmarks" / "results" / record
    data = json.loads(path.read_text())
    again = BenchResult.from_json(data).to_json()
    for key in ("device", "date", "suite", "dtype", "layout", "epilogue", "geomean_speedup_vs_cudnn"):
        assert again[key] == data[key], key
    for old, new in zip(data["rows"], again["rows"], strict=True):
        for key in ("name", "tileconv_us", "cudnn_us", "speedup_vs_cudnn", "tflops", "gbps", "ok", "pass",
                    "percent_of_ceiling", "min_bytes"):
            assert new[key] == pytest.approx(old[key]) if isinstance(old[key], float) else new[key] == old[key], key
    png = tmp_path / "replot.png"
    assert cli_bench.replot(str(path), str(png)) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000
    assert cli_bench.replot(str(path), None) == 2  # --plot is required
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({**data, "rows": [{**data["rows"][0], "epilogue": "bias_gelu"}]}))
    assert cli_bench.replot(str(broken), str(png)) == 2  # an epilogue the benchmark never runs: said, not guessed


def test_all_algorithms_read_as_the_seed_ladder_then_production():
    """``--algo all``: the ladder's steps first, in step order, then implicit_gemm (its last
    step) and the other production kernels; in the chart each step has its own color."""
    from tileconv.bench.plot import _series
    from tileconv.kernels.ladder import LADDER

    algos = runner.algorithms_for("all")
    assert tuple(algos[: len(LADDER)]) == LADDER and algos[len(LADDER)] == "implicit_gemm"
    assert sorted(algos) == sorted(tileconv_algorithms())
    series = _series(fake_result(algos=(*reversed(LADDER), *algos[len(LADDER):])))  # steps in any row order
    assert [algo for _, _, algo in series if algo is not None] == algos
    colors = [color for _, color, _ in series]
    assert len(set(colors)) == len(colors), colors


def tileconv_algorithms() -> list[str]:
    from tileconv.kernels import ALGORITHMS

    return list(ALGORITHMS)


def test_plot_sweep_writes_a_png(tmp_path):
    from tileconv.bench.plot import plot_sweep

    items = cli_sweep.sweep_items(torch.float16, "nhwc", False)
    rows = []
    for item in items:
        p = item.problem
        rows.append(Row("sweep", item.name, p, "auto", status="ok", rel_err=1e-4,
                        tileconv_us=p.flops / (600e12 * p.c / (p.c + 256)) * 1e6,
                        cudnn_us=p.flops / (650e12 * p.c / (p.c + 200)) * 1e6))
    result = BenchResult(env=fake_env(), suite="sweep", dtype="float16", layout="nhwc", epilogue="none",
                         algo="auto", against=["cudnn"], ceilings=timing.Ceilings(650.0, 3.3), rows=rows)
    path = tmp_path / "sweep.png"
    plot_sweep(result, path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# --------------------------------------------------------------------- sweep, info, demo
def test_sweep_problems():
    items = cli_sweep.sweep_items(torch.float16, "nhwc", False)
    assert [item.problem.c for item in items] == [2**e for e in range(5, 14)]
    for item in items:
        p = item.problem
        assert (p.gemm_m, p.k, p.r, p.s, p.gemm_k) == (4096, 4096, 1, 1, p.c)


def test_demo_shapes_are_small_and_keep_their_kind():
    for case in get_suite("all"):
        small = shrink(case)
        assert (small.r, small.s, small.stride, small.padding, small.dilation) == (
            case.r, case.s, case.stride, case.padding, case.dilation)
        assert small.n == 1 and small.c // small.groups <= 16 and small.h <= max(12, small.r)
        assert (small.groups == small.c) == (case.groups == case.c)  # depthwise stays depthwise
        assert (small.groups > 1) == (case.groups > 1)
        assert small.problem().out_h > 0
    assert 1 <= len(demo_cases("seed")) <= 3 and len(demo_cases("all")) <= 15


@pytest.mark.skipif(HAS_CUDA, reason="the no-GPU path")
def test_sweep_without_gpu_says_so(capsys):
    parser = argparse.ArgumentParser()
    cli_sweep.add_arguments(parser)
    assert cli_sweep.run(parser.parse_args([])) == 1
    assert "No CUDA GPU" in capsys.readouterr().out


@pytest.mark.skipif(HAS_CUDA, reason="the no-GPU path")
def test_info_without_gpu(tmp_path, capsys):
    assert cli_info.run(argparse.Namespace(json=str(tmp_path / "info.json"))) == 0
    out = capsys.readouterr().out
    assert "no CUDA device" in out and "tuning cache:" in out and f"torch     {torch.__version__}" in out
    data = json.loads((tmp_path / "info.json").read_text())
    assert data["gpu"] is None and data["ceilings"] is None and data["tileconv"]
    # Every algorithm listed; under the interpreter the Gluon kernels say why they do not run here.
    from tileconv.kernels import ALGORITHMS, BACKWARD_ALGORITHMS

    listed = data["algorithms"]
    assert [a["name"] for a in listed["forward"]] == list(ALGORITHMS)
    assert [a["name"] for a in listed["backward"]] == list(BACKWARD_ALGORITHMS)
    needs = {a["name"]: a["needs"] for a in listed["forward"] + listed["backward"]}
    assert "interpreter" in needs["depthwise_halo"] and "interpreter" in needs["implicit_gemm_ws"]
    assert needs["implicit_gemm"] is None and needs["depthwise_toeplitz"] is None
    assert "depthwise_halo: not on this machine" in out


@pytest.mark.skipif(HAS_CUDA, reason="the no-GPU path")
def test_bench_without_gpu_runs_the_interpreter_demo(tmp_path):
    """Started without TRITON_INTERPRET, bench must re-execute itself with it and check, not time."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    json_path, csv_path = tmp_path / "demo.json", tmp_path / "demo.csv"
    done = subprocess.run(
        [sys.executable, "-m", "tileconv.bench.cli_bench", "--suite", "seed", "--epilogue", "bias_relu",
         "--json", str(json_path), "--csv", str(csv_path), "--plot", str(tmp_path / "no.png")],
        cwd=tmp_path, env=dict(env, PYTHONPATH=str(REPO_ROOT)), capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("No CUDA GPU") and "interpreter" in lines[0]
    assert "tileconv us" not in done.stdout and "cuDNN us" not in done.stdout
    data = json.loads(json_path.read_text())
    assert data["rows"] and all(row["ok"] and row["tileconv_us"] is None for row in data["rows"])
    assert all(row["rel_err"] < row["tolerance"] for row in data["rows"])
    assert all(row["epilogue"] == "bias_relu" for row in data["rows"])
    assert csv_path.exists() and not (tmp_path / "no.png").exists()
    assert math.isfinite(data["rows"][0]["rel_err"])


# --------------------------------------------------------------------- --pass
@pytest.mark.parametrize("pass_name", ["dgrad", "wgrad", "fwd+bwd"])
def test_runner_times_and_checks_a_backward_pass(pass_name, device):
    """A backward pass: tileconv's dgrad/wgrad kernels checked against the float64
    reference of the same gradients, and the cudnn peer (aten.convolution_backward) timed."""
    seen = []

    def timer(label, call):
        outputs = call()
        seen.append((label, len(outputs)))
        return {"tileconv:auto": 8.0, "cudnn": 12.0}[label]

    item = small_item(dtype=torch.float32, epilogue="bias_relu")
    (row,) = runner.run_item(item, algos=["auto"], against=["cudnn", "compile"], device=device, timer=timer,
                             reference="float64", pass_name=pass_name)
    assert row.ok, row.notes
    assert row.pass_name == pass_name and row.speedup_vs_cudnn == pytest.approx(1.5)
    outputs = {"dgrad": 1, "wgrad": 1, "fwd+bwd": 4}[pass_name]  # fwd+bwd: out, dx, dw, db
    assert seen == [("tileconv:auto", outputs), ("cudnn", outputs)]
    assert any("compile" in note and "forward pass only" in note for note in row.notes)
    assert row.flops == item.problem.flops * (3 if pass_name == "fwd+bwd" else 1)
    wrong = runner._compare_all([torch.zeros(1)], [torch.ones(1)], [1e-3])
    assert not wrong.ok


def test_bench_pass_option_on_the_cpu_path(tmp_path):
    """bench --pass wgrad without a GPU: the interpreter demo checks the wgrad kernels and
    the JSON rows say which pass they are."""
    parser = argparse.ArgumentParser()
    cli_bench.add_arguments(parser)
    args = parser.parse_args(["--suite", "depthwise", "--pass", "fwd+bwd", "--dtype", "float32"])
    assert args.pass_ == "fwd+bwd" and vars(parser.parse_args(cli_bench.bench_argv(args))) == vars(args)
    with pytest.raises(SystemExit):
        parser.parse_args(["--pass", "bwd"])
    if HAS_CUDA:
        pytest.skip("the no-GPU demo path")
    json_path = tmp_path / "wgrad.json"
    code = cli_bench.main(["--suite", "grouped", "--pass", "wgrad", "--dtype", "float32", "--json", str(json_path)])
    assert code == 0
    data = json.loads(json_path.read_text())
    assert data["rows"] and all(row["pass"] == "wgrad" and row["ok"] for row in data["rows"])


def test_case_filter_names_the_suite_cases_when_nothing_matches(capsys):
    assert cli_bench.main(["--suite", "seed", "--case", "no-such-case"]) == 2
    err = capsys.readouterr().err
    assert "--case 'no-such-case'" in err and "seed001 c32 hw64 k128" in err
