"""The fast paths compile to the Hopper instructions they are meant to use.

``benchmarks/sass.py`` compiles each forward kernel for sm_90 with the ptxas in Triton's
wheel (no GPU needed) and counts SASS instructions; this test pins what matters: wgmma
(HGMMA) and asynchronous copies (LDGSTS, or TMA's UTMALDG) in the tensor-core kernels,
16-byte output stores in NHWC, and CUDA-core FMAs, not tensor cores, in the direct ones.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

from tileconv.dispatch.candidates import H100_SHARED_MEMORY

REPO = Path(__file__).resolve().parents[1]


def test_fast_paths_use_hopper_instructions():
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    child = subprocess.run([sys.executable, str(REPO / "benchmarks" / "sass.py"), "--json"],
                           capture_output=True, text=True, env=env, timeout=300, cwd=REPO)
    assert child.returncode == 0, child.stderr[-3000:]
    rows = json.loads(child.stdout.strip().splitlines()[-1])
    assert any(row["int64"] for row in rows)  # the int64-index variants compiled too
    for row in rows:
        algorithm = row["algorithm"]
        where = f"{algorithm} on {row['case']}: {row}"
        # Every compile fits a Hopper SM's shared memory (a refactor of the shared epilogue once
        # grew tma_rows's persistent 128x256 tile from 213.5 KB to 240 KB: it would not launch).
        assert row["shared_bytes"] <= H100_SHARED_MEMORY, "more shared memory than an H100/H200 block has: " + where
        if algorithm == "im2row" and row["kernel"] == "unroll_columns_kernel":  # the copy: wide stores
            assert row["STG.128"] > 0 and row["HGMMA"] == 0, where
            continue
        if algorithm == "staged_nhwc" and row["kernel"] == "to_channels_last_kernel":  # wide both ways
            assert row["LDG.128"] > 0 and row["STG.128"] > 0 and row["LDG.128"] == row["LDG"], where
            continue
        if algorithm in ("implicit_gemm", "gemm_1x1", "tma_rows", "grouped_gemm", "im2row", "staged_nhwc",
                         "gemm_1x1_nchw"):
            assert row["HGMMA"] > 0 and row["HMMA"] == 0, "no wgmma: " + where
        # NHWC outputs, and gemm_1x1_nchw's pixel rows (staged_nhwc's NCHW output is a gather)
        if row["kernel"].endswith("_persistent_kernel"):  # tma_rows's and gemm_1x1's persistent forms
            assert row["UTMASTG"] > 0 and row["STG"] == 0, "the persistent form stores by TMA: " + where
        elif algorithm in ("implicit_gemm", "gemm_1x1", "tma_rows", "grouped_gemm", "im2row", "gemm_1x1_nchw"):
            assert row["STG.128"] > 0, "output stores narrower than 16 bytes: " + where
        if algorithm in ("implicit_gemm", "grouped_gemm", "im2row", "staged_nhwc", "gemm_1x1_nchw"):
            assert row["LDGSTS"] > 0, "operand loads are not cp.async: " + where
        if algorithm in ("gemm_1x1", "tma_rows"):  # both operands by TMA: no cp.async, no gathers
            assert row["UTMALDG"] > 0 and row["LDGSTS"] == 0, "operand loads are not TMA bulk copies: " + where
        if algorithm == "gemm_1x1_ws":  # a TMA loader warp (no cp.async), wgmma
            assert row["HGMMA"] > 0 and row["UTMALDG"] > 0 and row["LDGSTS"] == 0, where
        if algorithm in ("implicit_gemm_frame", "grouped_frame"):  # frames and weights by TMA only, wgmma, TMA stores
            assert row["HGMMA"] > 0 and row["UTMALDG"] > 0 and row["LDGSTS"] == 0, where
            assert row["UTMASTG"] > 0 and row["STG"] == 0, "the epilogue does not store by TMA: " + where
        if algorithm == "im2row_ws":  # the ws kernel over the copy: cp.async gathers, the held weight by TMA
            assert row["HGMMA"] > 0 and row["LDGSTS.128"] > 0 and row["UTMALDG"] > 0, where
            assert row["UTMASTG"] > 0 and row["STG"] == 0, "the epilogue does not store by TMA: " + where
        if algorithm in ("implicit_gemm_ws", "grouped_gemm_ws"):  # loader warps: cp.async gathers, the weight by TMA
            assert row["HGMMA"] > 0 and row["LDGSTS.128"] > 0 and row["UTMALDG"] > 0, where
        if algorithm == "grouped_gemm_ws":  # TMA stores, or (a ring that leaves no room for their buffers) 16 bytes
            assert row["UTMASTG"] > 0 or (row["STG.128"] > 0 and row["STG"] == row["STG.128"]), where
        if algorithm in ("gemm_1x1_ws", "implicit_gemm_ws"):
            # The tile leaves by TMA stores (a dense channels_last output, pixel-run tiles), else by
            # 16-byte stores (gemm_1x1_ws's strided rows: box tiles).
            if "/2" in row["case"] and algorithm == "gemm_1x1_ws":
                assert row["STG.128"] > 0 and row["UTMASTG"] == 0, "output stores narrower than 16 bytes: " + where
            else:
                assert row["UTMASTG"] > 0 and row["STG"] == 0, "the epilogue does not store by TMA: " + where
        if algorithm == "ladder2_tiled":  # the ladder's CUDA-core step: no tensor cores at all
            assert row["FFMA"] > 0 and row["HGMMA"] == 0 and row["HMMA"] == 0, where
        if algorithm == "depthwise_toeplitz" and row["kernel"] == "to_padded_planes_kernel":  # channels read wide
            assert row["LDG.128"] > 0, where
            continue
        if algorithm == "depthwise_toeplitz":  # one channel a program: 2D wgmma fed by cp.async rows
            assert row["HGMMA"] > 0 and row["LDGSTS"] > 0, where
        if algorithm == "dense_toeplitz" and row["kernel"] == "to_padded_rows_kernel":  # rows written wide
            assert row["STG.128"] > 0 and row["HGMMA"] == 0, where
            continue
        if algorithm == "dense_toeplitz":  # wgmma over row segments and bands, both by cp.async
            assert row["HGMMA"] > 0 and row["HMMA"] == 0 and row["LDGSTS"] > 0, where
            # The row segments 16 bytes a copy (at 8 warps a band tile row is 8 bytes a thread).
            assert row["LDGSTS.128"] > 0, "segment copies narrower than 16 bytes: " + where
        if algorithm == "depthwise_plane":  # one GEMM a channel: tensor cores (mma.sync at these tile sizes)
            assert row["HGMMA"] + row["HMMA"] > 0, where
        if algorithm in ("direct", "direct_rows", "depthwise", "depthwise_rows", "depthwise_halo", "depthwise_window"):
            assert row["FFMA"] > 0 and row["HGMMA"] == 0, where
        if algorithm == "depthwise_window":  # one channel a thread: no shuffles through shared memory
            assert row["shared_bytes"] == 0, where
        if algorithm == "direct_rows":  # a tap's output channels one 16-byte vector of the padded weight
            assert row["LDG.128"] > 0, where
        if algorithm == "grouped_halo":  # frame rows by 16-byte cp.async; every tap an ldmatrix + mma.sync
            assert row["HMMA"] > 0 and row["HGMMA"] == 0 and row["LDGSTS.128"] == row["LDGSTS"] > 0, where
        if algorithm == "depthwise_halo":  # the halo by 16-byte cp.async; the taps from shared memory, no global loads
            assert row["LDGSTS.128"] > 0 and row["LDG.128"] == 0, where
        # The CUDA-core depthwise backward reads channels_last rows 16 bytes a load (with the
        # channel count unspecialised, and offs_c // 1 in the index, every element went alone).
        if row["kernel"] == "conv2d_wgrad_depthwise_kernel":
            assert row["LDG.128"] > 0 and row["LDG.128"] == row["LDG"], "narrow loads: " + where
        # The halo wgrad: its halo and dy by 16-byte cp.async, every tap from shared memory (no
        # global loads), CUDA-core FMAs.
        if row["kernel"] == "conv2d_wgrad_depthwise_halo_kernel":
            assert row["LDGSTS.128"] > 0 and row["LDGSTS.128"] == row["LDGSTS"] and row["LDG"] == 0, where
            assert row["FFMA"] > 0 and row["HGMMA"] == 0, where
        if row["kernel"] == "conv2d_wgrad_depthwise_toeplitz_kernel":  # tensor cores (mma.sync at these tiles)
            assert row["HMMA"] + row["HGMMA"] > 0, "no tensor-core instructions: " + where
        if row["kernel"] == "conv2d_wgrad_ws_kernel":  # dy by TMA, the input by 16-byte cp.async or TMA, wgmma
            assert row["HGMMA"] > 0 and row["UTMALDG"] > 0, where
            if row["config"].endswith(" tma"):  # the input by TMA too (kernels.config.WS_TMA): no gather
                assert row["LDGSTS"] == 0, where
            else:
                assert row["LDGSTS.128"] == row["LDGSTS"] > 0, where
        if row["kernel"] == "conv2d_dgrad_depthwise_kernel":  # (the weight's taps are scalars)
            assert row["LDG.128"] > 0 and row["STG.128"] == row["STG"], "narrow loads or stores: " + where
        # Programmatic dependent launch (tileconv._runtime.programmatic_launch): a weight gradient
        # signals its split sums (griddepcontrol.launch_dependents), which wait for it (.wait);
        # without it, neither instruction.
        if row.get("programmatic") and row["kernel"].startswith("wgrad_finish"):
            assert row["ACQBULK"] > 0 and row["PREEXIT"] == 0, where
        elif row.get("programmatic"):
            assert row["PREEXIT"] > 0 and row["ACQBULK"] == 0, where
        else:
            assert row["PREEXIT"] == row["ACQBULK"] == 0, where
    assert sum(bool(row.get("programmatic")) for row in rows) == 3


def test_dense_heuristic_launches_neither_spill_nor_serialize_wgmma():
    """``benchmarks/audit.py`` on the dense suites (seed, vae, resnet50) in fp16 and TF32,
    channels_last: every launch the heuristics make assembles without spills, below 255
    registers, within a Hopper block's shared memory, and with no ptxas advisory (a TF32
    128x128 tile at 8 warps had its wgmma serialized, C7515)."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    for dtype in ("float16", "tf32"):
        child = subprocess.run([sys.executable, str(REPO / "benchmarks" / "audit.py"), "--suite", "seed,vae,resnet50",
                                "--dtype", dtype], capture_output=True, text=True, env=env, timeout=600, cwd=REPO)
        assert child.returncode == 0, f"{dtype}:\n" + "\n".join(
            line for line in child.stdout.splitlines() if "<--" in line or "flagged" in line) + child.stderr[-2000:]


def test_banded_kernels_neither_spill_nor_serialize_wgmma():
    """The same audit of the two banded kernels that the heuristics do not pick yet, by their
    default configs: dense_toeplitz over the seed suite (seed003), depthwise_plane over the
    depthwise suite's small planes, fp16 and strict fp32."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    for suite, algo in (("seed", "dense_toeplitz"), ("depthwise", "depthwise_plane")):
        for dtype, layout in (("float16", "nhwc"), ("float32", "nchw")):
            child = subprocess.run([sys.executable, str(REPO / "benchmarks" / "audit.py"), "--suite", suite, "--algo",
                                    algo, "--dtype", dtype, "--layout", layout],
                                   capture_output=True, text=True, env=env, timeout=600, cwd=REPO)
            where = f"{algo} {dtype} {layout}"
            assert child.returncode == 0, f"{where}:\n" + child.stdout[-3000:] + child.stderr[-2000:]
            assert " 0 flagged" in child.stdout and algo in child.stdout, where  # it ran, on some problem


def test_depthwise_halo_copies_are_16_bytes_whatever_c_divides():
    """depthwise_halo's cp.async copies must stay 16 bytes wide for any C that is a whole number
    of 16-byte groups: with C = 24 (not a multiple of 16, so Triton does not specialise it) a
    plain ``cx < C`` mask made them 2 bytes, which cp.async refuses at compile time, and so did an
    image stride of 504 values (C = 8 on 7x9 images) until the kernel said it was 16-byte aligned
    (the GPU runs of session 12 failed eight cases so). Compiled for sm_90 without a GPU. The
    filter's taps and the bias come in by the same copies (rows after the halo's): with a bias,
    and with a filter too large for registers, the copies are 16 bytes wide too, and nothing of
    the filter or the bias is loaded from global memory after the copies' wait."""
    code = """
import json, re, sys, torch
sys.path.insert(0, "benchmarks")
import sass
from tileconv.epilogue import Epilogue
from tileconv.kernels import LaunchConfig, launch
from tileconv.problem import ConvProblem
rows = []
for c, dtype, rs, bias in ((24, torch.float16, 3, False), (40, torch.bfloat16, 3, True), (12, torch.float32, 3, True),
                           (8, torch.float16, 3, False), (24, torch.float16, 7, True)):
    # two images of 7x9 pixels: the image stride (504 values at C = 8) is not a multiple of 16 either
    problem = ConvProblem(2, c, 7, 9, c, rs, rs, stride=(2, 1), padding=(1, 1), groups=c, dtype=dtype, layout="nhwc",
                          epilogue=Epilogue(has_bias=bias))
    config = LaunchConfig(32, 32 if rs == 3 else 128, 8, num_warps=1)  # 7x7 at 4 channels a thread: a table
    counts = sass.inspect_problem(problem, "depthwise_halo", config, with_sass=True)
    after_wait = counts["sass"][counts["sass"].index("DEPBAR"):]
    rows.append([c, rs, bias, launch.halo_tiling(problem, config).weight_registers, counts["LDGSTS"],
                 counts["LDGSTS.128"], len(re.findall(r"\\bLDG\\b", after_wait))])
print(json.dumps(rows))
"""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300, cwd=REPO)
    assert child.returncode == 0, child.stderr[-3000:]
    rows = json.loads(child.stdout.strip().splitlines()[-1])
    assert [registers for *_, registers, _, _, _ in rows] == [True, True, True, True, False]  # both filter forms
    for c, rs, bias, _, copies, wide, late_loads in rows:
        where = f"C = {c}, {rs}x{rs}, bias {bias}"
        assert copies > 0 and copies == wide, f"{where}: {wide} of {copies} copies 16 bytes wide"
        assert late_loads == 0, f"{where}: {late_loads} global loads after the copies' wait"


def test_depthwise_window_compiles_its_one_column_and_one_tap_forms():
    """depthwise_window splits a row into columns and joins an output row back by halving; a
    1-wide tile, a 1-column window or a one-tap filter is the no-halving branch, which the
    interpreter ran but the compiler refused (both branches' return types were checked: 27 of
    verify's 150 random cases failed on the H200, session 25). Compiled for sm_90 without a
    GPU: a 1x1 filter, a 7x1 over a 1-wide output, a 1x7, and a 3x3 on 1-column tiles; and the
    int64 form over NCHW, whose output column stride Triton makes a constant 1 (widening that
    stride, not the index, did not compile: the GPU's int64 cases failed); and the int64 form of
    the tiles compiled for a small image (row stride 2, strips of 2 rows) in both layouts."""
    code = """
import sys, torch
sys.path.insert(0, "benchmarks")
import sass
from tileconv.kernels import LaunchConfig
from tileconv.problem import ConvProblem
for c, h, w, r, s, stride, pad, tile_w in ((6, 4, 33, 1, 1, (1, 1), (2, 2), 8), (6, 32, 2, 7, 1, (1, 2), (1, 0), 1),
                                           (17, 37, 1, 1, 7, (1, 1), (0, 3), 1), (4, 10, 13, 3, 3, (1, 2), (1, 2), 1)):
    problem = ConvProblem(1, c, h, w, c, r, s, stride=stride, padding=pad, groups=c, dtype=torch.float32)
    counts = sass.inspect_problem(problem, "depthwise_window", LaunchConfig(max(r - 1, 3), 32, tile_w, 8, 1, 1))
    assert counts["FFMA"] + counts.get("FMUL", 0) > 0 or r * s == 1, (c, r, s)
for layout in ("nchw", "nhwc"):
    problem = ConvProblem(1, 1, 40, 40, 1, 1, 1, dtype=torch.float16, layout=layout)
    sass.inspect_problem(problem, "depthwise_window", LaunchConfig(7, 32, 7, 8, 1, 1), int64=True)
    # the image form (tiles of the output's width, compiled for the image), row stride 2, strips of 2 rows
    problem = ConvProblem(1, 6, 7, 9, 12, 3, 3, stride=(2, 1), padding=1, groups=6, dtype=torch.float16, layout=layout)
    counts = sass.inspect_problem(problem, "depthwise_window", LaunchConfig(2, 32, 9, 8, 1, 1), int64=True)
    assert counts["FFMA"] > 0, counts
print("compiled")
"""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300, cwd=REPO)
    assert child.returncode == 0 and "compiled" in child.stdout, child.stderr[-3000:]
