"""``python -m tileconv verify``: draws over every option, is reproducible, fails when it should."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import torch

import tileconv
import tileconv.functional as functional
from tileconv import verify
from tileconv.cli import build_parser

REPO_ROOT = Path(__file__).resolve().parents[1]


def _args(device: str, **overrides) -> argparse.Namespace:
    parser, _ = build_parser()
    args = parser.parse_args(["verify", "--device", device])
    for key, value in overrides.items():
        setattr(args, key, value)
    return args


def test_draws_cover_every_option():
    """Over 400 draws every option value turns up, within the CPU size limits."""
    limits = verify.LIMITS["cpu"]
    cases = [verify.draw_case(7, i, limits) for i in range(400)]
    seen = Counter()
    for c in cases:
        assert 1 <= c.n <= limits.batch and 1 <= c.h <= limits.image and 1 <= c.w <= limits.image
        assert 1 <= c.c <= limits.channels and 1 <= c.k <= limits.channels * 3
        seen.update([("dtype", c.dtype), ("layout", c.layout), ("bias", c.bias), ("residual", c.residual),
                     ("stride", c.stride), ("dilation", c.dilation), ("kernel", (c.r, c.s))])
        seen[("padding", c.padding if isinstance(c.padding, str) else "number")] += 1
        if c.groups == 1:
            seen[("groups", "dense")] += 1
        elif c.groups == c.c:
            seen[("groups", f"depthwise x{c.k // c.c}")] += 1
        else:
            seen[("groups", "grouped")] += 1
        act = c.activation[0] if isinstance(c.activation, tuple) else c.activation
        seen[("activation", act)] += 1
        seen[("odd", c.h % 2 == 1 and c.w % 2 == 1)] += 1
    expected = (
        [("dtype", d) for d in verify.DTYPE_CHOICES] + [("layout", "nchw"), ("layout", "nhwc")]
        + [("bias", True), ("bias", False), ("residual", True), ("residual", False)]
        + [("stride", s) for s in verify.STRIDES] + [("dilation", d) for d in verify.DILATIONS]
        + [("kernel", k) for k in verify.KERNELS]
        + [("padding", "same"), ("padding", "valid"), ("padding", "number")]
        + [("groups", g) for g in ("dense", "grouped", "depthwise x1", "depthwise x2", "depthwise x3")]
        + [("activation", a) for a in (None, *tileconv.ACTIVATION_NAMES)] + [("odd", True)]
    )
    missing = [key for key in expected if seen[key] == 0]
    assert not missing, f"never drawn in 400 cases: {missing}"


def test_draw_is_reproducible_per_case():
    limits = verify.LIMITS["cuda"]
    first = [verify.draw_case(11, i, limits) for i in range(20)]
    assert first == [verify.draw_case(11, i, limits) for i in range(20)]
    assert verify.draw_case(11, 5, limits) == first[5]  # case 5 alone (--only 5) is the same case
    assert first != [verify.draw_case(12, i, limits) for i in range(20)]


def test_forced_algorithm_draws_only_what_it_computes():
    limits = verify.LIMITS["cpu"]
    for i in range(30):
        case = verify.draw_case(3, i, limits, "depthwise")
        assert case.groups == case.c, case
    # A channels_last-only kernel: the draw reads each case in its own layout and dtype (it once
    # read every case as an NCHW float32 tensor, so forcing gemm_1x1 never drew a case).
    for i in range(30):
        case = verify.draw_case(3, i, limits, "gemm_1x1")
        assert case.layout == "nhwc" and (case.r, case.s) == (1, 1) and case.groups == 1, case


def test_run_case_is_deterministic_and_passes(device: str):
    limits = verify.LIMITS[device]
    for index in range(3):
        case = verify.draw_case(5, index, limits)
        first, second = verify.run_case(case, device, 5), verify.run_case(case, device, 5)
        assert first.ok, first.error or first.message
        assert first.rel_err == second.rel_err and first.algorithm == second.algorithm


def test_run_reports_failures_with_exit_code_1(device: str, monkeypatch, capsys, tmp_path):
    """A wrong conv2d (every output off by 0.5) makes every case fail, the exit code 1, the
    worst case printed, and the JSON say so."""
    real = functional.conv2d

    def wrong(*args, **kwargs):
        return real(*args, **kwargs) + 0.5

    monkeypatch.setattr(functional, "conv2d", wrong)
    path = tmp_path / "results.json"
    code = verify.run(_args(device, cases=3, seed=4, json=path))
    out = capsys.readouterr().out
    assert code == 1
    assert "Worst case (FAILED)" in out and "0 passed, 3 failed" in out and "replay" in out
    data = json.loads(path.read_text())
    assert data["failed"] == 3 and not any(row["ok"] for row in data["results"])


def test_run_passes_with_exit_code_0_and_writes_json(device: str, capsys, tmp_path):
    path = tmp_path / "sub" / "results.json"
    code = verify.run(_args(device, cases=4, seed=9, json=path, algo="each"))
    out = capsys.readouterr().out
    assert code == 0, out
    assert "4 passed, 0 failed" in out and "err/tol" in out
    data = json.loads(path.read_text())
    assert data["cases"] == 4 and data["passed"] == 4 and data["seed"] == 9
    row = data["results"][0]
    for key in ("problem", "dtype", "layout", "epilogue", "algorithm", "config", "rel_err", "tolerance", "ok"):
        assert key in row, key
    assert row["algorithm"] in tileconv.ALGORITHMS and row["rel_err"] <= row["tolerance"]


def test_backward_pass_checks_both_gradients_over_the_backward_algorithms(device: str, capsys, tmp_path):
    """verify --pass bwd: the input and weight gradients of random convolutions, 'each'
    rotating through the backward algorithms that compute a case; all pass, and the JSON
    carries both gradients' errors."""
    path = tmp_path / "bwd.json"
    code = verify.run(_args(device, cases=8, seed=3, json=path, algo="each", pass_="bwd"))
    out = capsys.readouterr().out
    assert code == 0, out
    assert "8 passed, 0 failed" in out and "gradients (dgrad, wgrad)" in out and "--pass bwd" in out
    data = json.loads(path.read_text())
    assert data["pass"] == "bwd" and data["passed"] == 8
    assert all(row["dgrad_rel_err"] is not None and row["wgrad_rel_err"] is not None for row in data["results"])
    assert len({row["algorithm"] for row in data["results"]}) >= 2


def test_backward_pass_catches_a_wrong_gradient(device: str, monkeypatch, capsys):
    """A weight gradient off by 5% of its largest value fails every case of verify --pass bwd."""
    real = functional.conv2d_backward_problem

    def wrong(*args, **kwargs):
        grad_x, grad_w = real(*args, **kwargs)
        return grad_x, grad_w + 0.05 * grad_w.abs().max()

    monkeypatch.setattr(functional, "conv2d_backward_problem", wrong)
    assert verify.run(_args(device, cases=3, seed=5, pass_="bwd")) == 1
    assert "0 passed, 3 failed" in capsys.readouterr().out


def test_bad_arguments_exit_2(device: str, capsys):
    assert verify.run(_args(device, algo="winograd")) == 2
    assert "--algo='winograd'" in capsys.readouterr().out
    assert verify.run(_args(device, cases=0)) == 2


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU re-exec; a GPU machine verifies on cuda")
def test_cli_restarts_itself_under_the_interpreter(tmp_path):
    """Without TRITON_INTERPRET the command re-runs itself with it set, and exits 0."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), env.get("PYTHONPATH", "")])
    path = tmp_path / "v.json"
    result = subprocess.run(
        [sys.executable, "-m", "tileconv", "verify", "--cases", "3", "--seed", "1", "--json", str(path)],
        env=env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Triton interpreter" in result.stdout and "3 passed, 0 failed" in result.stdout
    assert json.loads(path.read_text())["passed"] == 3


# Random problems beyond the pairwise set of test_conv2d: a fixed draw (stable ids), fresh
# inputs each session, every algorithm in turn ('each').
SWEEP_SEED, SWEEP_CASES = 20240611, 60


@pytest.mark.parametrize("index", range(SWEEP_CASES))
def test_random_problem(index: int, device: str, seed: int):
    case = verify.draw_case(SWEEP_SEED, index, verify.LIMITS["cpu"])
    result = verify.run_case(case, device, seed, algo="each")
    assert result.ok, (
        f"verify --seed {SWEEP_SEED} --only {index} --algo each: {result.problem} {case.dtype} {result.layout} "
        f"{result.epilogue} {result.algorithm} {result.config} (input seed {seed}): {result.error or result.message}"
    )


def test_forced_algorithm_draws_its_epilogue_too(monkeypatch):
    """The draw checks the forced algorithm against the problem with the case's epilogue: a kernel
    that adds no residual (implicit_gemm_frame, its Hopper check faked away) never gets a residual
    case (grouped_frame's first GPU verify was drawn one, session 55)."""
    from tileconv.kernels import launch

    monkeypatch.setattr(launch, "_ws_machine_reason", lambda problem: None)
    limits = verify.LIMITS["cuda"]
    cases = [verify.draw_case(55, i, limits, "implicit_gemm_frame") for i in range(12)]
    assert not any(case.residual for case in cases), cases
    assert any(case.bias for case in cases) and all(case.layout == "nhwc" for case in cases)
