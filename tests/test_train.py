"""``bench --train`` and ``benchmarks/ddp_train.py`` on the CPU: autocast, the verdict, the JSON
rows, the no-GPU demo, and the DDP script's logic on 2 gloo processes.

The GPU runs (timings, ResNet-50, NCCL) cannot run here; the same functions run on the CPU
with the tiny model. Subprocesses use PyTorch's fallback (TRITON_INTERPRET=0) for speed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import tileconv
from tileconv.bench import cli_bench
from tileconv.bench import train as tr

REPO_ROOT = Path(__file__).resolve().parents[1]
HAS_CUDA = torch.cuda.is_available()
DEVICE = "cuda" if HAS_CUDA else "cpu"


def fallback_env() -> dict:
    return {**os.environ, "TRITON_INTERPRET": "0", "OMP_NUM_THREADS": "1"}


def test_conv2d_under_autocast_casts_like_f_conv2d():
    """bf16 activations meet float32 weights under autocast: tileconv casts as F.conv2d does,
    and the gradient reaches the float32 weight in float32."""
    torch.manual_seed(0)
    conv = tileconv.nn.Conv2d(4, 8, 3, padding=1).to(DEVICE)
    ref = torch.nn.Conv2d(4, 8, 3, padding=1).to(DEVICE)
    ref.load_state_dict(conv.state_dict())
    x = torch.randn(2, 4, 6, 6, device=DEVICE).to(torch.bfloat16)
    with torch.autocast(DEVICE, dtype=torch.bfloat16):
        out, expected = conv(x), ref(x)
    assert out.dtype == expected.dtype == torch.bfloat16
    diff = (out.float() - expected.float()).abs().max().item()
    assert diff <= 0.05 * max(expected.abs().max().item(), 1.0), f"max |tileconv - F.conv2d| = {diff:.3g} under autocast"
    out.float().sum().backward()
    assert conv.weight.grad is not None and conv.weight.grad.dtype == torch.float32


def test_train_option_round_trips():
    import argparse

    parser = argparse.ArgumentParser()
    cli_bench.add_arguments(parser)
    args = parser.parse_args(["--train", "resnet18", "--steps", "20", "--batch", "8", "--lr", "0.05"])
    assert (args.train, args.steps, args.batch, args.lr) == ("resnet18", 20, 8, 0.05)
    argv = cli_bench.bench_argv(args)
    assert argv[argv.index("--train") + 1] == "resnet18" and argv[argv.index("--steps") + 1] == "20"
    assert tr.default_lr(32) == pytest.approx(0.0125)


def test_fixed_batches_are_the_same_in_every_process_and_slice_by_rank():
    a = tr.fixed_batches(3, 4, 8, 10, seed=7)
    b = tr.fixed_batches(3, 4, 8, 10, seed=7)
    assert all(torch.equal(x[0], y[0]) and torch.equal(x[1], y[1]) for x, y in zip(a, b, strict=True))
    assert a[0][0].is_contiguous(memory_format=torch.channels_last) and not torch.equal(a[0][0], a[1][0])


def test_judge_against_pytorch_spread():
    base = [2.0 - 0.01 * i for i in range(100)]
    runs = {
        "pytorch": tr.RunResult("pytorch", base),
        "pytorch_rerun": tr.RunResult("pytorch_rerun", [v + 0.02 for v in base]),
        "pytorch_fp32": tr.RunResult("pytorch_fp32", [v - 0.01 for v in base]),
        "tileconv": tr.RunResult("tileconv", [v + 0.025 for v in base]),
    }
    verdict = tr.judge(runs)
    assert verdict.ok and verdict.max_diff_tail == pytest.approx(0.025) and verdict.noise_tail == pytest.approx(0.02)
    runs["tileconv"] = tr.RunResult("tileconv", [v + 0.05 for v in base])
    assert not tr.judge(runs).ok
    runs["tileconv"] = tr.RunResult("tileconv", [*base[:-1], float("nan")])
    assert not tr.judge(runs).ok and "FAIL" in tr.judge(runs).line()


def test_the_gpu_path_on_the_cpu_json_rows_and_plot(tmp_path):
    """Every run of RUNS with the tiny model on the CPU (2 steps, batch 2: tileconv's run goes
    through the interpreter here), then the JSON rows and the plot."""
    initial, size, classes = tr.initial_model("tiny", 0)
    batches = tr.fixed_batches(2, 2, size, classes, seed=1, device=DEVICE)
    runs = {kind: tr.run_kind(initial, kind, batches, 2, 0.01, DEVICE) for kind in tr.RUNS}
    for run in runs.values():
        assert len(run.losses) == 2 and all(v == v for v in run.losses), run
    assert abs(runs["tileconv"].losses[0] - runs["pytorch"].losses[0]) < 0.05
    verdict = tr.judge(runs, tail=2)
    data = tr.result_json("tiny", 2, 2, 0.01, 0, runs, verdict, {"device": "cpu", "device_slug": "cpu"})
    data = json.loads(json.dumps(data))  # JSON-clean
    assert [row["name"] for row in data["rows"]] == list(tr.RUNS)
    assert set(data["rows"][0]) >= {"name", "median_step_ms", "losses", "step_ms", "profile"}
    assert data["suite"] == "train" and data["verdict"]["tail_steps"] == 2 and isinstance(data["ok"], bool)
    pytest.importorskip("matplotlib")
    tr.plot_losses(runs, tmp_path / "train.png", "tiny", tail=2)
    assert (tmp_path / "train.png").stat().st_size > 0


def test_interleaved_runs_follow_the_runs_made_one_after_the_other():
    """run_interleaved steps its runs in turn, each with its own model and optimizer: every
    run's losses are those of the same run made alone (PyTorch's fallback on the CPU, where
    both are deterministic), and each step of each run is timed on a GPU."""
    initial, size, classes = tr.initial_model("tiny", 0)
    batches = tr.fixed_batches(2, 2, size, classes, seed=1, device="cpu")
    interleaved = tr.run_interleaved(initial, ("pytorch", "pytorch_rerun"), batches, 3, 0.01, "cpu")
    alone = tr.run_kind(initial, "pytorch", batches, 3, 0.01, "cpu")
    assert set(interleaved) == {"pytorch", "pytorch_rerun"}
    assert interleaved["pytorch"].losses == alone.losses == interleaved["pytorch_rerun"].losses
    assert interleaved["pytorch"].step_ms is None  # no CUDA events on the CPU


def test_profiled_steps_report_wall_and_kernel_time():
    """profile_steps: the host's wall time per step always; on a GPU the device activities
    (kernels, memsets) per step and the largest of them, sorted, within the wall time."""
    initial, size, classes = tr.initial_model("tiny", 0)
    batches = tr.fixed_batches(2, 2, size, classes, seed=1, device=DEVICE)
    model = tr.prepare(initial, "pytorch", DEVICE)
    prof = tr.profile_steps(model, batches, 0.01, torch.bfloat16, steps=2, top=3)
    assert prof.steps == 2 and prof.wall_ms > 0
    if DEVICE == "cpu":
        assert prof.kernel_ms == 0 and prof.launches == 0 and prof.top == []
    else:
        assert 0 < prof.kernel_ms <= prof.wall_ms * 1.05 and 0 < len(prof.top) <= 3
        assert [ms for _, ms, _ in prof.top] == sorted((ms for _, ms, _ in prof.top), reverse=True)
    json.dumps(tr.asdict(prof))


@pytest.mark.skipif(HAS_CUDA, reason="the no-GPU demo")
def test_bench_train_without_gpu_runs_the_tiny_demo(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "tileconv", "bench", "--train", "resnet50", "--json", str(tmp_path) + "/"],
        cwd=REPO_ROOT, env=fallback_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("No CUDA GPU: no timings"), proc.stdout
    assert " ms" not in proc.stdout
    data = json.loads(next(tmp_path.glob("bench-train-tiny-*.json")).read_text())
    assert data["ok"] is True and data["steps"] == tr.CPU_STEPS
    assert {row["name"] for row in data["rows"]} == {"pytorch", "tileconv"}
    assert all(row["step_ms"] is None and len(row["losses"]) == tr.CPU_STEPS for row in data["rows"])


@pytest.mark.skipif(HAS_CUDA, reason="the gloo smoke test; on a GPU run torchrun by hand")
def test_ddp_script_on_two_gloo_processes(tmp_path):
    """torchrun, 2 CPU processes, gloo, the fallback: the loss curves agree, rank 0 writes the JSON,
    the multicast variables hold their required values."""
    import socket

    out = tmp_path / "ddp.json"
    with socket.socket() as sock:  # a free port for the rendezvous
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = fallback_env()
    for name in ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS"):
        env.pop(name, None)
    proc = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", "--master_addr=127.0.0.1", f"--master_port={port}",
         "benchmarks/ddp_train.py", "--model", "tiny", "--steps", "3", "--batch", "2", "--json", str(out)],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    data = json.loads(out.read_text())
    assert data["world_size"] == 2 and data["backend"] == "gloo" and data["batch"] == 4
    assert data["multicast_env"] == {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
                                     "NVSHMEM_DISABLE_NVLS": "1"}
    rows = {row["name"]: row for row in data["rows"]}
    assert set(rows) == {"pytorch", "pytorch_rerun", "pytorch_nudged", "tileconv"}
    assert rows["tileconv"]["median_step_ms_per_gpu"] == [None, None]
    diff = max(abs(a - b) for a, b in zip(rows["tileconv"]["losses"], rows["pytorch"]["losses"], strict=True))
    assert diff < 1e-3, f"max |tileconv - pytorch| = {diff:.3g} under DDP on the fallback"


def test_ddp_script_refuses_multicast(tmp_path):
    env = {**fallback_env(), "NCCL_NVLS_ENABLE": "1"}
    proc = subprocess.run([sys.executable, "benchmarks/ddp_train.py", "--model", "tiny"], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "NCCL_NVLS_ENABLE" in proc.stderr
