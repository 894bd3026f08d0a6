"""Tuning the backward kernels: candidates, ``tileconv.tune_backward``, the cache entries
and ``dispatch.backward_config`` reading them. Each test has its own cache folder."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

import tileconv
from tileconv import ConvProblem
from tileconv.dispatch import backward_config, cache, clear_selection_cache
from tileconv.dispatch import tune as tune_module
from tileconv.dispatch import tune_backward as tb
from tileconv.dispatch.heuristics import default_backward_config
from tileconv.functional import conv2d_backward_problem
from tileconv.kernels import BackwardConfig, get_backward_algorithm
from tileconv.kernels.backward import aten_convolution_backward
from tileconv.testing import assert_conv_close, random_inputs, tolerance

# Stride 2, dilation 2: the output-phase dgrad kernel (a stride-1 dgrad runs as a forward
# convolution, an undilated strided one as the sub-pixel convolution: dispatch.dgrad_route).
TINY = ConvProblem(n=1, c=16, h=6, w=5, k=16, r=3, s=3, stride=(2, 2), padding=(1, 1), dilation=(2, 2))
TINY_S1 = replace(TINY, stride=(1, 1))
TINY_DW = ConvProblem(n=1, c=8, h=5, w=5, k=8, r=3, s=3, padding=(1, 1), groups=8)


pytestmark = pytest.mark.usefixtures("isolated_cache")  # tests/conftest.py: a private cache folder


def _timer(device: str):
    return None if device == "cuda" else (lambda fn: tune_module.wall_clock_timer(fn, repeats=1))


@pytest.mark.parametrize("problem, algorithm", [(TINY, "implicit_gemm"), (TINY_DW, "depthwise")])
@pytest.mark.parametrize("gradient", ["dgrad", "wgrad"])
def test_candidates_start_from_the_heuristics_and_never_repeat(problem, algorithm, gradient):
    configs = tb.backward_candidates(problem, algorithm, gradient, limit=50)
    assert configs[0] == default_backward_config(problem, algorithm, gradient)
    assert len(configs) == len(set(configs)) > 3
    low = min(16, configs[0].block_m, configs[0].block_n)
    assert all(low <= c.block_m <= 256 and low <= c.block_n <= 256 for c in configs[1:])
    if gradient == "wgrad":
        assert {1, 4, 16} <= {c.split_k for c in configs}
    else:
        assert {c.split_k for c in configs} == {configs[0].split_k}
    assert len(tb.backward_candidates(problem, algorithm, gradient, limit=2)) == 2


def test_hopper_wgrads_take_the_ws_kernel_and_its_input_by_tma_where_it_won(monkeypatch):
    """On Hopper (the machine check stubbed: this runs anywhere) ResNet-50's fp16 channels_last
    wgrads get the warp-specialized kernel's tiles that won them (heuristics.ws_wgrad_config):
    the input by TMA as a matrix (1x1 stride 1) or in boxes of rows (a strided 1x1, a stride-1
    3x3), gathered where that was faster (K = 64, 144 tiles) or the copy engine cannot place a
    strided tap; tuning races both copies where both can run."""
    import tileconv.kernels.wgrad_ws as wgrad_ws
    from tileconv.kernels.config import WS_GATHER, WS_TMA

    monkeypatch.setattr(wgrad_ws, "_ws_machine_reason", lambda problem: None)

    def chosen(**kw):
        problem = ConvProblem(n=32, c=1024, h=14, w=14, k=512, r=1, s=1, dtype=torch.float16, layout="nhwc")
        c = default_backward_config(replace(problem, **kw), "implicit_gemm", "wgrad")
        return c.block_m, c.block_n, c.block_k, c.num_stages, c.ws

    assert chosen() == (64, 128, 64, 8, WS_TMA)  # the pixel matrix
    assert chosen(stride=(2, 2)) == (128, 128, 64, 6, WS_TMA)
    assert chosen(r=3, s=3, padding=(1, 1), c=128, k=128, h=28, w=28) == (128, 128, 64, 6, WS_TMA)
    assert chosen(r=3, s=3, padding=(1, 1), c=64, k=64, h=56, w=56) == (64, 128, 64, 8, WS_GATHER)
    # 144 tiles of 128x128: 192-channel tiles (three MMA warpgroups) where K fills them, else 256x128.
    assert chosen(r=3, s=3, padding=(1, 1), c=512, k=512, h=7, w=7) == (192, 128, 64, 5, WS_GATHER)
    assert chosen(r=3, s=3, padding=(1, 1), c=512, k=448, h=7, w=7) == (256, 128, 32, 6, WS_GATHER)
    assert chosen(r=3, s=3, padding=(1, 1), stride=(2, 2), c=256, k=256, h=28, w=28) == (128, 128, 64, 6, WS_GATHER)
    three = ConvProblem(n=32, c=128, h=28, w=28, k=128, r=3, s=3, padding=(1, 1), dtype=torch.float16, layout="nhwc")
    assert wgrad_ws.input_by_tma(three) and not wgrad_ws.input_is_pixel_matrix(three)
    copies = {c.ws for c in tb.backward_candidates(three, "implicit_gemm", "wgrad") if c.ws}
    assert copies == {WS_GATHER, WS_TMA}
    strided = replace(three, stride=(2, 2))
    assert not wgrad_ws.input_by_tma(strided)
    assert {c.ws for c in tb.backward_candidates(strided, "implicit_gemm", "wgrad") if c.ws} == {WS_GATHER}
    # 192-channel tiles are raced where K fills them (not K = 128), not on the pixel matrix.
    assert 192 not in {c.block_m for c in tb.backward_candidates(three, "implicit_gemm", "wgrad")}
    wide = replace(three, c=512, k=512, h=7, w=7)
    assert {(c.block_m, c.ws) for c in tb.backward_candidates(wide, "implicit_gemm", "wgrad")} >= {
        (192, WS_GATHER), (192, WS_TMA)}
    matrix = ConvProblem(n=32, c=1024, h=14, w=14, k=512, r=1, s=1, dtype=torch.float16, layout="nhwc")
    assert 192 not in {c.block_m for c in tb.backward_candidates(matrix, "implicit_gemm", "wgrad")}


BIG_DW = ConvProblem(n=2, c=64, h=28, w=28, k=64, r=7, s=7, padding=(3, 3), groups=64)  # 7x7: tap rows
LARGE_DW = ConvProblem(n=1, c=8, h=16, w=16, k=8, r=9, s=9, padding=(4, 4), groups=8)  # Toeplitz: 81 taps, 16 wide


@pytest.mark.parametrize("problem", [TINY_DW, BIG_DW, replace(BIG_DW, stride=(2, 2), dtype=torch.float32)],
                         ids=["3x3", "7x7", "7x7_s2_fp32"])
def test_halo_wgrad_candidates_are_tiles_that_fit(problem):
    """The halo wgrad's candidates (computed on any machine): the heuristics' first, distinct,
    each a valid tile (its accumulators in registers, its buffers in shared memory), both
    buffer counts, split-K variants, all the filter rows or one a program."""
    from tileconv.kernels.wgrad_halo import MAX_SHARED_BYTES, wgrad_halo_tiling

    configs = tb.backward_candidates(problem, "depthwise_halo", "wgrad", limit=50)
    assert configs[0] == default_backward_config(problem, "depthwise_halo", "wgrad")
    assert len(configs) == len(set(configs)) > 6
    for config in configs:
        assert wgrad_halo_tiling(problem, config).shared_bytes(problem) <= MAX_SHARED_BYTES, config
    assert {c.num_stages for c in configs} == {1, 2}
    assert len({c.split_k for c in configs}) >= 3
    assert {c.tap_rows for c in configs} >= ({0, 1} if problem.r > 1 else {0})
    assert len(tb.backward_candidates(problem, "depthwise_halo", "wgrad", limit=3)) == 3


def test_toeplitz_wgrad_tunes_and_its_winner_is_used(device, seed):
    """tune_backward on a large depthwise filter races the Toeplitz wgrad's candidates (split-K,
    column step, warps, stages), stores a correct winner, and the backward then runs it."""
    if device == "cpu":  # (the GPU picks the same algorithm: 16 wide, 81 taps)
        assert tileconv.dispatch.select_backward(LARGE_DW).name == "depthwise_toeplitz"
    configs = tb.backward_candidates(LARGE_DW, "depthwise_toeplitz", "wgrad", limit=50)
    assert configs[0] == default_backward_config(LARGE_DW, "depthwise_toeplitz", "wgrad") and len(set(configs)) > 5
    assert all(c.block_k >= 16 and c.block_k & (c.block_k - 1) == 0 for c in configs)
    (result,) = tileconv.tune_backward([LARGE_DW], gradients=["wgrad"], device=device, max_candidates=3,
                                       timer=_timer(device))
    assert result.status == "tuned" and result.algorithm == "depthwise_toeplitz", result.message
    algorithm = get_backward_algorithm("depthwise_toeplitz")
    assert backward_config(LARGE_DW, algorithm, "wgrad") == result.config
    inputs = random_inputs(LARGE_DW, device, seed)
    grad = torch.randn(LARGE_DW.output_shape, device=device).to(LARGE_DW.dtype)
    with tileconv.poison_outputs():
        _, grad_w = conv2d_backward_problem(LARGE_DW, grad, inputs.x, inputs.weight, False, True,
                                            algo="depthwise_toeplitz")
    ref_w = aten_convolution_backward(LARGE_DW, grad.double().cpu(), inputs.x.double().cpu(),
                                      inputs.weight.double().cpu(), False, True)[1]
    assert_conv_close(grad_w, ref_w, tolerance(LARGE_DW, LARGE_DW.gemm_m), context="Toeplitz wgrad, tuned config")


STEM = ConvProblem(n=1, c=3, h=12, w=10, k=16, r=7, s=7, stride=(2, 2), padding=(3, 3), dtype=torch.float16,
                   layout="nhwc")


def test_columns_wgrad_tunes_and_its_winner_is_used(device, seed):
    """A few-channel stem's wgrad tunes on the columns wgrad: candidates that keep whole filter
    rows a column tile (split-K, pixel step, stages, tiles, warps), a correct winner stored and
    then run."""
    from tileconv.kernels.wgrad_columns import row_columns

    assert tileconv.dispatch.select_backward(STEM).name == "im2row"
    configs = tb.backward_candidates(STEM, "im2row", "wgrad", limit=50)
    assert configs[0] == default_backward_config(STEM, "im2row", "wgrad") and len(set(configs)) == len(configs) > 5
    assert all(c.block_n % row_columns(STEM) == 0 for c in configs)
    assert len({c.split_k for c in configs}) >= 3 and len({c.block_k for c in configs}) >= 3
    (result,) = tileconv.tune_backward([STEM], gradients=["wgrad"], device=device, max_candidates=3,
                                       timer=_timer(device))
    assert result.status == "tuned" and result.algorithm == "im2row", result.message
    assert backward_config(STEM, get_backward_algorithm("im2row"), "wgrad") == result.config
    inputs = random_inputs(STEM, device, seed)
    grad = torch.randn(STEM.output_shape, device=device).to(STEM.dtype)
    with tileconv.poison_outputs():
        _, grad_w = conv2d_backward_problem(STEM, grad, inputs.x, inputs.weight, False, True)
    ref_w = aten_convolution_backward(STEM, grad.double().cpu(), inputs.x.double().cpu(),
                                      inputs.weight.double().cpu(), False, True)[1]
    assert_conv_close(grad_w, ref_w, tolerance(STEM, STEM.gemm_m), context="columns wgrad, tuned config")


def test_tune_backward_stores_correct_winners_that_the_backward_uses(device, seed):
    results = tileconv.tune_backward([TINY, TINY], device=device, max_candidates=2, timer=_timer(device))
    assert [(r.problem, r.gradient) for r in results] == [(TINY, "dgrad"), (TINY, "wgrad")]  # duplicates once
    for result in results:
        assert result.status == "tuned", result.message
        # the winner read within CONFIRM_MARGIN of the fastest, then won the confirmation round
        first = dict(result.timings)
        assert first[result.config] <= (1 + tune_module.CONFIRM_MARGIN) * min(first.values()), result.timings
        assert result.time_ms > 0 and result.default_ms is not None
        assert cache.lookup_backward(TINY, result.gradient, device) == result.config
        algorithm = get_backward_algorithm("implicit_gemm")
        assert backward_config(TINY, algorithm, result.gradient) == result.config
    again = tileconv.tune_backward([TINY], gradients=["wgrad"], device=device)
    assert again[0].status == "cached" and again[0].config == results[1].config
    # The gradients through the tuned configs are right.
    inputs = random_inputs(TINY, device, seed)
    grad = torch.randn(TINY.output_shape, device=device).to(TINY.dtype)
    with tileconv.poison_outputs():
        grad_x, grad_w = conv2d_backward_problem(TINY, grad, inputs.x, inputs.weight)
    ref_x, ref_w = aten_convolution_backward(TINY, grad.double().cpu(), inputs.x.double().cpu(),
                                             inputs.weight.double().cpu(), True, True)
    assert_conv_close(grad_x, ref_x, tolerance(TINY, TINY.k * 9), context="dgrad, tuned config")
    assert_conv_close(grad_w, ref_w, tolerance(TINY, TINY.gemm_m), context="wgrad, tuned config")


def test_a_stride1_dgrad_tunes_its_forward_problem(device, seed):
    """tune --pass dgrad on a stride-1 problem tunes ConvProblem.dgrad_as_forward with the
    forward's tuner; the forward cache entry is what the dgrad then runs with."""
    forward = TINY_S1.dgrad_as_forward()
    (result,) = tileconv.tune_backward([TINY_S1], gradients=["dgrad"], device=device, max_candidates=2,
                                       timer=_timer(device))
    assert result.status == "tuned", result.message
    assert result.forward is not None and result.forward.problem == forward
    assert result.algorithm == f"forward {result.forward.algorithm}"
    assert result.time_ms == result.forward.time_ms  # the winner's confirmed median
    tuned = cache.lookup(forward, device)
    assert tuned is not None and (tuned.algorithm, tuned.config) == (result.forward.algorithm, result.forward.config)
    assert "forward" in tb.result_line(result)
    inputs = random_inputs(TINY_S1, device, seed)
    grad = torch.randn(TINY_S1.output_shape, device=device).to(TINY_S1.dtype)
    with tileconv.poison_outputs():
        grad_x, _ = conv2d_backward_problem(TINY_S1, grad, inputs.x, inputs.weight, need_weight=False)
    ref_x, _ = aten_convolution_backward(TINY_S1, grad.double().cpu(), inputs.x.double().cpu(),
                                         inputs.weight.double().cpu(), True, False)
    assert_conv_close(grad_x, ref_x, tolerance(TINY_S1, TINY_S1.k * 9), context="dgrad as forward, tuned")


def test_failing_and_wrong_candidates_are_rejected(device, monkeypatch):
    good = default_backward_config(TINY, "implicit_gemm", "dgrad")
    failing = replace(good, block_m=24)  # not a power of two: the kernel does not compile
    monkeypatch.setattr(tb, "backward_candidates", lambda *args, **kwargs: [good, failing])
    (result,) = tileconv.tune_backward([TINY], gradients=["dgrad"], device=device, timer=_timer(device), store=False)
    assert result.status == "tuned" and result.config == good
    assert [config for config, _ in result.rejected] == [failing]
    assert cache.lookup_backward(TINY, "dgrad", device) is None  # store=False

    real = get_backward_algorithm("implicit_gemm")

    def zeros(problem, grad, weight, grad_input, config):
        grad_input.zero_()

    monkeypatch.setattr(tb, "get_backward_algorithm", lambda name: replace(real, dgrad=zeros))
    (result,) = tileconv.tune_backward([TINY], gradients=["dgrad"], device=device, timer=_timer(device))
    assert result.status == "failed" and "wrong result" in result.message
    assert cache.lookup_backward(TINY, "dgrad", device) is None


def test_a_backward_entry_is_read_only_as_what_it_says_it_is(device):
    name = cache.device_name(device)
    config = BackwardConfig(block_m=32, block_n=16, block_k=16, split_k=4, num_warps=2, num_stages=2)
    entry = cache.make_backward_entry("implicit_gemm", config, "wgrad")
    cache.store({cache.backward_key(TINY, name, "wgrad"): entry,
                 cache.backward_key(TINY, name, "dgrad"): {**entry, "config": {"block_m": "wide"}}})
    assert cache.lookup_backward(TINY, "wgrad", device) == config
    assert cache.lookup_backward(TINY, "dgrad", device) is None  # malformed: heuristics instead
    assert cache.lookup(TINY, device) is None  # the forward's key is another key
    clear_selection_cache()
    assert backward_config(TINY, get_backward_algorithm("implicit_gemm"), "wgrad") == config
    # A forced algorithm that is not the dispatcher's pick keeps its own heuristics.
    assert backward_config(TINY, get_backward_algorithm("aten"), "wgrad") == default_backward_config(
        TINY, "aten", "wgrad")


def test_unknown_gradient_is_refused():
    with pytest.raises(ValueError, match="'dgrad' or 'wgrad'"):
        tileconv.tune_backward([TINY], gradients=["fwd"])


def test_the_command_takes_a_pass(capsys):
    import argparse

    parser = argparse.ArgumentParser()
    tune_module.add_arguments(parser)
    assert parser.parse_args(["--pass", "bwd"]).pass_ == "bwd"
    with pytest.raises(SystemExit):
        parser.parse_args(["--pass", "backward"])
