"""The tuning cache, the candidate lists and ``tileconv.tune``.

Every test points ``$TILECONV_CACHE_DIR`` at its own temporary folder, so nothing here
reads or writes the user's real cache. Kernels run where conftest says (the GPU, or the
CPU through Triton's interpreter); on the CPU, winners are keyed by the device name "cpu".
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import random
from dataclasses import replace
from pathlib import Path

import pytest
import torch
import triton

import tileconv
from tileconv import ConvProblem, LaunchConfig
from tileconv._runtime import INTERPRET, pow2_at_least
from tileconv.bench.suites import EPILOGUES, get_suite
from tileconv.dispatch import cache, clear_selection_cache, heuristics, select
from tileconv.dispatch import tune as tune_module
from tileconv.dispatch.candidates import (
    MAX_ACCUMULATORS_PER_THREAD,
    MAX_BANDED_ACCUMULATORS,
    TMA_ROWS_BARRIER_BYTES,
    TMA_ROWS_MIN_RACE_WIDTH,
    DeviceLimits,
    algorithms_to_try,
    candidates,
    dense_toeplitz_shared_memory,
    depthwise_candidates,
    direct_candidates,
    gemm_1x1_ws_candidates,
    gemm_problem,
    implicit_gemm_candidates,
    implicit_gemm_shared_memory,
    reduction_slice,
    tma_rows_shared_memory,
    toeplitz_shared_memory,
)
from tileconv.dispatch.heuristics import choose_algorithm, default_config
from tileconv.functional import conv2d_problem
from tileconv.kernels import ALGORITHMS, Algorithm, BackwardConfig
from tileconv.kernels.launch import (
    MAX_DENSE_TOEPLITZ_COLUMNS,
    MAX_DENSE_TOEPLITZ_VALUES,
    MAX_HALO_SHARED_BYTES,
    MAX_TOEPLITZ_REACH,
    MAX_WINDOW_STEP_MULTIPLY_ADDS,
    dense_toeplitz_tiling,
    depthwise_halo_unsupported_reason,
    frame_tiling,
    grouped_halo_tiling,
    halo_tiling,
    image_fits,
    implicit_gemm_ws_unsupported_reason,
    plane_sizes,
    toeplitz_reach,
    window_inside,
    window_tiling,
)
from tileconv.reference import conv2d_reference
from tileconv.testing import assert_conv_close, random_inputs, tolerance

# Heuristics pick implicit_gemm here (16 channels in and out); tiny enough for the interpreter.
SMALL = ConvProblem(n=1, c=16, h=6, w=6, k=16, r=3, s=3, padding=(1, 1))
# Heuristics pick direct here (4 groups of 1 channel).
DEPTHWISE = ConvProblem(n=1, c=4, h=5, w=5, k=4, r=3, s=3, padding=(1, 1), groups=4, layout="nchw")
DISTINCT = LaunchConfig(block_m=32, block_n=16, block_k=16, group_m=4, num_warps=2, num_stages=2)


pytestmark = pytest.mark.usefixtures("isolated_cache")  # tests/conftest.py: a private cache folder


def _entry(algorithm: str = "direct", config: LaunchConfig = DISTINCT) -> dict:
    return cache.make_entry(algorithm, config, time_ms=1.0)


# --------------------------------------------------------------------- location and keys
def test_cache_location_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("TILECONV_CACHE_DIR", str(tmp_path / "explicit"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_file() == tmp_path / "explicit" / "tuning-v1.json"
    monkeypatch.delenv("TILECONV_CACHE_DIR")
    assert cache.cache_file() == tmp_path / "xdg" / "tileconv" / "tuning-v1.json"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.cache_file() == tmp_path / "home" / ".cache" / "tileconv" / "tuning-v1.json"


def test_key_names_the_gpu_the_triton_version_and_the_problem():
    key = cache.entry_key(SMALL, "NVIDIA H100 80GB HBM3")
    assert key == f"NVIDIA H100 80GB HBM3|triton-{triton.__version__}|{SMALL.cache_key()}"
    assert cache.device_name("cpu") == "cpu"
    assert cache.device_name(torch.device("cpu")) == "cpu"


def test_winner_of_another_gpu_or_triton_version_is_not_used():
    cache.store({
        cache.entry_key(SMALL, "NVIDIA H100 80GB HBM3"): _entry(),
        cache.entry_key(SMALL, "cpu", triton_ver="0.0.1"): _entry(),
    })
    assert cache.lookup(SMALL, "cpu") is None
    cache.store({cache.entry_key(SMALL, "cpu"): _entry()})
    assert cache.lookup(SMALL, "cpu") is not None


# --------------------------------------------------------------------- round trip
def test_round_trip_through_the_file(isolated_cache):
    assert cache.cache_summary() == {
        "path": str(isolated_cache / "tuning-v1.json"), "entries": 0, "bytes": 0, "corrupt": False,
    }
    key = cache.entry_key(SMALL, "cpu")
    best = {"direct": (DISTINCT, 1.0), "implicit_gemm": (LaunchConfig(), 2.0)}
    cache.store({key: cache.make_entry("direct", DISTINCT, time_ms=1.0, default_ms=2.0,
                                        best_per_algorithm=best, problem=SMALL)})
    cache.reload()  # force a fresh parse of the file, as a new process would
    tuned = cache.lookup(SMALL, "cpu")
    assert tuned is not None
    assert (tuned.algorithm, tuned.config, tuned.time_ms) == ("direct", DISTINCT, 1.0)
    assert tuned.per_algorithm == {"direct": DISTINCT, "implicit_gemm": LaunchConfig()}
    data = json.loads(cache.cache_file().read_text())
    assert data["format"] == "tileconv-tuning" and data["version"] == 1
    assert data["entries"][key]["problem"] == SMALL.describe()
    summary = cache.cache_summary()
    assert summary["entries"] == 1 and summary["bytes"] == cache.cache_file().stat().st_size > 0
    assert not list(isolated_cache.glob("*.tmp")), "a temporary file was left behind"


def test_store_merges_with_what_another_process_wrote_since():
    cache.store({"mine|1": _entry()})
    # Another process writes behind this one's back (this process has already parsed the file).
    data = json.loads(cache.cache_file().read_text())
    data["entries"]["theirs|1"] = _entry()
    cache.cache_file().write_text(json.dumps(data))
    cache.store({"mine|2": _entry()})
    assert set(cache.load()) == {"mine|1", "mine|2", "theirs|1"}


def _store_many(directory: str, writer: int, count: int, barrier) -> None:
    """Child process: ``count`` separate stores of this writer's own entries."""
    from tileconv.dispatch import cache as child_cache

    path = Path(directory) / child_cache.FILE_NAME
    barrier.wait(timeout=120)  # start writing together, after both imported torch
    for index in range(count):
        child_cache.store({f"writer{writer}|{index}": child_cache.make_entry("direct", LaunchConfig())}, path)


def test_two_processes_writing_at_once_keep_both_sets(isolated_cache):
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(2)
    count = 40
    children = [
        context.Process(target=_store_many, args=(str(isolated_cache), writer, count, barrier))
        for writer in range(2)
    ]
    for child in children:
        child.start()
    for child in children:
        child.join(timeout=180)
    assert [child.exitcode for child in children] == [0, 0]
    keys = set(cache.load())
    expected = {f"writer{w}|{i}" for w in range(2) for i in range(count)}
    assert keys == expected, f"lost {len(expected - keys)} entries: {sorted(expected - keys)[:5]}"


@pytest.mark.parametrize(
    "content",
    [b"{not json", b"[]", b'{"format": "something-else", "version": 1, "entries": {}}',
     b'{"format": "tileconv-tuning", "version": 99, "entries": {}}', b"\xff\xfe\x00garbage", b""],
    ids=["bad-json", "list", "other-format", "other-version", "not-utf8", "empty"],
)
def test_corrupt_file_is_ignored_with_a_warning_and_rebuilt(content):
    path = cache.cache_file()
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    assert cache.cache_summary()["corrupt"]
    with pytest.warns(cache.TuningCacheWarning, match=str(path)):
        assert cache.lookup(SMALL, "cpu") is None
    with pytest.warns(cache.TuningCacheWarning, match="rebuilding"):
        cache.store({cache.entry_key(SMALL, "cpu"): _entry()})
    cache.reload()
    assert cache.lookup(SMALL, "cpu") is not None
    assert not cache.cache_summary()["corrupt"]


def test_selection_survives_a_corrupt_cache():
    cache.cache_file().parent.mkdir(parents=True)
    cache.cache_file().write_text("{oops")
    with pytest.warns(cache.TuningCacheWarning):
        algorithm, config = select(SMALL, "auto", "cpu")
    assert (algorithm.name, config) == (choose_algorithm(SMALL), default_config(SMALL, algorithm.name))


# --------------------------------------------------------------------- select()
def test_select_prefers_the_cached_winner():
    heuristic = select(SMALL, "auto", "cpu")
    assert heuristic[0].name == choose_algorithm(SMALL)  # implicit_gemm (implicit_gemm_ws on a Hopper GPU)
    clear_selection_cache()
    cache.store({cache.entry_key(SMALL, "cpu"): _entry("direct", DISTINCT)})
    algorithm, config = select(SMALL, "auto", "cpu")
    assert (algorithm.name, config) == ("direct", DISTINCT)
    # The winner is keyed by device: another device's choice is its own.
    assert select(SMALL, "auto", "meta")[0].name == choose_algorithm(SMALL)


def test_a_16_bit_winner_stands_in_for_the_other_16_bit_type():
    """An fp16 winner serves the same problem in bf16 (and back) where that has no entry of
    its own; its own entry comes first; float32 never borrows; tuning asks for exact entries."""
    bf16, fp32 = replace(SMALL, dtype=torch.bfloat16), replace(SMALL, dtype=torch.float32)
    other = LaunchConfig(block_m=64, block_n=32, block_k=16, num_warps=4, num_stages=3)
    cache.store({cache.entry_key(SMALL, "cpu"): _entry("direct", DISTINCT)})
    assert cache.lookup(bf16, "cpu").config == DISTINCT
    assert cache.lookup(bf16, "cpu", sibling=False) is None and cache.lookup(fp32, "cpu") is None
    assert select(bf16, "auto", "cpu") == select(SMALL, "auto", "cpu")
    cache.store({cache.entry_key(bf16, "cpu"): _entry("implicit_gemm", other)})
    assert cache.lookup(bf16, "cpu").config == other and cache.lookup(SMALL, "cpu").config == DISTINCT
    wgrad = BackwardConfig(32, 16, 16, split_k=2, num_warps=2)
    cache.store({cache.backward_key(bf16, "cpu", "wgrad"): {"algorithm": "implicit_gemm", "gradient": "wgrad",
                                                            "config": wgrad.to_dict()}})
    assert cache.lookup_backward(SMALL, "wgrad", "cpu") == wgrad
    assert cache.lookup_backward(SMALL, "wgrad", "cpu", sibling=False) is None


def test_forced_algorithm_gets_its_own_best_tuned_config():
    gemm_best = LaunchConfig(block_m=64, block_n=16, block_k=16, num_warps=4, num_stages=2)
    cache.store({cache.entry_key(SMALL, "cpu"): cache.make_entry(
        "direct", DISTINCT, best_per_algorithm={"direct": (DISTINCT, 1.0), "implicit_gemm": (gemm_best, 2.0)},
    )})
    assert select(SMALL, "implicit_gemm", "cpu")[1] == gemm_best
    assert select(DEPTHWISE, "implicit_gemm", "cpu")[1] == default_config(DEPTHWISE, "implicit_gemm")


def test_select_ignores_an_entry_it_cannot_use():
    cache.store({cache.entry_key(SMALL, "cpu"): {"algorithm": "from_the_future", "config": {}}})
    assert select(SMALL, "auto", "cpu")[0].name == choose_algorithm(SMALL)


def test_teaching_kernels_are_never_chosen_or_raced():
    """The seed's ladder (kernels/ladder.py) runs only when forced: the heuristics, tuning's
    race and a cache entry naming a ladder step (hand-edited) all leave it out."""
    teaching = {name for name, algorithm in ALGORITHMS.items() if algorithm.teaching}
    assert teaching == {"ladder0_direct", "ladder1_implicit_gemm", "ladder2_tiled", "ladder3_tensor_core"}
    for problem in (SMALL, DEPTHWISE, *_suite_problems()):
        assert not teaching & set(algorithms_to_try(problem)), problem.describe()
        assert not teaching & {name for name, _ in candidates(problem)}, problem.describe()
    cache.store({cache.entry_key(SMALL, "cpu"): _entry("ladder2_tiled", DISTINCT)})
    assert select(SMALL, "auto", "cpu")[0].name == choose_algorithm(SMALL)
    # Forced, a ladder step runs with its own fixed config (tuning never measured one).
    algorithm, config = select(SMALL, "ladder2_tiled", "cpu")
    assert algorithm.name == "ladder2_tiled" and config == default_config(SMALL, "ladder2_tiled")


def test_conv2d_runs_the_cached_config_correctly(device, seed):
    cache.store({cache.entry_key(SMALL, cache.device_name(device)): _entry("direct", DISTINCT)})
    inputs = random_inputs(SMALL, device, seed)
    algorithm, config = select(SMALL, "auto", inputs.x.device)
    assert (algorithm.name, config) == ("direct", DISTINCT)
    with tileconv.poison_outputs():
        out = conv2d_problem(SMALL, inputs.x, inputs.weight, None, None)
    ref = conv2d_reference(inputs.x, inputs.weight, padding=1)
    assert_conv_close(out, ref, tolerance(SMALL), "cached direct config")


# --------------------------------------------------------------------- candidates
def _suite_problems() -> list[ConvProblem]:
    problems = []
    for suite in ("resnet50", "depthwise", "grouped", "vae", "seed"):
        for case in get_suite(suite):
            for dtype, tf32 in ((torch.float16, False), (torch.float32, True), (torch.float32, False)):
                problems.append(case.problem(dtype, "nhwc", allow_tf32=tf32))
            problems.append(case.problem(torch.bfloat16, "nchw"))
    return problems


def _is_pow2(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


@pytest.mark.parametrize("name, stride, sliced", [
    ("r50 c1024 hw14 k512 1x1/1", 1, True),  # 132 tiles of 192x128 on 132 SMs, 196 of 128x128
    ("r50 c512 hw28 k128 1x1/1", 1, True),  # 131 against 196
    ("r50 c256 hw14 k1024 1x1/1", 1, False),  # 264 against 392 tiles: both fill their waves
    ("r50 c1024 hw14 k256 1x1/1", 1, False),  # 66 tiles: half the SMs
    ("r50 c1024 hw14 k512 1x1/1", 2, False),  # the slices are stride 1's
])
def test_gemm_1x1_ws_races_192_row_tiles_where_they_fill_the_waves(name: str, stride: int, sliced: bool):
    """gemm_1x1_ws's candidates take a 192-row tile (three 64-row MMA warpgroups), third in line,
    where its tiles fill the last wave of 132 SMs better than 128-row tiles of the same width."""
    case = next(c for c in get_suite("resnet50") if c.name == name)
    problem = replace(case.problem(torch.float16, "nhwc", batch=32), stride=(stride, stride))
    configs = gemm_1x1_ws_candidates(problem, DeviceLimits())
    rows = [config.block_m for config in configs]
    assert (192 in rows) == sliced, rows
    if sliced:
        config = configs[rows.index(192)]
        assert rows.index(192) == 2 and config.num_warps == 4 and not config.pingpong
        assert implicit_gemm_shared_memory(problem, config) <= DeviceLimits().bulk_copy_budget


@pytest.mark.parametrize("gpu_defaults", [False, True], ids=["here", "gpu-defaults"])
@pytest.mark.parametrize("limits", [DeviceLimits(), DeviceLimits(num_sms=108, shared_memory_bytes=166912)],
                         ids=["h100", "a100"])
def test_candidates_respect_the_constraints(limits, gpu_defaults, monkeypatch):
    """Every candidate list fits its kernels' limits. ``gpu-defaults``: the lists a GPU gets
    (the heuristics' configs outside the interpreter, which are smaller there), checked on
    any machine: a GPU-only default past a limit was once caught only on a GPU."""
    if gpu_defaults:
        monkeypatch.setattr(heuristics, "INTERPRET", False)
    for problem in _suite_problems():
        pairs = candidates(problem, limits, max_candidates=12)
        default_name = choose_algorithm(problem)
        assert pairs[0] == (default_name, default_config(problem, default_name)), problem.describe()
        assert 1 <= len(pairs) <= 12 and len(set(pairs)) == len(pairs), problem.describe()
        allowed = set(algorithms_to_try(problem))
        for name, config in pairs[1:]:
            where = f"{problem.describe()} {problem.dtype_name} {problem.layout}: {name} {config}"
            assert name in allowed and ALGORITHMS[name].unsupported_reason(problem) is None, where
            # dense_toeplitz's block_n is a channel count (all of a small K): its GEMM's N
            # (columns x channels, rounded up) is the power of two. depthwise_window's strip and
            # tile width are unrolled counts, any sizes.
            sliced = name == "gemm_1x1_ws" and config.block_m == 192  # three 64-row MMA warpgroups
            for value in ((config.num_warps, config.block_n) if name == "depthwise_window" else
                          (config.block_k, config.num_warps) + (() if sliced else (config.block_m,)) + (
                              () if name == "dense_toeplitz" else (config.block_n,))):
                assert _is_pow2(value), where
            # Rule-decided fields stay the heuristics' (only tile fields are tuned).
            assert config.fuse_sc == default_config(problem, name).fuse_sc, where
            if name in ("implicit_gemm", "grouped_gemm", "gemm_1x1", "im2row", "staged_nhwc", "gemm_1x1_nchw"):  # GEMMs
                gemm = gemm_problem(problem, name)
                assert config.block_n <= max(16, triton.next_power_of_2(gemm.k_per_group)), where
                assert config.block_k <= max(16, triton.next_power_of_2(reduction_slice(gemm, config))), where
                assert min(config.block_m, config.block_n, config.block_k) >= 16, where
                assert implicit_gemm_shared_memory(gemm, config) <= limits.shared_memory_budget, where
                assert limits.shared_memory_budget <= 0.9 * limits.shared_memory_bytes
            elif name == "tma_rows":  # row segments of at least wgmma's 64, tiles within the problem, ring fits
                fitted = config != default_config(problem, name)  # the interpreter's default is smaller
                assert not fitted or 64 <= config.block_m <= max(64, triton.next_power_of_2(problem.out_w)), where
                assert 16 <= config.block_n <= max(16, triton.next_power_of_2(problem.k)), where
                assert 16 <= config.block_k <= max(16, triton.next_power_of_2(problem.c)), where
                assert tma_rows_shared_memory(problem, config) <= limits.shared_memory_bytes - TMA_ROWS_BARRIER_BYTES, where
                assert problem.out_w >= TMA_ROWS_MIN_RACE_WIDTH, where
            elif name in ("implicit_gemm_ws", "gemm_1x1_ws"):  # (GPU only) wgmma heights, the epilogue's
                # 64-wide rows, the ring fits (gemm_1x1_ws races implicit_gemm_ws's configs, some in ping-pong)
                assert name == "implicit_gemm_ws" or config.num_warps == 4 or not config.pingpong, where
                assert config.block_m in (64, 128) and config.num_warps in (4, 8) or (
                    sliced and config.num_warps == 4 and not config.pingpong and problem.stride == (1, 1)), where
                assert 64 <= config.block_n <= max(64, triton.next_power_of_2(problem.k)), where
                assert implicit_gemm_shared_memory(problem, config) <= limits.bulk_copy_budget, where
            elif name == "depthwise_toeplitz":  # banded GEMMs: tensor-core edges, reach, the ring fits
                assert min(config.block_m, config.block_k) >= 16, where
                assert toeplitz_reach(problem, config.block_k) <= MAX_TOEPLITZ_REACH, where
                assert toeplitz_shared_memory(problem, config) <= limits.shared_memory_budget, where
            elif name == "dense_toeplitz":  # banded GEMMs over row segments: bands, accumulator and ring fit
                tiling = dense_toeplitz_tiling(problem, config)
                assert config.block_m >= 16 and config.block_n <= problem.k, where
                assert tiling.span * problem.c <= MAX_DENSE_TOEPLITZ_VALUES, where
                assert 16 <= tiling.block_nn <= MAX_DENSE_TOEPLITZ_COLUMNS, where
                assert config.block_m * tiling.block_nn <= MAX_BANDED_ACCUMULATORS * 32 * config.num_warps, where
                assert dense_toeplitz_shared_memory(problem, config) <= limits.shared_memory_budget, where
                assert problem.c < 16, where  # raced for few input channels only
            elif name == "depthwise_plane":  # whole small planes: tensor-core edges, accumulator fits, one pass
                _, pq_pad = plane_sizes(problem)
                assert problem.h * problem.w <= 64 and problem.out_h * problem.out_w <= 64, where
                assert config.block_m >= 16 and config.num_stages == 1, where
                fitted = config != default_config(problem, name)  # the interpreter's default has one warp
                assert not fitted or (config.block_m * config.block_n * pq_pad
                                      <= MAX_BANDED_ACCUMULATORS * 32 * config.num_warps), where
            elif name == "depthwise_halo":  # (GPU only) the halo and filter fit; whole lanes over the channels
                assert halo_tiling(problem, config).shared_bytes(problem) <= MAX_HALO_SHARED_BYTES, where
                assert config.block_n % (32 * config.num_warps) == 0 and config.block_m % config.block_k == 0, where
                assert config.block_n <= pow2_at_least(problem.c, 32) and config.num_stages == 1, where
            elif name == "grouped_halo":  # (GPU only) the staged frames and the filter fit; whole groups merged
                assert grouped_halo_tiling(problem, config).fits(problem), where
                assert config.block_n % problem.c_per_group == 0 and config.persistent in (0, 2, 4), where
            elif name == "depthwise_window":  # one channel a thread; strips past the ramps; a step's unrolled work
                tiling = window_tiling(problem, config)
                assert config.block_n == 32 * config.num_warps, where
                if tiling.image is None:  # strips of tiles: raced for filters larger than 3x3 only
                    assert problem.r - 1 <= tiling.strip <= max(min(28, problem.out_h), problem.r - 1), where
                    assert tiling.tile_w <= problem.out_w and problem.r * problem.s > 9, where
                    assert tiling.rows_a_step * tiling.tile_w * problem.r * problem.s <= MAX_WINDOW_STEP_MULTIPLY_ADDS, where
                else:  # tiles of the output's width, compiled for the image
                    assert tiling.tile_w == problem.out_w and image_fits(problem) and tiling.strip <= problem.out_h, where
            elif name == "depthwise_rows":  # two partial sums, three taps, three more loaded ahead (2 stages)
                live = 5 + 3 * (config.num_stages - 1)
                fitted = config != default_config(problem, name)  # the interpreter's default has one warp
                assert not fitted or live * config.block_m * config.block_n <= (
                    MAX_ACCUMULATORS_PER_THREAD * 32 * config.num_warps), where
                assert config.num_stages in (1, 2), where
            elif name == "implicit_gemm_frame":  # (Hopper only) whole output rows of the frame; frames and ring fit
                frame_tiling(problem, config)  # raises where the kernel cannot take the config
                assert config.num_stages >= 2, where
            else:  # CUDA-core kernels: accumulators fit the registers, no pipelining
                assert config.block_m * config.block_n <= MAX_ACCUMULATORS_PER_THREAD * 32 * config.num_warps, where
                assert config.num_stages == 1, where
            if name == "direct":
                assert config.block_n <= max(8, triton.next_power_of_2(problem.k)), where
            if name == "depthwise":
                assert config.block_n <= max(4, triton.next_power_of_2(problem.k)), where
                assert config.block_k <= max(4, triton.next_power_of_2(problem.out_w)), where
                assert config.block_m % config.block_k == 0, where


def test_which_algorithms_race():
    resnet = get_suite("resnet50")[3].problem()  # 1x1, stride 1, NHWC, 56 wide: the three tensor-core GEMMs
    # and on a Hopper GPU the warp-specialized one (Gluon: not under the interpreter)
    hopper = implicit_gemm_ws_unsupported_reason(resnet) is None
    ws = ["implicit_gemm_ws"] if hopper else []
    ws_1x1 = ["gemm_1x1_ws"] if hopper else []  # gemm_1x1's views through a TMA loader warp
    assert algorithms_to_try(resnet) == ["gemm_1x1", "implicit_gemm", *ws, *ws_1x1, "tma_rows"]
    narrow = get_suite("resnet50")[7].problem()  # 28 wide: most of a 64-pixel row segment wasted
    assert narrow.out_w == 28 and algorithms_to_try(narrow) == ["gemm_1x1", "implicit_gemm", *ws, *ws_1x1]
    strided = get_suite("resnet50")[8].problem()  # a 1x1 stride-2 downsample: gemm_1x1 over the strided
    # view's row boxes races (its warp-specialized form is the heuristics' choice there on a Hopper GPU)
    assert strided.stride == (2, 2) and algorithms_to_try(strided) == (
        ["gemm_1x1_ws", "implicit_gemm", "implicit_gemm_ws", "gemm_1x1"] if hopper else ["implicit_gemm", "gemm_1x1"])
    # Both CUDA-core kernels (each wins some depthwise shapes); a GEMM tile is 3/256 useful.
    for depthwise in (case.problem() for case in get_suite("depthwise")):
        assert algorithms_to_try(depthwise)[0] == choose_algorithm(depthwise)
        rows = ["depthwise_rows"] if depthwise.r == 3 else []  # 3x3 (the suite's strides are 1 and 2): rows streamed
        banded = ["depthwise_toeplitz"] if depthwise.s >= 5 else []  # 7x7 and up: the tensor-core kernel
        plane = ["depthwise_plane"] if depthwise.h * depthwise.w <= 64 else []  # 7x7 planes: one GEMM a channel
        # The shared-memory halo kernel (Gluon: on a GPU) up to 7x7.
        halo = ["depthwise_halo"] if depthwise_halo_unsupported_reason(depthwise) is None else []
        # input rows streamed through registers: stride-1 rows, filters past 3x3 of at most 49 taps;
        # tiles of the output's width, compiled for the image, at any stride where the image fits
        window = ["depthwise_window"] if (depthwise.stride[0] == 1 and 9 < depthwise.r * depthwise.s <= 49
                                          or image_fits(depthwise)) else []
        assert not halo or depthwise.r <= 7
        assert sorted(algorithms_to_try(depthwise)) == sorted(["depthwise", "direct", *rows, *banded, *plane, *halo, *window]), \
            depthwise.describe()
    stem = get_suite("resnet50")[0].problem()  # 3 input channels: thin; unrolled into 32 (im2row), banded
    resnext = get_suite("grouped")[0].problem()  # 32 groups of 4 channels
    grouped_halo = ["grouped_halo"] if ALGORITHMS["grouped_halo"].unsupported_reason(resnext) is None else []  # a GPU
    # Few input channels on both sides (the seed's C = K = 6): the CUDA-core kernel, the fused
    # (s, c) GEMM, the unrolled copy and the banded GEMM all race; in float32 the rows kernel too.
    seed003 = next(case for case in get_suite("seed") if case.name == "seed003").problem()
    for problem, expected in ((stem, {"im2row", "implicit_gemm", "direct", "dense_toeplitz"}),
                              (seed003, {"direct", "implicit_gemm", "im2row", "dense_toeplitz"}),
                              (resnext, {"grouped_gemm", "implicit_gemm", "direct", *grouped_halo})):
        assert algorithms_to_try(problem)[0] == choose_algorithm(problem)
        assert set(algorithms_to_try(problem)) == expected, problem.describe()
    seed003_fp32 = replace(seed003, dtype=torch.float32)
    assert set(algorithms_to_try(seed003_fp32)) == {"direct_rows", "direct", "implicit_gemm", "im2row", "dense_toeplitz"}
    assert implicit_gemm_candidates(resnet) and direct_candidates(stem) and depthwise_candidates(depthwise)


def test_heuristics_for_large_filters_and_few_channels():
    """Measured rules (H200, 2026-11-23): the banded tensor-core kernel for 27x27 and 31x31
    depthwise filters, not for a 13x13 on a 7-wide output nor 7x7; the whole-plane GEMM for
    the 7x7 and 13x13 filters over 7x7 planes, not for a 3x3 one; for a dense convolution
    with fewer than 16 channels on both sides (seed003) the banded row GEMM in 16 bits (8
    output columns a program) and the CUDA-core rows kernel in float32 (session 24): pairs
    of rows over NCHW input, one row over channels_last (where a pair spilled). The 7x7
    rows (channels_last) stream their input rows through registers (session 25): strips of 7
    rows, 7 columns (4 on a 7-wide output)."""
    chosen = {case.name: (choose_algorithm(case.problem()), case.problem()) for case in get_suite("depthwise")}
    for name, (algorithm, problem) in chosen.items():
        large = "dw31x31" in name or "dw27x27" in name
        assert (algorithm == "depthwise_toeplitz") == large, (name, algorithm)
        # ... and (session 47) the stride-1 3x3 rows over outputs of at most 14x14, in tiles of their width
        small = "dw3x3" in name and problem.stride == (1, 1) and problem.out_h <= 14
        assert (algorithm == "depthwise_window") == ("dw7x7" in name or small), (name, algorithm)
        # the 13x13 over a 7x7 plane: one GEMM a channel, where the halo kernel cannot run (the interpreter)
        plane = "dw13x13" in name and depthwise_halo_unsupported_reason(problem) is not None
        assert (algorithm == "depthwise_plane") == plane, (name, algorithm)
        if algorithm == "depthwise_window":
            config = default_config(problem, algorithm)
            # strips of 4 rows of the width, or 7-column tiles in strips of 7 rows doubled while they
            # fill a wave (session 48): 28 rows on c96 hw56, 14 on c192 hw28, 7 on c384 hw14 and hw7
            strips = {"c96 hw56": 28, "c192 hw28": 14}
            strip = next((rows for key, rows in strips.items() if key in name), 7)
            expected = (4, problem.out_w, 1) if small else (strip, 7, 1)
            assert (config.block_m, config.block_k, config.num_stages) == expected, name
            assert config.num_warps == max(w for w in (1, 2, 4) if problem.k % (32 * w) == 0), name
        # NCHW input: the halo kernel or the plane GEMM, as before
        assert choose_algorithm(replace(problem, layout="nchw")) != "depthwise_window", name
    config = default_config(get_suite("depthwise")[-4].problem(), "depthwise_toeplitz")
    assert (config.block_n, config.block_k) == ((4, 16) if INTERPRET else (1, 32))  # 2D GEMMs, 32 columns
    seed003 = next(c for c in get_suite("seed") if c.name == "seed003")
    assert choose_algorithm(seed003.problem(torch.float16, "nhwc")) == "dense_toeplitz"
    if not INTERPRET:
        assert default_config(seed003.problem(torch.float16, "nhwc"), "dense_toeplitz").block_k == 8
    for layout, rows in (("nchw", 2), ("nhwc", 1)):
        for tf32 in (False, True):
            problem = seed003.problem(torch.float32, layout, allow_tf32=tf32)
            assert choose_algorithm(problem) == "direct_rows", (layout, tf32)
            config = default_config(problem, "direct_rows")
            assert config.block_k == rows and config.block_n == 8, (layout, config)  # all of K = 6: 8 channels
            if not INTERPRET:
                assert config.block_m == 512 and config.num_warps == 4, (layout, config)  # 4 columns a thread
    # Strided rows are not paired.
    assert default_config(replace(seed003.problem(torch.float32, "nchw"), stride=(2, 1)), "direct_rows").block_k == 1
    # Where the bands cannot run (a 1-wide filter has no band), the CUDA-core kernel in 16 bits;
    # in float32 the rows kernel, whose filter is any size up to 64 taps.
    pointwise = replace(seed003.problem(), r=1, s=1)
    assert choose_algorithm(pointwise) == "direct"
    assert choose_algorithm(replace(pointwise, dtype=torch.float32)) == "direct_rows"
    assert choose_algorithm(replace(pointwise, dtype=torch.float32, r=13, s=5)) == "dense_toeplitz"  # 65 taps


def test_strict_fp32_gets_small_tiles_and_16bit_gets_deep_steps():
    case = get_suite("resnet50")[5]  # 256 -> 128, 1x1: nothing clamps
    strict = implicit_gemm_candidates(case.problem(torch.float32))
    assert max(c.block_m * c.block_n for c in strict) <= 128 * 128
    half = implicit_gemm_candidates(case.problem(torch.float16))
    assert max(c.block_k for c in half) == 64


# --------------------------------------------------------------------- tune()
def _one_run_timer(device: str):
    """The real measurement on a GPU; one wall-clock run per candidate in the interpreter."""
    if device == "cuda":
        return None
    return lambda fn: tune_module.wall_clock_timer(fn, repeats=1)


def test_tune_end_to_end_stores_correct_winners_that_select_uses(device):
    results = tileconv.tune([SMALL, DEPTHWISE, SMALL], device=device, max_candidates=3,
                            timer=_one_run_timer(device), progress=False)
    assert [r.problem for r in results] == [SMALL, DEPTHWISE]  # the duplicate is tuned once
    for result in results:
        assert result.status == "tuned", result.message
        assert result.timings and result.time_ms == min(ms for _, _, ms in result.timings)
        assert result.default_ms is not None
        tuned = cache.lookup(result.problem, device)
        assert tuned is not None and (tuned.algorithm, tuned.config) == (result.algorithm, result.config)
        assert select(result.problem, "auto", device) == (ALGORITHMS[result.algorithm], result.config)
    # A later run finds them cached; force measures again.
    again = tileconv.tune([SMALL], device=device, progress=False)
    assert again[0].status == "cached" and again[0].config == results[0].config
    forced = tileconv.tune([SMALL], device=device, force=True, max_candidates=1,
                           timer=_one_run_timer(device), progress=False)
    assert forced[0].status == "tuned" and len(forced[0].timings) == 1


def _fill_zeros(problem, x, weight, bias, residual, out, config) -> None:
    out.zero_()  # fast and wrong: must be rejected before it can win


def _raise_out_of_resources(problem, x, weight, bias, residual, out, config) -> None:
    raise RuntimeError("out of resource: shared memory, Required: 999999, Hardware limit: 232448")


def test_tune_never_keeps_a_wrong_or_failing_candidate_and_picks_the_fastest(device, monkeypatch):
    always = lambda problem: None
    monkeypatch.setitem(ALGORITHMS, "zeros", Algorithm("zeros", "writes zeros", _fill_zeros, always))
    monkeypatch.setitem(ALGORITHMS, "raises", Algorithm("raises", "raises", _raise_out_of_resources, always))
    fast = LaunchConfig(block_m=64, block_n=16, block_k=16, num_warps=4, num_stages=2)
    direct = LaunchConfig(block_m=32, block_n=16, num_warps=4, num_stages=1)
    default = ("implicit_gemm", default_config(SMALL, "implicit_gemm"))
    listed = [default, ("implicit_gemm", fast), ("zeros", fast), ("raises", fast), ("direct", direct)]
    monkeypatch.setattr(tune_module, "candidates", lambda problem, limits, max_candidates: listed)
    injected = iter([3.0, 1.0, 2.0])  # default, fast, direct: the three correct ones, in order
    timed = []

    def timer(fn) -> float:
        timed.append(fn)
        return next(injected)

    (result,) = tileconv.tune([SMALL], device=device, timer=timer, progress=False)
    assert result.status == "tuned"
    assert (result.algorithm, result.config, result.time_ms, result.default_ms) == ("implicit_gemm", fast, 1.0, 3.0)
    assert result.speedup == 3.0 and len(timed) == 3
    reasons = {r.algorithm: r.reason for r in result.rejected}
    assert set(reasons) == {"zeros", "raises"}
    assert "wrong result" in reasons["zeros"] and "out of resource" in reasons["raises"]
    stored = cache.load()[result.key]
    assert (stored["algorithm"], stored["config"]) == ("implicit_gemm", fast.to_dict())


def test_nchw_rules_pick_only_what_can_run():
    """The NCHW paths (gemm_1x1_nchw, staged_nhwc) need one grid row or plane per image:
    past 65535 images the heuristics fall back to the implicit GEMM instead of an error."""
    for r in (1, 3):
        small = ConvProblem(32, 64, 28, 28, 256, r, r, padding=(r // 2, r // 2), layout="nchw")
        large = replace(small, n=70000)
        assert choose_algorithm(small) == ("gemm_1x1_nchw" if r == 1 else "staged_nhwc")
        assert choose_algorithm(large) == "implicit_gemm"
        assert choose_algorithm(replace(small, layout="nhwc")) != choose_algorithm(small)


def _fake_hopper(monkeypatch):
    """The launchers and heuristics answer as on a Hopper GPU outside the interpreter (any machine:
    nothing is launched); returns the launch module."""
    from tileconv.kernels import launch

    monkeypatch.setattr(launch, "INTERPRET", False)
    monkeypatch.setattr(heuristics, "INTERPRET", False)
    monkeypatch.setattr(launch, "has_cp_async", lambda: True)
    monkeypatch.setattr(launch, "_is_hopper", lambda: True)
    return launch


def test_grouped_gemm_ws_merges_whole_lines_and_takes_the_strided_resnext_rows(monkeypatch):
    """grouped_gemm_ws (a Hopper faked: this runs on any machine) merges groups into at most 128
    bytes of input channels and 256 outputs, refuses a merge whose K/groups is no power of two
    (a tile's width: the GPU's verify once drew K/g = 6 x 4), sizes every candidate to one merged
    group with rings that fit its programs an SM together; untuned it takes none of ResNeXt's rows
    (its strided ones went to grouped_frame in sessions 55 and 60; the 32-channel c1024 hw14/2 tied
    with the implicit GEMM) but a strided row of 16 channels a group from a narrower input, not TF32,
    and nothing without a Hopper."""
    from tileconv.dispatch.candidates import gemm_problem, grouped_gemm_ws_candidates
    launch = _fake_hopper(monkeypatch)
    grouped = {case.name: case.problem(torch.float16, "nhwc") for case in get_suite("grouped")}
    for name, problem in grouped.items():
        assert launch.grouped_gemm_ws_unsupported_reason(problem) is None, name
        merged = gemm_problem(problem, "grouped_gemm_ws")
        assert merged.c_per_group * merged.itemsize == 128 and merged.k_per_group == merged.c_per_group, name
        for config in grouped_gemm_ws_candidates(problem):
            assert config.block_n == merged.k_per_group and config.persistent in (0, 2), (name, config)
            budget = DeviceLimits().bulk_copy_budget // max(1, config.persistent)
            assert config.ring_bytes(merged.itemsize) <= budget, (name, config)
        assert choose_algorithm(problem) != "grouped_gemm_ws", name
        assert choose_algorithm(replace(problem, dtype=torch.float32, allow_tf32=True)) != "grouped_gemm_ws", name
    narrow = replace(grouped["resnext g32 c512 hw28/2"], h=14, w=14)
    assert choose_algorithm(narrow) == "grouped_gemm_ws"
    odd = ConvProblem(2, 16, 7, 9, 24, 3, 3, (2, 1), (1, 1), groups=4, dtype=torch.float16, layout="nhwc")
    assert "power of two" in launch.grouped_gemm_ws_unsupported_reason(odd)
    monkeypatch.setattr(launch, "_is_hopper", lambda: False)
    assert all(choose_algorithm(problem) != "grouped_gemm_ws" for problem in grouped.values())


def test_grouped_frame_takes_the_stride_1_resnext_rows_of_thin_groups(monkeypatch):
    """grouped_frame (a Hopper faked: any machine) merges as grouped_gemm_ws does and runs the frame
    kernel one merged group a tile: every candidate is one merged group wide with frames and weight
    ring that fit; untuned it takes exactly ResNeXt's rows of 4 to 16 channels a group (c128 hw56/1,
    c256 hw56/2: session 55, H200; c256 hw28/1 and c512 hw14/1 since session 59's diagonal blocks;
    c512 hw28/2 since session 60's nine weight stages; it loses the 32-channel c1024 rows), with
    GROUPED_FRAME_WEIGHT_STAGES weight stages, and nothing without a Hopper. It refuses (naming why) groups=1, a
    residual, a merged group wider than its tiles, merged channels that are not 32-channel steps and
    frames that fit in shared memory on no tile."""
    from tileconv.dispatch.candidates import gemm_problem, grouped_frame_candidates
    launch = _fake_hopper(monkeypatch)
    grouped = {case.name: case.problem(torch.float16, "nhwc") for case in get_suite("grouped")}
    for name, problem in grouped.items():
        assert launch.grouped_frame_unsupported_reason(problem) is None, name
        merged, sub_groups = gemm_problem(problem, "grouped_frame"), launch.grouped_ws_sub_groups(problem)
        candidates = grouped_frame_candidates(problem)
        assert candidates and candidates[0] == default_config(problem, "grouped_frame"), name
        for config in candidates:
            assert config.block_n == merged.k_per_group and launch.frame_tiling(merged, config, sub_groups), \
                (name, config)
        expected = "c1024" not in name
        assert (choose_algorithm(problem) == "grouped_frame") == expected, name
        if expected:
            assert candidates[0].num_stages == heuristics.GROUPED_FRAME_WEIGHT_STAGES, name
    thin = grouped["resnext g32 c256 hw28/1"]
    for problem, fragment in ((replace(thin, groups=1), "groups=1"),
                              (replace(thin, epilogue=EPILOGUES["bias_add_relu"]), "no residual"),
                              (replace(thin, k=thin.k * 8), "output channels of each merged group"),
                              (replace(thin, c=thin.c // 2, groups=16, k=thin.k // 2), None),
                              (replace(thin, c=48, groups=12, k=48 * 2), "a multiple of 32"),
                              # (verify's case 65 of seed 55, session 55: a 7x1 filter dilated 3 over a
                              # 64-column frame, too tall for any tile; its default tile raised a ValueError)
                              (ConvProblem(2, 64, 33, 33, 64, 7, 1, (1, 1), (3, 1), (3, 1), 64, torch.float16, "nhwc"),
                               "do not fit in shared memory")):
        reason = launch.grouped_frame_unsupported_reason(problem)
        assert (reason is None) if fragment is None else (reason is not None and fragment in reason), (problem, reason)
    # verify's case 52 of seed 55: a 7x7 filter dilated 3 over a 2x8 image, whose 128-row default
    # tile's frames overfilled shared memory (a ValueError); the default is now a 64-row tile that fits
    reach = ConvProblem(4, 64, 2, 8, 64, 7, 7, (1, 1), (9, 9), (3, 3), 64, torch.float16, "nhwc")
    assert launch.grouped_frame_unsupported_reason(reach) is None
    assert launch.frame_tiling(gemm_problem(reach, "grouped_frame"), default_config(reach, "grouped_frame"),
                               launch.grouped_ws_sub_groups(reach))
    monkeypatch.setattr(launch, "_is_hopper", lambda: False)
    assert all(choose_algorithm(problem) != "grouped_frame" for problem in grouped.values())


@pytest.mark.parametrize("algorithm, draws", [("implicit_gemm_frame", 24), ("grouped_frame", 12)])
def test_frame_kernels_default_tiles_fit_every_problem_they_take(monkeypatch, algorithm: str, draws: int):
    """Every problem the frame kernels' support rule takes (random problems as ``verify --algo``
    draws them, a Hopper faked) gets a default tile whose frames and weight ring fit shared memory:
    the GPU's verify drew problems (long dilated filters) whose default tile raised a ValueError
    (grouped_frame, session 55; implicit_gemm_frame's draws 20 and 44 of seed 7 did the same)."""
    from tileconv import verify

    launch = _fake_hopper(monkeypatch)
    monkeypatch.setattr(launch, "_ws_machine_reason", lambda problem: None)
    for index in range(draws):
        case = verify.draw_case(7, index, verify.LIMITS["cuda"], algorithm)
        _, problem = verify._case_problem(case)
        config = default_config(problem, algorithm)
        sub_groups = launch.grouped_ws_sub_groups(problem) if algorithm == "grouped_frame" else (0, 0)
        assert launch.frame_tiling(gemm_problem(problem, algorithm), config, sub_groups), (problem.describe(), config)


def test_grouped_gemm_ws_gathers_with_two_loader_warpgroups(monkeypatch):
    """grouped_gemm_ws's one-warpgroup tiles at one program an SM launch the ws kernel with two
    loader warpgroups and 168 registers a thread (12 warps; session 55, H200: 2%-4% faster on the
    stride-2 ResNeXt rows); two programs an SM and dense problems keep one loader warpgroup and
    their register caps. The launches are recorded, not run (a Hopper faked: any machine)."""
    from tileconv.kernels import launch

    monkeypatch.setattr(launch, "INTERPRET", False)
    monkeypatch.setattr(launch, "_is_hopper", lambda: True)
    launched = {}
    monkeypatch.setattr(launch, "launch", lambda kernel, grid, *args, **kwargs: launched.update(kwargs))
    cases = {case.name: case for suite in ("grouped", "resnet50") for case in get_suite(suite)}
    for algorithm, name, config, warps, registers in (
            ("grouped_gemm_ws", "resnext g32 c512 hw28/2", LaunchConfig(128, 64, 64, 8, 4, 8), 8, 168),
            ("grouped_gemm_ws", "resnext g32 c1024 hw14/2", LaunchConfig(128, 64, 64, 8, 4, 4, persistent=2), 4, 128),
            ("implicit_gemm_ws", "r50 c256 hw14 k256 3x3/1", LaunchConfig(128, 128, 64, 8, 4, 6), 4, 256),
            ("implicit_gemm_ws", "r50 c512 hw7 k512 3x3/1", LaunchConfig(128, 256, 64, 8, 8, 4), 4, 168)):
        problem = cases[name].problem(torch.float16, "nhwc", batch=2)
        inputs = random_inputs(problem, "cpu", seed=0)
        out = torch.empty(problem.output_shape, dtype=problem.dtype).contiguous(memory_format=torch.channels_last)
        launched.clear()
        ALGORITHMS[algorithm].launch(problem, inputs.x, inputs.weight, None, None, out, config)
        assert (launched["LOADER_WARPS"], launched["maxnreg"]) == (warps, registers), (name, config)


def test_deep_narrow_1x1_layers_take_gemm_1x1_ws_on_hopper(monkeypatch):
    """On a Hopper GPU (faked: this runs on any machine) the 16-bit stride-1 1x1 layers of at least
    256 input channels to outputs at most 28 wide run on gemm_1x1_ws untuned, each with the tile
    that `tune --suite resnet50` chose for it on an H200 in sessions 51 and 52 (on gemm_1x1_ws but
    for c512 hw28 k128's, on implicit_gemm_ws there, about as fast); the 56-wide ones,
    the 128-channel one, TF32 and NCHW keep their kernels; without a Hopper nothing changes."""
    from tileconv.kernels import launch

    resnet = {case.name: case.problem(torch.float16, "nhwc") for case in get_suite("resnet50")}
    monkeypatch.setattr(launch, "INTERPRET", False)
    monkeypatch.setattr(launch, "_is_hopper", lambda: False)
    assert all(choose_algorithm(problem) != "gemm_1x1_ws" for problem in resnet.values())
    monkeypatch.setattr(launch, "_is_hopper", lambda: True)
    tuned = {  # (block_m, block_n, num_stages) of the tuner's winners
        "r50 c512 hw28 k128 1x1/1": (64, 128, 8), "r50 c512 hw28 k256 1x1/1": (128, 128, 6),
        "r50 c256 hw14 k1024 1x1/1": (128, 128, 6), "r50 c1024 hw14 k256 1x1/1": (128, 128, 6),
        "r50 c1024 hw14 k512 1x1/1": (64, 128, 8), "r50 c512 hw7 k2048 1x1/1": (128, 128, 6),
        "r50 c2048 hw7 k512 1x1/1": (64, 128, 8),
    }
    for name, problem in resnet.items():
        chosen = choose_algorithm(problem)
        if name in tuned:
            config = default_config(problem, chosen)
            assert (chosen, (config.block_m, config.block_n, config.num_stages)) == ("gemm_1x1_ws", tuned[name]), name
            assert choose_algorithm(replace(problem, dtype=torch.bfloat16)) == "gemm_1x1_ws", name
            assert choose_algorithm(replace(problem, dtype=torch.float32, allow_tf32=True)) != "gemm_1x1_ws", name
            assert choose_algorithm(replace(problem, layout="nchw")) != "gemm_1x1_ws", name
        elif problem.r == 1 and problem.stride == (1, 1):  # 56 wide, or 128 channels
            assert chosen != "gemm_1x1_ws" and (problem.out_w > 28 or problem.c < 256), name


def test_near_equal_candidates_are_timed_again_and_the_best_median_wins(device, monkeypatch):
    """One reading each put `second` 2% ahead of `first`; both are timed twice more, taking
    turns, and `first` wins on its median. A candidate 10% behind is not timed again."""
    first = LaunchConfig(block_m=32, block_n=16, block_k=16, num_warps=4, num_stages=2)
    second = LaunchConfig(block_m=64, block_n=16, block_k=16, num_warps=4, num_stages=2)
    third = LaunchConfig(block_m=16, block_n=16, block_k=16, num_warps=4, num_stages=2)
    listed = [("implicit_gemm", first), ("implicit_gemm", second), ("implicit_gemm", third)]
    monkeypatch.setattr(tune_module, "candidates", lambda problem, limits, max_candidates: listed)
    # first pass: first, second, third; then two rounds of (second, first): fastest first
    injected = iter([1.00, 0.98, 1.08, 1.05, 0.90, 1.04, 0.91])
    timed = []

    def timer(fn) -> float:
        timed.append(fn)
        return next(injected)

    (result,) = tileconv.tune([SMALL], device=device, timer=timer, progress=False)
    assert (result.algorithm, result.config) == ("implicit_gemm", first)
    assert result.time_ms == 0.91 and result.default_ms == 1.00  # median of 1.00, 0.90, 0.91
    assert len(timed) == 7 and timed[3] is timed[5] and timed[4] is timed[6] and timed[3] is not timed[4]


def test_tune_with_no_correct_candidate_stores_nothing(device, monkeypatch):
    monkeypatch.setitem(ALGORITHMS, "zeros", Algorithm("zeros", "writes zeros", _fill_zeros, lambda p: None))
    monkeypatch.setattr(tune_module, "candidates", lambda problem, limits, max_candidates: [("zeros", LaunchConfig())])
    (result,) = tileconv.tune([SMALL], device=device, timer=lambda fn: 1.0, progress=False)
    assert result.status == "failed" and "no candidate ran correctly" in result.message
    assert cache.load() == {}


# --------------------------------------------------------------------- command line
def test_tune_is_a_registered_command():
    from tileconv.cli import COMMANDS

    assert COMMANDS["tune"] == "tileconv.dispatch.tune"
    assert tune_module.HELP and callable(tune_module.add_arguments) and callable(tune_module.run)


@pytest.mark.skipif(torch.cuda.is_available(), reason="on a GPU the command would tune for real")
def test_command_without_a_gpu_says_so_and_exits_2(capsys):
    parser = argparse.ArgumentParser()
    tune_module.add_arguments(parser)
    assert tune_module.run(parser.parse_args(["--suite", "resnet50"])) == 2
    assert "CUDA GPU" in capsys.readouterr().err
    assert not cache.cache_file().exists()


def test_tune_case_that_matches_nothing_says_so_and_exits_2(capsys):
    """``tune --case TEXT`` tunes only the suite's cases whose name contains TEXT; one that
    matches none is refused before anything runs, naming the suite's cases (GPU or not)."""
    parser = argparse.ArgumentParser()
    tune_module.add_arguments(parser)
    assert tune_module.run(parser.parse_args(["--suite", "seed", "--case", "seed999"])) == 2
    err = capsys.readouterr().err
    assert "'seed999' matches no case of suite 'seed'" in err and "seed003" in err
    assert not cache.cache_file().exists()


def test_tune_model_tunes_each_convolution_the_model_runs_once(device, seed):
    """tileconv.tune_model runs the model once while dispatch lists its problems (a repeated
    shape once), tunes them into the cache, and a second call finds them there."""
    from tileconv.dispatch import collect_problems
    from tileconv.dispatch.tune import wall_clock_timer

    torch.manual_seed(seed)
    model = torch.nn.Sequential(
        tileconv.nn.Conv2d(4, 8, 3, padding=1), tileconv.nn.Conv2d(8, 8, 3, padding=1, activation="relu"),
        tileconv.nn.Conv2d(8, 8, 3, padding=1, activation="relu"), tileconv.nn.Conv2d(8, 16, 1),
    ).to(device)
    x = torch.randn(1, 4, 6, 6, device=device)
    with torch.no_grad(), collect_problems() as problems:
        model(x)
    assert len(problems) == 3  # the two identical 8 -> 8 layers are one problem
    results = tileconv.tune_model(model, x, device=device, max_candidates=1, progress=False,
                                  timer=lambda fn: wall_clock_timer(fn, repeats=1))
    assert [r.problem for r in results] == problems and all(r.status == "tuned" for r in results)
    again = tileconv.tune_model(model, (x,), device=device, progress=False)
    assert all(r.status == "cached" for r in again)
    plain = torch.nn.Sequential(torch.nn.Conv2d(4, 8, 3)).to(device)
    with pytest.raises(ValueError, match="ran no tileconv convolution"):
        tileconv.tune_model(plain, x, device=device)


def test_gluon_kernels_are_offered_on_nvidia_gpus_only(monkeypatch):
    """The Gluon kernels' capability checks: a Hopper for implicit_gemm_ws, sm_80 and newer for
    depthwise_halo's cp.async, and neither on a ROCm build, whose devices report capabilities of
    their own ((9, 4) for an MI300)."""
    from tileconv.kernels import launch

    def answers(hip, capability):
        monkeypatch.setattr(torch.version, "hip", hip)
        monkeypatch.setattr(torch.cuda, "is_available", lambda: capability is not None)
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *args: capability)
        return launch._is_hopper.__wrapped__(), launch.has_cp_async.__wrapped__()

    assert answers(None, (9, 0)) == (True, True)
    assert answers(None, (8, 0)) == (False, True)
    assert answers(None, (7, 5)) == (False, False)
    assert answers(None, None) == (False, False)
    assert answers("6.2", (9, 4)) == (False, False)


def test_grouped_halo_tiles_fit_its_shared_memory(monkeypatch):
    """grouped_halo's default config and every candidate fit the kernel's shared-memory bound
    wherever the kernel runs (checked by its pure-Python tiling, so on any machine): strides
    past 2 stage U*V phase frames, and verify (seed 29, H200) once drew problems whose
    128-row default did not fit; at stride 2 four walking programs fit an SM's 228 KB."""
    from tileconv.dispatch.candidates import grouped_halo_candidates
    from tileconv.kernels import launch

    monkeypatch.setattr(launch, "INTERPRET", False)
    monkeypatch.setattr(launch, "has_cp_async", lambda: True)
    problems = [
        ConvProblem(2, 32, 33, 33, 32, 7, 1, (3, 3), (2, 2), (3, 3), groups=4),
        ConvProblem(4, 16, 29, 36, 16, 4, 4, (3, 3), (0, 0), (3, 3), groups=4),
        ConvProblem(3, 64, 20, 33, 16, 3, 1, (3, 3), (0, 0), groups=2),
        *[case.problem(torch.float16, "nhwc") for case in get_suite("grouped")],
    ]
    for problem in problems:
        if launch.grouped_halo_unsupported_reason(problem) is not None:
            continue
        for config in [default_config(problem, "grouped_halo"), *grouped_halo_candidates(problem)]:
            tiling = launch.grouped_halo_tiling(problem, config)
            assert tiling.shared_bytes(problem) <= launch.GROUPED_HALO_MAX_SHARED_BYTES, (problem.describe(), config)
    # The tiles that won session 29's probe are among those the 12-candidate cut keeps (the list
    # interleaves the algorithms: a tile late in grouped_halo's own list is never timed).
    monkeypatch.setattr(heuristics, "INTERPRET", False)
    first = get_suite("grouped")[0].problem(torch.float16, "nhwc")  # c128 hw56/1
    kept = [config for name, config in candidates(first, DeviceLimits(), max_candidates=12) if name == "grouped_halo"]
    assert (256, 4) in [(config.block_m, config.persistent) for config in kept], kept
    strided = get_suite("grouped")[1].problem(torch.float16, "nhwc")  # c256 hw56/2
    assert strided.stride == (2, 2)
    tiling = launch.grouped_halo_tiling(strided, default_config(strided, "grouped_halo"))
    assert 228 * 1024 // (tiling.shared_bytes(strided) + 1024) >= launch.GROUPED_HALO_WALKERS


def test_window_inside_promises_only_what_every_tile_keeps():
    """depthwise_window loads window columns COL_LO .. COL_HI - 1 without a column mask and,
    where CLAMP, rows without a row mask (its steady rows taken as inside the input): checked
    tile by tile and strip by strip against the geometry over random problems, and tight (the
    columns next to the range, and the steady rows when CLAMP is refused, do leave the input)."""
    rng = random.Random(31)
    for _ in range(400):
        r, s = rng.randint(1, 7), rng.randint(1, 7)
        v, dil_w = rng.randint(1, 3), rng.randint(1, 2)
        pad_h, pad_w = rng.randint(0, r + 1), rng.randint(0, s + 1)
        h, w = rng.randint(max(1, r - 2 * pad_h), 20), rng.randint(max(1, (s - 1) * dil_w + 1 - 2 * pad_w), 20)
        problem = ConvProblem(1, 4, h, w, 4, r, s, stride=(1, v), padding=(pad_h, pad_w), dilation=(1, dil_w),
                              groups=4)
        strip, tile_w = rng.randint(max(r - 1, 1), 9), rng.randint(1, 8)
        col_lo, col_hi, clamp = window_inside(problem, strip, tile_w)
        win_w = (tile_w - 1) * v + (s - 1) * dil_w + 1
        assert 0 <= col_lo <= col_hi <= win_w
        columns = [[q0 * v - pad_w + c for c in range(win_w)] for q0 in range(0, problem.out_w, tile_w)]
        for c in range(win_w):
            inside = all(0 <= tile[c] < w for tile in columns)
            assert inside or not col_lo <= c < col_hi, (problem.describe(), strip, tile_w, c)
            if c in (col_lo - 1, col_hi):
                assert not inside, (problem.describe(), strip, tile_w, c)
        steady = [p0 - pad_h + i for p0 in range(0, problem.out_h, strip) for i in range(r - 1, strip)]
        assert clamp == all(0 <= ih < h for ih in steady), (problem.describe(), strip)


def test_depthwise_register_cap_only_where_the_filter_is_unrolled(monkeypatch):
    """launch_depthwise caps the registers (``maxnreg``) of its whole-filter-unrolled launches on 4
    or more warps, where an epilogue's few extra registers cost a program an SM (132 against 128
    for bias + ReLU on c96 hw112/2), and of no other launch (fewer warps, or NCHW's runtime loops,
    spilled under the cap)."""
    import tileconv.kernels.launch as launch_module

    seen = []
    monkeypatch.setattr(launch_module, "launch", lambda kernel, grid, *args, **kwargs: seen.append(kwargs))
    for layout, num_warps, capped in (("nhwc", 4, True), ("nhwc", 2, False), ("nchw", 4, False)):
        problem = ConvProblem(2, 32, 12, 12, 32, 3, 3, stride=(2, 2), padding=(1, 1), groups=32,
                              dtype=torch.float16, layout=layout)
        inputs = random_inputs(problem, "cpu", seed=0)
        out = torch.empty(problem.output_shape, dtype=problem.dtype)
        config = LaunchConfig(64, 32, 8, num_warps=num_warps, num_stages=1)
        seen.clear()
        launch_module.launch_depthwise(problem, inputs.x, inputs.weight, inputs.bias, None, out, config)
        (kwargs,) = seen
        assert (kwargs["UNROLL_R"] > 0 and num_warps >= 4) == capped, (layout, num_warps, kwargs["UNROLL_R"])
        assert kwargs.get("maxnreg") == (launch_module.DEPTHWISE_UNROLLED_MAX_REGS if capped else None)


def test_ws_tma_epilogue_where_it_fits():
    """The warp-specialized kernels' TMA-store epilogue (``launch._ws_output_descriptor``): a
    (N*P*Q, K) descriptor of 128-byte column chunks for a dense channels_last output; pointer
    stores (None) with a residual, ping-pong, box tiles, an NCHW output, a tile of more than
    four chunks, or a ring that leaves no room for the chunk buffers (the 227 KB a program has
    on sm_90)."""
    from tileconv.kernels import launch

    problem = get_suite("seed")[0].problem(torch.float16, "nhwc")  # seed000
    out = torch.empty(problem.output_shape, dtype=problem.dtype).contiguous(memory_format=torch.channels_last)
    config = LaunchConfig(block_m=128, block_n=256, block_k=64, group_m=8, num_warps=8, num_stages=4)

    def descriptor(config=config, residual=None, out=out, problem=problem, box_q=0):
        return launch._ws_output_descriptor(problem, residual, out, config, config.block_k, box_q)

    desc = descriptor()
    assert desc is not None and list(desc.block_shape) == [128, 64]
    assert list(desc.shape) == [problem.gemm_m, problem.k]
    assert descriptor(residual=out) is None
    assert descriptor(config=replace(config, num_warps=4, pingpong=1)) is None
    assert descriptor(box_q=7) is None
    assert descriptor(out=torch.empty(problem.output_shape, dtype=problem.dtype)) is None  # NCHW
    assert descriptor(config=replace(config, num_stages=5)) is None  # 240 KB of ring
    tf32 = replace(problem, dtype=torch.float32, allow_tf32=True)
    assert descriptor(problem=tf32, out=out.float()) is None  # 256 float32 columns: eight chunks
    desc = descriptor(problem=tf32, out=out.float(), config=replace(config, block_n=128, num_stages=3))
    assert desc is not None and list(desc.block_shape) == [128, 32]


def test_ws_rings_leave_room_for_the_tma_store_epilogue():
    """The warp-specialized kernels' candidates (the heuristics' tile first among them) take rings
    as deep as still leave room for the TMA-store epilogue's two chunk buffers (192 KB since
    session 35, where 8 stages of 64x128 beat 5 on the H200): on a dense channels_last 16-bit
    output without a residual none of them falls back to pointer stores."""
    from tileconv.dispatch.candidates import implicit_gemm_ws_candidates
    from tileconv.kernels import launch

    for name in ("r50 c2048 hw7 k512 1x1/1", "r50 c512 hw7 k512 3x3/1", "r50 c128 hw56 k128 3x3/2"):
        for dtype in (torch.float16, torch.bfloat16):
            problem = next(c for c in get_suite("resnet50") if c.name == name).problem(dtype, "nhwc")
            out = torch.empty(problem.output_shape, dtype=dtype).contiguous(memory_format=torch.channels_last)
            configs = implicit_gemm_ws_candidates(problem)
            assert max(config.num_stages for config in configs if config.block_m == 64) == 8, name
            for config in configs:
                assert launch._ws_output_descriptor(problem, None, out, config, config.block_k) is not None, \
                    (name, config)


def test_a_residual_takes_a_persistent_tile_that_fits(monkeypatch):
    """A config tuned without a residual (the cache key has no epilogue) stays launchable with one:
    gemm_1x1's and tma_rows's persistent 128x256x64 tiles in 3 stages, with a residual's layout
    scratch, would need 245,784 bytes of shared memory on sm_90 (the launch failed on an H200 in
    session 30's bench --epilogue bias_add_relu): select() runs their non-persistent form; a tile
    that fits keeps its persistent form, and without a residual nothing changes."""
    from tileconv.dispatch.candidates import fit_to_epilogue

    case = next(c for c in get_suite("resnet50") if c.name == "r50 c1024 hw14 k512 1x1/1")
    plain = case.problem(torch.float16, "nhwc", "bias_relu")
    with_residual = case.problem(torch.float16, "nhwc", "bias_add_relu")
    big = LaunchConfig(128, 256, 64, 8, 8, 3, persistent=1)
    small = LaunchConfig(128, 128, 64, 8, 4, 4, persistent=1)
    for algorithm in ("gemm_1x1", "tma_rows"):
        assert fit_to_epilogue(with_residual, algorithm, big) == replace(big, persistent=0)
        assert fit_to_epilogue(with_residual, algorithm, small) == small
        assert fit_to_epilogue(plain, algorithm, big) == big
    assert fit_to_epilogue(with_residual, "implicit_gemm_ws", big) == big
    # Through select(), from a tuning cache that names the big tile.
    monkeypatch.setattr(tileconv.dispatch.cache, "lookup",
                        lambda problem, device=None, **kw: cache.TunedChoice("gemm_1x1", big, 0.01, {}))
    monkeypatch.setattr(heuristics, "INTERPRET", False)
    clear_selection_cache()
    try:
        for problem, persistent in ((with_residual, 0), (plain, 1)):
            algorithm, config = select(problem, device="cpu")
            assert (algorithm.name, config.persistent) == ("gemm_1x1", persistent)
    finally:
        clear_selection_cache()
