"""tileconv.conv2d against the float64 reference, over the problem space.

The bulk of the coverage is a pairwise set (:func:`pairwise_cases`): every value of every
option (stride, padding, dilation, groups, kernel, size, channels, dtype, layout,
activation, bias, residual, algorithm) meets every value of every other option in at least
one case, without paying for the cartesian product. Targeted tests follow for what pairs do
not reach: the full dtype x layout x algorithm grid, pinned launch configs for the kernels'
edge paths, strided and permuted tensors, unbatched and empty inputs, NaN/Inf, int64 indexing.

Outputs are allocated under ``poison_outputs()`` (NaN-filled), so an element a kernel never
writes fails the comparison. Inputs are fresh random numbers each session (conftest's seed).
"""

from __future__ import annotations

import fcntl
import itertools
import json
import math
import os
import random
import subprocess
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
import torch

import tileconv
from tileconv import LaunchConfig
from tileconv.functional import conv2d_problem
from tileconv.kernels import supported_algorithms
from tileconv.problem import problem_from_arguments
from tileconv.testing import assert_conv_close, compare, tolerance

REPO_ROOT = Path(__file__).resolve().parents[1]

DTYPES = {
    "fp16": (torch.float16, False),
    "bf16": (torch.bfloat16, False),
    "fp32": (torch.float32, False),
    "tf32": (torch.float32, True),  # float32 with torch.backends.cudnn.allow_tf32 = True
}
ACTIVATIONS = [None, *(a for a in tileconv.ACTIVATION_NAMES if a != "clamp"), ("leaky_relu", 0.2), ("clamp", -0.5, 0.5)]


@dataclass(frozen=True)
class Case:
    """One conv2d call: sizes, arguments as the user passes them, and how to run it."""

    n: int
    c: int
    h: int
    w: int
    k: int
    r: int
    s: int
    stride: int | tuple[int, int] = 1
    padding: int | tuple[int, int] | str = 0
    dilation: int | tuple[int, int] = 1
    groups: int = 1
    dtype: str = "fp32"  # a key of DTYPES
    layout: str = "nchw"  # 'nchw' (contiguous) or 'nhwc' (channels_last)
    activation: object = None
    bias: bool = False
    residual: bool = False
    algo: str = "auto"  # 'auto' goes through tileconv.conv2d, else conv2d_problem(algo=...)
    config: LaunchConfig | None = None

    @property
    def id(self) -> str:
        act = self.activation
        act = "-".join(str(a) for a in act) if isinstance(act, tuple) else str(act)
        parts = [
            f"{self.n}x{self.c}x{self.h}x{self.w}-k{self.k}-{self.r}x{self.s}",
            f"s{_text(self.stride)}-p{_text(self.padding)}-d{_text(self.dilation)}-g{self.groups}",
            self.dtype, self.layout, act,
        ]
        parts += ["bias"] if self.bias else []
        parts += ["res"] if self.residual else []
        parts.append(self.algo)
        if self.config is not None:
            cfg = self.config
            parts.append(f"cfg{cfg.block_m}.{cfg.block_n}.{cfg.block_k}.{cfg.group_m}" + ("f" if cfg.fuse_sc else "")
                         + ("p" if cfg.persistent else "") + ("pp" if cfg.pingpong else "")
                         + ("r" if cfg.resident else "")
                         + (f"k{cfg.split_k}" if cfg.split_k > 1 else ""))
        return "-".join(parts)

    def arguments(self) -> tuple:
        return (self.stride, self.padding, self.dilation, self.groups)

    def meta_problem(self):
        """The ConvProblem tileconv derives for this call (from meta tensors: no data), with the
        TF32 flag the call will run under (an algorithm's support may depend on it)."""
        saved = torch.backends.cudnn.allow_tf32
        torch.backends.cudnn.allow_tf32 = DTYPES[self.dtype][1]
        try:
            return self._meta_problem()
        finally:
            torch.backends.cudnn.allow_tf32 = saved

    def _meta_problem(self):
        dtype = DTYPES[self.dtype][0]
        fmt = torch.channels_last if self.layout == "nhwc" else torch.contiguous_format
        x = torch.empty(self.n, self.c, self.h, self.w, dtype=dtype, device="meta").contiguous(memory_format=fmt)
        w = torch.empty(self.k, self.c // self.groups, self.r, self.s, dtype=dtype, device="meta")
        bias = torch.empty(self.k, dtype=dtype, device="meta") if self.bias else None
        problem = problem_from_arguments(x, w, bias, *self.arguments(), self.activation)
        if self.residual:
            residual = torch.empty(problem.output_shape, dtype=dtype, device="meta")
            problem = problem_from_arguments(x, w, bias, *self.arguments(), self.activation, residual)
        return problem

    def is_valid(self) -> bool:
        """True if tileconv accepts the arguments and the forced algorithm computes them."""
        if self.c % self.groups or self.k % self.groups:
            return False
        try:
            problem = self.meta_problem()
        except ValueError:
            return False
        return self.algo == "auto" or self.algo in supported_algorithms(problem)


def with_each_algorithm(cases: list[Case]) -> list:
    """``cases`` once per registered algorithm that computes them (new algorithms included)."""
    params = []
    for case in cases:
        for name in supported_algorithms(case.meta_problem()):
            params.append(pytest.param(replace(case, algo=name), id=replace(case, algo=name).id))
    return params


def _text(value) -> str:
    if isinstance(value, tuple):
        return "x".join(str(v) for v in value)
    return str(value)


# --------------------------------------------------------------------- running one case
@dataclass
class Tensors:
    x: torch.Tensor
    weight: torch.Tensor
    bias: torch.Tensor | None
    residual: torch.Tensor | None


def make_inputs(case: Case, device: str, seed: int) -> Tensors:
    """Random N(0, 1) input, weights scaled by 1/sqrt(C/g*R*S) so outputs are O(1)."""
    gen = torch.Generator().manual_seed(seed)
    dtype = DTYPES[case.dtype][0]

    def randn(*shape, scale=1.0):
        return (torch.randn(shape, generator=gen) * scale).to(dtype=dtype, device=device)

    fmt = torch.channels_last if case.layout == "nhwc" else torch.contiguous_format
    x = randn(case.n, case.c, case.h, case.w).contiguous(memory_format=fmt)
    c_per_group = case.c // case.groups
    weight = randn(case.k, c_per_group, case.r, case.s, scale=1 / math.sqrt(c_per_group * case.r * case.s))
    bias = randn(case.k) if case.bias else None
    residual = None
    if case.residual:
        residual = randn(*case.meta_problem().output_shape).contiguous(memory_format=fmt)
    return Tensors(x, weight, bias, residual)


def run_tileconv(case: Case, t: Tensors) -> torch.Tensor:
    """tileconv's output for ``case`` (public API for 'auto', else a forced algorithm/config)."""
    with tileconv.poison_outputs():
        if case.algo == "auto" and case.config is None:
            return tileconv.conv2d(
                t.x, t.weight, t.bias, *case.arguments(), activation=case.activation, residual=t.residual
            )
        problem = problem_from_arguments(t.x, t.weight, t.bias, *case.arguments(), case.activation, t.residual)
        return conv2d_problem(problem, t.x, t.weight, t.bias, t.residual, algo=case.algo, config=case.config)


def reference(case: Case, t: Tensors) -> torch.Tensor:
    return tileconv.conv2d_reference(
        t.x, t.weight, t.bias, *case.arguments(), activation=case.activation, residual=t.residual
    )


def check_case(case: Case, device: str, seed: int, tensors: Tensors | None = None) -> torch.Tensor:
    """Run ``case`` and assert it matches the float64 reference, in dtype, device and layout."""
    torch.backends.cudnn.allow_tf32 = DTYPES[case.dtype][1]  # the allow_tf32 fixture restores it
    t = tensors or make_inputs(case, device, seed)
    problem = problem_from_arguments(t.x, t.weight, t.bias, *case.arguments(), case.activation, t.residual)
    out = run_tileconv(case, t)
    where = f"{case.id} (seed {seed})"
    assert out.dtype == t.x.dtype and out.device == t.x.device, f"{where}: output is {out.dtype} on {out.device}"
    assert_conv_close(out, reference(case, t), tolerance(problem), context=where)
    if t.x.dim() == 4 and t.x.is_contiguous(memory_format=torch.channels_last) and not t.x.is_contiguous():
        assert out.is_contiguous(memory_format=torch.channels_last), f"{where}: channels_last input, output strides {out.stride()}"
    else:
        assert out.is_contiguous(), f"{where}: NCHW input, output strides {out.stride()}"
    return out


# --------------------------------------------------------------------- the pairwise set
# (C, K) by groups option; groups is 1, 2, or C for depthwise with channel multiplier 1 or 2
# ('dw1', 'dw2'). Includes the seeds' odd C = 3, K = 5, C/g = 40 (more channels than one
# default reduction step takes), and g2's (16, 32): C/g = 8 and K/g = 16, powers of two, so
# that grouped_halo (two groups merged into 16 channels) meets the other options on a GPU.
CHANNELS = {
    "g1": [(3, 5), (32, 8), (20, 24), (40, 12)],
    "g2": [(6, 10), (4, 6), (16, 32), (80, 8)],
    "dw1": [(3, 3), (8, 8), (16, 16), (24, 24)],
    "dw2": [(3, 6), (5, 10), (8, 16), (12, 24)],
}
OPTIONS: dict[str, list] = {
    "kernel": [(1, 1), (3, 3), (5, 5), (1, 7), (7, 1), (2, 2)],
    "stride": [1, 2, (2, 1)],
    "padding": [0, 1, (2, 0), "same", "valid"],
    "dilation": [1, 2],
    "groups": list(CHANNELS),
    "channels": [0, 1, 2, 3],  # index into CHANNELS[groups]
    "size": [(2, 7, 9), (1, 9, 8), (2, 5, 6)],  # (N, H, W)
    "dtype": list(DTYPES),
    "layout": ["nchw", "nhwc"],
    "activation": ACTIVATIONS,
    "bias": [False, True],
    "residual": [False, True],
    "algo": [*tileconv.ALGORITHMS, "auto"],  # every registered kernel, forced, and the dispatcher's pick
}


def _case_from(choice: dict) -> Case:
    c, k = CHANNELS[choice["groups"]][choice["channels"]]
    groups = {"g1": 1, "g2": 2}.get(choice["groups"], c)
    n, h, w = choice["size"]
    r, s = choice["kernel"]
    return Case(
        n, c, h, w, k, r, s, choice["stride"], choice["padding"], choice["dilation"], groups,
        choice["dtype"], choice["layout"], choice["activation"], choice["bias"], choice["residual"], choice["algo"],
    )


def _all_pairs(pick: dict) -> set:
    """The (option, value index) pairs that one case covers."""
    return {((a, pick[a]), (b, pick[b])) for a, b in itertools.combinations(pick, 2)}


def pairwise_cases(seed: int = 20240607, candidates: int = 30, tries: int = 300) -> list[Case]:
    """A covering array of strength 2 over OPTIONS, built greedily (AETG): for the first pair
    not yet covered, draw random valid cases that hold it and keep the one covering the most
    new pairs. A pair that no valid case holds in ``tries`` draws (padding='same' with a
    stride of 2, an algorithm with a problem it does not compute) is dropped. Seeded, so the case list and test ids are stable."""
    rng = random.Random(seed)
    names = list(OPTIONS)
    uncovered = {
        ((a, i), (b, j))
        for a, b in itertools.combinations(names, 2)
        for i in range(len(OPTIONS[a]))
        for j in range(len(OPTIONS[b]))
    }
    cases = []
    while uncovered:
        (a, i), (b, j) = target = min(uncovered)
        best, best_gain, found = None, 0, 0
        for _ in range(tries):
            pick = {name: rng.randrange(len(OPTIONS[name])) for name in names}
            pick[a], pick[b] = i, j
            if not _case_from(_values(pick)).is_valid():
                continue
            gain = len(_all_pairs(pick) & uncovered)
            if gain > best_gain:
                best, best_gain = pick, gain
            found += 1
            if found == candidates:
                break
        if best is None:
            uncovered.discard(target)
            continue
        uncovered -= _all_pairs(best)
        cases.append(_case_from(_values(best)))
    return cases


def _values(pick: dict) -> dict:
    return {name: OPTIONS[name][i] for name, i in pick.items()}


PAIRWISE = pairwise_cases()


def test_pairwise_set_covers_every_feasible_pair():
    """The generated set is a covering set: every pair of option values that can meet is in
    some case (missing: padding='same' with a stride of 2, and algorithms paired with what
    they do not compute, e.g. 'depthwise' with groups=1), and every value is in several cases."""
    present = set()
    for case in PAIRWISE:
        pick = {name: OPTIONS[name].index(_option_value(case, name)) for name in OPTIONS}
        present |= _all_pairs(pick)
    missing = []
    for a, b in itertools.combinations(OPTIONS, 2):
        for i, j in itertools.product(range(len(OPTIONS[a])), range(len(OPTIONS[b]))):
            if ((a, i), (b, j)) not in present:
                missing.append({a: OPTIONS[a][i], b: OPTIONS[b][j]})
    unexplained = [m for m in missing if "algo" not in m and not (m.get("padding") == "same" and m.get("stride", 2) != 1)]
    assert not unexplained, unexplained
    assert {"padding": "same", "stride": 2} in missing
    for name, values in OPTIONS.items():
        for value in values:
            if name == "algo" and _other_machine(value):
                continue  # no case of it is valid here: the GPU's run covers it
            count = sum(_option_value(case, name) == value for case in PAIRWISE)
            assert count >= 3, f"{name}={value!r} appears in {count} cases"


def _option_value(case: Case, name: str):
    if name == "kernel":
        return (case.r, case.s)
    if name == "groups":
        return "g1" if case.groups == 1 else "g2" if case.groups == 2 else f"dw{case.k // case.c}"
    if name == "channels":
        key = _option_value(case, "groups")
        return CHANNELS[key].index((case.c, case.k))
    if name == "size":
        return (case.n, case.h, case.w)
    return getattr(case, name)


@pytest.mark.parametrize("case", PAIRWISE, ids=[c.id for c in PAIRWISE])
def test_pairwise(case: Case, device: str, seed: int, allow_tf32):
    check_case(case, device, seed)


# --------------------------------------------------------------------- dtype x layout x algorithm
# A dense, a grouped and a depthwise problem, in every dtype and layout, through every
# algorithm that computes it.
GRID_BASES = [
    Case(2, 16, 7, 9, 24, 3, 3, padding=1, activation="silu", bias=True, residual=True),
    Case(2, 16, 7, 9, 24, 3, 3, stride=(2, 1), padding=1, groups=4, activation="relu", bias=True),
    Case(2, 8, 7, 9, 16, 3, 3, padding="same", groups=8, activation="hardswish", residual=True),
]
GRID = with_each_algorithm(
    [replace(base, dtype=dtype, layout=layout) for base in GRID_BASES for dtype in DTYPES for layout in ("nchw", "nhwc")]
)


@pytest.mark.parametrize("case", GRID)
def test_dtype_layout_algorithm_grid(case: Case, device: str, seed: int, allow_tf32):
    check_case(case, device, seed)


def test_allow_tf32_is_read_per_call(device: str, allow_tf32):
    """The flag becomes part of the problem at call time (it picks the dot's precision)."""
    x = torch.randn(1, 4, 5, 5, device=device)
    w = torch.randn(4, 4, 3, 3, device=device)
    for flag in (False, True):
        torch.backends.cudnn.allow_tf32 = flag
        problem = problem_from_arguments(x, w)
        assert problem.allow_tf32 is flag and problem.dtype_name == ("float32+tf32" if flag else "float32")


# --------------------------------------------------------------------- pinned launch configs
# Each row reaches a path the default configs may not: tiles larger than the whole problem,
# BLOCK_K < C/groups (the channel loop takes several steps, the last one masked), M and N
# tails, a swizzle group larger than the remaining row tiles, direct tiles spanning groups.
CONFIG_CASES = [
    # gemm_1x1 (TMA descriptors): M, N and C tails read as zeros from out of bounds, in every
    # dtype; a tile far larger than the problem; the fused epilogue on a channels_last output.
    Case(2, 24, 5, 7, 40, 1, 1, dtype="fp16", layout="nhwc", bias=True, residual=True, activation="relu",
         algo="gemm_1x1", config=LaunchConfig(16, 16, 16, 2, 4, 2)),
    Case(1, 40, 3, 5, 12, 1, 1, dtype="bf16", layout="nhwc", activation="silu",
         algo="gemm_1x1", config=LaunchConfig(64, 64, 32, 8, 4, 3)),
    Case(2, 12, 4, 3, 20, 1, 1, dtype="fp32", layout="nhwc", bias=True,
         algo="gemm_1x1", config=LaunchConfig(16, 16, 16, 8, 4, 2)),
    # ... its persistent form: 3 programs walk 5 x 3 tiles (M = 70, K = 40 in 16-wide tiles:
    # tails on both), each stored by TMA, clipped at the edges; bf16 with the whole epilogue.
    Case(2, 24, 5, 7, 40, 1, 1, dtype="bf16", layout="nhwc", bias=True, residual=True, activation="relu",
         algo="gemm_1x1", config=LaunchConfig(16, 16, 16, 2, 4, 2, persistent=1)),
    # ... TF32 stepping 64 channels (the deep TF32 candidates): C = 136 in three steps, the last
    # one mostly zero fill.
    Case(2, 136, 4, 5, 24, 1, 1, dtype="tf32", layout="nhwc", bias=True, activation="relu",
         algo="gemm_1x1", config=LaunchConfig(16, 32, 64, 8, 4, 3, persistent=1)),
    # ... strided (boxes of whole output rows of the strided view x[:, ::U, ::V]): H = 2P, so
    # the batch and the rows merge into one image of N*P rows (boxes of 2 rows of 8 columns for
    # Q = 5: zero-filled columns, a box across the image boundary); both forms, the epilogue.
    Case(3, 24, 6, 10, 40, 1, 1, stride=2, dtype="fp16", layout="nhwc", bias=True, residual=True,
         activation="relu", algo="gemm_1x1", config=LaunchConfig(16, 16, 16, 2, 4, 2)),
    Case(3, 24, 6, 10, 40, 1, 1, stride=2, dtype="bf16", layout="nhwc", bias=True, residual=True,
         activation="relu", algo="gemm_1x1", config=LaunchConfig(16, 16, 16, 2, 4, 2, persistent=1)),
    # ... H = 9 is not 2P = 10 (P = 5): boxes per image, the last one half past the image's end;
    # strides (2, 3); strict fp32; a 16-pixel box over a row of 20 (stride (1, 2) on W = 40:
    # two segments a row, the second past its end) in TF32; a tile larger than the problem.
    Case(2, 12, 9, 10, 20, 1, 1, stride=(2, 3), dtype="fp32", layout="nhwc", bias=True,
         algo="gemm_1x1", config=LaunchConfig(32, 16, 16, 8, 4, 2, persistent=1)),
    Case(2, 16, 3, 40, 24, 1, 1, stride=(1, 2), dtype="tf32", layout="nhwc", residual=True, activation="silu",
         algo="gemm_1x1", config=LaunchConfig(16, 16, 16, 4, 4, 2, persistent=1)),
    Case(1, 8, 5, 5, 8, 1, 1, stride=3, dtype="fp16", layout="nhwc", bias=True,
         algo="gemm_1x1", config=LaunchConfig(64, 32, 32, 8, 4, 3)),
    # tma_rows (4D input box per tap, zero fill as the halo): 16-pixel segments over 20-wide
    # rows (the second runs past the row's end), 16 of K = 20 (tail), 16 of C = 24 (the
    # channel tail reads zeros on both operands), dilation 2 with uneven padding; the whole
    # epilogue. The same problem on the persistent form (3 programs walk 30 tiles, each
    # tile's TMA store clipped at the row's end and past K).
    Case(2, 24, 5, 20, 20, 3, 3, padding=(2, 3), dilation=2, dtype="fp16", layout="nhwc", bias=True,
         residual=True, activation="relu", algo="tma_rows", config=LaunchConfig(16, 16, 16, 2, 4, 2)),
    Case(2, 24, 5, 20, 20, 3, 3, padding=(2, 3), dilation=2, dtype="fp16", layout="nhwc", bias=True,
         residual=True, activation="relu", algo="tma_rows", config=LaunchConfig(16, 16, 16, 2, 4, 2, persistent=1)),
    # ... bf16 (multiplied in fp32 under the interpreter), 'same' padding of an even filter
    # (1 before, 2 after); a 32-pixel segment longer than the 9-wide row; K = 8 in a 16 tile.
    Case(1, 16, 6, 9, 8, 4, 4, padding="same", dtype="bf16", layout="nhwc", activation="silu",
         algo="tma_rows", config=LaunchConfig(32, 16, 16, 8, 4, 3, persistent=1)),
    # ... strict fp32 (3xTF32 dots) and TF32, a 1x5 filter, 1x1 with no padding.
    Case(2, 8, 4, 11, 16, 1, 5, padding=(0, 2), dtype="fp32", layout="nhwc", bias=True,
         algo="tma_rows", config=LaunchConfig(16, 16, 16, 4, 4, 2, persistent=1)),
    Case(1, 12, 3, 7, 24, 1, 1, dtype="tf32", layout="nhwc", residual=True, activation="gelu",
         algo="tma_rows", config=LaunchConfig(16, 16, 16, 4, 4, 2)),
    # implicit_gemm_ws (Gluon, Hopper only: skipped under the interpreter): M and K tails, a
    # 5x5 filter, C = 48 in 64-channel steps (halved to 16, whole blocks), stride 2 with uneven
    # padding, dilation, the whole epilogue, bf16, TF32, 4 and 8 MMA warps, a 1x1, a ring of 2.
    Case(2, 48, 9, 11, 40, 5, 5, padding=2, dtype="fp16", layout="nhwc", bias=True, residual=True, activation="relu",
         algo="implicit_gemm_ws", config=LaunchConfig(128, 64, 64, 4, 4, 3)),
    Case(3, 32, 13, 10, 72, 3, 3, stride=2, padding=(1, 0), dilation=(1, 2), dtype="bf16", layout="nhwc",
         activation="silu", algo="implicit_gemm_ws", config=LaunchConfig(128, 128, 32, 8, 8, 4)),
    Case(2, 16, 7, 7, 24, 3, 3, padding=1, dtype="tf32", layout="nhwc", bias=True,
         algo="implicit_gemm_ws", config=LaunchConfig(64, 64, 32, 8, 4, 2)),
    Case(2, 64, 5, 6, 128, 1, 1, dtype="fp16", layout="nhwc", residual=True, activation="gelu",
         algo="implicit_gemm_ws", config=LaunchConfig(128, 256, 64, 8, 8, 3)),
    # ... TF32 in 64-channel steps (256-byte rows: two swizzle atoms), K = 96 in a 128 tile.
    Case(2, 192, 7, 7, 96, 3, 3, padding=1, dtype="tf32", layout="nhwc", residual=True, activation="relu",
         algo="implicit_gemm_ws", config=LaunchConfig(64, 128, 64, 8, 4, 3)),
    # ... TF32 over C = 8 (one 32-byte channel block a tap: BLOCK_K halved to 8), 3x3 and 1x1.
    Case(1, 8, 8, 8, 16, 3, 3, padding=1, dtype="tf32", layout="nhwc", residual=True, activation="relu",
         algo="implicit_gemm_ws", config=LaunchConfig(64, 64, 32, 8, 4, 3)),
    Case(2, 8, 4, 4, 16, 1, 1, stride=2, dtype="tf32", layout="nhwc", bias=True,
         algo="implicit_gemm_ws", config=LaunchConfig(64, 64, 32, 8, 4, 3)),
    # ... ping-pong: two MMA warpgroups taking the tiles in turn (128 x 3 tiles on a GPU's
    # 132 programs: two or three a program, an odd count on most), C = 32 in one 32-channel
    # step per tap, K = 320 with a tail, the whole epilogue; TF32 on 64-row tiles, stride 2.
    Case(4, 32, 64, 64, 320, 3, 3, padding=1, dtype="fp16", layout="nhwc", bias=True, residual=True,
         activation="relu", algo="implicit_gemm_ws", config=LaunchConfig(128, 128, 64, 8, 4, 6, pingpong=1)),
    Case(4, 24, 64, 64, 136, 3, 3, stride=2, padding=1, dtype="tf32", layout="nhwc", activation="silu",
         algo="implicit_gemm_ws", config=LaunchConfig(64, 64, 32, 8, 4, 4, pingpong=1)),
    # ... the TMA-store epilogue (no residual, a dense channels_last output): a 128x256 tile in four
    # 64-column chunks with M and K tails (K = 200: the last chunk clipped); two 128x128 tiles a
    # program over 256 tiles (the chunk buffers reused across tiles); K = 20, whose 40-byte rows
    # no descriptor takes (pointer stores).
    Case(2, 32, 9, 11, 200, 3, 3, padding=1, dtype="fp16", layout="nhwc", bias=True, activation="relu",
         algo="implicit_gemm_ws", config=LaunchConfig(128, 256, 64, 8, 8, 4)),
    Case(4, 32, 64, 64, 256, 3, 3, padding=1, dtype="bf16", layout="nhwc", bias=True, activation="silu",
         algo="implicit_gemm_ws", config=LaunchConfig(128, 128, 32, 8, 4, 4)),
    Case(1, 16, 5, 5, 20, 3, 3, padding=1, dtype="fp16", layout="nhwc", bias=True,
         algo="implicit_gemm_ws", config=LaunchConfig(64, 64, 32, 8, 4, 2)),
    # grouped_gemm_ws (Gluon, Hopper only): groups merged into 128-byte pixel rows on implicit_gemm_ws's
    # kernel, one merged group a tile (block_n its K/g). 16 channels a group at stride 2 (ResNeXt's
    # c512 hw28/2 form: four merged), the whole epilogue with a residual (pointer stores); 32 a
    # group (two merged) in two programs an SM with an M tail, TMA stores; a channel multiplier
    # (C/g 16 -> K/g 32, two merged into 32 channels: 64-byte rows) in bf16 on ping-pong; TF32 with
    # 8 channels a group (four merged: 32-channel steps). Their non-finite inputs: NONFINITE_CASES.
    Case(2, 64, 9, 10, 64, 3, 3, stride=2, padding=1, groups=4, dtype="fp16", layout="nhwc", bias=True,
         residual=True, activation="relu", algo="grouped_gemm_ws", config=LaunchConfig(128, 64, 64, 8, 4, 8)),
    Case(3, 128, 7, 7, 128, 3, 3, padding=1, groups=4, dtype="fp16", layout="nhwc", bias=True,
         algo="grouped_gemm_ws", config=LaunchConfig(64, 64, 64, 8, 4, 4, persistent=2)),
    Case(2, 32, 6, 9, 64, 3, 3, padding=(1, 2), dilation=(2, 1), groups=2, dtype="bf16", layout="nhwc",
         activation="silu", algo="grouped_gemm_ws", config=LaunchConfig(128, 64, 32, 8, 4, 4, pingpong=1)),
    Case(2, 32, 8, 8, 32, 3, 3, padding=1, groups=4, dtype="tf32", layout="nhwc", residual=True,
         algo="grouped_gemm_ws", config=LaunchConfig(64, 32, 32, 8, 4, 6)),
    # implicit_gemm_frame (Gluon, Hopper only: skipped under the interpreter): one frame a channel
    # block, every tap a view of it from any row. A 14-wide output in a 16-column frame (two
    # columns never stored), an output-row tail (P = 9 in 8-row tiles), K = 72 in a 128 tile (the
    # TMA store clipped), bias + ReLU; a 5x5 filter dilated along rows (the frame's 8 reach rows
    # in boxes of 4 rows) in 32-channel steps (64-byte swizzle), bf16; 256-row tiles on 8 warps of
    # a 28-wide output (a 4-row tail), K = 64 (one chunk a tile), SiLU; a 1x3 filter (no reach
    # rows: one box a frame), K = 24.
    Case(3, 64, 9, 14, 72, 3, 3, padding=1, dtype="fp16", layout="nhwc", bias=True, activation="relu",
         algo="implicit_gemm_frame", config=LaunchConfig(128, 128, 64, 8, 4, 6)),
    Case(2, 96, 11, 10, 40, 5, 5, padding=(4, 2), dilation=(2, 1), dtype="bf16", layout="nhwc", bias=True,
         algo="implicit_gemm_frame", config=LaunchConfig(64, 64, 32, 8, 4, 4)),
    Case(4, 128, 28, 28, 64, 3, 3, padding=1, dtype="fp16", layout="nhwc", activation="silu",
         algo="implicit_gemm_frame", config=LaunchConfig(256, 64, 64, 8, 8, 6)),
    Case(2, 32, 6, 30, 24, 1, 3, padding=(0, 1), dtype="bf16", layout="nhwc",
         algo="implicit_gemm_frame", config=LaunchConfig(64, 64, 32, 8, 4, 3)),
    # ... at stride 2, the taps views of four phase frames (even and odd rows and columns) a stage:
    # odd H and W (phases of unequal sizes; P = 7 in 8-row tiles of a 16-column frame for Q = 8),
    # bias + ReLU; a dilated 3x3 whose taps all read even pixels (one phase, reach 2 rows), bf16;
    # stride (2, 1) with a 5x3 filter (two row phases of reach 2 and 1, one-row boxes); a 2x2
    # patchify filter (four phases of one tap, no padding), K = 40; ResNet-50's c128 hw56 3x3/2 at
    # batch 16 (448 tiles: several a program, the frame ring over two channel blocks).
    Case(2, 64, 13, 15, 72, 3, 3, stride=2, padding=1, dtype="fp16", layout="nhwc", bias=True, activation="relu",
         algo="implicit_gemm_frame", config=LaunchConfig(128, 128, 32, 8, 4, 6)),
    Case(2, 32, 20, 18, 24, 3, 3, stride=2, padding=2, dilation=2, dtype="bf16", layout="nhwc",
         algo="implicit_gemm_frame", config=LaunchConfig(64, 64, 32, 8, 4, 4)),
    Case(3, 64, 37, 30, 64, 5, 3, stride=(2, 1), padding=(2, 1), dtype="fp16", layout="nhwc", bias=True,
         algo="implicit_gemm_frame", config=LaunchConfig(64, 64, 64, 8, 4, 4)),
    Case(2, 32, 32, 32, 40, 2, 2, stride=2, dtype="fp16", layout="nhwc", activation="silu",
         algo="implicit_gemm_frame", config=LaunchConfig(128, 64, 32, 8, 4, 4)),
    Case(16, 128, 56, 56, 128, 3, 3, stride=2, padding=1, dtype="fp16", layout="nhwc", bias=True,
         activation="relu", algo="implicit_gemm_frame", config=LaunchConfig(64, 128, 64, 8, 4, 6)),
    # ... an input one pixel wide (or high) at stride 2: a phase without a pixel, which no descriptor
    # describes, so the implicit GEMM runs it (`verify --algo implicit_gemm_frame` seed 58 drew both).
    Case(2, 96, 9, 1, 16, 3, 3, stride=2, padding=2, dtype="bf16", layout="nhwc", activation="tanh",
         algo="implicit_gemm_frame", config=LaunchConfig(64, 128, 32, 8, 4, 8)),
    Case(4, 96, 1, 31, 24, 1, 7, stride=(2, 1), padding=(1, 0), dilation=3, dtype="bf16", layout="nhwc",
         bias=True, activation="gelu", algo="implicit_gemm_frame", config=LaunchConfig(64, 128, 32, 8, 4, 8)),
    # grouped_frame (Gluon, Hopper only): grouped_gemm_ws's merged groups (128 bytes of input channels)
    # on the frame kernel, one merged group a tile, its frames the group's channels. 4 channels a
    # group (sixteen merged: 64 channels), a 14-wide output in a 16-column frame and a row tail
    # (P = 9 in 8-row tiles), bias + ReLU; 8 a group (eight merged, two merged groups), 64-row
    # tiles, bf16, SiLU; a channel multiplier (C/g 16 -> K/g 32: four merged, a 128-wide tile of
    # two chunks); 32-channel merged groups (C/g 8 -> K/g 16, four merged) in 32-channel steps
    # (64-byte swizzle); stride 2 (four phase frames) with odd H and W; ResNeXt's c256 hw28/1 at
    # batch 4 (several tiles a program, the frame ring reused). Their non-finite inputs:
    # test_grouped_frame_redoes_nonfinite_tiles.
    Case(2, 64, 9, 14, 64, 3, 3, padding=1, groups=16, dtype="fp16", layout="nhwc", bias=True, activation="relu",
         algo="grouped_frame", config=LaunchConfig(128, 64, 64, 8, 4, 8)),
    Case(3, 128, 11, 10, 128, 3, 3, padding=1, groups=16, dtype="bf16", layout="nhwc", activation="silu",
         algo="grouped_frame", config=LaunchConfig(64, 64, 64, 8, 4, 6)),
    Case(2, 64, 7, 12, 128, 3, 3, padding=1, groups=4, dtype="fp16", layout="nhwc", bias=True,
         algo="grouped_frame", config=LaunchConfig(128, 128, 64, 8, 4, 4)),
    Case(2, 32, 9, 9, 64, 3, 3, padding=1, groups=4, dtype="bf16", layout="nhwc", bias=True, activation="relu",
         algo="grouped_frame", config=LaunchConfig(64, 64, 32, 8, 4, 4)),
    Case(2, 128, 13, 15, 128, 3, 3, stride=2, padding=1, groups=16, dtype="fp16", layout="nhwc", bias=True,
         activation="relu", algo="grouped_frame", config=LaunchConfig(64, 64, 64, 8, 4, 8)),
    Case(4, 256, 28, 28, 256, 3, 3, padding=1, groups=32, dtype="fp16", layout="nhwc", bias=True,
         algo="grouped_frame", config=LaunchConfig(128, 64, 64, 8, 4, 8)),
    # ... and one pixel wide at stride 2 (the implicit GEMM runs it, its merged groups kept).
    Case(4, 32, 26, 1, 64, 2, 2, stride=2, padding=2, groups=32, dtype="bf16", layout="nhwc", bias=True,
         activation="relu", algo="grouped_frame", config=LaunchConfig(128, 64, 32, 8, 4, 8)),
    # gemm_1x1_ws (Gluon, Hopper only: skipped under the interpreter): gemm_1x1's views through a
    # one-warp TMA loader. Stride 1 with M, K and C tails (C = 40 in a 64-channel step: zero fill
    # on both operands), the whole epilogue; strided with merged images (2 rows of 8 columns for
    # Q = 5, 64-pixel tiles of 8 such rows), bf16, a ring of 2; unmerged (H = 9, strides (2, 3))
    # in TF32 stepping 64 channels (256-byte rows: two swizzle atoms); a 64-pixel box along a
    # 150-wide output row (three segments, the last past its end); ping-pong over 384 tiles.
    Case(2, 40, 5, 7, 72, 1, 1, dtype="fp16", layout="nhwc", bias=True, residual=True, activation="relu",
         algo="gemm_1x1_ws", config=LaunchConfig(128, 64, 64, 8, 4, 3)),
    Case(3, 24, 6, 10, 40, 1, 1, stride=2, dtype="bf16", layout="nhwc", bias=True, residual=True,
         activation="silu", algo="gemm_1x1_ws", config=LaunchConfig(64, 64, 16, 8, 4, 2)),
    Case(2, 96, 9, 10, 20, 1, 1, stride=(2, 3), dtype="tf32", layout="nhwc", bias=True,
         algo="gemm_1x1_ws", config=LaunchConfig(64, 64, 64, 8, 4, 3)),
    Case(2, 16, 3, 300, 24, 1, 1, stride=(1, 2), dtype="tf32", layout="nhwc", residual=True, activation="relu",
         algo="gemm_1x1_ws", config=LaunchConfig(64, 64, 32, 8, 4, 4)),
    Case(16, 32, 64, 64, 320, 1, 1, stride=2, dtype="fp16", layout="nhwc", bias=True, residual=True,
         activation="relu", algo="gemm_1x1_ws", config=LaunchConfig(128, 128, 64, 8, 4, 4, pingpong=1)),
    # ... stride 1 without a residual: the TMA-store epilogue (K = 136: a clipped last chunk).
    Case(2, 64, 7, 9, 136, 1, 1, dtype="bf16", layout="nhwc", bias=True, activation="silu",
         algo="gemm_1x1_ws", config=LaunchConfig(128, 128, 64, 8, 4, 4)),
    # One-chunk tiles (BLOCK_N = 64: the TMA-store epilogue's chunk) of one reduction step, about
    # six a program: each tile's chunk buffer must not be the one the tile before it is still
    # copying out (both kernels wrote wrong outputs here before their buffers alternated across
    # tiles: ResNet-50's c64 hw56 k64 at batch 32, H200, session 35).
    Case(32, 64, 56, 56, 64, 1, 1, dtype="fp16", layout="nhwc", bias=True,
         algo="gemm_1x1_ws", config=LaunchConfig(128, 64, 64, 8, 4, 5)),
    Case(32, 64, 56, 56, 64, 1, 1, dtype="bf16", layout="nhwc", activation="relu",
         algo="implicit_gemm_ws", config=LaunchConfig(128, 64, 64, 8, 4, 4)),
    # gemm_1x1_ws's 192-row tiles (three MMA warpgroups of 64 rows each): M = 2*9*11 = 198, one
    # full tile and a 6-row tail (the second and third slices of the last tile wholly past M), a
    # residual (pointer stores); the TMA-store epilogue with a clipped last chunk (K = 136), six
    # slices' chunk buffers reused over many tiles a program (M = 32*28*28, 131 x 2 tiles); bf16.
    Case(2, 64, 9, 11, 136, 1, 1, dtype="fp16", layout="nhwc", bias=True, residual=True, activation="relu",
         algo="gemm_1x1_ws", config=LaunchConfig(192, 128, 64, 8, 4, 4)),
    Case(2, 40, 9, 11, 136, 1, 1, dtype="bf16", layout="nhwc", bias=True, activation="silu",
         algo="gemm_1x1_ws", config=LaunchConfig(192, 128, 64, 8, 4, 4)),
    Case(32, 128, 28, 28, 128, 1, 1, dtype="fp16", layout="nhwc", bias=True,
         algo="gemm_1x1_ws", config=LaunchConfig(192, 64, 64, 8, 4, 6)),
    # gemm_1x1_ws holding each program's weight slice (resident): C = 40 in one zero-filled
    # 64-channel chunk, M and K tails (K = 136: two slices, the second clipped), the whole
    # epilogue; ResNet-50's c512 hw28 k256 at batch 32 (8 chunks, 392 tiles: three a program, the
    # held slice reused), the TMA-store epilogue, bf16; strided box tiles in ping-pong (K = 320,
    # three slices: 132 programs cut to 129); TF32 stepping 64 channels; 192-row slices.
    Case(2, 40, 9, 11, 136, 1, 1, dtype="fp16", layout="nhwc", bias=True, residual=True, activation="relu",
         algo="gemm_1x1_ws", config=LaunchConfig(128, 128, 64, 8, 4, 4, resident=1)),
    Case(32, 512, 28, 28, 256, 1, 1, dtype="bf16", layout="nhwc", bias=True, activation="relu",
         algo="gemm_1x1_ws", config=LaunchConfig(128, 128, 64, 8, 4, 4, resident=1)),
    Case(16, 32, 64, 64, 320, 1, 1, stride=2, dtype="fp16", layout="nhwc", bias=True, residual=True,
         activation="relu", algo="gemm_1x1_ws", config=LaunchConfig(128, 128, 64, 8, 4, 4, pingpong=1, resident=1)),
    Case(4, 96, 14, 14, 200, 1, 1, dtype="tf32", layout="nhwc", bias=True,
         algo="gemm_1x1_ws", config=LaunchConfig(64, 64, 64, 8, 4, 4, resident=1)),
    Case(32, 128, 28, 28, 128, 1, 1, dtype="fp16", layout="nhwc", bias=True,
         algo="gemm_1x1_ws", config=LaunchConfig(192, 64, 64, 8, 4, 6, resident=1)),
    # depthwise_halo (Gluon: skipped under the interpreter): 8x8 tiles over a 13x10 output (row
    # and column tails), C = 48 in 32-channel blocks (a masked tail), the whole epilogue.
    Case(2, 48, 13, 10, 48, 3, 3, padding=1, groups=48, dtype="fp16", layout="nhwc", bias=True, residual=True,
         activation="relu", algo="depthwise_halo", config=LaunchConfig(64, 32, 8, num_warps=1, num_stages=1)),
    # ... a 5x5 filter at stride 2 with uneven padding and dilated columns (the halo strided),
    # bf16, 2 channels a thread, 4x8 tiles.
    Case(3, 64, 17, 19, 64, 5, 5, stride=2, padding=(1, 0), dilation=(1, 2), groups=64, dtype="bf16",
         layout="nhwc", activation="silu", algo="depthwise_halo", config=LaunchConfig(32, 64, 8, num_warps=1)),
    # ... ConvNeXt's 7x7 in fp32 over two warps (1 channel a thread each), 8x16 tiles, residual.
    Case(2, 96, 11, 21, 96, 7, 7, padding=3, groups=96, dtype="fp32", layout="nhwc", residual=True,
         activation="gelu", algo="depthwise_halo", config=LaunchConfig(128, 64, 16, num_warps=2)),
    # ... 'same' padding of an even 4x4 filter (1 before, 2 after) on 4x4 tiles; a 1x1 filter at
    # stride (2, 1), C = 16 in a 128-channel block over 4 warps.
    Case(2, 40, 9, 12, 40, 4, 4, padding="same", groups=40, dtype="fp16", layout="nhwc", bias=True,
         algo="depthwise_halo", config=LaunchConfig(16, 32, 4, num_warps=1)),
    Case(1, 16, 9, 7, 16, 1, 1, stride=(2, 1), groups=16, dtype="fp16", layout="nhwc", bias=True,
         activation="hardswish", algo="depthwise_halo", config=LaunchConfig(64, 128, 4, num_warps=4)),
    # ... a filter too large for registers (7x7 at 4 channels a thread: the fp32 table, built from the
    # taps copied in with the halo), C = 136 in 128-channel blocks (a masked tail), bias + residual.
    Case(2, 136, 9, 10, 136, 7, 7, padding=3, groups=136, dtype="fp16", layout="nhwc", bias=True, residual=True,
         activation="relu", algo="depthwise_halo", config=LaunchConfig(32, 128, 8, num_warps=1)),
    # implicit GEMM: 64x64 tile on a 1x5x3x3 -> 5 problem (M = 9, N = 5).
    Case(1, 5, 3, 3, 5, 3, 3, padding=1, algo="implicit_gemm", config=LaunchConfig(64, 64, 32, 8, 4, 2)),
    # C = 40 in 16-channel steps: 3 steps per tap, the last 8 channels masked; M, N tails.
    Case(2, 40, 7, 9, 20, 3, 3, padding=1, dtype="fp16", bias=True, algo="implicit_gemm",
         config=LaunchConfig(32, 16, 16, 1, 4, 3)),
    Case(1, 40, 6, 5, 12, 1, 1, dtype="bf16", layout="nhwc", residual=True, activation="relu",
         algo="implicit_gemm", config=LaunchConfig(16, 16, 16, 4, 2, 2)),
    # split-K: 3x3 x 3 channel steps = 27 steps in 2 and in 4 ranges (the last one short),
    # the fused epilogue applied once the partial sums are in; NCHW and NHWC outputs; a split
    # count larger than the steps (empty ranges write zeros); 1x1 with a channel tail.
    Case(2, 40, 5, 6, 20, 3, 3, padding=1, dtype="fp16", bias=True, residual=True, activation="relu",
         algo="implicit_gemm", config=LaunchConfig(16, 16, 16, 4, 4, 2, split_k=2)),
    Case(1, 40, 5, 4, 24, 3, 3, stride=2, padding=1, dtype="fp32", layout="nhwc", activation="silu",
         algo="implicit_gemm", config=LaunchConfig(16, 16, 16, 4, 4, 2, split_k=4)),
    Case(2, 16, 3, 5, 12, 1, 1, dtype="bf16", layout="nhwc", bias=True,
         algo="implicit_gemm", config=LaunchConfig(32, 16, 16, 4, 4, 2, split_k=3)),
    Case(1, 24, 4, 4, 16, 1, 1, dtype="fp16", residual=True,
         algo="implicit_gemm", config=LaunchConfig(16, 16, 16, 4, 4, 2, split_k=3)),
    # grouped: C/g = 36 in 16-channel steps, K/g = 18 with a 16-wide N tile (tail of 2).
    Case(2, 72, 5, 7, 36, 3, 1, padding=(1, 0), groups=2, dtype="fp32", algo="implicit_gemm",
         config=LaunchConfig(16, 16, 16, 2, 4, 1)),
    # swizzle: 9 row tiles in groups of 4 (last group of 1) and 2 column tiles.
    Case(2, 8, 9, 8, 32, 3, 3, stride=1, padding="same", dtype="fp16", layout="nhwc", activation="gelu",
         algo="implicit_gemm", config=LaunchConfig(16, 16, 16, 4, 4, 3)),
    # depthwise through the GEMM kernel: one group per channel, tile mostly padding.
    Case(2, 8, 7, 9, 16, 3, 3, padding=1, groups=8, dtype="fp16", algo="implicit_gemm",
         config=LaunchConfig(32, 16, 16, 8, 4, 2)),
    # direct: 4-channel tiles that cut across groups (K/g = 6), M tail.
    Case(2, 6, 7, 9, 12, 3, 3, stride=2, padding=1, groups=3, dtype="fp16", bias=True, algo="direct",
         config=LaunchConfig(16, 4, 32, 8, 1, 1)),
    # direct: tile far larger than the problem.
    Case(1, 3, 4, 4, 5, 2, 2, dtype="bf16", layout="nhwc", residual=True, algo="direct",
         config=LaunchConfig(128, 64, 32, 8, 4, 1)),
    # direct, channels_last, a tile small enough that the whole 3x3 filter is unrolled: groups
    # of 4 channels, dilated columns, uneven padding.
    Case(2, 8, 9, 8, 8, 3, 3, padding=(1, 2), dilation=(1, 2), groups=2, dtype="bf16", layout="nhwc", bias=True,
         activation="relu", algo="direct", config=LaunchConfig(32, 8, 32, 8, 4, 1)),
    # depthwise_rows: strips of 4 rows over 7 output rows (a partial last strip), 8-column
    # tiles over 11 columns, 4-channel tiles over 6 channels; multiplier 2, column stride 2,
    # residual and activation in the epilogue; the next row loaded ahead (2 stages).
    Case(2, 3, 7, 21, 6, 3, 3, stride=(1, 2), padding=1, groups=3, dtype="fp16", layout="nhwc", residual=True,
         activation="silu", algo="depthwise_rows", config=LaunchConfig(8, 4, 4, 8, 2, 2)),
    # ... row stride 2 (two input rows a step, the even one shared by two output rows): strips
    # of 2 rows over 5 (a partial last strip, the input's last row past the bottom padding),
    # bf16 (multiplied in fp32), both strides 2, rows loaded ahead; and loaded when used.
    Case(2, 5, 10, 9, 5, 3, 3, stride=2, padding=1, groups=5, dtype="bf16", layout="nhwc", bias=True,
         residual=True, activation="gelu", algo="depthwise_rows", config=LaunchConfig(4, 4, 2, 8, 1, 2)),
    Case(1, 4, 9, 7, 8, 3, 3, stride=(2, 1), padding=(0, 1), groups=4, dtype="fp32", layout="nchw",
         algo="depthwise_rows", config=LaunchConfig(8, 4, 4, 8, 1, 1)),
    # ... and NCHW fp32, no padding on top (the strip starts at input row 0), one-row strips,
    # each row loaded when it is used (1 stage).
    Case(1, 4, 6, 5, 4, 3, 3, padding=(0, 1), groups=4, dtype="fp32", layout="nchw", bias=True,
         algo="depthwise_rows", config=LaunchConfig(4, 4, 1, 8, 1, 1)),
    # direct, depthwise x2: 8-channel tiles over 16 channels, dilated 5x5.
    Case(2, 8, 9, 9, 16, 5, 5, padding=2, dilation=2, groups=8, dtype="fp32", activation="tanh",
         algo="direct", config=LaunchConfig(32, 8, 32, 8, 2, 1)),
    # implicit GEMM reducing over (filter column, channel) jointly: C = 3 x S = 7 = 21 in
    # 16-wide steps (tail 5), dilated along W; C = 6 x S = 6 = 36 (three steps, tail 4).
    Case(2, 3, 9, 9, 8, 3, 7, stride=(1, 2), padding=(1, 3), dilation=(1, 2), dtype="fp16", layout="nhwc",
         bias=True, algo="implicit_gemm", config=LaunchConfig(32, 16, 16, 8, 4, 2, fuse_sc=1)),
    Case(1, 6, 8, 9, 6, 6, 6, padding="same", dtype="bf16", layout="nchw", activation="gelu_tanh",
         algo="implicit_gemm", config=LaunchConfig(16, 16, 16, 2, 4, 2, fuse_sc=1)),
    # ... and grouped (the group's channel offset), 2 channels per group, padding on one side.
    Case(2, 8, 7, 9, 12, 3, 3, padding=(0, 1), groups=4, dtype="fp32", residual=True,
         algo="implicit_gemm", config=LaunchConfig(32, 16, 16, 8, 4, 1, fuse_sc=1)),
    # im2row: the stem's C = 3 x S = 7 = 21 unrolled into 32 channels (one 32-deep step a
    # filter row), stride 2 both ways, M tail, N tile 16 over K = 24; then C = 5 x S = 3 =
    # 15 -> 16 channels, NCHW strict fp32, dilated columns, uneven 'same' padding, residual;
    # bf16 with a 1 x S filter (the unrolled problem is 1x1) and a tile larger than it.
    Case(2, 3, 11, 13, 24, 7, 7, stride=2, padding=3, dtype="fp16", layout="nhwc", bias=True, activation="relu",
         algo="im2row", config=LaunchConfig(32, 16, 32, 8, 4, 3)),
    Case(1, 5, 6, 9, 16, 2, 3, padding="same", dilation=(1, 2), dtype="fp32", layout="nchw", residual=True,
         algo="im2row", config=LaunchConfig(16, 16, 16, 2, 4, 2)),
    Case(2, 4, 5, 7, 20, 1, 3, stride=(1, 2), padding=(0, 1), dtype="bf16", layout="nhwc", activation="silu",
         algo="im2row", config=LaunchConfig(64, 32, 16, 8, 4, 1)),
    # im2row_ws (Gluon, Hopper only: skipped under the interpreter): the same copy, then
    # implicit_gemm_ws with the whole unrolled weight held (7 chunks of 32 channels), the stem
    # at batch 3 (1176 tiles of 256 rows, several a program), bias + ReLU, the TMA-store
    # epilogue; K = 80 in two held slices of 64 (the grid cut to a multiple of 2), bf16, a
    # residual (pointer stores), dilated columns; 9 x 3 = 27 -> 32 channels with the weight in
    # the ring, NCHW input, M tail.
    Case(3, 3, 224, 224, 64, 7, 7, stride=2, padding=3, dtype="fp16", layout="nhwc", bias=True, activation="relu",
         algo="im2row_ws", config=LaunchConfig(256, 64, 32, 8, 8, 8, resident=1)),
    Case(2, 5, 23, 19, 80, 3, 5, stride=(2, 1), padding=(1, 4), dilation=(1, 2), dtype="bf16", layout="nhwc",
         residual=True, activation="silu", algo="im2row_ws", config=LaunchConfig(128, 64, 32, 8, 4, 6, resident=1)),
    Case(2, 9, 15, 14, 24, 3, 3, padding=1, dtype="fp16", layout="nchw", bias=True,
         algo="im2row_ws", config=LaunchConfig(64, 64, 32, 8, 4, 4)),
    # implicit_gemm_ws holding each program's weight slice: 3x3 over C = 64 (18 chunks of 32), K = 96
    # in slices of 64 (the last half empty), ping-pong, a residual.
    Case(2, 64, 14, 14, 96, 3, 3, padding=1, dtype="fp16", layout="nhwc", bias=True, residual=True,
         activation="relu", algo="implicit_gemm_ws", config=LaunchConfig(128, 64, 32, 8, 4, 4, pingpong=1, resident=1)),
    # gemm_1x1_nchw: one GEMM per image over its pixels. fp16, C = 20 in 16-wide steps (a
    # channel tail), K = 24 over 16-wide tiles, 35 pixels over 32-pixel tiles (tails
    # everywhere), bias, residual, relu; strict fp32, 36 pixels in one 64-pixel tile, C = 40
    # in 32-wide steps, three images; bf16 with a clamp and a tile taller than K.
    Case(2, 20, 5, 7, 24, 1, 1, dtype="fp16", layout="nchw", bias=True, residual=True, activation="relu",
         algo="gemm_1x1_nchw", config=LaunchConfig(32, 16, 16, 8, 4, 2)),
    Case(3, 40, 6, 6, 16, 1, 1, dtype="fp32", layout="nchw", residual=True, activation="silu",
         algo="gemm_1x1_nchw", config=LaunchConfig(64, 16, 32, 8, 4, 3)),
    Case(1, 16, 4, 4, 8, 1, 1, dtype="bf16", layout="nchw", activation=("clamp", -0.5, 0.5),
         algo="gemm_1x1_nchw", config=LaunchConfig(16, 32, 16, 1, 4, 1)),
    # staged_nhwc: the NCHW input copied into channels_last, then the implicit GEMM. fp16
    # with C = 20 (copy rows padded to 24 channels, a 20-deep slice in 16-wide steps: a
    # channel tail), stride 2, M tail; strict fp32, C = 36 (the copy tile's channel mask),
    # dilated, uneven 'same' padding, residual, split-K 2; bf16 1x1 with a tile larger
    # than the problem and a copy tile larger than the image.
    Case(2, 20, 9, 11, 24, 3, 3, stride=2, padding=1, dtype="fp16", layout="nchw", bias=True, activation="relu",
         algo="staged_nhwc", config=LaunchConfig(32, 16, 16, 8, 4, 3)),
    Case(1, 36, 7, 6, 16, 3, 2, padding="same", dilation=(2, 1), dtype="fp32", layout="nchw", residual=True,
         algo="staged_nhwc", config=LaunchConfig(16, 16, 16, 2, 4, 2, split_k=2)),
    Case(2, 16, 3, 5, 20, 1, 1, dtype="bf16", layout="nchw", activation="silu",
         algo="staged_nhwc", config=LaunchConfig(64, 32, 16, 8, 4, 1)),
    # grouped GEMM: 16 groups of 4 -> 8 channels merged 8 at a time (two merged groups of
    # 32 -> 64), N tile 32 of the merged 64, M tail.
    Case(1, 64, 5, 7, 128, 3, 3, padding=1, groups=16, dtype="fp16", layout="nhwc", bias=True,
         algo="grouped_gemm", config=LaunchConfig(16, 32, 16, 2, 4, 2)),
    Case(2, 12, 7, 9, 18, 1, 3, stride=2, padding=(0, 1), groups=6, dtype="bf16", activation="relu6",
         algo="grouped_gemm", config=LaunchConfig(64, 64, 32, 8, 4, 3)),
    # grouped_halo (Gluon: skipped under the interpreter): 16 groups of 4 merged 4 at a time
    # (a 16-channel step), 64 frame rows over 9x13 frames (row tails, the last block past the
    # image), the whole epilogue; multiplier 2 with dilation 2, uneven padding and 8 groups of
    # 8 -> 16 merged 4 at a time (32 -> 64 channels), bf16; one group of 16 a step (nothing
    # merged); 'same' padding of an even 4x4 filter over 8 warps and 256 rows; K/g = 2 (an
    # 8-wide output tile).
    Case(2, 64, 9, 11, 64, 3, 3, padding=1, groups=16, dtype="fp16", layout="nhwc", bias=True, residual=True,
         activation="relu", algo="grouped_halo", config=LaunchConfig(64, 16, num_warps=4)),
    Case(3, 64, 13, 10, 128, 3, 3, padding=(2, 1), dilation=(2, 1), groups=8, dtype="bf16", layout="nhwc",
         activation="silu", algo="grouped_halo", config=LaunchConfig(128, 32, num_warps=4)),
    Case(2, 32, 7, 7, 32, 3, 3, padding=1, groups=2, dtype="fp16", layout="nhwc", bias=True,
         algo="grouped_halo", config=LaunchConfig(64, 16, num_warps=4)),
    Case(2, 64, 9, 12, 64, 4, 4, padding="same", groups=8, dtype="fp16", layout="nhwc", residual=True,
         activation="gelu", algo="grouped_halo", config=LaunchConfig(256, 16, num_warps=8)),
    Case(1, 16, 6, 7, 8, 3, 3, padding=1, groups=4, dtype="fp16", layout="nhwc", bias=True,
         algo="grouped_halo", config=LaunchConfig(64, 16, num_warps=4)),
    # ... groups of 32 channels (ResNeXt's c1024 rows), nothing merged: a 32x32 weight block a
    # tap, read from shared memory through its swizzled layout every item (filter_layout).
    Case(2, 64, 7, 7, 64, 3, 3, padding=1, groups=2, dtype="fp16", layout="nhwc", bias=True,
         activation="relu", algo="grouped_halo", config=LaunchConfig(64, 32, num_warps=4, persistent=1)),
    # ... walking programs (one an SM): 136 items of 64 frame rows over 4 merged groups, about
    # four a program, the next one's rows copied while this one's taps run; the epilogue.
    Case(8, 64, 32, 32, 64, 3, 3, padding=1, groups=16, dtype="fp16", layout="nhwc", bias=True, residual=True,
         activation="relu", algo="grouped_halo", config=LaunchConfig(64, 16, num_warps=4, persistent=1)),
    # ... strides: the taps views of the stride's phase frames (even and odd rows and columns).
    # Stride 2 over an odd 13x11 input (phases of unequal size), the epilogue; stride (2, 1)
    # with dilation (1, 2) and uneven padding (two row phases), bf16, 8 groups of 8 -> 16 merged
    # four a step; stride 3 with a dilated 4x4 filter (nine phases); walking programs at stride 2.
    Case(2, 64, 13, 11, 64, 3, 3, stride=2, padding=1, groups=16, dtype="fp16", layout="nhwc", bias=True,
         residual=True, activation="relu", algo="grouped_halo", config=LaunchConfig(64, 16, num_warps=4)),
    Case(2, 64, 12, 9, 128, 3, 3, stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=8, dtype="bf16",
         layout="nhwc", activation="silu", algo="grouped_halo", config=LaunchConfig(128, 32, num_warps=4)),
    Case(1, 32, 17, 15, 32, 4, 4, stride=3, padding=2, dilation=2, groups=2, dtype="fp16", layout="nhwc",
         bias=True, algo="grouped_halo", config=LaunchConfig(64, 16, num_warps=4)),
    Case(8, 64, 32, 32, 64, 3, 3, stride=2, padding=1, groups=16, dtype="fp16", layout="nhwc", bias=True,
         residual=True, activation="relu", algo="grouped_halo", config=LaunchConfig(64, 16, num_warps=4, persistent=2)),
    # depthwise: 4x4 pixel tiles (block_m 16, width block_k 4) over a 7x9 output (tails in
    # both), 4-channel tiles over K = 16 (multiplier 2).
    Case(2, 8, 7, 9, 16, 3, 3, padding=1, groups=8, dtype="fp16", layout="nhwc", bias=True, residual=True,
         algo="depthwise", config=LaunchConfig(16, 4, 4, 8, 1, 1)),
    # depthwise: one 4x16 tile larger than the 3x4 output, 32 channels for 3 (multiplier 1).
    Case(1, 3, 5, 7, 3, 3, 3, stride=2, padding=(1, 0), groups=3, dtype="fp32", activation="silu",
         algo="depthwise", config=LaunchConfig(64, 32, 16, 8, 4, 1)),
    # depthwise: 1-pixel-wide rows (width 1), multiplier 3, dilated, NCHW.
    Case(2, 4, 9, 8, 12, 3, 3, padding=2, dilation=2, groups=4, dtype="bf16", activation="sigmoid",
         algo="depthwise", config=LaunchConfig(8, 8, 1, 8, 2, 1)),
    # depthwise_window (input rows streamed through registers into the output rows they
    # touch): a 7x7 filter padded by 3, strips of 6 rows (R - 1: no steady rows between the
    # ramps) over P = 9 (the last strip 3 rows past the output), 5 columns over Q = 11 (a tail),
    # 32 channels for 6 (a channel tail); the whole epilogue.
    Case(2, 6, 9, 11, 6, 7, 7, padding=3, groups=6, dtype="fp16", layout="nhwc", bias=True, residual=True,
         activation="relu", algo="depthwise_window", config=LaunchConfig(6, 32, 5, 8, 1, 3)),
    # ... multiplier 2, column stride 2 with uneven padding, dilated columns, NCHW bf16; one
    # column a program, one row a step; ... fp32, a 2x3 filter, 64 channels on two warps over
    # K = 40, strips of 16 rows over 11, 2 rows a step (15 steady rows: a remainder of one).
    Case(1, 4, 10, 13, 8, 3, 3, stride=(1, 2), padding=(1, 2), dilation=(1, 2), groups=4, dtype="bf16",
         layout="nchw", activation="silu", algo="depthwise_window", config=LaunchConfig(3, 32, 1, 8, 1, 1)),
    Case(2, 40, 11, 7, 40, 2, 3, padding=(0, 1), groups=40, dtype="fp32", layout="nhwc",
         residual=True, activation="gelu", algo="depthwise_window", config=LaunchConfig(16, 64, 4, 8, 2, 2)),
    # ... strips whose steady rows are inside the input (rows load clamped, no row mask; the
    # ramps' rows on padding skipped): 3x3 over 10x12, strips of 5 (3 steady rows, a step of
    # 2: a remainder), 4 columns (window columns 1..4 load without a column mask), bf16.
    Case(2, 8, 10, 12, 8, 3, 3, padding=1, groups=8, dtype="bf16", layout="nhwc", bias=True, residual=True,
         activation="relu", algo="depthwise_window", config=LaunchConfig(5, 32, 4, 8, 1, 2)),
    # depthwise_window with one tile of the whole image (the image's geometry compiled in, the
    # padding taps left out): a 7x7 filter over a 7x7 image (57% of the taps on padding), 32
    # channels for 6, the whole epilogue; row stride 2 and row dilation 2 (only a whole-image
    # tile takes them; the default config is one), multiplier 2; odd sizes at stride 2 in NCHW
    # bf16; an even filter's 'same' padding (0 before, 1 after) over 13 columns (16 in the
    # row's registers) with 4 of 12 rows loaded ahead; padding past the filter's reach (output
    # rows and columns on padding alone), fp32 on two warps over K = 40.
    Case(2, 6, 7, 7, 6, 7, 7, padding=3, groups=6, dtype="fp16", layout="nhwc", bias=True, residual=True,
         activation="relu", algo="depthwise_window", config=LaunchConfig(7, 32, 7, 8, 1, 1)),
    Case(2, 4, 9, 8, 8, 3, 3, stride=(2, 1), padding=1, dilation=(2, 1), groups=4, dtype="fp16", layout="nhwc",
         bias=True, residual=True, activation="relu", algo="depthwise_window"),
    Case(1, 6, 11, 7, 6, 3, 3, stride=2, padding=1, groups=6, dtype="bf16", layout="nchw", activation="silu",
         algo="depthwise_window"),
    Case(1, 8, 12, 13, 8, 2, 2, padding="same", groups=8, dtype="fp16", layout="nhwc", bias=True,
         algo="depthwise_window", config=LaunchConfig(12, 32, 13, 8, 1, 1)),
    Case(2, 40, 3, 4, 40, 2, 3, padding=(3, 4), groups=40, dtype="fp32", layout="nhwc",
         residual=True, activation="gelu", algo="depthwise_window", config=LaunchConfig(16, 64, 16, 8, 2, 2)),
    # depthwise_toeplitz: 16-row tiles over N*P = 2*7 rows (a tile spans both images), 16
    # columns over 9 (tail), 2-channel batches over K = 6 (multiplier 2, tail); row stride 2,
    # column dilation 2 (a sparser band); the whole epilogue.
    Case(2, 3, 13, 9, 6, 5, 5, stride=(2, 1), padding=(2, 4), dilation=(1, 2), groups=3, dtype="fp16",
         layout="nhwc", bias=True, residual=True, activation="relu", algo="depthwise_toeplitz",
         config=LaunchConfig(16, 2, 16, 8, 1, 1)),
    # ... strict fp32 (tf32x3 dots) in NCHW, column stride 2 (16 columns read 35 -> 64), 7x3.
    Case(1, 4, 9, 20, 4, 7, 3, stride=(1, 2), padding=(3, 1), groups=4, dtype="fp32", layout="nchw",
         activation="silu", algo="depthwise_toeplitz", config=LaunchConfig(16, 4, 16, 8, 1, 1)),
    # ... bf16 (multiplied in fp32 under the interpreter), 32 columns, one-row filter.
    Case(2, 8, 3, 21, 8, 1, 9, padding=(0, 4), groups=8, dtype="bf16", layout="nhwc", residual=True,
         algo="depthwise_toeplitz", config=LaunchConfig(16, 8, 32, 8, 2, 1)),
    # ... one channel a program (2D GEMMs): a channels_last input copied into NCHW first;
    # multiplier 2, 32-row tiles over N*P = 2*9 rows.
    Case(2, 3, 9, 11, 6, 5, 3, padding=(2, 1), groups=3, dtype="fp16", layout="nhwc", bias=True,
         activation="gelu", algo="depthwise_toeplitz", config=LaunchConfig(32, 1, 16, 8, 1, 1)),
    # dense_toeplitz (banded GEMMs over zero-bordered channels_last rows): the stem's C = 3 x
    # 7x7 / 2 with padding 3, K = 20 in 16-channel blocks (a tail of 4), 4 output columns a
    # program (N = 64) over Q = 7 (a tail), 16 rows over N*P = 14; the whole epilogue.
    Case(2, 3, 13, 14, 20, 7, 7, stride=2, padding=3, dtype="fp16", layout="nhwc", bias=True, residual=True,
         activation="relu", algo="dense_toeplitz", config=LaunchConfig(16, 16, 4, 8, 4, 2)),
    # ... the seed's C = K = 6 with a 6x6 filter, strict fp32 (3xTF32 dots) in NCHW, 'same'
    # padding (2 before, 3 after), dilated rows; 8 columns x 6 channels (48 of 64 useful).
    Case(1, 6, 11, 17, 6, 6, 6, padding="same", dilation=(2, 1), dtype="fp32", layout="nchw", activation="silu",
         algo="dense_toeplitz", config=LaunchConfig(16, 6, 8, 8, 4, 3)),
    # ... bf16 (multiplied in fp32 under the interpreter), column stride and dilation 2 (a
    # sparser band), 2 columns x 7 channels, 32 rows over 2*8.
    Case(2, 5, 8, 19, 7, 3, 5, stride=(1, 2), padding=(1, 2), dilation=(1, 2), dtype="bf16", layout="nhwc",
         residual=True, activation="gelu", algo="dense_toeplitz", config=LaunchConfig(32, 7, 2, 8, 4, 2)),
    # ... TF32, K = 24 in three 8-channel blocks, no padding, row stride 2: rows of 160 bytes,
    # read in place (no copy), the last column block's segments cut at the row's end.
    Case(1, 4, 9, 10, 24, 2, 3, stride=(2, 1), dtype="tf32", layout="nhwc", bias=True,
         algo="dense_toeplitz", config=LaunchConfig(16, 8, 4, 8, 4, 2)),
    # ... the seed's C = K = 6, 6x6, fp16 channels_last with no padding: rows of 20 x 6 values
    # (240 bytes) read in place; 8-column blocks over Q = 15, the second reading 2 columns
    # past the row's end (masked to zeros, not the next row's values); a residual.
    Case(2, 6, 9, 20, 6, 6, 6, dtype="fp16", layout="nhwc", residual=True, activation="relu",
         algo="dense_toeplitz", config=LaunchConfig(16, 6, 8, 8, 4, 3)),
    # direct_rows (every output channel of a few columns in one thread, on the CUDA cores): the
    # seed's C = K = 6 with a 6x6 filter in strict fp32 NCHW, no padding (the last tile's
    # columns past Q read column Q-1's inputs, unmasked), 16-column tiles over Q = 12 and 2
    # rows a program over P = 5 (tails in both), two images; the whole epilogue.
    Case(2, 6, 10, 17, 6, 6, 6, dtype="fp32", layout="nchw", bias=True, residual=True, activation="relu",
         algo="direct_rows", config=LaunchConfig(16, 8, 2, 1, 1, 1)),
    # ... TF32 (computed in IEEE fp32 all the same) channels_last, uneven 'same' padding with
    # dilated columns (masked taps), K = 3 in a 4-channel tile, 32 columns over 10.
    Case(1, 5, 9, 10, 3, 3, 4, padding="same", dilation=(1, 2), dtype="tf32", layout="nhwc",
         activation="silu", algo="direct_rows", config=LaunchConfig(32, 4, 1, 1, 1, 1)),
    # ... K = 16 (the widest tile), row stride 2, padding on rows only, 3 rows a program (one
    # after the other) over P = 4; ... a single output channel, a 1x1 filter (one tap), column
    # stride 2.
    Case(2, 4, 8, 7, 16, 3, 2, stride=(2, 1), padding=(1, 0), dtype="fp32", layout="nchw", residual=True,
         activation="gelu", algo="direct_rows", config=LaunchConfig(16, 16, 3, 1, 1, 1)),
    Case(1, 9, 5, 6, 1, 1, 1, stride=(1, 2), dtype="fp32", layout="nhwc", bias=True, algo="direct_rows",
         config=LaunchConfig(16, 4, 2, 1, 2, 1)),
    # depthwise_plane (one GEMM a channel over whole planes): a 13x13 filter padded by 6 over a
    # 7x5 plane (most taps in the padding), multiplier 2, 4-channel batches over K = 12, 16-image
    # tiles over N = 3 (a tail); the whole epilogue.
    Case(3, 6, 7, 5, 12, 13, 13, padding=6, groups=6, dtype="fp16", layout="nhwc", bias=True, residual=True,
         activation="relu", algo="depthwise_plane", config=LaunchConfig(16, 4, 32, 8, 8, 1)),
    # ... strict fp32 (3xTF32) in NCHW, one channel a program (a 2D GEMM), stride and dilation 2.
    Case(2, 4, 8, 8, 4, 5, 5, stride=2, padding=3, dilation=2, groups=4, dtype="fp32", layout="nchw",
         activation="silu", algo="depthwise_plane", config=LaunchConfig(16, 1, 32, 8, 4, 1)),
    # ... bf16, uneven 'same' padding of an even filter, 8-channel batches over K = 5 (a tail),
    # a 4x9 plane (36 of 64 reduction rows).
    Case(1, 5, 4, 9, 5, 4, 2, padding="same", groups=5, dtype="bf16", layout="nhwc", residual=True,
         activation="gelu", algo="depthwise_plane", config=LaunchConfig(16, 8, 32, 8, 8, 1)),
    # The seed's ladder (kernels/ladder.py). Steps 0 and 1: one channel per program (their
    # GPU config) with a pixel tile larger than the problem; 4-channel tiles cutting across
    # groups (K/g = 6) with an M tail.
    Case(1, 5, 4, 6, 3, 3, 3, padding=1, dtype="fp32", bias=True, residual=True, activation="relu",
         algo="ladder0_direct", config=LaunchConfig(128, 1, 1, 1, 4, 1)),
    Case(2, 6, 7, 9, 12, 3, 3, stride=2, padding=1, groups=3, dtype="fp16", layout="nhwc", bias=True,
         algo="ladder0_direct", config=LaunchConfig(16, 4, 1, 1, 1, 1)),
    Case(2, 6, 7, 9, 12, 3, 2, stride=(1, 2), padding=(1, 0), dilation=2, groups=3, dtype="bf16",
         activation="silu", algo="ladder1_implicit_gemm", config=LaunchConfig(16, 4, 1, 1, 1, 1)),
    Case(1, 4, 5, 7, 8, 3, 3, padding=1, groups=4, dtype="fp32", layout="nhwc", residual=True,
         algo="ladder1_implicit_gemm", config=LaunchConfig(32, 1, 1, 1, 1, 1)),
    # Step 2 (FMA dot tiles, each edge >= 16): reduction C/g*R*S = 45 in slices of 16 (tail
    # of 13), N tile 16 over K/g = 6, grouped, M tail; 32-deep slices of a 1x1 over 40
    # channels in NHWC (tail of 8), bf16 multiplied in fp32.
    Case(2, 10, 7, 9, 12, 3, 3, padding=1, groups=2, dtype="fp32", bias=True, activation="gelu",
         algo="ladder2_tiled", config=LaunchConfig(32, 16, 16, 1, 2, 1)),
    Case(1, 40, 6, 5, 12, 1, 1, dtype="bf16", layout="nhwc", residual=True, algo="ladder2_tiled",
         config=LaunchConfig(16, 16, 32, 1, 1, 1)),
    # Step 3: 16x16x16 dot tiles over 45 reduction elements (tail of 13), grouped, strict
    # fp32 (ieee dot) and bf16; a tile larger than the whole problem.
    Case(2, 10, 7, 9, 12, 3, 3, stride=(2, 1), padding=1, groups=2, dtype="fp32", residual=True,
         algo="ladder3_tensor_core", config=LaunchConfig(16, 16, 16, 1, 1, 1)),
    Case(1, 6, 4, 5, 5, 2, 2, padding="same", dtype="bf16", layout="nhwc", bias=True, activation="tanh",
         algo="ladder3_tensor_core", config=LaunchConfig(64, 64, 32, 1, 4, 1)),
]


def test_pinned_configs_reach_every_algorithm():
    """A kernel added to tileconv.ALGORITHMS without pinned-config cases fails here."""
    assert {c.algo for c in CONFIG_CASES} == set(tileconv.ALGORITHMS)


def test_tap_unrolling_rule_and_its_cases():
    """The CUDA-core kernels unroll the whole filter, one filter row, or nothing, by the bytes
    of the unrolled taps' loads a thread (kernels.launch.unrolled_taps); the interpreter's
    default configs (one warp, large tiles) take the runtime loops, and the pinned cases
    reach the two unrolled forms of both kernels."""
    from tileconv.kernels.launch import unrolled_taps

    def form(problem, elements, warps):
        unroll = unrolled_taps(problem, elements, warps)
        return "filter" if unroll["UNROLL_R"] else "row" if unroll["UNROLL_S"] else "loops"

    dw3, dw7 = (Case(2, 8, 9, 9, 8, r, r, padding=r // 2, groups=8, dtype="fp16", layout="nhwc").meta_problem()
                for r in (3, 7))
    assert form(dw3, 2048, 4) == "filter"  # 16 fp16 values a thread x 9 taps: 288 bytes
    assert form(dw7, 2048, 4) == "row" and form(dw7, 4096, 4) == "loops"  # 7 x 32 bytes; 7 x 64
    assert form(replace(dw3, dtype=torch.float32), 2048, 4) == "row"  # 9 x 64 bytes: one row of 3
    reached = set()
    for case in CONFIG_CASES:
        if case.algo in ("direct", "depthwise"):
            config, problem = case.config, case.meta_problem()
            tile = config.block_m * config.block_n  # the depthwise kernel's pixel tile is block_m too
            reached.add((case.algo, form(problem, tile, config.num_warps)))
    assert {("direct", "filter"), ("direct", "row"), ("depthwise", "filter"), ("depthwise", "row")} <= reached


def _other_machine(algo: str) -> str | None:
    """Why ``algo`` runs on no problem on this machine (a Gluon kernel under the interpreter,
    or on a GPU that is not a Hopper), else None."""
    if algo == "auto":
        return None
    reason = tileconv.ALGORITHMS[algo].unsupported_reason(Case(2, 16, 8, 8, 16, 3, 3, padding=1, dtype="fp16",
                                                               layout="nhwc").meta_problem())
    return reason if reason and ("interpreter" in reason or "sm_90" in reason) else None


def _machine_runs(case: Case) -> list:
    """Skips a pinned case whose algorithm needs another machine: it is tested where it can run."""
    reason = _other_machine(case.algo)
    return [pytest.mark.skip(reason=reason)] if reason else []


@pytest.mark.parametrize("case", [pytest.param(c, marks=_machine_runs(c), id=c.id) for c in CONFIG_CASES])
def test_pinned_launch_config(case: Case, device: str, seed: int, allow_tf32):
    assert case.is_valid(), f"{case.id}: {case.algo} does not compute this problem"
    check_case(case, device, seed)


# --------------------------------------------------------------------- strided tensors
def _strided(kind: str, shape: tuple[int, ...], dtype: torch.dtype, device: str, gen: torch.Generator):
    """A tensor of ``shape`` whose memory is not a plain NCHW or NHWC block."""
    n, c, h, w = shape

    def randn(*s):
        return torch.randn(s, generator=gen).to(dtype=dtype, device=device)

    if kind == "channel_slice":  # every other channel of a wider tensor
        return randn(n, 2 * c, h, w)[:, ::2]
    if kind == "spatial_window":  # a window of a larger image: storage offset, row stride > W
        return randn(n, c, h + 3, w + 5)[:, :, 2 : 2 + h, 1 : 1 + w]
    if kind == "transposed_hw":  # H and W swapped in memory
        return randn(n, c, w, h).transpose(2, 3)
    if kind == "nhwc_permuted":  # an (N, H, W, C) tensor viewed as NCHW with a channel slice
        return randn(n, h, w, c + 2).permute(0, 3, 1, 2)[:, 1 : 1 + c]
    raise AssertionError(kind)


STRIDED_KINDS = ["channel_slice", "spatial_window", "transposed_hw", "nhwc_permuted"]


STRIDED_BASES = with_each_algorithm([
    Case(2, 6, 7, 9, 8, 3, 3, stride=(2, 1), padding=1, dtype="fp16", activation="relu", bias=True, residual=True),
    Case(2, 6, 7, 9, 12, 3, 3, padding=1, groups=6, dtype="fp32", bias=True, residual=True),
    # 1x1: gemm_1x1_nchw reads flat pixel rows where the view has them, else decodes them
    Case(2, 16, 5, 7, 16, 1, 1, dtype="fp16", activation="relu", bias=True, residual=True),
])


@pytest.mark.parametrize("kind", STRIDED_KINDS)
@pytest.mark.parametrize("case", STRIDED_BASES)
def test_strided_input(case: Case, kind: str, device: str, seed: int):
    """Inputs, residuals and biases that are views with odd strides give the right answer."""
    gen = torch.Generator().manual_seed(seed)
    t = make_inputs(case, device, seed)
    t.x = _strided(kind, tuple(t.x.shape), t.x.dtype, device, gen)
    t.residual = _strided(kind, tuple(t.residual.shape), t.x.dtype, device, gen)
    t.bias = torch.randn(2 * case.k, generator=gen).to(t.x.dtype).to(device)[1::2]  # stride-2 bias
    check_case(case, device, seed, t)


WEIGHT_BASES = with_each_algorithm([
    Case(2, 8, 7, 9, 6, 3, 2, padding=(1, 0), groups=2, dtype="bf16", layout="nhwc"),
    Case(1, 4, 7, 9, 8, 3, 2, padding=(1, 0), groups=4, dtype="fp16", layout="nchw"),
])


# A (K, 1, R, S) depthwise weight is the same memory in channels_last: not a strided case.
WEIGHT_CASES = [
    pytest.param(p.values[0], kind, id=f"{p.id}-{kind}")
    for p in WEIGHT_BASES
    for kind in ("channels_last", "transposed_rs", "sliced_k")
    if kind != "channels_last" or p.values[0].c != p.values[0].groups
]


@pytest.mark.parametrize("case,weight_kind", WEIGHT_CASES)
def test_strided_weight(case: Case, weight_kind: str, device: str, seed: int):
    t = make_inputs(case, device, seed)
    gen = torch.Generator().manual_seed(seed + 1)
    w = t.weight
    if weight_kind == "channels_last":
        t.weight = w.contiguous(memory_format=torch.channels_last)
    elif weight_kind == "transposed_rs":  # an (K, C/g, S, R) block viewed as (K, C/g, R, S)
        t.weight = w.transpose(2, 3).contiguous().transpose(2, 3)
    else:  # every other filter of a bank twice as large
        bank = torch.randn((2 * case.k, *w.shape[1:]), generator=gen) / math.sqrt(w[0].numel())
        t.weight = bank.to(w.dtype).to(device)[::2]
    assert not t.weight.is_contiguous()
    check_case(case, device, seed, t)


# --------------------------------------------------------------------- unbatched, empty batch
def test_unbatched_input(device: str, seed: int):
    """A 3D (C, H, W) input gives a 3D output, residual 3D too, as torch's conv2d."""
    case = Case(1, 5, 7, 9, 6, 3, 3, padding="same", dtype="fp16", activation="sigmoid",
                bias=True, residual=True)
    t = make_inputs(case, device, seed)
    x3, res3 = t.x[0], t.residual[0]
    out = tileconv.conv2d(x3, t.weight, t.bias, padding="same", activation="sigmoid", residual=res3)
    assert out.shape == (6, 7, 9), f"unbatched output shape {tuple(out.shape)}"
    ref = tileconv.conv2d_reference(x3, t.weight, t.bias, padding="same", activation="sigmoid", residual=res3)
    torch_shape = torch.nn.functional.conv2d(x3.float().cpu(), t.weight.float().cpu(), padding="same").shape
    assert ref.shape == torch_shape == out.shape
    problem = problem_from_arguments(t.x, t.weight, t.bias, 1, "same", 1, 1, "sigmoid", t.residual)
    assert_conv_close(out, ref, tolerance(problem), context=f"unbatched (seed {seed})")


EMPTY = [
    *with_each_algorithm([Case(0, 4, 7, 9, 6, 3, 3, stride=2, padding=1, dtype="fp16", activation="relu",
                               bias=True, layout=layout) for layout in ("nchw", "nhwc")]),
    *with_each_algorithm([Case(0, 4, 7, 9, 8, 3, 3, stride=2, padding=1, groups=4, dtype="fp16", layout="nhwc")]),
    # 'auto': through the public API
    pytest.param(Case(0, 4, 7, 9, 6, 3, 3, stride=2, padding=1, dtype="fp16", layout="nhwc"), id="auto"),
]


@pytest.mark.parametrize("case", EMPTY)
def test_empty_batch(case: Case, device: str, seed: int):
    """N = 0 gives an empty output of the right shape, dtype and layout."""
    t = make_inputs(case, device, seed)
    out = run_tileconv(case, t)
    expected = torch.nn.functional.conv2d(t.x.float().cpu(), t.weight.float().cpu(), None, *case.arguments()).shape
    assert out.shape == expected == (0, case.k, 4, 5), f"got {tuple(out.shape)}, PyTorch {tuple(expected)}"
    assert out.dtype == torch.float16 and out.device == t.x.device
    # An empty tensor is contiguous in every format; PyTorch then returns NCHW, as tileconv.
    assert out.is_contiguous(), out.stride()


# --------------------------------------------------------------------- NaN / Inf
NONFINITE_ACTIVATIONS = [None, "relu", "sigmoid", "tanh", "silu", ("clamp", -0.5, 0.5)]
# grouped_gemm merges groups into one GEMM with a block-diagonal weight, whose zeros would turn
# a NaN/Inf input (0 * NaN, 0 * Inf) into NaN in every group of the merged block: its tiles that
# read a non-finite input are redone group by group, which these cases check.
NONFINITE_CASES = with_each_algorithm(
    [Case(1, 4, 7, 9, 6, 3, 3, padding=1, dtype="fp16", activation=a, bias=True, residual=True)
     for a in NONFINITE_ACTIVATIONS]
    + [Case(1, 4, 7, 9, 8, 3, 3, padding=1, groups=4, dtype="bf16", layout="nhwc", activation=a, bias=True,
            residual=True)
       for a in NONFINITE_ACTIVATIONS[:3]]
    # groups of 4 (grouped_halo on a GPU merges four: its redo)
    + [Case(1, 32, 7, 9, 32, 3, 3, padding=1, groups=8, dtype="fp16", layout="nhwc", activation=a, residual=True)
       for a in NONFINITE_ACTIVATIONS[:2]]
    # ... at stride 2 (its phase frames; K/g = 8 so that the NaN reaches 2 x 8 outputs)
    + [Case(1, 32, 15, 17, 64, 3, 3, stride=2, padding=1, groups=8, dtype="fp16", layout="nhwc", activation=a,
            residual=True) for a in NONFINITE_ACTIVATIONS[:2]]
    # multiplier 1 and 16 bytes of channels: depthwise_halo too (on a GPU)
    + [Case(1, 8, 7, 9, 8, 3, 3, padding=1, groups=8, dtype="fp16", layout="nhwc", activation=a, residual=True)
       for a in NONFINITE_ACTIVATIONS[:2]]
) + [
    # grouped_halo's programs walking several items each (GPU): an item redone group by group in the
    # buffer the next item's rows were copied to, which are then copied again.
    pytest.param(c, marks=_machine_runs(c), id=c.id) for c in [
        Case(4, 64, 28, 28, 64, 3, 3, padding=1, groups=16, dtype="fp16", layout="nhwc", activation="relu",
             residual=True, algo="grouped_halo", config=LaunchConfig(128, 16, num_warps=4, persistent=1))]
]


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # numpy, in the interpreter
@pytest.mark.parametrize("case", NONFINITE_CASES)
def test_nan_and_inf_propagate(case: Case, device: str, seed: int):
    """A NaN or Inf in the input reaches exactly the outputs whose window holds it, as in
    PyTorch (through the activation too); a NaN in the residual reaches its own element."""
    t = make_inputs(case, device, seed)
    t.x[0, 1, 2, 3] = float("nan")
    t.x[0, 2, 5, 6] = float("inf")
    t.x[0, 0, 0, 8] = float("-inf")
    t.residual[0, 3, 6, 0] = float("nan")
    out = check_case(case, device, seed, t)  # requires the reference's NaN/Inf pattern exactly
    ref = reference(case, t)
    assert int(torch.isnan(ref).sum()) >= 9, "the NaN input should reach a window of outputs"
    if case.activation in (None, "relu", "silu"):  # these keep +Inf: the Inf pattern was compared too
        assert torch.isinf(ref).any(), "the reference should hold Inf"
    assert torch.isnan(out[0, 3, 6, 0]), "the NaN residual element did not reach the output"


@pytest.mark.skipif(_other_machine("grouped_frame") is not None, reason="grouped_frame runs on a Hopper GPU only")
@pytest.mark.parametrize("case", [
    # 4 channels a group, sixteen merged; 8 a group at stride 2 (the phase frames), eight merged
    # (both multiplied as 16-channel diagonal blocks of several groups: the redo); 16 a group, four
    # merged, each diagonal block one group (no merged zeros multiplied, no redo)
    Case(2, 64, 9, 14, 64, 3, 3, padding=1, groups=16, dtype="fp16", layout="nhwc", bias=True, activation="relu",
         algo="grouped_frame", config=LaunchConfig(128, 64, 64, 8, 4, 8)),
    Case(2, 128, 13, 15, 128, 3, 3, stride=2, padding=1, groups=16, dtype="bf16", layout="nhwc", activation="silu",
         algo="grouped_frame", config=LaunchConfig(64, 64, 64, 8, 4, 8)),
    Case(2, 64, 9, 14, 64, 3, 3, padding=1, groups=4, dtype="fp16", layout="nhwc", bias=True, activation="relu",
         algo="grouped_frame", config=LaunchConfig(128, 64, 64, 8, 4, 8)),
], ids=lambda case: case.id)
def test_grouped_frame_redoes_nonfinite_tiles(case: Case, device: str, seed: int):
    """A NaN or an infinity in grouped_frame's input times the block-diagonal weight's zeros would
    put NaN in the merged neighbours' outputs; the tiles that hold one are redone group by group, so
    the NaN/Inf pattern is PyTorch's exactly (grouped_frame adds no residual: NONFINITE_CASES' other
    checks do not apply)."""
    t = make_inputs(case, device, seed)
    t.x[0, 1, 2, 3] = float("nan")
    t.x[0, 5, 5, 6] = float("inf")
    t.x[1, 62, 0, 8] = float("-inf")
    check_case(case, device, seed, t)  # requires the reference's NaN/Inf pattern exactly
    ref = reference(case, t)
    assert int(torch.isnan(ref).sum()) >= 9 and torch.isinf(ref).any()


# --------------------------------------------------------------------- int64 indexing
@pytest.mark.parametrize("channels,groups", [(1, 1), (2, 2)], ids=["dense", "depthwise"])
def test_int64_index_path(channels: int, groups: int, device: str, seed: int):
    """A tensor of >= 2**31 elements switches the kernels to int64 indexing. Here the input is
    a broadcast view (stride 0 along H), so it costs no memory, and a large stride keeps the
    output small. Checks that each kernel's INT64 variant compiles and computes; offsets
    really past 2**31 are the gpu test below."""
    rows, width = 2**16, 2**15 + 8  # 2**31 + 2**19 elements per channel
    gen = torch.Generator().manual_seed(seed)
    line = torch.randn(1, channels, 1, width, generator=gen).to(torch.float16).to(device)
    x = line.expand(1, channels, rows, width)
    w = torch.randn(2 * channels, channels // groups, 1, 1, generator=gen).to(torch.float16).to(device)
    stride = (rows // 4, width // 4)
    problem = problem_from_arguments(x, w, None, stride, 0, 1, groups)
    assert problem.max_elements >= 2**31
    # The rows the stride picks, as a small dense tensor: the same convolution.
    ref = tileconv.conv2d_reference(x[:, :, :: stride[0]], w, None, (1, stride[1]), 0, 1, groups)
    for algo in supported_algorithms(problem):
        if algo == "staged_nhwc":  # its copy would materialise the broadcast input (34 GB): see below
            continue
        with tileconv.poison_outputs():
            out = conv2d_problem(problem, x, w, None, None, algo=algo)
        assert_conv_close(out, ref, tolerance(problem), context=f"int64 path, {algo} (seed {seed})")


@pytest.mark.parametrize("layout_kind", ["nchw", "spatial_window"])
def test_staged_nhwc_int64_variant_computes(layout_kind: str, device: str, seed: int, monkeypatch):
    """staged_nhwc copies its input, so the broadcast trick above would allocate the whole
    2**31-element tensor: its INT64 variants (copy and GEMM) run here on a small problem
    instead, forced on; offsets really past 2**31 are the gpu test below."""
    from tileconv.kernels import launch

    monkeypatch.setattr(launch, "needs_int64", lambda problem: True)
    case = Case(2, 24, 7, 9, 16, 3, 3, padding=1, dtype="fp16", bias=True, algo="staged_nhwc")
    t = make_inputs(case, device, seed)
    if layout_kind == "spatial_window":  # the copy's decoded (not flat) pixel offsets
        t.x = _strided("spatial_window", tuple(t.x.shape), t.x.dtype, device, torch.Generator().manual_seed(seed))
    check_case(case, device, seed, t)


@pytest.mark.parametrize("layout_kind", ["nhwc", "nchw"])
@pytest.mark.parametrize("algo", ["dense_toeplitz", "depthwise_plane", "direct_rows"])
def test_banded_int64_variants_compute(algo: str, layout_kind: str, device: str, seed: int, monkeypatch):
    """The int64 problems above are 1x1 convolutions over huge planes with many channels,
    which neither banded kernel takes (dense_toeplitz bands filter columns, depthwise_plane
    maps planes of at most 64 pixels) nor direct_rows (at most 16 output channels): their
    INT64 variants (dense_toeplitz's copy in NCHW, its in-place reads of unpadded
    channels_last rows in NHWC; direct_rows's masked taps in NCHW, unmasked in NHWC) run here
    on small problems, forced on."""
    from tileconv.kernels import launch

    monkeypatch.setattr(launch, "needs_int64", lambda problem: True)
    groups = 6 if algo == "depthwise_plane" else 1
    padding = 0 if algo != "depthwise_plane" and layout_kind == "nhwc" else 1
    dtype = "fp32" if algo == "direct_rows" else "fp16"  # direct_rows is the float32 kernel
    case = Case(2, 6, 7, 8, 6, 3, 3, padding=padding, groups=groups, dtype=dtype, layout=layout_kind, bias=True,
                residual=True, activation="relu", algo=algo)
    check_case(case, device, seed)


@pytest.mark.skipif(_other_machine("implicit_gemm_ws") is not None,
                    reason="implicit_gemm_ws runs on a Hopper GPU only")
@pytest.mark.parametrize("dilation", [1, 2])
def test_ws_int64_variant_computes(dilation: int, device: str, seed: int, monkeypatch):
    """implicit_gemm_ws's INT64 variant (its loader moves the row pointers by filter rows and
    columns in int64; a dilation of 1 arrives as a constexpr, which once failed to compile)
    runs here on small problems, forced on: the 1x1 int64 problems above are NCHW, which this
    channels_last kernel does not take."""
    from tileconv.kernels import launch

    monkeypatch.setattr(launch, "needs_int64", lambda problem: True)
    case = Case(2, 32, 9, 10, 72, 3, 3, padding=1, dilation=dilation, dtype="fp16", layout="nhwc", bias=True,
                residual=True, activation="relu", algo="implicit_gemm_ws", config=LaunchConfig(64, 64, 32, 8, 4, 3))
    check_case(case, device, seed)


def test_dense_toeplitz_reads_unpadded_channels_last_rows_in_place():
    """dense_toeplitz skips its zero-bordered copy exactly where the input's own rows serve:
    no padding on either side, channels_last-contiguous storage, rows 16-byte aligned (the
    cases above run both paths)."""
    from tileconv.kernels.launch import reads_rows_in_place

    def rule(shape, fmt=torch.channels_last, dtype=torch.float16, **arguments):
        x = torch.zeros(shape, dtype=dtype).contiguous(memory_format=fmt)
        weight = torch.zeros(shape[1], shape[1], 3, 3, dtype=dtype)
        return reads_rows_in_place(tileconv.problem_from_arguments(x, weight, **arguments), x)

    assert rule((2, 6, 9, 20))  # 20 columns x 6 channels x 2 bytes = 240 bytes a row
    assert not rule((2, 6, 9, 20), padding=1)  # the copy makes the padding real
    assert not rule((2, 6, 9, 20), padding="same")
    assert not rule((2, 6, 9, 20), fmt=torch.contiguous_format)  # NCHW: the copy transposes
    assert not rule((2, 6, 9, 21))  # 252-byte rows: the next row's segments would be misaligned
    assert rule((2, 6, 9, 21), dtype=torch.float32) is False  # 504 bytes
    assert rule((1, 4, 9, 10), dtype=torch.float32)  # 160 bytes


INT64_CASES = [
    # (name, N, C, H, W, K, groups): every input holds more than 2**31 elements.
    ("dense_1x1", 1, 32, 8192, 8200, 32, 1),
    # depthwise: the last channel starts past element 2**31 of the image
    ("depthwise_1x1", 1, 64, 5872, 5872, 64, 64),
    # one channel: the pixel count N*P*Q itself passes 2**31
    ("one_channel", 1, 1, 46400, 46400, 1, 1),
]
INT64_PARAMS = [
    pytest.param(row, name, id=f"{row[0]}-{name}")
    for row in INT64_CASES
    for name in supported_algorithms(
        Case(row[1], row[2], row[3], row[4], row[5], 1, 1, groups=row[6], dtype="fp16").meta_problem()
    )
]

# Run in a child process: an out-of-bounds access poisons the CUDA context for good, and would
# fail every later test of this process with the same error.
INT64_CHILD = """
import json, sys, torch, tileconv
from tileconv.functional import conv2d_problem
from tileconv.kernels import supported_algorithms
from tileconv.problem import problem_from_arguments
from tileconv.testing import compare, tolerance
n, c, h, w, k, groups, algo, seed = json.loads(sys.argv[1])
gen = torch.Generator(device="cuda").manual_seed(seed)
x = torch.randn(n, c, h, w, generator=gen, device="cuda", dtype=torch.float16)
weight = torch.randn(k, c // groups, 1, 1, generator=gen, device="cuda", dtype=torch.float16)
bias = torch.randn(k, generator=gen, device="cuda", dtype=torch.float16)
problem = problem_from_arguments(x, weight, bias, groups=groups, activation="relu")
with tileconv.poison_outputs():
    out = conv2d_problem(problem, x, weight, bias, None, algo=algo)
torch.cuda.synchronize()
report = {"max_elements": problem.max_elements, "unwritten": int(torch.isnan(out).sum()), "rows": []}
for start in (0, h - 2):
    ref = tileconv.conv2d_reference(x[:, :, start:start + 2], weight, bias, groups=groups, activation="relu")
    result = compare(out[:, :, start:start + 2], ref, tolerance(problem))
    report["rows"].append({"start": start, "ok": result.ok, "message": result.message()})
print("RESULT " + json.dumps(report))
"""


@pytest.mark.gpu
@pytest.mark.parametrize("row,algo", INT64_PARAMS)
def test_int64_indexing_on_gpu(row, algo: str, seed: int):
    """fp16 1x1 convolutions over more than 2**31 elements, checked on their first and last
    rows (where offsets pass 2**31) against the reference, and for NaN poison left anywhere."""
    name, n, c, h, w, k, groups = row
    assert n * c * h * w > 2**31
    needed = 2 * (n * c * h * w + 2 * n * k * h * w) + (1 << 30)  # fp16 input, output, isnan mask
    if algo == "staged_nhwc":  # and its channels_last copy, rows padded to 8 channels
        needed += 2 * n * h * w * -(-c // 8) * 8
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]))
    # One case at a time on the GPU: under pytest -n 8 several 10-30 GiB children at once ran
    # out of memory on an H200 (each saw the memory free before the others allocated).
    with open(os.path.join(tempfile.gettempdir(), "tileconv-int64-gpu.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        free, _ = torch.cuda.mem_get_info()
        if free < needed:
            pytest.skip(f"needs {needed / 2**30:.1f} GiB of GPU memory, {free / 2**30:.1f} GiB free")
        child = subprocess.run(
            [sys.executable, "-c", INT64_CHILD, json.dumps([n, c, h, w, k, groups, algo, seed])],
            capture_output=True, text=True, timeout=600, env=env, cwd=REPO_ROOT,
        )
    where = f"{name} with {algo} (seed {seed})"
    lines = [line for line in child.stdout.splitlines() if line.startswith("RESULT ")]
    assert child.returncode == 0 and lines, f"{where}: the child failed:\n{child.stderr[-3000:]}"
    report = json.loads(lines[-1][len("RESULT "):])
    assert report["max_elements"] >= 2**31
    bad = [f"rows {r['start']}:{r['start'] + 2}: {r['message']}" for r in report["rows"] if not r["ok"]]
    assert not bad, f"{where}: " + "; ".join(bad)
    assert report["unwritten"] == 0, f"{where}: {report['unwritten']} output elements never written"


# --------------------------------------------------------------------- weights updated in place
@pytest.mark.parametrize("case", with_each_algorithm([
    Case(2, 8, 7, 9, 12, 3, 3, padding=1, groups=4, dtype="fp16"),  # grouped: block-diagonal weight copy
    Case(2, 6, 7, 9, 8, 3, 3, padding=1, dtype="fp32"),  # NCHW weight: channels_last copy
]))
def test_weight_updates_are_seen(case: Case, device: str, seed: int):
    """Kernels that read a derived copy of the weight (channels_last, block-diagonal) see an
    in-place update (an optimizer step) and a ``.data`` swap, not a stale copy."""
    t = make_inputs(case, device, seed)
    problem = problem_from_arguments(t.x, t.weight, None, *case.arguments())
    tol = tolerance(problem)
    for step in ("first call", "in-place update", "data swap"):
        if step == "in-place update":
            with torch.no_grad():
                t.weight.mul_(-0.5).add_(0.1)
        elif step == "data swap":
            t.weight.data = torch.randn_like(t.weight.float()).to(t.weight.dtype) / 5
        with tileconv.poison_outputs():
            out = conv2d_problem(problem, t.x, t.weight, None, None, algo=case.algo)
        assert_conv_close(out, reference(case, t), tol, context=f"{case.id} after {step} (seed {seed})")


# --------------------------------------------------------------------- the harness itself
def test_harness_catches_unwritten_and_wrong_outputs(device: str, seed: int):
    """The checks above can fail: a poisoned output left unwritten, or one wrong element."""
    case = Case(1, 4, 5, 5, 4, 3, 3, padding=1, dtype="fp16")
    t = make_inputs(case, device, seed)
    problem = problem_from_arguments(t.x, t.weight, None, *case.arguments())
    ref = reference(case, t)
    with tileconv.poison_outputs():
        unwritten = torch.empty(problem.output_shape, dtype=torch.float16, device=device).fill_(float("nan"))
        out = conv2d_problem(problem, t.x, t.weight, None, None)
    assert compare(unwritten, ref, tolerance(problem)).nonfinite_mismatches == ref.numel()
    with pytest.raises(AssertionError, match="NaN/Inf mismatches"):
        assert_conv_close(unwritten, ref, tolerance(problem))
    assert_conv_close(out, ref, tolerance(problem))
    wrong = out.clone()
    wrong[0, 1, 2, 3] += 0.25
    with pytest.raises(AssertionError, match=r"worst element at \(0, 1, 2, 3\)"):
        assert_conv_close(wrong, ref, tolerance(problem))


@pytest.mark.parametrize("config, stride, fragment", [
    (LaunchConfig(192, 128, 64, 8, 4, 4, pingpong=1), 1, "block_m=192"),
    (LaunchConfig(192, 128, 64, 8, 8, 4), 1, "num_warps=8"),
    (LaunchConfig(96, 128, 64, 8, 4, 4), 1, "block_m=96"),
    (LaunchConfig(192, 128, 64, 8, 4, 4), 2, "stride=(2, 2)"),
])
def test_ws_row_slices_reject_what_they_cannot_run(config: LaunchConfig, stride: int, fragment: str):
    """gemm_1x1_ws's 192-row tiles (three MMA warpgroups of 64 rows each) run stride 1, one
    warpgroup a slice, without ping-pong; other tiles are powers of two. The launcher says so,
    naming the setting, before it touches a tensor (so this runs on any machine)."""
    from tileconv.kernels.launch import launch_gemm_1x1_ws

    problem = problem_from_arguments(torch.empty(2, 16, 8, 8, dtype=torch.float16).to(memory_format=torch.channels_last),
                                     torch.empty(32, 16, 1, 1, dtype=torch.float16), stride=stride)
    x = torch.empty(problem.input_shape, dtype=torch.float16).to(memory_format=torch.channels_last)
    out = torch.full(problem.output_shape, 7.0, dtype=torch.float16).to(memory_format=torch.channels_last)
    with pytest.raises(ValueError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        launch_gemm_1x1_ws(problem, x, torch.empty(problem.weight_shape, dtype=torch.float16), None, None, out, config)
    assert bool((out == 7.0).all())


@pytest.mark.parametrize("channels, config, algorithm, fragment", [
    # 4 slices of 8 channels against the 3 SMs the interpreter's device counts
    (16, LaunchConfig(64, 8, 64, 8, 4, 4, resident=1), "gemm_1x1_ws", "4 weight slices of 8 channels outnumber"),
    # 128 x 1024 channels (256 KB) beside four A stages
    (1024, LaunchConfig(128, 128, 64, 8, 4, 4, resident=1), "gemm_1x1_ws", "more than a block has"),
    (16, LaunchConfig(64, 8, 16, 8, 4, 4, resident=1), "implicit_gemm_ws", "4 weight slices of 8 channels outnumber"),
    (16, LaunchConfig(64, 32, 16, 8, 4, 4, resident=1), "gemm_1x1", "holds no weight slice"),
])
def test_resident_weight_slices_reject_what_they_cannot_hold(channels: int, config: LaunchConfig, algorithm: str,
                                                              fragment: str):
    """The warp-specialized kernels hold a program's weight slice only where every program can have
    one (no more slices than SMs) and it fits beside the ring; gemm_1x1 holds none. The launcher says
    so, naming the setting, before it touches a tensor (so this runs on any machine)."""
    from tileconv.kernels import launch

    problem = problem_from_arguments(
        torch.empty(2, channels, 8, 8, dtype=torch.float16).to(memory_format=torch.channels_last),
        torch.empty(32, channels, 1, 1, dtype=torch.float16))
    x = torch.empty(problem.input_shape, dtype=torch.float16).to(memory_format=torch.channels_last)
    out = torch.full(problem.output_shape, 7.0, dtype=torch.float16).to(memory_format=torch.channels_last)
    with pytest.raises(ValueError, match=f"resident=1: .*{fragment}"):
        getattr(launch, f"launch_{algorithm}")(problem, x, torch.empty(problem.weight_shape, dtype=torch.float16),
                                               None, None, out, config)
    assert bool((out == 7.0).all())


@pytest.mark.skipif(_other_machine("gemm_1x1_ws") is not None, reason="gemm_1x1_ws runs on a Hopper GPU only")
def test_gemm_1x1_ws_192_row_tile_falls_back_on_an_undescribable_input(device: str, seed: int):
    """An input the copy engine cannot address (a channel slice starting 2 bytes past a 16-byte
    boundary) sends gemm_1x1_ws to the implicit GEMM; its 192-row config becomes 128 rows there
    (the implicit GEMM's tiles are powers of two). Same result, into a poisoned output."""
    from tileconv.kernels import ALGORITHMS
    from tileconv.reference import conv2d_reference

    gen = torch.Generator(device="cpu").manual_seed(seed)
    big = torch.randn(2, 65, 9, 11, generator=gen).to(device=device, dtype=torch.float16).contiguous(
        memory_format=torch.channels_last)
    x = big[:, 1:]  # 64 channels, the view's first element 2 bytes into the allocation
    w = (torch.randn(136, 64, 1, 1, generator=gen) / 8).to(device=device, dtype=torch.float16)
    problem = problem_from_arguments(x, w)
    out = torch.full(problem.output_shape, float("nan"), device=device, dtype=torch.float16).contiguous(
        memory_format=torch.channels_last)
    ALGORITHMS["gemm_1x1_ws"].launch(problem, x, w, None, None, out, LaunchConfig(192, 128, 64, 8, 4, 4))
    assert_conv_close(out, conv2d_reference(x, w, device=device), tolerance(problem), "192-row fallback")
