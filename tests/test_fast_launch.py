"""tileconv.kernels.fast_launch: a repeated launch reuses Triton's compiled kernel with the
same arguments Triton would pass it, and any change Triton specialises on asks Triton."""

import inspect

import pytest
import torch

import tileconv
from tileconv.functional import conv2d_problem
from tileconv.kernels import fast_launch
from tileconv.problem import problem_from_arguments
from tileconv.testing import assert_conv_close, tolerance


class _FakeCompiled:
    def __init__(self, log):
        self.log = log

    def __getitem__(self, grid):
        assert len(grid) == 3, "Triton's compiled-kernel launcher reads grid[0], grid[1] and grid[2]"
        return lambda *args: self.log.append(("compiled", grid, args))


class _FakeKernel:
    """Stands in for a JITFunction: (x, n, FLAG: constexpr = 7) and options."""

    arg_names = ["x", "n", "FLAG"]

    def __init__(self):
        self.log = []
        signature = inspect.signature(lambda x, n, FLAG=7: None)
        self.params = [type("P", (), {"name": p.name, "default": p.default})() for p in signature.parameters.values()]

    def __getitem__(self, grid):
        def call(*args, **kwargs):
            self.log.append(("jit", grid, args, tuple(kwargs)))  # names only: keep no tensor alive
            return _FakeCompiled(self.log)
        return call


@pytest.fixture
def compiled_launches(monkeypatch):
    monkeypatch.setattr(fast_launch, "INTERPRET", False)
    monkeypatch.setattr(fast_launch, "_plans", {})


def test_repeat_launch_passes_every_argument_in_order(compiled_launches):
    kernel = _FakeKernel()
    x = torch.zeros(8)
    fast_launch.launch(kernel, (4,), x, 32, num_warps=4)
    fast_launch.launch(kernel, (5,), x + 1, 32, num_warps=4)  # another tensor, same dtype and alignment
    assert [entry[0] for entry in kernel.log] == ["jit", "compiled"]
    assert kernel.log[1][1] == (5, 1, 1) and kernel.log[1][2][1:] == (32, 7)  # the constexpr's default too
    fast_launch.launch(kernel, (5,), x, 32, FLAG=3, num_warps=4)
    assert kernel.log[-1][0] == "jit"  # a new constexpr value: Triton decides
    fast_launch.launch(kernel, (6,), x, 32, FLAG=3, num_warps=4)
    assert kernel.log[-1] == ("compiled", (6, 1, 1), (x, 32, 3))


def test_tensor_keyword_arguments_are_keyed_by_dtype_and_alignment_only(compiled_launches):
    """A workspace passed by keyword is a new tensor every call: it must hit the plan, and
    the plan must not keep it alive (a key holding tensors leaked every output on a GPU)."""
    import gc
    import weakref

    kernel = _FakeKernel()
    x = torch.zeros(8)
    first = torch.zeros(4)
    fast_launch.launch(kernel, (1,), x, 32, FLAG=first)
    alive = weakref.ref(first)
    del first
    gc.collect()
    assert alive() is None, "the launch cache keeps a keyword tensor alive"
    second = torch.zeros(4)
    fast_launch.launch(kernel, (1,), x, 32, FLAG=second)
    assert kernel.log[-1][0] == "compiled" and kernel.log[-1][2][2] is second


def test_counts_and_bounded_table(compiled_launches, monkeypatch):
    """stats() tells hits from misses; the plan table starts over past MAX_PLANS entries."""
    monkeypatch.setattr(fast_launch, "_counts", {"hits": 0, "misses": 0})
    monkeypatch.setattr(fast_launch, "MAX_PLANS", 3)
    kernel = _FakeKernel()
    x = torch.zeros(8)
    for n in (16, 16, 32, 48, 64, 64):
        fast_launch.launch(kernel, (1,), x, n)
    counts = fast_launch.stats()
    assert (counts["hits"], counts["misses"]) == (2, 4)
    assert counts["plans"] <= 3


@pytest.mark.parametrize("change", ["int_one", "int_not_16", "int_other_multiple_of_16", "misaligned", "dtype", "option"])
def test_any_specialisation_change_goes_to_triton(compiled_launches, change: str):
    kernel = _FakeKernel()
    x = torch.zeros(16)
    fast_launch.launch(kernel, (1,), x, 32, num_warps=4)
    args, options = [x, 32], {"num_warps": 4}
    if change == "int_one":
        args[1] = 1
    elif change == "int_not_16":
        args[1] = 33
    elif change == "int_other_multiple_of_16":  # same specialisation for Triton, still a new key
        args[1] = 48
    elif change == "misaligned":
        args[0] = x[1:]  # 4 bytes past a 16-byte boundary
    elif change == "dtype":
        args[0] = x.half()
    else:
        options["num_warps"] = 8
    fast_launch.launch(kernel, (1,), *args, **options)
    assert kernel.log[-1][0] == "jit", change


@pytest.mark.gpu
def test_cached_launches_follow_alignment_on_gpu(seed: int):
    """The same problem on a 16-byte-aligned input, a misaligned view, then aligned again:
    each launch must use a kernel compiled for its alignment (a wrong one reads garbage)."""
    gen = torch.Generator(device="cuda").manual_seed(seed)
    base = torch.randn(2 * 24 * 9 * 11 + 1, generator=gen, device="cuda", dtype=torch.float16)
    weight = torch.randn(16, 24, 3, 3, generator=gen, device="cuda", dtype=torch.float16) / 8
    for offset in (0, 1, 0, 1):
        x = base[offset:offset + 2 * 24 * 9 * 11].view(2, 24, 9, 11)
        problem = problem_from_arguments(x, weight, None, 1, 1)
        with tileconv.poison_outputs():
            out = conv2d_problem(problem, x, weight, None, None)
        ref = tileconv.conv2d_reference(x, weight, None, padding=1)
        assert_conv_close(out, ref, tolerance(problem), context=f"input offset {offset} elements")
