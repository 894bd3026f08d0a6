"""The training step of ``bench --train`` under torch.distributed: DDP over NCCL, one GPU per process.

    torchrun --nproc_per_node=2 benchmarks/ddp_train.py --model resnet50 --steps 200 --batch 32 --json out.json

Every rank builds the same initial model (``torch.manual_seed``; DDP also broadcasts rank 0's
weights and buffers), and the same fixed random data as ``bench --train`` for the *global*
batch (``--batch`` per GPU times the world size), of which rank r trains on slice r. Runs,
each from a fresh copy wrapped in ``DistributedDataParallel``:

- ``pytorch``: PyTorch's convolutions (cuDNN), bf16 autocast, channels_last, SGD;
- ``pytorch_rerun``: the same again: PyTorch's own run-to-run spread under DDP;
- ``pytorch_nudged``: PyTorch from initial weights a few float32 ulps away (``bench --train``'s
  NUDGE): the spread of chaotic training itself, which deterministic reruns do not show;
- ``tileconv``: ``tileconv.convert(model, fuse=False)``: only the convolutions differ.

Loss per step: the mean of the ranks' losses (the global batch's loss when BatchNorm is
synchronised; with the default per-GPU BatchNorm each GPU normalises with its own slice's
statistics, as DDP training usually does: ``--sync-bn`` makes the step the single-GPU step at
batch ``--batch`` x world size, the same arithmetic up to rounding). Step time per GPU: CUDA
events on each rank, median after the warm-up steps; rank 0 reports every rank's.

``--single PATH``: a ``bench --train`` JSON of the same model, steps and seed at batch
``--batch`` x world size; rank 0 compares the DDP loss curves with it, judged like ``bench
--train`` against PyTorch's spread (both the single run's and this run's).

tileconv inside it: each process has its own tileconv state (the dispatch choices are keyed
by problem and ``torch.device``, the tuning cache is read per process and keyed by GPU model
name, so two H200s share measured winners; the weight re-layout cache is per process), and
each process sets its own device before any kernel runs, so Triton launches on it.

Without CUDA the same logic runs on the gloo backend on the CPU (tileconv's PyTorch
fallback), without timings: the smoke test of tests/test_train.py.

NVLink multicast stays off: NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1 and
NVSHMEM_DISABLE_NVLS=1 are set when absent and must hold those values when present.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
from pathlib import Path

# Multicast off, before torch (and NCCL) is imported: set when absent, checked when present.
MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
for _name, _value in MULTICAST_OFF.items():
    os.environ.setdefault(_name, _value)
    if os.environ[_name] != _value:
        raise SystemExit(f"{_name}={os.environ[_name]!r}: this machine needs {_name}={_value} (NVLink multicast "
                         "must stay off); leave it as it was set")

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # run from a checkout without pip install
    sys.path.insert(0, str(REPO_ROOT))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

from tileconv.bench import train as tr  # noqa: E402

DDP_RUNS = ("pytorch", "pytorch_rerun", "pytorch_nudged", "tileconv")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="resnet50", help="torchvision model name, or tiny (default resnet50)")
    parser.add_argument("--steps", type=int, default=tr.DEFAULT_STEPS)
    parser.add_argument("--batch", type=int, default=tr.DEFAULT_BATCH, help="images per GPU (default 32)")
    parser.add_argument("--lr", type=float, default=None, help="default 0.1 * global batch / 256")
    parser.add_argument("--seed", type=int, default=tr.SEED)
    parser.add_argument("--sync-bn", action="store_true", help="SyncBatchNorm: the single-GPU step at the global batch")
    parser.add_argument("--single", metavar="PATH", help="a bench --train JSON at the global batch to compare with")
    parser.add_argument("--json", metavar="PATH", help="rank 0 writes the results here")
    return parser.parse_args(argv)


def setup() -> tuple[int, int, torch.device]:
    """(rank, world size, this process's device); NCCL on CUDA, gloo on the CPU."""
    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    if torch.cuda.is_available():
        local = int(os.environ.get("LOCAL_RANK", rank))
        torch.cuda.set_device(local)  # before any kernel: Triton launches on the current device
        device = torch.device("cuda", local)
        dist.init_process_group("nccl", device_id=device)
    else:
        device = torch.device("cpu")
        dist.init_process_group("gloo")
    return rank, world, device


def run_ddp(initial, kind: str, batches, steps: int, lr: float, device, sync_bn: bool) -> tr.RunResult:
    """One run of ``kind`` under DDP; losses averaged over the ranks, this rank's step times."""
    model = tr.prepare(initial, kind, device)
    if sync_bn:
        model = torch.nn.SyncBatchNorm.convert_sync_batchnorm(model)
    ddp = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    losses, step_ms = tr.train(ddp, batches, steps, lr, torch.bfloat16)
    dist.all_reduce(losses, op=dist.ReduceOp.AVG if device.type == "cuda" else dist.ReduceOp.SUM)
    if device.type != "cuda":  # gloo has no AVG
        losses /= dist.get_world_size()
    return tr.RunResult(kind, losses.cpu().tolist(), step_ms)


def gather_step_times(run: tr.RunResult, world: int) -> list[float | None]:
    """Every rank's median step time (ms; None without CUDA), in rank order."""
    medians: list[float | None] = [None] * world
    dist.all_gather_object(medians, run.median_step_ms)
    return medians


def compare_single(path: str, runs: dict[str, tr.RunResult], global_batch: int, args) -> dict:
    """The DDP curves against a single-GPU ``bench --train`` JSON at the global batch."""
    single = json.loads(Path(path).read_text())
    mismatch = [f"{key} {single.get(key)} != {ours}" for key, ours in
                (("model", args.model), ("steps", args.steps), ("batch", global_batch), ("seed", args.seed))
                if single.get(key) != ours]
    if mismatch:
        return {"path": path, "comparable": False, "why": "; ".join(mismatch)}
    rows = {row["name"]: tr.RunResult(row["name"], row["losses"]) for row in single["rows"]}
    result = {"path": path, "comparable": True, "sync_bn": args.sync_bn}
    for name in ("tileconv", "pytorch"):
        combined = {"pytorch": rows["pytorch"], f"ddp_{name}": runs[name]}
        combined.update({n: r for n, r in rows.items() if n.startswith("pytorch_")})
        combined["pytorch_ddp"] = runs["pytorch"] if name == "tileconv" else runs["pytorch_rerun"]
        verdict = tr.judge(combined, subject=f"ddp_{name}")
        result[f"ddp_{name}_vs_single_pytorch"] = {"max_diff": verdict.max_diff, "max_diff_tail": verdict.max_diff_tail,
                                                    "noise": verdict.noise, "ok": verdict.ok}
    return result


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.sync_bn and not torch.cuda.is_available():
        raise SystemExit("--sync-bn needs CUDA (PyTorch's SyncBatchNorm runs on GPUs only)")
    rank, world, device = setup()
    try:
        if device.type == "cuda":
            torch.backends.cudnn.benchmark = True
        initial, size, classes = tr.initial_model(args.model, args.seed)
        global_batch = args.batch * world
        lr = args.lr or tr.default_lr(global_batch)
        every = tr.fixed_batches(tr.DISTINCT_BATCHES, global_batch, size, classes, args.seed + 1)
        mine = slice(rank * args.batch, (rank + 1) * args.batch)
        batches = [(images[mine].to(device), labels[mine].to(device)) for images, labels in every]
        del every
        if rank == 0:
            print(f"DDP {dist.get_backend()} x {world}: {args.model}, batch {args.batch} per GPU ({global_batch} in all), "
                  f"{args.steps} steps, SGD lr {lr:g}, bf16 autocast, {'SyncBatchNorm' if args.sync_bn else 'per-GPU BN'}",
                  flush=True)
        runs: dict[str, tr.RunResult] = {}
        step_times: dict[str, list[float | None]] = {}
        for kind in DDP_RUNS:
            runs[kind] = run_ddp(initial, kind, batches, args.steps, lr, device, args.sync_bn)
            step_times[kind] = gather_step_times(runs[kind], world)
            if device.type == "cuda":
                torch.cuda.empty_cache()
            if rank == 0:
                times = ", ".join("-" if t is None else f"{t:.2f} ms" for t in step_times[kind])
                print(f"  {kind}: last loss {runs[kind].losses[-1]:.4f}; median step per GPU: {times}", flush=True)
        # Every rank waits at a barrier before the process group goes: a rank that tore
        # gloo down while rank 0 was still writing its report aborted at exit.
        if rank != 0:
            dist.barrier()
            return 0
        from tileconv.bench.timing import environment

        verdict = tr.judge(runs)
        print(verdict.line(), flush=True)
        data = tr.result_json(args.model, global_batch, args.steps, lr, args.seed, runs, verdict, environment())
        data.update({"suite": "ddp_train", "world_size": world, "batch_per_gpu": args.batch,
                     "backend": dist.get_backend(), "sync_bn": args.sync_bn,
                     "multicast_env": {name: os.environ.get(name) for name in MULTICAST_OFF},
                     "step_ms_per_gpu": step_times})
        for row in data["rows"]:
            row["median_step_ms_per_gpu"] = step_times[row["name"]]
        if device.type != "cuda":
            data["notes"].append("no GPU: gloo on the CPU through tileconv's PyTorch fallback (no timings)")
        if args.single:
            data["single_gpu"] = compare_single(args.single, runs, global_batch, args)
            print(f"against the single-GPU run: {json.dumps(data['single_gpu'])}", flush=True)
        if data["speedup_vs_pytorch"] is not None:
            print(f"per-GPU step time (rank 0): tileconv {runs['tileconv'].median_step_ms:.2f} ms, pytorch "
                  f"{runs['pytorch'].median_step_ms:.2f} ms: speedup {data['speedup_vs_pytorch']:.2f}x", flush=True)
        if args.json:
            Path(args.json).parent.mkdir(parents=True, exist_ok=True)
            Path(args.json).write_text(json.dumps(data, indent=2) + "\n")
            print(f"wrote {args.json}", flush=True)
        dist.barrier()
        return 0 if verdict.ok or device.type != "cuda" else 1
    finally:
        gc.collect()  # DDP reducers hold the process group: free them before it goes
        dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
