"""implicit_gemm_frame's plan (``launch.frame_tiling``), checked without a GPU.

The kernel (Gluon, Hopper only) runs on the GPU alone; what it computes is fixed by the plan the
launcher hands it: which phase frames a stage holds (input rows a::U, columns b::V, from which
phase row and column, how many rows, copied in which boxes, stored where), and where each tap's
A view starts. Here that plan is replayed in float64 exactly as the kernel uses it -- the copy
engine's zero fill outside each phase, slack rows poisoned with NaN, every tap's [BLOCK_M, C]
view times its weight, only the rows q < Q of each output row stored -- and compared with
F.conv2d, over strides, paddings (asymmetric too), dilations and filter shapes. A wrong offset
or a view that reaches a stored output's rows past its frame fails here.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import tileconv.kernels.launch as launch
from tileconv import ConvProblem, LaunchConfig
from tileconv.kernels.launch import (
    FRAME_MAX_PHASES,
    frame_phase_count,
    frame_tiling,
    implicit_gemm_frame_unsupported_reason,
)


def _replay(problem: ConvProblem, config: LaunchConfig, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """The NHWC output the frame kernel's plan computes for ``x`` (N, C, H, W) and ``w``."""
    tiling = frame_tiling(problem, config)
    u, v = problem.stride
    x4 = x.permute(0, 2, 3, 1)
    out = torch.full((problem.n, problem.out_h, problem.out_w, problem.k), float("nan"), dtype=torch.float64)
    taps = [(r, s) for r in range(problem.r) for s in range(problem.s)]
    for n in range(problem.n):
        for p0 in range(0, problem.out_h, tiling.tp):
            stage = torch.full((tiling.frows, problem.c), float("nan"), dtype=torch.float64)  # slack: garbage
            for phase in tiling.phases:
                view = x4[n, phase.a::u, phase.b::v]
                frame = torch.zeros(phase.rows, tiling.fw, problem.c, dtype=torch.float64)  # the zero fill
                rows = range(max(0, -(p0 + phase.row)), min(phase.rows, view.shape[0] - (p0 + phase.row)))
                cols = range(max(0, -phase.col), min(tiling.fw, view.shape[1] - phase.col))
                if len(rows) and len(cols):
                    frame[rows.start:rows.stop, cols.start:cols.stop] = view[
                        p0 + phase.row + rows.start:p0 + phase.row + rows.stop,
                        phase.col + cols.start:phase.col + cols.stop]
                stage[phase.base:phase.base + phase.rows * tiling.fw] = frame.reshape(-1, problem.c)
            acc = torch.zeros(config.block_m, problem.k, dtype=torch.float64)
            for (r, s), start in zip(taps, tiling.taps, strict=True):
                acc += stage[start:start + config.block_m] @ w[:, :, r, s].T
            acc = acc.reshape(tiling.tp, tiling.fw, problem.k)
            rows = min(tiling.tp, problem.out_h - p0)
            out[n, p0:p0 + rows] = acc[:rows, :problem.out_w]
    return out


CASES = [
    # (n, c, h, w, k, r, s, stride, padding, dilation, padding_end, block_m)
    (2, 32, 9, 14, 8, 3, 3, (1, 1), (1, 1), (1, 1), None, 128),  # stride 1: the one phase
    (1, 32, 11, 10, 8, 5, 5, (1, 1), (4, 2), (2, 1), None, 64),
    (2, 32, 13, 15, 8, 3, 3, (2, 2), (1, 1), (1, 1), None, 128),  # odd sizes: phases of unequal rows/columns
    (1, 32, 12, 16, 8, 3, 3, (2, 2), (1, 1), (1, 1), None, 64),
    (1, 32, 14, 14, 8, 3, 3, (2, 2), (2, 2), (2, 2), None, 64),  # every tap on even pixels: one phase
    (1, 32, 15, 9, 8, 5, 3, (2, 1), (2, 1), (1, 1), None, 64),  # two row phases of reach 2 and 1
    (1, 32, 10, 17, 8, 1, 4, (1, 2), (0, 1), (1, 1), None, 64),
    (1, 32, 16, 16, 8, 2, 2, (2, 2), (0, 0), (1, 1), None, 64),  # patchify: four phases of one tap
    (1, 32, 9, 12, 8, 3, 3, (2, 2), (1, 0), (1, 1), (0, 2), 64),  # asymmetric padding
    (1, 32, 7, 7, 8, 4, 4, (2, 2), (2, 1), (1, 1), (1, 2), 64),
]


@pytest.mark.parametrize("case", CASES, ids=[f"c{i}" for i in range(len(CASES))])
def test_frame_plan_computes_the_convolution(case):
    n, c, h, w, k, r, s, stride, padding, dilation, padding_end, block_m = case
    problem = ConvProblem(n, c, h, w, k, r, s, stride=stride, padding=padding, dilation=dilation,
                          padding_end=padding_end)
    config = LaunchConfig(block_m, 64, 32, 8, 4, 4)
    tiling = frame_tiling(problem, config)
    for phase in tiling.phases:  # boxes of a power of two rows, whole swizzle row groups a phase
        assert phase.rows % phase.piece == 0 and phase.piece & (phase.piece - 1) == 0 and phase.piece <= 256
        assert phase.base % 8 == 0
    assert tiling.frows % 8 == 0 and max(tiling.taps) + block_m <= tiling.frows
    assert len(tiling.phases) == frame_phase_count(problem) <= FRAME_MAX_PHASES
    gen = torch.Generator().manual_seed(sum(case[:7]))
    x = torch.randn(n, c, h, w, generator=gen, dtype=torch.float64)
    wt = torch.randn(k, c, r, s, generator=gen, dtype=torch.float64)
    pad_h, pad_w = padding
    end_h, end_w = padding_end or padding
    ref = F.conv2d(F.pad(x, (pad_w, end_w, pad_h, end_h)), wt, stride=stride, dilation=dilation)
    got = _replay(problem, config, x, wt)
    assert got.shape == ref.permute(0, 2, 3, 1).shape
    torch.testing.assert_close(got, ref.permute(0, 2, 3, 1), rtol=1e-12, atol=1e-10)


def test_frame_refuses_more_phases_than_it_stages(monkeypatch):
    monkeypatch.setattr(launch, "_ws_machine_reason", lambda problem: None)  # answer as on a Hopper GPU
    problem = ConvProblem(1, 32, 12, 12, 8, 3, 3, stride=(3, 3), padding=(1, 1))
    assert frame_phase_count(problem) == 9
    reason = implicit_gemm_frame_unsupported_reason(problem)
    assert reason is not None and "phase frames" in reason


@pytest.mark.parametrize("channels, groups, sub_groups", [(32, 1, (0, 0)), (64, 2, (4, 8))])
def test_an_empty_stride_phase_runs_on_the_implicit_gemm(monkeypatch, channels, groups, sub_groups):
    """An input one pixel wide at stride 2 leaves the odd column phase without a pixel: no tensor
    descriptor has a size 0, so the frame launcher hands the problem to the implicit GEMM (the GPU's
    `verify --algo implicit_gemm_frame` / `grouped_frame` drew such inputs, session 57: "shape must
    be positive"), with its sub-groups (grouped_frame's merged problem: groups of 4 input and 8 output
    channels merged eight at a time)."""
    handed = []
    monkeypatch.setattr(launch, "launch_implicit_gemm", lambda *args, **kwargs: handed.append((args, kwargs)))
    problem = ConvProblem(2, channels, 9, 1, 64 * groups, 3, 3, stride=(2, 2), padding=(2, 2), groups=groups,
                          dtype=torch.float16, layout="nhwc")
    x = torch.randn(problem.input_shape).to(torch.float16).contiguous(memory_format=torch.channels_last)
    w = torch.randn(problem.weight_shape).to(torch.float16)
    out = torch.empty(problem.output_shape, dtype=torch.float16).contiguous(memory_format=torch.channels_last)
    config = LaunchConfig(64, problem.k_per_group, 32, 8, 4, 4)
    assert frame_tiling(problem, config).phases  # the plan itself exists; only a phase's view is empty
    launch.launch_implicit_gemm_frame(problem, x, w, None, None, out, config, sub_groups=sub_groups)
    (args, kwargs), = handed
    assert args[0] is problem and args[-1].num_stages == 3 and kwargs == {"sub_groups": sub_groups}


@pytest.mark.parametrize("c, k, groups, block_k, subs", [
    (128, 128, 32, 64, 4),   # ResNeXt c128: 4 channels a group, 16 merged; 4 groups a 16-channel block
    (256, 256, 32, 64, 4),   # 8 a group: 2 groups a block
    (512, 512, 32, 64, 4),   # 16 a group: each block one group, no merged zeros multiplied
    (64, 128, 4, 64, 4),     # a channel multiplier: 16 in, 32 out a group (blocks 16 x 32)
    (32, 64, 4, 32, 2),      # 8 in, 16 out a group, 32 merged channels: two blocks of 16 x 32
    (128, 128, 32, 32, 1),   # 32-channel steps through a 64-channel merged group: the whole tile
    (48, 48, 4, 48, 1),      # 12 channels a group: no whole number of groups fills 16 channels
])
def test_frame_sub_blocks_hold_every_nonzero_of_the_merged_weight(monkeypatch, c, k, groups, block_k, subs):
    """grouped_frame multiplies a merged tile's block-diagonal weight as ``frame_sub_blocks``
    diagonal blocks (block j: the tile's output rows j*NS.., input channels j*KS..), so every
    nonzero weight of the merged group must fall in its output's block: the blocks' products are
    then the whole tile's. Checked on the merged weight the launcher builds, every tap."""
    from tileconv.kernels.launch import _ws_merge, frame_sub_blocks

    monkeypatch.setattr(launch, "_ws_machine_reason", lambda problem: None)  # answer as on a Hopper GPU
    problem = ConvProblem(2, c, 14, 14, k, 3, 3, padding=(1, 1), groups=groups, dtype=torch.float16, layout="nhwc")
    w = (torch.rand(problem.weight_shape) + 1.0).to(torch.float16)  # no zero of its own
    merged, merged_w, sub_groups = _ws_merge(problem, w)
    config = LaunchConfig(128, merged.k_per_group, block_k, 8, 4, 4)
    assert frame_sub_blocks(merged, config, sub_groups) == subs
    if subs == 1:
        return
    ks, ns = block_k // subs, merged.k_per_group // subs
    assert ks >= 16 and ns % 8 == 0  # a 16-bit wgmma's narrowest K, its N a multiple of 8
    for g in range(merged.groups):
        tile = merged_w[g * merged.k_per_group:(g + 1) * merged.k_per_group].float()  # (BLOCK_N, C_merged, R, S)
        inside = torch.zeros_like(tile, dtype=torch.bool)
        for j in range(subs):
            inside[j * ns:(j + 1) * ns, j * ks:(j + 1) * ks] = True
        assert not tile[~inside].any(), (g, "a weight outside its diagonal block")
        assert int(tile[inside].ne(0).sum()) == merged.k_per_group * problem.c_per_group * 9  # each output's own group
