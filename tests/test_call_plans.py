"""tileconv.call_plans: a repeated conv2d call replays the recorded launches with its own
pointers, and any call that cannot be replayed exactly takes the normal path.

On the CPU the compiled launcher is a fake (the interpreter has none); the GPU tests run
the real thing against the float64 reference with fresh inputs on every call."""

import pytest
import torch

import tileconv
from tileconv import call_plans
from tileconv.kernels import fast_launch, weights
from tileconv.testing import assert_conv_close, tolerance


class _FakeLauncher:
    global_scratch_size = 0
    profile_scratch_size = 0
    launch_cooperative_grid = False
    launch_pdl = False

    def __init__(self, log):
        self.log = log

    def launch(self, *args):
        self.log.append(args)


class _FakeCompiled:
    function = 1234
    packed_metadata = (4, 1, 0)

    def __init__(self, log):
        self.run = _FakeLauncher(log)


def _record(*steps, triton_launches=None):
    record = fast_launch.Recording()
    record.steps = list(steps)
    record.triton_launches = len(steps) if triton_launches is None else triton_launches
    return record


@pytest.fixture
def fake_stream(monkeypatch):
    monkeypatch.setattr(torch._C, "_cuda_getCurrentRawStream", lambda index: 77, raising=False)
    monkeypatch.setattr(torch._C, "_cuda_getDevice", lambda: 0, raising=False)
    monkeypatch.setattr(call_plans, "_counts", {"replays": 0, "recorded": 0, "refused": 0})


def test_replay_passes_this_calls_pointers_in_place_of_the_recorded_tensors(fake_stream):
    log = []
    x, w, b = torch.zeros(2, 3, 4, 4), torch.zeros(5, 3, 1, 1), torch.zeros(5)
    out = torch.zeros(2, 5, 4, 4)
    compiled = _FakeCompiled(log)
    plan = call_plans.CallPlan(_record((compiled, (6, 2, 1), [x, w, out, b, out, 8, 2.5, True])),
                               [x, w, b, None], out)
    x2, w2, b2 = torch.ones(2, 3, 4, 4), torch.ones(5, 3, 1, 1), torch.ones(5)
    out2 = plan(x2, w2, b2, None)
    assert out2.shape == out.shape and out2.stride() == out.stride() and out2 is not out
    (args,) = log
    assert args[:13] == (6, 2, 1, 77, 1234, False, False, None, None, (4, 1, 0), None, None, None)
    assert args[13:] == (x2.data_ptr(), w2.data_ptr(), out2.data_ptr(), b2.data_ptr(), out2.data_ptr(), 8, 2.5, True)
    assert call_plans.stats()["replays"] == 1


def test_a_derived_weight_is_derived_again_for_the_replayed_call(fake_stream):
    log = []
    x, w = torch.zeros(1, 3, 4, 4), torch.randn(5, 3, 3, 3)
    derived = weights.channels_last_weight(w)
    assert derived is not w
    out = torch.zeros(1, 5, 2, 2)
    plan = call_plans.CallPlan(_record((_FakeCompiled(log), (1, 1, 1), [x, derived, out])), [x, w, None, None], out)
    w.add_(1.0)  # an optimizer step: the kept copy is stale, the replay must not use it
    out2 = plan(x, w, None, None)
    fresh = weights.channels_last_weight(w)
    assert torch.equal(fresh, w)
    assert log[0][13 + 1] == fresh.data_ptr() != derived.data_ptr()
    assert log[0][13 + 2] == out2.data_ptr()


def test_a_pointer_to_a_view_of_a_derived_weight_is_derived_again(fake_stream):
    """A kernel's pointer argument hands it only an address: a view starting where a derived
    copy starts (grouped_frame's redo reads the merged weight as a (K, R*S*C) matrix) is that
    copy, derived again for the replayed call as the copy itself would be."""
    log = []
    x, w = torch.zeros(1, 3, 4, 4), torch.randn(5, 3, 3, 3)
    derived = weights.channels_last_weight(w)
    matrix = derived.permute(0, 2, 3, 1).reshape(5, 27)  # a view of the copy, from its start
    assert matrix is not derived and matrix.data_ptr() == derived.data_ptr()
    out = torch.zeros(1, 5, 2, 2)
    plan = call_plans.CallPlan(_record((_FakeCompiled(log), (1, 1, 1), [x, matrix, out])), [x, w, None, None], out)
    w.add_(1.0)
    out2 = plan(x, w, None, None)
    assert log[0][13 + 1] == weights.channels_last_weight(w).data_ptr() != derived.data_ptr()
    assert log[0][13 + 2] == out2.data_ptr()


def test_a_tma_descriptor_is_described_again_over_the_new_address(fake_stream):
    from triton.tools.tensor_descriptor import TensorDescriptor

    log = []
    x, w = torch.zeros(2, 32, 4, 4).contiguous(memory_format=torch.channels_last), torch.zeros(16, 32, 1, 1)
    out = torch.zeros(2, 16, 4, 4).contiguous(memory_format=torch.channels_last)
    a_desc = TensorDescriptor.from_tensor(x.permute(0, 2, 3, 1).reshape(32, 32), [16, 16])
    b_desc = TensorDescriptor.from_tensor(w.reshape(16, 32), [16, 16])
    plan = call_plans.CallPlan(_record((_FakeCompiled(log), (2, 1, 1), [a_desc, b_desc, out, 5])),
                               [x, w, None, None], out)
    x2 = torch.ones_like(x)
    out2 = plan(x2, w, None, None)
    a2, b2, o2, five = log[0][13:]
    assert a2.base.data_ptr() == x2.data_ptr() and list(a2.shape) == [32, 32] and list(a2.strides) == [32, 1]
    assert a2.block_shape == [16, 16] and a2.padding == "zero"
    assert b2.base.data_ptr() == w.data_ptr() and (o2, five) == (out2.data_ptr(), 5)


def test_a_descriptor_over_a_view_inside_an_input_keeps_its_offset(fake_stream):
    """implicit_gemm_frame's stride phases: descriptors over x[:, :, a::2, b::2], which start
    (a*W + b)*C elements into the channels_last input; a replay describes them over the new
    input at the same offset."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    log = []
    x = torch.zeros(2, 32, 6, 6).contiguous(memory_format=torch.channels_last)
    out = torch.zeros(2, 16, 3, 3).contiguous(memory_format=torch.channels_last)
    x4 = x.permute(0, 2, 3, 1)
    phases = [TensorDescriptor.from_tensor(x4[:, a::2, b::2], [1, 2, 4, 16]) for a in (0, 1) for b in (0, 1)]
    plan = call_plans.CallPlan(_record((_FakeCompiled(log), (2, 1, 1), [*phases, out])), [x, None, None, None], out)
    x2 = torch.ones_like(x)
    plan(x2, None, None, None)
    replayed = log[0][13:17]
    for (a, b), desc in zip([(0, 0), (0, 1), (1, 0), (1, 1)], replayed, strict=True):
        assert desc.base.data_ptr() == x2.data_ptr() + (a * 6 + b) * 32 * x.element_size()
        assert list(desc.shape) == [2, 3, 3, 32] and list(desc.strides) == [1152, 384, 64, 1]


def test_scratch_is_allocated_afresh_and_nothing_recorded_stays_alive(fake_stream):
    import gc
    import weakref

    log = []
    x, w = torch.zeros(1, 3, 4, 4), torch.zeros(5, 3, 1, 1)
    with fast_launch.recording() as record:
        out = torch.zeros(1, 5, 4, 4)
        partial = fast_launch.workspace((2, 16, 5), torch.float32, torch.device("cpu"))
    record.steps = [(_FakeCompiled(log), (1, 1, 1), [x, w, partial]), (_FakeCompiled(log), (1, 1, 1), [partial, out])]
    record.triton_launches = 2
    plan = call_plans.CallPlan(record, [x, w, None, None], out)
    alive = [weakref.ref(t) for t in (x, partial, out)]
    del x, partial, out, record
    gc.collect()
    assert all(ref() is None for ref in alive), "a plan keeps a recorded tensor alive"
    out2 = plan(torch.ones(1, 3, 4, 4), w, None, None)
    first, second = log
    assert first[13 + 2] == second[13] and second[13 + 1] == out2.data_ptr()


def test_views_of_one_scratch_tensor_share_its_replayed_allocation(fake_stream):
    """im2row writes its unrolled input into scratch laid out (N, H, Q, C') and the GEMM reads
    it through a permuted view: both launches must get the same new scratch in a replay."""
    log = []
    x, w = torch.zeros(1, 3, 4, 4), torch.zeros(5, 3, 1, 1)
    with fast_launch.recording() as record:
        out = torch.zeros(1, 5, 4, 4)
        unrolled = fast_launch.workspace((1, 4, 4, 16), torch.float16, torch.device("cpu"))
    view = unrolled.permute(0, 3, 1, 2)
    record.steps = [(_FakeCompiled(log), (1, 1, 1), [x, unrolled]), (_FakeCompiled(log), (1, 1, 1), [view, w, out])]
    record.triton_launches = 2
    plan = call_plans.CallPlan(record, [x, w, None, None], out)
    out2 = plan(torch.ones(1, 3, 4, 4), w, None, None)
    first, second = log
    assert first[13 + 1] == second[13] not in (unrolled.data_ptr(), out2.data_ptr())
    assert second[13 + 2] == out2.data_ptr()


@pytest.mark.parametrize("why", ["foreign_tensor", "launch_around_recorder", "incomplete", "scratch", "aliased"])
def test_calls_that_cannot_be_replayed_exactly_are_refused(fake_stream, why: str):
    log = []
    x, w, out = torch.zeros(1, 3, 4, 4), torch.zeros(5, 3, 1, 1), torch.zeros(1, 5, 4, 4)
    compiled = _FakeCompiled(log)
    arguments = [x, w, out]
    record = _record((compiled, (1, 1, 1), arguments))
    if why == "foreign_tensor":  # a workspace allocated inside the call
        arguments.append(torch.zeros(3))
    elif why == "launch_around_recorder":  # a kernel launched by Triton's own dispatch
        record.triton_launches = 2
    elif why == "incomplete":
        record.complete = False
    elif why == "aliased":  # the input passed as the residual too: a later call may not
        with pytest.raises(call_plans._Unplannable):
            call_plans.CallPlan(record, [x, w, None, x], out)
        return
    else:
        compiled.run.global_scratch_size = 128
    with pytest.raises(call_plans._Unplannable):
        call_plans.CallPlan(record, [x, w, None, None], out)


def test_record_keeps_a_refusal_so_the_call_is_not_recorded_again(fake_stream, monkeypatch):
    monkeypatch.setattr(call_plans, "_plans", {})
    x, w = torch.zeros(1, 3, 4, 4), torch.zeros(5, 3, 1, 1)
    out = call_plans.record(("key",), lambda: torch.zeros(1, 5, 4, 4), x, w, None, None)
    # Nothing was launched through the recorder but the hook saw no launch either: an
    # empty plan (a batch of zero images allocates and launches nothing).
    assert out.shape == (1, 5, 4, 4) and call_plans.lookup(("key",)) is not None
    monkeypatch.setattr(fast_launch.Recording, "replayable", property(lambda self: False))
    call_plans.record(("other",), lambda: torch.zeros(1), x, w, None, None)
    assert call_plans.is_known(("other",)) and call_plans.lookup(("other",)) is None
    assert call_plans.stats()["refused"] == 1


def test_recordings_do_not_nest():
    with fast_launch.recording() as outer:
        with fast_launch.recording() as inner:
            assert not inner.replayable
        assert fast_launch._recording is outer
    assert fast_launch._recording is None


@pytest.mark.parametrize("case", ["cpu", "grad", "list_stride", "three_d", "autocast"])
def test_calls_that_take_the_normal_path_have_no_key(case: str):
    x, w = torch.randn(1, 3, 4, 4), torch.randn(5, 3, 1, 1)
    args = dict(stride=1, padding=0, dilation=1, groups=1, activation=None)
    if case == "cpu":
        assert call_plans.plan_key(x, w, None, None, **args) is None
        return
    if not torch.cuda.is_available():
        pytest.skip("the other cases differ from a planned call only on a GPU")
    x, w = x.cuda(), w.cuda()
    if case == "grad":
        w.requires_grad_(True)
    elif case == "list_stride":
        args["stride"] = [1, 1]
    elif case == "three_d":
        x = x[0]
    if case == "autocast":
        with torch.autocast("cuda"):
            assert call_plans.plan_key(x, w, None, None, **args) is None
        return
    assert call_plans.plan_key(x, w, None, None, **args) is None
    w.requires_grad_(False)
    assert call_plans.plan_key(x.unsqueeze(0) if x.dim() == 3 else x, w, None, None, stride=1, padding=0,
                               dilation=1, groups=1, activation=None) is not None


_GPU_CASES = [
    # (N, C, H, W, K, R, S, stride, padding, groups, dtype, channels_last, bias, residual, activation)
    (2, 32, 12, 12, 48, 3, 3, 1, 1, 1, torch.float16, True, True, True, "relu"),
    (2, 16, 11, 9, 24, 3, 3, 2, 1, 1, torch.float32, False, True, False, None),
    (2, 32, 10, 10, 32, 3, 3, 1, 1, 32, torch.float16, True, True, False, "silu"),  # depthwise
    (2, 64, 8, 8, 64, 3, 3, 1, 1, 16, torch.float16, True, False, False, None),  # grouped: block-diagonal weight
    (2, 3, 16, 16, 16, 7, 7, 2, 3, 1, torch.bfloat16, True, True, False, "relu"),  # few channels
    (2, 64, 7, 7, 128, 1, 1, 1, 0, 1, torch.float16, True, True, True, None),
    (2, 32, 12, 12, 64, 3, 3, 1, 1, 1, torch.float16, False, True, True, "relu"),  # NCHW: staged_nhwc's scratch copy
    (2, 32, 8, 8, 64, 1, 1, 1, 0, 1, torch.float16, False, True, True, None),  # NCHW 1x1: gemm_1x1_nchw
]


@pytest.mark.gpu
@pytest.mark.parametrize("case", _GPU_CASES, ids=lambda c: f"c{c[1]}k{c[4]}r{c[5]}g{c[9]}{str(c[10])[6:]}")
def test_replayed_calls_match_the_reference(case, seed: int):
    """Three calls with fresh inputs each: the first records, the others replay. The
    output block is filled with NaN and freed just before each call, so a launch that
    writes nothing (or the wrong tensor) cannot pass. The weight is changed in place
    between calls, so a stale derived copy cannot pass either."""
    n, c, h, w, k, r, s, stride, padding, groups, dtype, channels_last, has_bias, has_res, act = case
    gen = torch.Generator(device="cuda").manual_seed(seed)
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    weight = torch.randn(k, c // groups, r, s, generator=gen, device="cuda", dtype=dtype) / (c // groups * r * s) ** 0.5
    replays = call_plans.stats()["replays"]
    for call in range(3):
        weight.mul_(-1.0)
        x = torch.randn(n, c, h, w, generator=gen, device="cuda", dtype=dtype).contiguous(memory_format=fmt)
        bias = torch.randn(k, generator=gen, device="cuda", dtype=dtype) if has_bias else None
        ref_shape = tileconv.conv2d_reference(x, weight, None, stride=stride, padding=padding, groups=groups).shape
        residual = (torch.randn(ref_shape, generator=gen, device="cuda", dtype=dtype).contiguous(memory_format=fmt)
                    if has_res else None)
        torch.full(ref_shape, float("nan"), device="cuda", dtype=dtype).contiguous(memory_format=fmt)  # freed at once
        with torch.no_grad():
            out = tileconv.conv2d(x, weight, bias, stride, padding, 1, groups, activation=act, residual=residual)
        ref = tileconv.conv2d_reference(x, weight, bias, stride=stride, padding=padding, groups=groups,
                                        activation=act, residual=residual)
        problem = tileconv.problem_from_arguments(x, weight, bias, stride, padding, 1, groups, act, residual)
        assert out.is_contiguous(memory_format=fmt)
        assert_conv_close(out, ref, tolerance(problem), context=f"call {call}")
    assert call_plans.stats()["replays"] == replays + 2, "the repeated calls were not replayed"


@pytest.mark.gpu
def test_a_misaligned_view_gets_its_own_plan(seed: int):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    base = torch.randn(2 * 24 * 9 * 11 + 1, generator=gen, device="cuda", dtype=torch.float16)
    weight = torch.randn(16, 24, 3, 3, generator=gen, device="cuda", dtype=torch.float16) / 8
    for offset in (0, 1, 0, 1):
        base.normal_(generator=gen)
        x = base[offset:offset + 2 * 24 * 9 * 11].view(2, 24, 9, 11)
        with torch.no_grad():
            out = tileconv.conv2d(x, weight, None, 1, 1)
        ref = tileconv.conv2d_reference(x, weight, None, padding=1)
        problem = tileconv.problem_from_arguments(x, weight, None, 1, 1)
        assert_conv_close(out, ref, tolerance(problem), context=f"input offset {offset} elements")


@pytest.mark.gpu
@pytest.mark.parametrize("algo", ["gemm_1x1", "gemm_1x1_strided", "gemm_1x1_ws", "split_k", "tma_rows", "frame",
                                  "grouped_frame"])
def test_tma_and_split_k_launches_are_replayed(seed: int, monkeypatch, algo: str):
    """gemm_1x1 reads its operands through TMA descriptors, which a replay describes again
    over each call's tensors (strided: 4D views of the input's strided view and of the output,
    in the persistent form and in gemm_1x1_ws's Gluon descriptors); split-K sums partial results
    in a scratch tensor, which a replay allocates afresh (two launches per call). tma_rows
    (persistent) has three descriptors: a 4D view of the input, a 3D view of the derived
    weight, the output. implicit_gemm_frame at stride 2: four descriptors over the input's
    phases, three of them starting inside it. grouped_frame (4-channel groups): a descriptor
    over the merged weight's diagonal blocks, a weight derived from a derived weight, and the
    redo's pointer to a matrix view of the merged weight."""
    from tileconv import dispatch
    from tileconv.kernels import ALGORITHMS, LaunchConfig

    if algo in ("gemm_1x1_ws", "frame", "grouped_frame") and torch.cuda.get_device_capability()[0] != 9:
        pytest.skip(f"{algo} is a Gluon kernel for Hopper (sm_90)")
    monkeypatch.setattr(dispatch, "_selected", {})
    monkeypatch.setattr(call_plans, "_plans", {})
    original = dispatch.select

    r = 3 if algo in ("tma_rows", "frame", "grouped_frame") else 1
    stride = 1 if algo in ("gemm_1x1", "split_k", "tma_rows", "grouped_frame") else 2
    groups, k = (16, 64) if algo == "grouped_frame" else (1, 96)

    def tma(problem, algo_=algo, device=None):
        if algo == "tma_rows" and (problem.r, problem.s) == (3, 3):
            return ALGORITHMS["tma_rows"], LaunchConfig(64, 64, 64, 8, 4, 3, persistent=1)
        if algo == "frame" and (problem.r, problem.s) == (3, 3):
            return ALGORITHMS["implicit_gemm_frame"], LaunchConfig(64, 64, 64, 8, 4, 4)
        if algo == "grouped_frame":
            return ALGORITHMS["grouped_frame"], LaunchConfig(64, 64, 64, 8, 4, 4)
        if (problem.r, problem.s) == (1, 1):
            if algo == "gemm_1x1":
                return ALGORITHMS["gemm_1x1"], LaunchConfig(128, 128, 64, 8, 4, 3)
            if algo == "gemm_1x1_strided":
                return ALGORITHMS["gemm_1x1"], LaunchConfig(64, 64, 64, 8, 4, 3, persistent=1)
            if algo == "gemm_1x1_ws":
                return ALGORITHMS["gemm_1x1_ws"], LaunchConfig(128, 64, 64, 8, 4, 3, pingpong=1)
            return ALGORITHMS["implicit_gemm"], LaunchConfig(64, 64, 32, 8, 4, 3, split_k=4)
        return original(problem, "auto", device)

    monkeypatch.setattr(dispatch, "select", tma)
    gen = torch.Generator(device="cuda").manual_seed(seed)
    weight = torch.randn(k, 64 // groups, r, r, generator=gen, device="cuda", dtype=torch.float16) / (8 * r)
    bias = torch.randn(k, generator=gen, device="cuda", dtype=torch.float16)
    for call in range(3):
        x = torch.randn(4, 64, 20, 20, generator=gen, device="cuda", dtype=torch.float16)
        x = x.contiguous(memory_format=torch.channels_last)
        torch.full((4, k, 20, 20), float("nan"), device="cuda", dtype=torch.float16)
        options = dict(stride=stride, padding=r // 2, groups=groups, activation="relu")
        with torch.no_grad():
            out = tileconv.conv2d(x, weight, bias, **options)
        ref = tileconv.conv2d_reference(x, weight, bias, **options)
        problem = tileconv.problem_from_arguments(x, weight, bias, **options)
        assert_conv_close(out, ref, tolerance(problem), context=f"call {call}")
    assert call_plans.stats()["plans"] == 1 and call_plans.stats()["replays"] >= 2


@pytest.mark.gpu
@pytest.mark.parametrize("channels_last", [True, False], ids=["nhwc", "nchw"])
def test_dense_toeplitz_calls_are_replayed(seed: int, channels_last: bool):
    """dense_toeplitz launches two kernels a call: the zero-bordered copy into scratch (a replay
    allocates it afresh) and the banded GEMM over a weight-derived band (derived again after
    the weight changes in place between calls). Fresh inputs and NaN-filled blocks each call."""
    from tileconv.functional import conv2d_problem

    gen = torch.Generator(device="cuda").manual_seed(seed)
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    weight = torch.randn(6, 6, 6, 6, generator=gen, device="cuda", dtype=torch.float16) / 15
    bias = torch.randn(6, generator=gen, device="cuda", dtype=torch.float16)
    replays = call_plans.stats()["replays"]
    for call in range(3):
        weight.mul_(-1.0)
        x = torch.randn(2, 6, 40, 36, generator=gen, device="cuda", dtype=torch.float16).contiguous(memory_format=fmt)
        torch.full((2, 6, 37, 33), float("nan"), device="cuda", dtype=torch.float16)
        problem = tileconv.problem_from_arguments(x, weight, bias, 1, 1, activation="relu")
        with torch.no_grad():
            out = conv2d_problem(problem, x, weight, bias, None, algo="dense_toeplitz")
        ref = tileconv.conv2d_reference(x, weight, bias, padding=1, activation="relu")
        assert_conv_close(out, ref, tolerance(problem), context=f"call {call}")
    assert call_plans.stats()["replays"] >= replays + 2, "the repeated calls were not replayed"


def test_no_problem_level_plan_inside_a_recorded_call():
    """conv2d records its whole call; the conv2d_problem it runs inside must not record a
    second, nested plan (a nested recording cannot count its launches: it would be refused
    and stay refused for direct calls)."""
    x, w = torch.zeros(1, 3, 4, 4), torch.zeros(5, 3, 1, 1)
    problem = tileconv.problem_from_arguments(x, w)
    with fast_launch.recording():
        assert call_plans.problem_key(problem, x, w, None, None, "auto", None) is None
    assert call_plans.problem_key(problem, x, w, None, None, "auto", None) is None  # a CPU tensor


@pytest.mark.gpu
@pytest.mark.parametrize("route", ["autograd", "forced_algo"])
def test_problem_level_calls_are_replayed(seed: int, route: str):
    """The autograd forward and a forced algorithm go through conv2d_problem, which has plans
    of its own: fresh inputs each call, NaN-filled blocks before each, the reference after."""
    from tileconv.functional import conv2d_problem

    gen = torch.Generator(device="cuda").manual_seed(seed)
    weight = (torch.randn(48, 32, 3, 3, generator=gen, device="cuda", dtype=torch.float16) / 17).requires_grad_(True)
    replays = call_plans.stats()["replays"]
    for call in range(3):
        x = torch.randn(2, 32, 12, 12, generator=gen, device="cuda", dtype=torch.float16)
        x = x.contiguous(memory_format=torch.channels_last)
        torch.full((2, 48, 12, 12), float("nan"), device="cuda", dtype=torch.float16)
        problem = tileconv.problem_from_arguments(x, weight, None, 1, 1, activation="relu")
        if route == "autograd":
            out = tileconv.conv2d(x, weight, None, 1, 1, activation="relu")
            out.float().sum().backward()
        else:
            with torch.no_grad():
                out = conv2d_problem(problem, x, weight.detach(), None, None, algo="direct")
        ref = tileconv.conv2d_reference(x, weight.detach(), None, padding=1, activation="relu")
        assert_conv_close(out.detach(), ref, tolerance(problem), context=f"{route} call {call}")
    assert call_plans.stats()["replays"] >= replays + 2, "the repeated calls were not replayed"


# What a replay repeats besides Triton launches: allocations and views.
_REPLAYED_OPS = {"empty", "empty_strided", "view", "permute", "reshape", "_reshape_alias", "as_strided", "alias",
                 "detach", "t", "expand", "unsqueeze", "squeeze", "slice", "select"}


def _aten_ops(call) -> set[str]:
    """The names of the aten ops ``call()`` runs."""
    from torch.utils._python_dispatch import TorchDispatchMode

    seen = set()

    class Log(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.add(func.overloadpacket.__name__)
            return func(*args, **(kwargs or {}))

    with Log():
        call()
    return seen


@pytest.mark.gpu
@pytest.mark.parametrize("algo, groups, k", [("implicit_gemm", 1, 32), ("gemm_1x1", 1, 32), ("grouped_gemm", 8, 32), ("grouped_halo", 8, 32),
                                             ("depthwise", 32, 32), ("direct", 1, 32), ("split_k", 1, 32),
                                             ("im2row", 1, 32), ("im2row_ws", 1, 32), ("staged_nhwc", 1, 32), ("gemm_1x1_nchw", 1, 32),
                                             ("tma_rows", 1, 32), ("dense_toeplitz", 1, 32), ("depthwise_rows", 32, 32),
                                             ("depthwise_plane", 32, 32), ("depthwise_halo", 32, 32),
                                             ("depthwise_window", 32, 32), ("direct_rows", 1, 8),
                                             ("grouped_frame", 16, 64)])
def test_forward_launchers_do_no_torch_compute_a_replay_would_skip(algo: str, groups: int, k: int, monkeypatch):
    """A replay re-runs allocations, weight derivations and Triton launches only. So once
    the weight's derived copies exist, a forward call may do nothing else in PyTorch: an
    ``out.zero_()`` or a ``copy_`` added to a launcher would be skipped by every replay.
    Every aten op of such a call is logged here; only allocations and views may appear."""
    from tileconv.functional import conv2d_problem
    from tileconv.kernels import LaunchConfig

    if algo == "grouped_frame" and torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("grouped_frame is a Gluon kernel for Hopper (sm_90)")
    r = 1 if algo.startswith("gemm_1x1") else 5 if algo == "depthwise_plane" else 3
    c = 3 if algo in ("im2row", "im2row_ws", "dense_toeplitz", "direct_rows") else 32  # few channels: im2row unrolls 3 x 3 into 16
    c = 64 if algo == "grouped_frame" else c  # 4-channel groups merged into 64 channels, a 64-wide tile
    size = 7 if algo == "depthwise_plane" else 10  # depthwise_plane maps planes of at most 64 pixels
    dtype = torch.float32 if algo == "direct_rows" else torch.float16  # direct_rows is the float32 kernel
    x = torch.randn(2, c, size, size, device="cuda", dtype=dtype)
    if algo not in ("staged_nhwc", "gemm_1x1_nchw"):  # NCHW-input algorithms
        x = x.contiguous(memory_format=torch.channels_last)
    weight = torch.randn(k, c // groups, r, r, device="cuda", dtype=dtype)
    problem = tileconv.problem_from_arguments(x, weight, None, 1, r // 2, 1, groups)
    name = "implicit_gemm" if algo == "split_k" else algo
    config = LaunchConfig(64, 32, 32, 8, 4, 3, split_k=2) if algo == "split_k" else None
    monkeypatch.setattr(call_plans, "_enabled", False)  # the normal path, every time
    conv2d_problem(problem, x, weight, None, None, algo=name, config=config)  # derived weights now cached
    extra = _aten_ops(lambda: conv2d_problem(problem, x, weight, None, None, algo=name, config=config)) - _REPLAYED_OPS
    assert not extra, f"{algo}: PyTorch ops a replay would skip: {sorted(extra)}"


# --------------------------------------------------------------------- backward plans
def test_a_backward_plan_allocates_both_gradients_and_derives_from_its_weight_slot(fake_stream):
    """A backward call (upstream gradient, input, weight) -> (grad_input, grad_weight): the
    weight is the third tensor, an output not computed stays None."""
    log = []
    grad, x, w = torch.zeros(1, 5, 4, 4), torch.zeros(1, 3, 4, 4), torch.randn(5, 3, 3, 3)
    derived = weights.channel_minor_weight(w)
    gi, gw = torch.zeros(1, 3, 4, 4), torch.zeros(5, 3, 3, 3)
    record = _record((_FakeCompiled(log), (1, 1, 1), [grad, derived, gi]), (_FakeCompiled(log), (2, 1, 1), [grad, x, gw]))
    plan = call_plans.CallPlan(record, [grad, x, w], (gi, gw), weight_slot=2)
    grad2, x2 = torch.ones_like(grad), torch.ones_like(x)
    w.add_(1.0)
    gi2, gw2 = plan(grad2, x2, w)
    assert gi2.shape == gi.shape and gw2.shape == gw.shape and gi2 is not gi and gw2 is not gw
    first, second = log
    assert first[13:] == (grad2.data_ptr(), weights.channel_minor_weight(w).data_ptr(), gi2.data_ptr())
    assert second[13:] == (grad2.data_ptr(), x2.data_ptr(), gw2.data_ptr())
    fresh = weights.channel_minor_weight(w)
    only_input = call_plans.CallPlan(_record((_FakeCompiled(log), (1, 1, 1), [grad, fresh, gi])),
                                     [grad, x, w], (gi, None), weight_slot=2)
    assert only_input(grad2, x2, w)[1] is None


def test_a_descriptor_over_a_derived_weight_is_derived_again_by_address(fake_stream):
    """dgrad of a 1x1 convolution runs gemm_1x1 over the transposed weight: its B descriptor
    views a derived copy, found by address."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    log = []
    grad = torch.zeros(2, 32, 4, 4).contiguous(memory_format=torch.channels_last)
    x, w = torch.zeros(2, 16, 4, 4), torch.randn(32, 16, 1, 1)
    derived = weights.dgrad_weight(w, 1)  # (16, 32, 1, 1)
    gi = torch.zeros(2, 16, 4, 4).contiguous(memory_format=torch.channels_last)
    b_desc = TensorDescriptor.from_tensor(derived.reshape(16, 32), [16, 16])
    plan = call_plans.CallPlan(_record((_FakeCompiled(log), (1, 1, 1), [b_desc, gi])), [grad, x, w], (gi, None),
                               weight_slot=2)
    w.mul_(2.0)
    gi2, _ = plan(grad, x, w)
    b2, out = log[0][13:]
    assert b2.base.data_ptr() == weights.dgrad_weight(w, 1).data_ptr() != derived.data_ptr()
    assert out == gi2.data_ptr()


_GPU_BACKWARD_CASES = [
    # (N, C, H, W, K, R, S, stride, padding, groups): dgrad as a forward (3x3, 1x1), the
    # phase kernel (strided), depthwise (forward-route dgrad, depthwise wgrad with its split sum),
    # a strided 1x1's dgrad as a forward onto every other pixel of a zeroed gradient
    (2, 32, 12, 12, 48, 3, 3, 1, 1, 1),
    (4, 64, 10, 10, 64, 1, 1, 1, 0, 1),
    (2, 16, 11, 9, 24, 3, 3, 2, 1, 1),
    (2, 32, 10, 10, 32, 3, 3, 1, 1, 32),
    (2, 64, 12, 11, 32, 1, 1, 2, 0, 1),
]


@pytest.mark.gpu
@pytest.mark.parametrize("case", _GPU_BACKWARD_CASES, ids=lambda c: f"c{c[1]}k{c[4]}r{c[5]}u{c[7]}g{c[9]}")
def test_replayed_backward_calls_match_the_reference(case, seed: int):
    """Three backward calls with fresh inputs and a changed weight each: the first records,
    the others replay (both gradients); NaN-filled blocks freed before each call."""
    from tileconv.functional import conv2d_backward_problem
    from tileconv.kernels.backward import aten_convolution_backward

    n, c, h, w, k, r, s, stride, padding, groups = case
    gen = torch.Generator(device="cuda").manual_seed(seed)
    weight = torch.randn(k, c // groups, r, s, generator=gen, device="cuda", dtype=torch.float16) / 8
    replays = call_plans.stats()["replays"]
    for call in range(3):
        weight.mul_(-1.0)
        x = torch.randn(n, c, h, w, generator=gen, device="cuda", dtype=torch.float16)
        x = x.contiguous(memory_format=torch.channels_last)
        problem = tileconv.problem_from_arguments(x, weight, None, stride, padding, 1, groups)
        grad = torch.randn(problem.output_shape, generator=gen, device="cuda", dtype=torch.float16)
        grad = grad.contiguous(memory_format=torch.channels_last)
        torch.full(problem.input_shape, float("nan"), device="cuda", dtype=torch.float16)
        torch.full(problem.weight_shape, float("nan"), device="cuda", dtype=torch.float16)
        got_x, got_w = conv2d_backward_problem(problem, grad, x, weight)
        ref_x, ref_w = aten_convolution_backward(problem, grad.double(), x.double(), weight.double(), True, True)
        assert_conv_close(got_x, ref_x, tolerance(problem, k // groups * r * s), context=f"dgrad, call {call}")
        assert_conv_close(got_w, ref_w, tolerance(problem, problem.gemm_m), context=f"wgrad, call {call}")
    assert call_plans.stats()["replays"] >= replays + 2, "the repeated backward calls were not replayed"


@pytest.mark.gpu
@pytest.mark.parametrize("case", _GPU_BACKWARD_CASES, ids=lambda c: f"c{c[1]}k{c[4]}r{c[5]}u{c[7]}g{c[9]}")
def test_backward_launchers_do_no_torch_compute_a_replay_would_skip(case, monkeypatch):
    """As for the forward: once the weight's derived copies exist, a backward call may do
    nothing in PyTorch but allocate and view (a replay repeats only launches)."""
    from tileconv.functional import conv2d_backward_problem

    n, c, h, w, k, r, s, stride, padding, groups = case
    x = torch.randn(n, c, h, w, device="cuda", dtype=torch.float16).contiguous(memory_format=torch.channels_last)
    weight = torch.randn(k, c // groups, r, s, device="cuda", dtype=torch.float16)
    problem = tileconv.problem_from_arguments(x, weight, None, stride, padding, 1, groups)
    grad = torch.randn(problem.output_shape, device="cuda", dtype=torch.float16)
    grad = grad.contiguous(memory_format=torch.channels_last)
    monkeypatch.setattr(call_plans, "_enabled", False)  # the normal path, every time
    conv2d_backward_problem(problem, grad, x, weight)  # derived weights now cached
    extra = _aten_ops(lambda: conv2d_backward_problem(problem, grad, x, weight)) - _REPLAYED_OPS
    assert not extra, f"{case}: PyTorch ops a replay would skip: {sorted(extra)}"


def test_a_copy_derived_from_a_derived_copy_is_derived_again_from_the_weight():
    """A depthwise dgrad runs the depthwise forward (channel-minor weight) over the
    transposed weight: the launch reads a copy two derivations away from the call's weight."""
    w = torch.randn(8, 1, 3, 3)
    twice = weights.channel_minor_weight(weights.dgrad_weight(w, 8))
    again = weights.derivation(w, twice)
    assert again is not None and again(w) is twice  # unchanged weight: the kept copies
    w.mul_(-1.0)
    fresh = again(w)
    assert fresh is not twice and torch.equal(fresh, weights.channel_minor_weight(weights.dgrad_weight(w, 8)))
    assert torch.equal(fresh, w.flip((2, 3)))  # depthwise: transposing (1 x 1 per group) leaves the flip
