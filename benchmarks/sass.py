"""Compile tileconv's forward and backward kernels for Hopper (sm_90) without a GPU and count what the
machine code does: are the tensor-core instructions (HGMMA = wgmma) there, are the loads
asynchronous (LDGSTS = cp.async, UTMALDG = TMA) and the stores 16 bytes wide?

    python benchmarks/sass.py            # a table, one row per algorithm
    python benchmarks/sass.py --json     # the same as JSON (tests/test_sass.py reads it)

Each algorithm's own launcher runs on CPU tensors of a representative fp16 NHWC problem;
the kernel launch is intercepted and its arguments are specialised the way Triton's JIT
would on a GPU (pointers and multiples of 16 marked divisible by 16, ones made constant,
``do_not_specialize`` respected), then compiled for GPUTarget("cuda", 90, 32) with the
ptxas that ships in Triton's wheel and disassembled with its cuobjdump. Needs no GPU and
must run without TRITON_INTERPRET (interpreted kernels have no compiler front end).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402
import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402
from triton.experimental.gluon._runtime import GluonASTSource  # noqa: E402
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor as GluonTensorDescriptor  # noqa: E402
from triton.tools.tensor_descriptor import TensorDescriptor  # noqa: E402

import tileconv.kernels.launch as launch  # noqa: E402
from tileconv.bench.suites import get_suite  # noqa: E402
from tileconv.dispatch.heuristics import default_config  # noqa: E402
from tileconv.kernels import BackwardConfig, LaunchConfig  # noqa: E402
from tileconv.testing import random_inputs  # noqa: E402

TARGET = GPUTarget("cuda", 90, 32)
TYPES = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32", torch.int32: "i32"}
OPS = ("HGMMA", "HMMA", "UTMALDG", "UTMASTG", "LDGSTS", "LDG", "STG", "FFMA", "HFMA2", "PREEXIT", "ACQBULK")
# (PREEXIT: griddepcontrol.launch_dependents; ACQBULK: griddepcontrol.wait -- programmatic dependent launch)
KERNELS = ("conv2d_implicit_gemm_kernel", "conv1x1_tma_kernel", "conv1x1_tma_persistent_kernel", "conv2d_tma_rows_kernel", "conv2d_tma_rows_persistent_kernel", "conv2d_implicit_gemm_ws_kernel", "conv1x1_ws_kernel", "conv2d_frame_kernel", "conv2d_direct_kernel", "conv2d_direct_rows_kernel", "conv2d_depthwise_kernel",
           "conv2d_depthwise_rows_kernel", "conv2d_depthwise_toeplitz_kernel", "unroll_columns_kernel", "to_channels_last_kernel", "to_padded_planes_kernel", "conv1x1_nchw_kernel",
           "conv2d_dense_toeplitz_kernel", "to_padded_rows_kernel", "conv2d_depthwise_plane_kernel",
           "conv2d_depthwise_halo_kernel", "conv2d_depthwise_window_kernel", "conv2d_grouped_halo_kernel")


class _Recorder:
    """Stands in for a kernel in launch.py: records one launch instead of running it."""

    def __init__(self, kernel):
        self.kernel, self.calls = kernel, []

    def __getitem__(self, grid):
        def call(*args, **kwargs):
            self.calls.append((args, kwargs))
        return call


def _specialise(kernel, args, kwargs):
    names = kernel.arg_names
    options = {k: kwargs.pop(k) for k in ("num_warps", "num_stages", "maxnreg") if k in kwargs}
    values = dict(zip(names[: len(args)], args, strict=True))
    values.update(kwargs)
    skip = {names[i] if isinstance(i, int) else i for i in (kernel.do_not_specialize or ())}
    signature, constexprs, attrs = {}, {}, {}
    for index, name in enumerate(names):
        if name not in values:  # a constexpr with a default
            continue
        value = values[name]
        if name in kwargs and not isinstance(value, (torch.Tensor, TensorDescriptor)):
            signature[name], constexprs[(index,)] = "constexpr", value
        elif isinstance(value, GluonTensorDescriptor):  # its shared-memory layout is part of the type
            signature[name] = f"tensordesc<{TYPES[value.base.dtype]}{list(value.block_shape)},{value.layout!r}>"
        elif isinstance(value, TensorDescriptor):
            signature[name] = f"tensordesc<{TYPES[value.base.dtype]}{list(value.block_shape)}>"
        elif isinstance(value, torch.Tensor):
            signature[name] = "*" + TYPES[value.dtype]
            attrs[(index,)] = [["tt.divisibility", 16]]
        elif isinstance(value, float):
            signature[name] = "fp32"
        elif isinstance(value, bool):
            signature[name], constexprs[(index,)] = "constexpr", value
        elif value is None:  # an argument left out (a descriptor a variant does without): a constant
            signature[name], constexprs[(index,)] = "constexpr", None
        elif name in skip:
            signature[name] = "i32"
        elif value == 1:
            signature[name], constexprs[(index,)] = "constexpr", 1
        else:
            signature[name] = "i32" if abs(value) < 2**31 else "i64"
            if value % 16 == 0:
                attrs[(index,)] = [["tt.divisibility", 16]]
    source = GluonASTSource if kernel.is_gluon() else ASTSource
    return source(fn=kernel, signature=signature, constexprs=constexprs, attrs=attrs), options


def disassemble(cubin: bytes) -> str:
    """``cubin``'s SASS, by the cuobjdump that ships in Triton's wheel."""
    tools = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin")
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        return subprocess.run([os.path.join(tools, "cuobjdump"), "-sass", f.name],
                              capture_output=True, text=True, check=True).stdout


def _sass_counts(cubin: bytes) -> dict[str, int]:
    sass = disassemble(cubin)
    counts = dict.fromkeys(OPS, 0)
    for match in re.finditer(r"\b(" + "|".join(OPS) + r")(?=[ .])", sass):
        counts[match.group(1)] += 1
    counts["STG.128"] = len(re.findall(r"\bSTG\.E\.128\b", sass))
    counts["LDG.128"] = len(re.findall(r"\bLDG\.E\.128\b", sass))
    counts["LDGSTS.128"] = len(re.findall(r"\bLDGSTS\.E(?:\.BYPASS)?(?:\.LTC128B)?\.128\b", sass))
    return counts


def record_launches(problem, algorithm: str, config: LaunchConfig) -> dict[str, _Recorder]:
    """Run ``algorithm``'s launcher (``launch.launch_<algorithm>``) on CPU tensors of ``problem``
    with every kernel of launch.py replaced by a recorder: the kernels it launched, by name,
    each with its calls' arguments."""
    inputs = random_inputs(problem, "cpu", seed=0)
    out = torch.empty(problem.output_shape, dtype=problem.dtype)
    if problem.layout == "nhwc":
        out = out.contiguous(memory_format=torch.channels_last)
    recorders = {name: _Recorder(getattr(launch, name)) for name in KERNELS}
    saved = {name: getattr(launch, name) for name in KERNELS}
    try:
        for name, recorder in recorders.items():
            setattr(launch, name, recorder)
        getattr(launch, f"launch_{algorithm}")(problem, inputs.x, inputs.weight, inputs.bias, None, out, config)
    finally:
        for name, kernel in saved.items():
            setattr(launch, name, kernel)
    return {n: r for n, r in recorders.items() if r.calls}


def inspect(algorithm: str, case_name: str, int64: bool = False, which: str | None = None,
            config: LaunchConfig | None = None) -> dict:
    """Compile ``algorithm``'s kernel for ``case_name`` (a bench case) and count its SASS.
    ``int64``: compile the kernel's int64-index variant (which the small CPU tensors used
    here would not select), so that it is at least known to compile. ``which``: which of
    the algorithm's launches to compile where it makes more than one (im2row's and
    staged_nhwc's copy and GEMM). ``config``: a launch config instead of the heuristics'
    (tma_rows's one-tile-a-program form). staged_nhwc and gemm_1x1_nchw run on the problem's NCHW form,
    direct_rows on its float32 form."""
    case = next(c for suite in ("seed", "resnet50", "depthwise", "grouped", "vae") for c in get_suite(suite)
                if c.name == case_name)
    layout = "nchw" if algorithm in ("staged_nhwc", "gemm_1x1_nchw") else "nhwc"
    dtype = torch.float32 if algorithm == "direct_rows" else torch.float16  # direct_rows is the float32 kernel
    problem = case.problem(dtype, layout, "bias_relu", batch=2)
    config = config or default_config(problem, algorithm)
    return {"algorithm": algorithm, "case": case_name, "int64": int64, "config": str(config),
            **inspect_problem(problem, algorithm, config, int64, which)}


def inspect_problem(problem, algorithm: str, config: LaunchConfig, int64: bool = False,
                    which: str | None = None, with_sass: bool = False) -> dict:
    """The compile under :func:`inspect`, for any ``problem``: ``algorithm``'s launch (``which``
    of them where it makes several) compiled for sm_90 with ``config``; its kernel's name,
    shared memory and SASS counts (``with_sass``: and the SASS itself, under "sass")."""
    launched = record_launches(problem, algorithm, config)
    if which is None:
        (kernel_name, recorder), = launched.items()
    else:
        kernel_name, recorder = which, launched[which]
    args, kwargs = recorder.calls[0]
    if int64:
        kwargs["INT64"] = True
    source, options = _specialise(recorder.kernel, args, dict(kwargs))
    compiled = triton.compile(source, target=TARGET, options=options)
    result = {"kernel": kernel_name, "shared_bytes": compiled.metadata.shared, **_sass_counts(compiled.asm["cubin"])}
    if with_sass:
        result["sass"] = disassemble(compiled.asm["cubin"])
    return result


def inspect_backward(gradient: str, case_name: str, int64: bool = False, algorithm: str | None = None,
                     dtype: torch.dtype = torch.float16, hopper: bool = False,
                     config: BackwardConfig | None = None, programmatic: bool = False,
                     which: str | None = None) -> dict:
    """As :func:`inspect` for the backward kernels (``gradient`` 'dgrad' or 'wgrad'; the
    depthwise kernels for a depthwise case unless ``algorithm`` says otherwise). The
    interpreter runs them in the tests; only a compile for the GPU finds type errors that
    the interpreter accepts, and compiler failures (an fp32 depthwise dgrad on the
    tensor-core kernel once failed to compile: K/g = 1 specialised to a constant).
    ``hopper``: the heuristics and launchers answer as on an sm_90 GPU (the warp-specialized
    wgrad, kernels/wgrad_ws.py, runs only there). ``config``: a config instead of the heuristics'.
    ``programmatic``: the launchers answer as with programmatic dependent launch on
    (:func:`tileconv._runtime.programmatic_launch`). ``which``: the kernel compiled (default:
    the gradient's own, conv2d_<gradient>_...; the split sums are wgrad_finish_*)."""
    import tileconv.kernels.dgrad as dgrad
    import tileconv.kernels.wgrad as wgrad
    import tileconv.kernels.wgrad_columns as wgrad_columns
    import tileconv.kernels.wgrad_halo as wgrad_halo
    import tileconv.kernels.wgrad_toeplitz as wgrad_toeplitz
    import tileconv.kernels.wgrad_ws as wgrad_ws
    from tileconv.dispatch.heuristics import choose_backward_algorithm, default_backward_config
    from tileconv.kernels import get_backward_algorithm

    if hopper:
        saved_hopper, launch._is_hopper = launch._is_hopper, lambda: True
        try:
            return inspect_backward(gradient, case_name, int64, algorithm, dtype, config=config,
                                    programmatic=programmatic, which=which)
        finally:
            launch._is_hopper = saved_hopper
    modules = (dgrad, wgrad, wgrad_columns, wgrad_halo, wgrad_toeplitz, wgrad_ws, launch)  # (launch: the plane copies)
    if programmatic:  # (CPU tensors: programmatic_launch would say no)
        owners = [m for m in modules if hasattr(m, "programmatic_launch")]
        originals = [m.programmatic_launch for m in owners]
        for module in owners:
            module.programmatic_launch = lambda device: True
        try:
            row = inspect_backward(gradient, case_name, int64, algorithm, dtype, config=config, which=which)
        finally:
            for module, original in zip(owners, originals, strict=True):
                module.programmatic_launch = original
        return {**row, "programmatic": True}

    case = next(c for suite in ("resnet50", "depthwise") for c in get_suite(suite) if c.name == case_name)
    problem = case.problem(dtype, "nhwc", "none", batch=2)
    algorithm = algorithm or choose_backward_algorithm(problem)
    config = config or default_backward_config(problem, algorithm, gradient)
    inputs = random_inputs(problem, "cpu", seed=0)
    grad = torch.randn(problem.output_shape, dtype=problem.dtype).contiguous(memory_format=torch.channels_last)
    # Every kernel the backward modules launch is recorded, not run (the split sums, the plane
    # copies); the gradient's own kernel, conv2d_<gradient>_..., is compiled.
    saved = [(m, name, getattr(m, name)) for m in modules for name in dir(m) if name.endswith("_kernel")]
    recorders = {}
    try:
        for module, name, kernel in saved:
            recorders.setdefault(name, _Recorder(kernel))
            setattr(module, name, recorders[name])
        pair = get_backward_algorithm(algorithm)
        if gradient == "dgrad":
            grad_input = torch.empty(problem.input_shape, dtype=problem.dtype).contiguous(
                memory_format=torch.channels_last)
            pair.dgrad(problem, grad, inputs.weight, grad_input, config)
        else:
            pair.wgrad(problem, grad, inputs.x, torch.empty(problem.weight_shape, dtype=problem.dtype), config)
    finally:
        for module, name, kernel in saved:
            setattr(module, name, kernel)
    (kernel_name, recorder), = [(name, r) for name, r in recorders.items()
                                if (name == which if which else name.startswith(f"conv2d_{gradient}")) and r.calls]
    args, kwargs = recorder.calls[0]
    source, options = _specialise(recorder.kernel, args, dict(kwargs, INT64=int64))
    compiled = triton.compile(source, target=TARGET, options=options)
    return {"algorithm": gradient, "case": case_name, "int64": int64, "kernel": kernel_name, "config": str(config),
            "dtype": TYPES[dtype], "programmatic": False, "shared_bytes": compiled.metadata.shared, **_sass_counts(compiled.asm["cubin"])}


def inspect_ladder(algorithm: str, case_name: str) -> dict:
    """As :func:`inspect` for a step of the seed's ladder (:mod:`tileconv.kernels.ladder`,
    launched without the launch cache), in strict fp32 NCHW as the ladder chart runs it:
    the CUDA-core steps must stay on FFMA (Triton once turned step 2 into a TF32 dot)."""
    import tileconv.kernels.ladder as ladder

    case = next(c for c in get_suite("seed") if c.name == case_name)
    problem = case.problem(torch.float32, "nchw", "none", batch=2)
    config = ladder.ladder_config(problem, algorithm)
    inputs = random_inputs(problem, "cpu", seed=0)
    out = torch.empty(problem.output_shape, dtype=problem.dtype)
    name = {"ladder2_tiled": "conv2d_ladder2_tiled_kernel"}[algorithm]
    kernel = getattr(ladder, name)
    recorder = _Recorder(kernel)
    try:
        setattr(ladder, name, recorder)
        getattr(ladder, f"launch_{algorithm}")(problem, inputs.x, inputs.weight, None, None, out, config)
    finally:
        setattr(ladder, name, kernel)
    args, kwargs = recorder.calls[0]
    source, options = _specialise(kernel, args, dict(kwargs))
    compiled = triton.compile(source, target=TARGET, options=options)
    return {"algorithm": algorithm, "case": case_name, "int64": False, "kernel": name, "config": str(config),
            "shared_bytes": compiled.metadata.shared, **_sass_counts(compiled.asm["cubin"])}


CASES = [
    ("implicit_gemm", "seed000"),
    ("implicit_gemm", "r50 c64 hw56 k64 1x1/1"),
    ("gemm_1x1", "r50 c64 hw56 k64 1x1/1"),
    ("direct", "mbv2 dw3x3 c32 hw112/1"),
    ("depthwise", "mbv2 dw3x3 c192 hw28/1"),
    ("depthwise_rows", "mbv2 dw3x3 c192 hw28/1"),
    ("depthwise_halo", "mbv2 dw3x3 c192 hw28/1"),  # Gluon: the halo by cp.async, taps from shared memory
    ("depthwise_halo", "mbv2 dw3x3 c96 hw112/2"),  # stride 2
    ("depthwise_halo", "convnext dw7x7 c96 hw56"),
    ("depthwise_window", "convnext dw7x7 c96 hw56"),  # input rows streamed through registers
    ("depthwise_toeplitz", "replknet dw31x31 c128 hw56"),
    ("grouped_gemm", "resnext g32 c128 hw56/1"),
    ("grouped_halo", "resnext g32 c128 hw56/1"),  # Gluon: staged frame rows by cp.async, taps by mma.sync
    ("grouped_halo", "resnext g32 c256 hw56/2"),  # stride 2: four phase frames staged
    ("grouped_halo", "resnext g32 c1024 hw7/1"),  # 32-channel groups: the weight read through its swizzled layout
    ("grouped_gemm_ws", "resnext g32 c512 hw28/2"),  # Gluon: merged groups on the ws kernel, the redo compiled in
    ("grouped_gemm_ws", "resnext g32 c1024 hw14/2"),  # two programs an SM
    ("grouped_frame", "resnext g32 c128 hw56/1"),  # Gluon: merged groups' TMA frames on the frame kernel, the redo
    ("grouped_frame", "resnext g32 c256 hw56/2"),  # stride 2: four phase frames a stage
    ("im2row", "r50 stem 7x7/2"),
    ("im2row_ws", "r50 stem 7x7/2"),  # Gluon: the same copy, then implicit_gemm_ws holding its weight
    ("staged_nhwc", "r50 c64 hw56 k64 3x3/1"),
    ("gemm_1x1_nchw", "r50 c64 hw56 k64 1x1/1"),
    ("tma_rows", "vae c512 hw128 k512"),
    ("implicit_gemm_ws", "seed000"),  # Gluon: warp-specialized, cp.async + TMA into an mbarrier ring
    ("implicit_gemm_ws", "r50 c256 hw56 k512 1x1/2"),
    ("implicit_gemm_frame", "r50 c64 hw56 k64 3x3/1"),  # Gluon: TMA frames, every tap a view read by wgmma
    ("implicit_gemm_frame", "r50 c256 hw14 k256 3x3/1"),
    ("gemm_1x1", "r50 c256 hw56 k512 1x1/2"),  # strided: 4D boxes of the strided view
    ("gemm_1x1_ws", "r50 c64 hw56 k64 1x1/1"),  # Gluon: a one-warp TMA loader, the ws MMA partition
    ("gemm_1x1_ws", "r50 c256 hw56 k512 1x1/2"),
    ("dense_toeplitz", "seed003"),
    ("direct_rows", "seed003"),
    ("depthwise_plane", "replknet dw13x13 c1024 hw7"),  # several channels a program: batched mma.sync
]
# The int64-index variants only run on tensors of 2**31 elements (GPU tests); compiling
# them here catches type errors in those branches on every CI run.
INT64_CASES = [
    ("implicit_gemm", "r50 c64 hw56 k64 3x3/1"),
    ("tma_rows", "vae c512 hw128 k512"),
    ("implicit_gemm_ws", "seed000"),
    ("gemm_1x1", "r50 c256 hw56 k512 1x1/2"),
    ("gemm_1x1_ws", "r50 c256 hw56 k512 1x1/2"),
    ("grouped_gemm", "resnext g32 c128 hw56/1"),
    ("grouped_halo", "resnext g32 c256 hw56/2"),
    ("grouped_gemm_ws", "resnext g32 c512 hw28/2"),
    ("direct", "mbv2 dw3x3 c32 hw112/1"),
    ("depthwise", "mbv2 dw3x3 c192 hw28/1"),
    ("depthwise_rows", "mbv2 dw3x3 c192 hw28/1"),
    ("depthwise_halo", "convnext dw7x7 c96 hw56"),
    ("depthwise_window", "convnext dw7x7 c96 hw56"),
    ("depthwise_toeplitz", "replknet dw31x31 c128 hw56"),
    ("dense_toeplitz", "seed003"),
    ("direct_rows", "seed003"),
    ("depthwise_plane", "replknet dw13x13 c1024 hw7"),
]
# The backward kernels, dense and depthwise, compiled in both index widths.
BACKWARD_CASES = [
    ("dgrad", "r50 c64 hw56 k64 3x3/1"),
    ("wgrad", "r50 c64 hw56 k64 3x3/1"),
    ("dgrad", "mbv2 dw3x3 c32 hw112/1"),
    ("wgrad", "mbv2 dw3x3 c32 hw112/1"),
    ("wgrad", "convnext dw7x7 c96 hw56"),  # the depthwise wgrad's row tiles (filters wider than 3)
]
TMA_ROWS_ONE_TILE = LaunchConfig(128, 128, 64, 8, 4, 4)  # one tile a program (tma_rows, gemm_1x1)
WGRAD_WS_SLICES = (BackwardConfig(192, 128, 64, 0, 4, 4, ws=1), BackwardConfig(192, 128, 64, 0, 4, 4, ws=2))
WGRAD_WS_1X1 = BackwardConfig(64, 128, 64, 0, 4, 8, ws=2)  # the input by TMA (kernels.config.WS_TMA)
PLANE_ONE_CHANNEL = LaunchConfig(32, 1, num_warps=4, num_stages=1)  # depthwise_plane's 2D form (mma.sync at 32 images)
# Forced onto the tensor-core kernels in fp32 (TF32 wgmma): a depthwise problem; the halo
# wgrad (Gluon, a GPU's default for these; the CPU's dispatch cannot pick it) in both index
# widths: a 3x3 at 2 channels a thread, a stride-2 3x3, a 7x7.
FORCED_BACKWARD_CASES = [
    ("dgrad", "mbv2 dw3x3 c32 hw112/1", "implicit_gemm", torch.float32, False),
    ("wgrad", "mbv2 dw3x3 c32 hw112/1", "implicit_gemm", torch.float32, False),
    *[(("wgrad", case, "depthwise_halo", torch.float16, int64))
      for case in ("mbv2 dw3x3 c192 hw28/1", "mbv2 dw3x3 c96 hw112/2", "convnext dw7x7 c96 hw56",
                   "replknet dw13x13 c1024 hw7")  # (a filter row a program)
      for int64 in (False, True)],
    # The Toeplitz wgrad (tensor cores), a 31x31 and a 13x13 (16x16 tiles), and in strict fp32 (3xTF32).
    *[("wgrad", case, "depthwise_toeplitz", dtype, int64)
      for case, dtype in (("replknet dw31x31 c128 hw56", torch.float16), ("replknet dw13x13 c1024 hw7", torch.float16),
                          ("replknet dw31x31 c128 hw56", torch.float32))
      for int64 in (False, True)],
]


def main() -> int:
    if os.environ.get("TRITON_INTERPRET") == "1":
        print("benchmarks/sass.py compiles real kernels: run it without TRITON_INTERPRET=1", file=sys.stderr)
        return 2
    # A copy, then the kernel of interest: im2row's and staged_nhwc's GEMM, the banded kernel.
    main_kernel = {"im2row": "conv2d_implicit_gemm_kernel", "staged_nhwc": "conv2d_implicit_gemm_kernel",
                   "im2row_ws": "conv2d_implicit_gemm_ws_kernel",
                   "depthwise_toeplitz": "conv2d_depthwise_toeplitz_kernel",
                   "dense_toeplitz": "conv2d_dense_toeplitz_kernel"}
    rows = [inspect(algorithm, case, which=main_kernel.get(algorithm)) for algorithm, case in CASES]
    rows += [inspect("im2row", "r50 stem 7x7/2", int64, which="unroll_columns_kernel") for int64 in (False, True)]
    rows += [inspect("staged_nhwc", "r50 c64 hw56 k64 3x3/1", int64, which="to_channels_last_kernel")
             for int64 in (False, True)]
    rows += [inspect("depthwise_toeplitz", "replknet dw31x31 c128 hw56", int64, which="to_padded_planes_kernel")
             for int64 in (False, True)]
    rows += [inspect("dense_toeplitz", "r50 stem 7x7/2", int64, which="to_padded_rows_kernel") for int64 in (False, True)]
    rows += [inspect(algorithm, case, int64=True, which=main_kernel.get(algorithm)) for algorithm, case in INT64_CASES]
    # tma_rows's and gemm_1x1's heuristics pick their persistent forms (TMA stores); the
    # one-tile forms store by pointer.
    rows += [inspect("tma_rows", "vae c512 hw128 k512", int64, config=TMA_ROWS_ONE_TILE) for int64 in (False, True)]
    rows.append(inspect("gemm_1x1", "r50 c64 hw56 k64 1x1/1", config=TMA_ROWS_ONE_TILE))  # gemm_1x1's one-tile form
    rows += [inspect("depthwise_plane", "replknet dw13x13 c1024 hw7", int64, config=PLANE_ONE_CHANNEL)
             for int64 in (False, True)]
    rows.append(inspect_ladder("ladder2_tiled", "seed001 c64 hw64 k128"))
    rows += [inspect_backward(gradient, case, int64) for gradient, case in BACKWARD_CASES for int64 in (False, True)]
    rows += [inspect_backward(gradient, case, int64, algorithm, dtype)
             for gradient, case, algorithm, dtype, int64 in FORCED_BACKWARD_CASES]
    # The warp-specialized wgrad, both of the heuristics' tiles (128x128; 256x128 on two warpgroups).
    rows += [inspect_backward("wgrad", case, int64, "implicit_gemm", dtype, hopper=True)
             for case, dtype in (("r50 c256 hw14 k256 3x3/1", torch.float16), ("r50 c512 hw7 k512 3x3/1", torch.bfloat16))
             for int64 in (False, True)]
    # Its 1x1 stride-1 form: the input by TMA too (a one-warp loader).
    rows += [inspect_backward("wgrad", "r50 c1024 hw14 k512 1x1/1", int64, "implicit_gemm", hopper=True,
                              config=WGRAD_WS_1X1) for int64 in (False, True)]
    # Its 192-channel tiles (three MMA warpgroups), the input gathered and by TMA.
    rows += [inspect_backward("wgrad", "r50 c512 hw7 k512 3x3/1", False, "implicit_gemm", hopper=True, config=config)
             for config in WGRAD_WS_SLICES]
    # Programmatic dependent launch: the ws wgrad and the Triton one signal the split sums, which wait.
    rows += [inspect_backward("wgrad", "r50 c256 hw14 k256 3x3/1", False, algorithm, hopper=hopper, programmatic=True,
                              which=which)
             for algorithm, hopper, which in (("implicit_gemm", True, None), ("implicit_gemm", False, None),
                                              ("implicit_gemm", True, "wgrad_finish_taps_kernel"))]
    if "--json" in sys.argv:
        print(json.dumps(rows))
        return 0
    header = ["algorithm", "case", "int64", "kernel", "shared_bytes", *OPS, "LDG.128", "STG.128", "LDGSTS.128"]
    print(" | ".join(header))
    for row in rows:
        print(" | ".join(str(row[h]) for h in header))
    return 0


if __name__ == "__main__":
    sys.exit(main())
