"""Launchers: turn (problem, tensors, LaunchConfig) into one kernel launch.

Both kernels take the same argument prefix (pointers, sizes, geometry, the four strides of
each tensor, activation parameters); :func:`_shared_arguments` builds it once so that the
two launchers cannot drift apart.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace

import torch
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor as GluonTensorDescriptor
from triton.tools.tensor_descriptor import TensorDescriptor

from .._runtime import (
    BLOCK_SHARED_RESERVE,
    DEFAULT_SM_SHARED_BYTES,
    INT32_LIMIT,
    INTERPRET,
    cdiv,
    kernel_strides,
    nvidia_capability,
    pow2_at_least,
    programs_fitting,
    programs_resident,
    sm_count,
)
from ..problem import ConvProblem
from .config import BackwardConfig, LaunchConfig, dot_constexprs, needs_int64
from .dense_toeplitz import conv2d_dense_toeplitz_kernel
from .depthwise import conv2d_depthwise_kernel
from .depthwise_halo import conv2d_depthwise_halo_kernel
from .depthwise_plane import conv2d_depthwise_plane_kernel
from .depthwise_rows import conv2d_depthwise_rows_kernel
from .depthwise_toeplitz import conv2d_depthwise_toeplitz_kernel
from .depthwise_window import conv2d_depthwise_window_kernel
from .dgrad import zero_off_grid
from .direct import conv2d_direct_kernel
from .direct_rows import conv2d_direct_rows_kernel
from .fast_launch import launch
from .fast_launch import workspace as scratch
from .gemm_1x1 import conv1x1_tma_kernel, conv1x1_tma_persistent_kernel
from .gemm_1x1_nchw import conv1x1_nchw_kernel
from .grouped_halo import conv2d_grouped_halo_kernel
from .im2row import unroll_columns_kernel
from .implicit_gemm import conv2d_implicit_gemm_kernel, splitk_epilogue_kernel
from .implicit_gemm_frame import conv2d_frame_kernel
from .implicit_gemm_tma import conv2d_tma_rows_kernel, conv2d_tma_rows_persistent_kernel
from .implicit_gemm_ws import conv1x1_ws_kernel, conv2d_implicit_gemm_ws_kernel
from .staged import to_channels_last_kernel, to_padded_planes_kernel, to_padded_rows_kernel
from .weights import (
    block_diagonal_weight,
    channel_minor_weight,
    channels_last_weight,
    dense_toeplitz_weight,
    diagonal_blocks_weight,
    grouped_tap_weight,
    padded_channel_minor_weight,
    plane_weight,
    toeplitz_weight,
    unrolled_columns_weight,
)

SPLIT_K_EPILOGUE_TILE = 64  # the split-K epilogue's tile: 64 pixels x 64 output channels


def _epilogue_arguments(
    problem: ConvProblem, bias: torch.Tensor | None, residual: torch.Tensor | None, out: torch.Tensor,
) -> tuple[list, list, dict]:
    """The fused epilogue's share of every forward launch, in the order the kernels take it:
    the pointers (output, bias, residual), then the output's and residual's strides and the
    activation's two parameters, and the epilogue's constexprs. Unused pointers get the
    output: never read, the HAS_* constexprs guard them."""
    res = residual if residual is not None else out
    pointers = [out, bias if bias is not None else out, res]
    strides = [*kernel_strides(out), *kernel_strides(res),
               problem.epilogue.activation.alpha, problem.epilogue.activation.beta]
    constexprs = dict(ACTIVATION=problem.epilogue.activation.code,
                      HAS_BIAS=bias is not None, HAS_RESIDUAL=residual is not None)
    return pointers, strides, constexprs


def _shared_arguments(
    problem: ConvProblem,
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    residual: torch.Tensor | None,
    out: torch.Tensor,
) -> tuple[list, list, dict]:
    pointers, epilogue_strides, epilogue = _epilogue_arguments(problem, bias, residual, out)
    args = [x, weight, *pointers, problem.n, problem.h, problem.w, problem.out_h, problem.out_w]
    geometry = [
        problem.stride[0], problem.stride[1], problem.padding[0], problem.padding[1],
        problem.dilation[0], problem.dilation[1],
        *kernel_strides(x), *kernel_strides(weight), *epilogue_strides,
    ]
    constexprs = dict(R=problem.r, S=problem.s, **epilogue, INT64=needs_int64(problem))
    return args, geometry, constexprs


def launch_implicit_gemm(
    problem: ConvProblem,
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    residual: torch.Tensor | None,
    out: torch.Tensor,
    config: LaunchConfig,
    sub_groups: tuple[int, int] = (0, 0),
):
    """Run :func:`conv2d_implicit_gemm_kernel` over the whole output; returns the
    compiled kernel (its ``asm`` holds the PTX and cubin for inspection).
    ``sub_groups``: (C/g, K/g) of the groups merged into ``problem``'s (grouped_gemm)."""
    split_k = config.split_k
    if split_k > 1 and (problem.groups != 1 or config.fuse_sc or sub_groups != (0, 0)):
        raise ValueError(f"config split_k={split_k} needs a dense problem (groups=1) without fuse_sc; "
                         f"got groups={problem.groups}, fuse_sc={config.fuse_sc}")
    if problem.r * problem.s > 1:
        # B-tile rows run along C; in an NCHW weight they would lie R*S elements apart.
        weight = channels_last_weight(weight)
    args, geometry, constexprs = _shared_arguments(problem, x, weight, bias, residual, out)
    grid = (cdiv(problem.gemm_m, config.block_m) * cdiv(problem.gemm_n, config.block_n) * problem.groups, split_k)
    workspace = out
    if split_k > 1:
        workspace = scratch((split_k, problem.gemm_m, problem.k), torch.float32, out.device)
    compiled = launch(conv2d_implicit_gemm_kernel, grid,
        *args, problem.c_per_group, problem.k_per_group, *geometry,
        **constexprs, ws_ptr=workspace, SPLIT_K=split_k,
        BLOCK_M=config.block_m, BLOCK_N=config.block_n, BLOCK_K=config.block_k,
        GROUP_M=config.group_m, FUSE_SC=bool(config.fuse_sc),
        EVEN_C=problem.c_per_group % config.block_k == 0,
        **dot_constexprs(problem),
        SUB_C=sub_groups[0], SUB_K=sub_groups[1],
        num_warps=config.num_warps, num_stages=config.num_stages,
    )
    if split_k > 1:
        pointers, epilogue_strides, epilogue = _epilogue_arguments(problem, bias, residual, out)
        launch(splitk_epilogue_kernel, (cdiv(problem.gemm_m, SPLIT_K_EPILOGUE_TILE), cdiv(problem.k, SPLIT_K_EPILOGUE_TILE)),
               workspace, *pointers, problem.gemm_m, problem.k, problem.out_h, problem.out_w, *epilogue_strides,
               **epilogue, SPLIT_K=split_k,
               BLOCK_M=SPLIT_K_EPILOGUE_TILE, BLOCK_N=SPLIT_K_EPILOGUE_TILE, num_warps=4)
    return compiled


def _unpadded_1x1_reason(problem: ConvProblem) -> str | None:
    """Why ``problem`` is not a GEMM over (a strided view of) its pixels: a dense, 1x1,
    unpadded convolution, the condition of the 1x1 GEMM kernels; None if it is one."""
    if (problem.r, problem.s) != (1, 1):
        return "it needs a 1x1 filter"
    if not problem.is_unpadded:
        return "it needs padding 0"
    if problem.groups != 1:
        return "it needs groups=1"
    return None


def _plain_gemm_reason(problem: ConvProblem) -> str | None:
    """Why ``problem`` is not a plain GEMM over pixels (as :func:`_unpadded_1x1_reason`, at
    stride 1: gemm_1x1_nchw's condition); None if it is one."""
    if (problem.r, problem.s) != (1, 1) or problem.stride != (1, 1):
        return "it needs a 1x1 filter with stride 1"
    return _unpadded_1x1_reason(problem)


def gemm_1x1_unsupported_reason(problem: ConvProblem) -> str | None:
    """Why :func:`launch_gemm_1x1` cannot run ``problem`` (None if it can)."""
    if (reason := _unpadded_1x1_reason(problem)) is not None:
        return reason
    if problem.layout != "nhwc":
        return "it reads the input as an (N*H*W, C) matrix (a strided view of it): it needs channels_last"
    if (problem.c * problem.itemsize) % 16:
        return "bulk tensor copies need rows of a multiple of 16 bytes (C * itemsize)"
    return None


def box_columns(out_w: int, block_m: int) -> int:
    """gemm_1x1's box width on a strided problem: the output width rounded up to a power of
    two, at most ``block_m`` (a box is ``block_m // box_columns`` output rows of that many columns)."""
    return min(pow2_at_least(out_w), block_m)


def _merged_images(t4d: torch.Tensor) -> torch.Tensor | None:
    """``t4d`` (N, P, Q, C) as one image of N*P rows, (1, N*P, Q, C), where its batch stride is
    P of its row strides (a dense tensor); None where it is not."""
    n, rows, columns, channels = t4d.shape
    if t4d.stride(0) != rows * t4d.stride(1):
        return None
    return t4d.as_strided((1, n * rows, columns, channels), (n * rows * t4d.stride(1), *t4d.stride()[1:]))


@dataclass(frozen=True)
class _GemmViews:
    """gemm_1x1's operand and output views (see :func:`_gemm_1x1_views`)."""
    a: torch.Tensor  # (M, C), or (NI, PI, Q, C): the strided view
    a_block: list[int]
    out: torch.Tensor | None  # (M, K), or (NI, PI, Q, K); None: not channels_last
    out_block: list[int]
    box_q: int  # 0: stride 1, a plain matrix; else the boxes' columns
    grid_rows: int  # PI: the box grid's output rows per image (P, or N*P merged)
    m_tiles: int  # tiles along M: the kernels' num_m


def _gemm_1x1_views(problem: ConvProblem, x: torch.Tensor, out: torch.Tensor, config: LaunchConfig) -> _GemmViews:
    """The views the 1x1 kernels' bulk copies read and write. Stride 1: x as an (M, C) matrix
    and the output as (M, K) (channels_last views, no copies). Strided: the strided view
    x[:, ::U, ::V] as (N, P, Q, C) and the output as (N, P, Q, K), each merged into one image of
    N*P rows where both allow it, read and written in boxes of whole output rows."""
    channels_last = out.is_contiguous(memory_format=torch.channels_last)  # else its (M, K) view would be a copy
    out4d = out.permute(0, 2, 3, 1)  # (N, P, Q, K)
    if problem.stride == (1, 1):
        return _GemmViews(x.permute(0, 2, 3, 1).reshape(problem.gemm_m, problem.c), [config.block_m, config.block_k],
                          out4d.reshape(problem.gemm_m, problem.k) if channels_last else None,
                          [config.block_m, config.block_n], 0, problem.gemm_m, cdiv(problem.gemm_m, config.block_m))
    a, out4d = strided_pixel_views(problem, x, out4d)
    images, rows = a.shape[0], a.shape[1]
    box_q, box_h, boxes = pixel_boxes(images, rows, problem.out_w, config.block_m)
    return _GemmViews(a, [1, box_h, box_q, config.block_k], out4d if channels_last else None,
                      [1, box_h, box_q, config.block_n], box_q, rows, boxes)


def strided_pixel_views(problem: ConvProblem, x: torch.Tensor, other4d: torch.Tensor
                        ) -> tuple[torch.Tensor, torch.Tensor]:
    """An unpadded 1x1 problem's input as the strided view x[:, ::U, ::V], (N, P, Q, C), and
    ``other4d`` (N, P, Q, *: the output, or dy), both as one image of N*P rows where both allow
    (:func:`_merged_images`): the tensors the boxes of the 1x1 kernels and the wgrad read."""
    a = x.permute(0, 2, 3, 1)[:, ::problem.stride[0], ::problem.stride[1], :]
    merged_a, merged_other = _merged_images(a), _merged_images(other4d)
    if merged_a is not None and merged_other is not None:
        return merged_a, merged_other
    return a, other4d


def pixel_boxes(images: int, rows: int, out_w: int, pixels: int) -> tuple[int, int, int]:
    """(box_q, box_h, boxes): boxes of ``pixels`` output pixels, ``box_h`` rows of ``box_q``
    columns (:func:`box_columns`), over ``images`` of ``rows`` output rows ``out_w`` wide, and how
    many there are (common.tile_origin's grid)."""
    box_q = box_columns(out_w, pixels)
    box_h = pixels // box_q
    return box_q, box_h, images * cdiv(rows, box_h) * cdiv(out_w, box_q)


def launch_gemm_1x1(
    problem: ConvProblem,
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    residual: torch.Tensor | None,
    out: torch.Tensor,
    config: LaunchConfig,
    onto: torch.Tensor | None = None,
    onto_stride: tuple[int, int] = (1, 1),
):
    """Run :func:`conv1x1_tma_kernel`: ``problem`` as a GEMM over a view of the input (for a
    strided problem, boxes of whole output rows of the strided view x[:, ::U, ::V]); with
    ``config.persistent`` and a channels_last output, :func:`conv1x1_tma_persistent_kernel`
    on one program an SM. A tensor whose start is not 16-byte aligned (a sliced view) cannot
    be described for the copy engine; it runs on the implicit GEMM instead, with the same result.

    ``onto`` (N, K, H, W), ``onto_stride`` (U, V): ``out`` is ``onto[:, :, ::U, ::V]`` and the
    kernel also zeroes every other pixel of ``onto`` (a strided 1x1's input gradient:
    :meth:`~tileconv.problem.ConvProblem.dgrad_as_strided_forward`), from each tile's own
    pixels (:func:`~tileconv.kernels.common.store_off_grid_zeros`); the non-persistent form
    then, its stores by pointer (the view is no matrix for the copy engine)."""
    if config.split_k > 1:
        raise ValueError(f"config split_k={config.split_k}: gemm_1x1 has no split-K (use implicit_gemm)")
    fill = onto is not None and onto_stride != (1, 1)
    if fill and out.data_ptr() != onto.data_ptr():
        raise ValueError("launch_gemm_1x1: out must be onto[:, :, ::U, ::V], a view starting where onto does")
    if config.resident:
        raise ValueError(f"config resident={config.resident}: gemm_1x1 holds no weight slice (gemm_1x1_ws does)")
    b2d = weight.reshape(problem.k, problem.c)
    views = _gemm_1x1_views(problem, x, out, config)
    if not (describable(views.a, problem.itemsize) and describable(b2d, problem.itemsize)):
        if fill:
            zero_off_grid(onto, onto_stride)
        return launch_implicit_gemm(problem, x, weight, bias, residual, out, config)
    a_desc = TensorDescriptor.from_tensor(views.a, views.a_block)
    b_desc = TensorDescriptor.from_tensor(b2d, [config.block_n, config.block_k])
    pointers, epilogue_strides, constexprs = _tma_gemm_arguments(problem, bias, residual, out, config)
    tiles = views.m_tiles * cdiv(problem.k, config.block_n)
    sizes = [problem.gemm_m, problem.k, problem.c, problem.out_h, problem.out_w, views.m_tiles, views.grid_rows]
    if config.persistent and not fill and views.out is not None and describable(views.out, problem.itemsize):
        out_desc = TensorDescriptor.from_tensor(views.out, views.out_block)
        return launch(conv1x1_tma_persistent_kernel, (min(tiles, sm_count(out.device)),),
                      a_desc, b_desc, out_desc, *pointers[1:], *sizes, *epilogue_strides[4:], BOX_Q=views.box_q,
                      **constexprs)
    target = (onto.shape[2], onto.shape[3], onto.stride(2), onto.stride(3)) if fill else (1, 1, 0, 0)
    return launch(conv1x1_tma_kernel, (tiles,), a_desc, b_desc, *pointers, *sizes, *epilogue_strides, *target,
                  BOX_Q=views.box_q, FILL_U=onto_stride[0] if fill else 1, FILL_V=onto_stride[1] if fill else 1,
                  **constexprs)


def _tma_gemm_arguments(
    problem: ConvProblem, bias: torch.Tensor | None, residual: torch.Tensor | None, out: torch.Tensor,
    config: LaunchConfig,
) -> tuple[list, list, dict]:
    """The epilogue's pointers and strides, and the constexprs and launch options that
    gemm_1x1's and tma_rows's kernels (both forms) take alike."""
    pointers, epilogue_strides, epilogue = _epilogue_arguments(problem, bias, residual, out)
    constexprs = dict(**epilogue, BLOCK_M=config.block_m, BLOCK_N=config.block_n, BLOCK_K=config.block_k,
                      GROUP_M=config.group_m, **dot_constexprs(problem), INT64=needs_int64(problem),
                      num_warps=config.num_warps, num_stages=config.num_stages)
    return pointers, epilogue_strides, constexprs


def tma_rows_unsupported_reason(problem: ConvProblem) -> str | None:
    """Why :func:`launch_tma_rows` cannot run ``problem`` (None if it can)."""
    if problem.stride != (1, 1):
        return "its input segments are contiguous rows only for stride 1"
    if problem.groups != 1:
        return "it needs groups=1 (a group's channel tail would read the next group's channels)"
    if problem.layout != "nhwc":
        return "it reads the input through a 4D NHWC tensor descriptor: it needs channels_last"
    if (problem.c * problem.itemsize) % 16:
        return "bulk tensor copies need rows of a multiple of 16 bytes (C * itemsize)"
    if problem.n * problem.out_h * cdiv(problem.out_w, 16) * cdiv(problem.k, 16) >= INT32_LIMIT:
        return "its grid of row segments would pass 2**31 programs"
    return None


def launch_tma_rows(
    problem: ConvProblem,
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    residual: torch.Tensor | None,
    out: torch.Tensor,
    config: LaunchConfig,
):
    """Run :func:`conv2d_tma_rows_kernel`: each program one segment of ``config.block_m``
    pixels of an output row, both operands by bulk tensor copy; with ``config.persistent``,
    :func:`conv2d_tma_rows_persistent_kernel` on one program an SM (an output the copy engine
    cannot describe takes the first form's pointer stores). A tensor the copy engine
    cannot describe (a start that is not 16-byte aligned, strides that are not multiples of
    16 bytes: a sliced view) runs on the implicit GEMM instead, with the same result."""
    if config.split_k > 1:
        raise ValueError(f"config split_k={config.split_k}: tma_rows has no split-K (use implicit_gemm)")
    w3d = channels_last_weight(weight).permute(0, 2, 3, 1).reshape(problem.k, problem.r * problem.s, problem.c)
    x4d = x.permute(0, 2, 3, 1)  # (N, H, W, C): a view, C contiguous for a channels_last input
    if not (describable(x4d, problem.itemsize) and describable(w3d, problem.itemsize)):
        return launch_implicit_gemm(problem, x, weight, bias, residual, out, config)
    x_desc = TensorDescriptor.from_tensor(x4d, [1, 1, config.block_m, config.block_k])
    w_desc = TensorDescriptor.from_tensor(w3d, [config.block_n, 1, config.block_k])
    pointers, epilogue_strides, constexprs = _tma_gemm_arguments(problem, bias, residual, out, config)
    sizes = [problem.n, problem.out_h, problem.out_w, problem.k, problem.c,
             problem.padding[0], problem.padding[1], problem.dilation[0], problem.dilation[1]]
    tiles = problem.n * problem.out_h * cdiv(problem.out_w, config.block_m) * cdiv(problem.k, config.block_n)
    out4d = out.permute(0, 2, 3, 1)  # (N, P, Q, K)
    if config.persistent and describable(out4d, problem.itemsize):
        out_desc = TensorDescriptor.from_tensor(out4d, [1, 1, config.block_m, config.block_n])
        return launch(conv2d_tma_rows_persistent_kernel, (min(tiles, sm_count(out.device)),),
                      x_desc, w_desc, out_desc, *pointers[1:], *sizes, *epilogue_strides[4:], problem.r, problem.s,
                      **constexprs)
    return launch(conv2d_tma_rows_kernel, (tiles,),
                  x_desc, w_desc, *pointers, *sizes, *epilogue_strides, problem.r, problem.s, **constexprs)


# implicit_gemm_ws's loader partition: one warpgroup, enough registers for its pointer tiles
# (sm_90 compiles: no spills at 88).
WS_LOADER_WARPS = 4
WS_LOADER_REGS = 88
# ... two warpgroups for grouped_gemm_ws's merged groups under one MMA warpgroup (one program an
# SM, no ping-pong): 12 warps, the register file's 168 a thread at launch (the loader's 88 leave the
# MMA warps 256). There the MMA warps wait on the ring (Nsight Compute, H200, session 55: ResNeXt
# c512 hw28/2, 22% of samples on the ready barrier, the loader never on a free stage, its warps'
# stalls 'wait' (fixed latency) and 'selected'): more warps take fewer rows each. Measured
# (benchmarks/probe_ab.py loader, same session, A/B in one process): ResNeXt c256 hw56/2 34.7 us
# against 36.0, c512 hw28/2 20.6 against 21.1; on dense tiles none faster (c512 hw7 3x3 24.7
# against 23.6, c128 hw56 3x3/2 25.0 both), so dense problems keep one loader warpgroup.
WS_WIDE_LOADER_WARPS = 8
WS_WIDE_MAX_REGS = 168
# Registers a thread the kernel is launched with, by the warps of its MMA partitions (the
# loader's warpgroup comes on top): the whole register file over all warps, so that the
# compiler's reallocation between the partitions has the file to share out.
WS_MAX_REGS = {4: 256, 8: 168}
WS_PINGPONG_MAX_REGS = 168  # two MMA warpgroups and the loader's: 12 warps
WS_PINGPONG_CONSUMER_REGS = 216  # the second MMA warpgroup's; the first gets what is left (200)
# gemm_1x1_ws's row slices (a 192-row tile, three MMA warpgroups of 64 rows each, and the
# loader's warp padded to a warpgroup: 16 warps, 128 registers a thread at launch). The second
# and third slices' partitions ask for WS_SLICE_REGS, the loader for WS_TMA_LOADER_REGS, the first
# gets what is left; but ptxas allocates the whole kernel under the launch's 128, so a slice's
# accumulator is at most 64x128 (64 registers): a 64x256 one does not compile (C7602, session 38).
WS_SLICE_ROWS = 64
WS_SLICE_MAX_REGS = 128
WS_SLICE_REGS = 152
_GLUON_DTYPES = {torch.float16: gl.float16, torch.bfloat16: gl.bfloat16, torch.float32: gl.float32}


def _gluon_descriptor(t: torch.Tensor, block: list[int], problem: ConvProblem) -> GluonTensorDescriptor:
    """A Gluon TMA descriptor of ``t`` in ``block`` boxes with the default NVMMA (swizzled) shared
    layout for the box and ``problem``'s dtype: what a wgmma operand or a TMA-store buffer reads."""
    return GluonTensorDescriptor.from_tensor(t, block, gl.NVMMASharedLayout.get_default_for(block, _GLUON_DTYPES[problem.dtype]))


@functools.cache
def _is_hopper() -> bool:
    """Whether this process's GPU is a Hopper (sm_90): asked once (dispatch asks on every call)."""
    capability = nvidia_capability()
    return capability is not None and capability[0] == 9


def _ws_machine_reason(problem: ConvProblem) -> str | None:
    """What keeps the warp-specialized Gluon kernels off ``problem`` whatever its shape: the
    interpreter, a GPU that is not a Hopper, strict float32."""
    if INTERPRET:
        return "it is a Gluon kernel for Hopper (warp specialization): it does not run under Triton's interpreter"
    if not _is_hopper():
        return "it is a Gluon kernel for Hopper (wgmma, TMA, warp specialization): it needs an sm_90 GPU"
    if problem.dtype == torch.float32 and not problem.allow_tf32:
        return "its wgmma multiplies float32 as TF32: strict float32 (allow_tf32 off) is not its"
    return None


def implicit_gemm_ws_unsupported_reason(problem: ConvProblem) -> str | None:
    """Why :func:`launch_implicit_gemm_ws` cannot run ``problem`` (None if it can). Grouped
    problems are :func:`launch_grouped_gemm_ws`'s (it runs them on this kernel, groups merged)."""
    if problem.groups != 1:
        return "it needs groups=1 (grouped_gemm_ws runs grouped problems on it)"
    return _ws_gather_reason(problem, grouped=False)


def _ws_gather_reason(problem: ConvProblem, grouped: bool) -> str | None:
    """Why implicit_gemm_ws's kernel cannot run ``problem``; ``grouped``: ``problem`` is
    grouped_gemm_ws's merged one, run one merged group a tile (None if it can)."""
    if (reason := _ws_machine_reason(problem)) is not None:
        return reason
    if problem.layout != "nhwc":
        return "its loader gathers 16-byte channel segments: it needs channels_last"
    group = " of each merged group" if grouped else ""
    if problem.c_per_group % (32 // problem.itemsize):
        return (f"its reduction steps are whole channel blocks: it needs the input channels{group} "
                f"({problem.c_per_group}) a multiple of {32 // problem.itemsize}")
    if grouped and (problem.k_per_group & (problem.k_per_group - 1) or not 8 <= problem.k_per_group <= 256):
        return (f"it runs a merged group a tile (one wgmma's width): it needs the output channels{group} "
                f"a power of two from 8 to 256, not {problem.k_per_group}")
    return None


def ws_block_k(problem: ConvProblem, block_k: int) -> int:
    """implicit_gemm_ws's channel block: ``block_k`` halved until it divides C/groups (a reduction
    step never straddles two filter taps); C/groups a multiple of 32 bytes of channels (its
    support condition) keeps it at 32 bytes or more."""
    while problem.c_per_group % block_k:
        block_k //= 2
    return block_k


def launch_implicit_gemm_ws(
    problem: ConvProblem,
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    residual: torch.Tensor | None,
    out: torch.Tensor,
    config: LaunchConfig,
    fold: tuple[int, int] | None = None,
    sub_groups: tuple[int, int] = (0, 0),
):
    """Run :func:`conv2d_implicit_gemm_ws_kernel`: one program an SM (``config.persistent`` = 2: two,
    the register file and shared memory shared between them), a loader warpgroup
    gathering the input tiles (cp.async) and copying the weight tiles (TMA) into a ring of
    ``config.num_stages`` stages, ``config.num_warps`` MMA warps consuming it (with
    ``config.pingpong``, two such warpgroups taking the tiles in turn). An input whose
    channels are not contiguous or whose pixel strides are not multiples of 16 bytes (a sliced
    view) runs on the implicit GEMM instead, with the same result.

    ``fold = (fold_k, jump)``: output channel k goes ``(k // fold_k) * jump`` elements past
    where ``out``'s strides put it (a sub-pixel dgrad's cells written into dx itself:
    :func:`tileconv.kernels.dgrad.fold_cells_into`); pointer stores, no residual, ``config.block_n``
    dividing fold_k, and no fallback (a ValueError where the kernel cannot take the call).

    With ``config.resident`` each program holds its N slice of the weight (block_n x R*S*C) in
    shared memory for its life (:func:`resident_unsupported_reason`): the ring carries only the
    input's tiles.

    A grouped problem runs one group a tile (``GROUPED``): ``config.block_n`` must be K/groups
    (a ValueError otherwise), and each tile reduces over its own group's C/groups channels;
    ``sub_groups`` = (C/g, K/g) of the groups merged into each of ``problem``'s
    (:func:`launch_grouped_gemm_ws`: ``weight`` is then block-diagonal, and a tile with a
    non-finite sum is redone group by group)."""
    grouped = problem.groups > 1 or sub_groups[1] > 0  # one (merged) group a tile
    if grouped and config.block_n != problem.k_per_group:
        raise ValueError(f"config block_n={config.block_n}: implicit_gemm_ws runs a grouped convolution one group "
                         f"a tile, so block_n must be K/groups = {problem.k_per_group}")
    loader_warps = ws_loader_warps(config, grouped)
    options = _ws_options(problem, config, "implicit_gemm_ws", loader_warps)
    block_k = ws_block_k(problem, config.block_k)
    programs, held = _ws_grid(problem, config, block_k, cdiv(problem.gemm_m, config.block_m), out.device)
    w2d = _ws_weight_matrix(problem, weight)
    gatherable = _ws_reads(problem, x, w2d)
    if fold is not None and (residual is not None or fold[0] % config.block_n or not gatherable):
        raise ValueError(f"fold={fold}: implicit_gemm_ws folds the channels of whole {config.block_n}-channel tiles "
                         "of an input it gathers directly, without a residual")
    if not gatherable:
        return launch_implicit_gemm(problem, x, weight, bias, residual, out, config, sub_groups=sub_groups)
    w_desc = _gluon_descriptor(w2d, [config.block_n, block_k], problem)
    pointers, epilogue_strides, epilogue = _epilogue_arguments(problem, bias, residual, out)
    out_desc = None if fold is not None else _ws_output_descriptor(problem, residual, out, config, block_k)
    fold_k, fold_jump = fold if fold is not None else (problem.k, 0)
    return launch(conv2d_implicit_gemm_ws_kernel, (programs,),
                  x, w_desc, out_desc, *pointers, problem.gemm_m, problem.h, problem.w, problem.c_per_group,
                  problem.k, problem.out_h, problem.out_w, problem.stride[0], problem.stride[1], problem.padding[0],
                  problem.padding[1], problem.dilation[0], problem.dilation[1], x.stride(0), x.stride(2), x.stride(3),
                  *epilogue_strides[:4], fold_k, fold_jump, *epilogue_strides[4:], problem.r, problem.s, **epilogue,
                  BLOCK_M=config.block_m, BLOCK_N=config.block_n, BLOCK_K=block_k, GROUP_M=config.group_m,
                  LOADER_WARPS=loader_warps, LOADER_REGS=WS_LOADER_REGS, EPI_TMA=out_desc is not None,
                  RESIDENT=held, GROUPED=grouped, w_ptr=w2d, SUB_C=sub_groups[0], SUB_K=sub_groups[1],
                  **options)


@dataclass(frozen=True)
class FramePhase:
    """One of the stride's phase frames in an implicit_gemm_frame stage: input rows a::U and
    columns b::V (all of it at stride 1), its phase rows from ``row`` past the tile's first output
    row and its phase columns from ``col`` (negative: the padding, the copy engine's zero fill),
    ``rows`` of them (the tile's rows plus its taps' reach) in boxes of ``piece`` rows (the
    largest power of two dividing them and the tile's rows), stored from row ``base`` of the
    stage, the frame's width (:func:`frame_columns`) of stage rows a phase row."""

    a: int
    b: int
    row: int
    col: int
    rows: int
    piece: int
    base: int


@dataclass(frozen=True)
class FrameTiling:
    """implicit_gemm_frame's tile (kernels/implicit_gemm_frame.py) for a problem and config:
    ``fw`` frame columns (the output width plus the filter's reach in its phase, to a power of
    two), ``tp`` output rows a tile (block_m = tp * fw), the stride's ``phases``
    (:class:`FramePhase`: one at stride 1) side by side in a stage of ``frows`` rows (their rows
    times fw, plus slack rows that only the never-stored columns' last taps read); ``taps``: the
    stage row at which each tap's (r, s order) A view starts; ``fstages`` frame stages (two of 64
    channels, three of 32) beside ``config.num_stages`` weight stages, each a [block_n, block_k /
    ``subs``] tile (``subs``: :func:`frame_sub_blocks`, the diagonal blocks of merged groups)."""

    fw: int
    tp: int
    frows: int
    phases: tuple[FramePhase, ...]
    taps: tuple[int, ...]
    fstages: int
    subs: int

    def shared_bytes(self, config: LaunchConfig, itemsize: int) -> int:
        """Frames, weight ring, the epilogue's two 64-column chunk buffers, the barriers."""
        frames = self.fstages * self.frows * config.block_k * itemsize
        weights = config.num_stages * config.block_n * (config.block_k // self.subs) * itemsize
        return frames + weights + 2 * config.block_m * FRAME_EPI_N * itemsize + 1024


FRAME_EPI_N = 64  # the TMA-store epilogue's chunk: 64 channels (128 bytes of fp16)
FRAME_MAX_PHASES = 4  # the kernel's phase descriptors: strides (2, 2) and under


def _phase_reach(size: int, stride: int, dilation: int, pad: int) -> tuple[list[tuple[int, int]], dict[int, tuple[int, int]]]:
    """One filter axis at a stride: for each filter index i, (phase, offset) with input index
    (o + offset)*stride + phase for output index o (o*stride - pad + i*dilation); and for each
    phase its taps' least and greatest offsets."""
    taps = [divmod(i * dilation - pad, stride)[::-1] for i in range(size)]
    reach: dict[int, tuple[int, int]] = {}
    for phase, offset in taps:
        low, high = reach.get(phase, (offset, offset))
        reach[phase] = (min(low, offset), max(high, offset))
    return taps, reach


def frame_columns(problem: ConvProblem) -> tuple[int, int]:
    """implicit_gemm_frame's frame for ``problem``: the phase columns its outputs read (the
    output width plus the filter's reach within a column phase, the widest phase's) and the
    frame's width, that to a power of two (at least 8: a row group of the 128-byte swizzle)."""
    _, reach = _phase_reach(problem.s, problem.stride[1], problem.dilation[1], problem.padding[1])
    read = problem.out_w + max(high - low for low, high in reach.values())
    return read, pow2_at_least(max(8, read))


def frame_phase_count(problem: ConvProblem) -> int:
    """The phase frames implicit_gemm_frame stages for ``problem``: the row phases times the
    column phases its taps read (1 at stride 1; 4 for a 3x3 filter at stride 2)."""
    rows = _phase_reach(problem.r, problem.stride[0], problem.dilation[0], problem.padding[0])[1]
    cols = _phase_reach(problem.s, problem.stride[1], problem.dilation[1], problem.padding[1])[1]
    return len(rows) * len(cols)


FRAME_BLOCK_N = (64, 128)  # implicit_gemm_frame's tile widths (its epilogue's one or two 64-column chunks)


def frame_tiling(problem: ConvProblem, config: LaunchConfig, sub_groups: tuple[int, int] = (0, 0)) -> FrameTiling:
    """:class:`FrameTiling` of ``config`` on ``problem`` (grouped_frame's merged problem: its groups'
    ``sub_groups``, as :func:`frame_sub_blocks`); a ValueError naming the field where the kernel
    cannot take it.

    At stride (U, V), output (p, q)'s tap (r, s) reads input row p*U - pad_h + r*dil_h =
    (p + d)*U + a (a in [0, U)) and column (q + e)*V + b: phase (a, b)'s pixel (p + d, q + e).
    So each phase the taps read is staged as a frame of its own (phase rows p0 + d_min .. p0 + tp
    - 1 + d_max, phase columns e_min .. e_min + fw - 1), and the tap's A view of output row m =
    i*fw + q starts at the phase's base + (d - d_min)*fw + (e - e_min): a shifted view, as at
    stride 1 (where the one phase is the input itself and d = r*dil_h - pad_h). A view's last
    rows may run into the next phase's (or the slack): only outputs q >= Q read them (fw covers
    Q plus the phase's column reach), which are computed and never stored."""
    fw = frame_columns(problem)[1]
    if config.block_m not in (64, 128, 256) or config.block_m < fw:
        raise ValueError(f"config block_m={config.block_m}: implicit_gemm_frame's tile is whole output rows of a "
                         f"{fw}-column frame: 64, 128 or 256 rows, at least {fw}")
    if config.block_k not in (32, 64) or problem.c_per_group % config.block_k:
        raise ValueError(f"config block_k={config.block_k}: implicit_gemm_frame steps 32 or 64 channels, "
                         f"dividing C/groups = {problem.c_per_group}")
    if config.block_n not in FRAME_BLOCK_N or (config.block_m, config.num_warps) not in ((64, 4), (128, 4), (256, 8)):
        raise ValueError(f"config {config}: implicit_gemm_frame takes block_n 64 or 128, 4 warps on 64 or 128 "
                         "rows, 8 on 256")
    tp = config.block_m // fw
    row_taps, row_reach = _phase_reach(problem.r, problem.stride[0], problem.dilation[0], problem.padding[0])
    col_taps, col_reach = _phase_reach(problem.s, problem.stride[1], problem.dilation[1], problem.padding[1])
    phases, base = {}, 0
    for a, (d_low, d_high) in sorted(row_reach.items()):
        common = math.gcd(tp, d_high - d_low)  # tp itself where the phase has no reach rows
        for b, (e_low, _) in sorted(col_reach.items()):
            phases[a, b] = FramePhase(a, b, d_low, e_low, tp + d_high - d_low, common & -common, base)
            base += (tp + d_high - d_low) * fw
    taps = tuple(phases[a, b].base + (d - row_reach[a][0]) * fw + e - col_reach[b][0]
                 for a, d in row_taps for b, e in col_taps)
    frows = max(base, cdiv(max(taps) + tp * fw, 8) * 8)  # (base is a multiple of 8 rows: fw is)
    tiling = FrameTiling(fw, tp, frows, tuple(phases.values()), taps, 2 if config.block_k == 64 else 3,
                         frame_sub_blocks(problem, config, sub_groups))
    if tiling.shared_bytes(config, problem.itemsize) > DEFAULT_SM_SHARED_BYTES - BLOCK_SHARED_RESERVE:
        raise ValueError(f"config {config}: implicit_gemm_frame's frames and weight ring need "
                         f"{tiling.shared_bytes(config, problem.itemsize) // 1024} KB of shared memory")
    return tiling


def implicit_gemm_frame_unsupported_reason(problem: ConvProblem) -> str | None:
    """Why :func:`launch_implicit_gemm_frame` cannot run ``problem`` (None if it can)."""
    if (reason := _ws_machine_reason(problem)) is not None:
        return reason
    if problem.groups != 1:
        return "its taps are shifted views of the input's frames: it needs groups=1 (grouped_frame merges groups)"
    return _frame_reason(problem, grouped=False)


def _frame_reason(problem: ConvProblem, grouped: bool) -> str | None:
    """Why the frame kernel cannot run ``problem``; ``grouped``: ``problem`` is grouped_frame's
    merged one, run one merged group a tile (None if it can)."""
    if (phases := frame_phase_count(problem)) > FRAME_MAX_PHASES:
        return (f"stride {problem.stride} with this filter reads {phases} phase frames; it stages at most "
                f"{FRAME_MAX_PHASES} (strides up to 2)")
    if problem.layout != "nhwc" or problem.itemsize != 2:
        return "its frames are bulk copies of 16-bit channels_last rows: it needs float16 or bfloat16, channels_last"
    if problem.epilogue.has_residual:
        return "its tiles leave by bulk tensor stores, which add no residual"
    group = " of each merged group" if grouped else ""
    if problem.c_per_group % 32 or problem.k % 8:
        return (f"it steps whole 32-channel blocks and stores 16-byte channel runs: it needs the input "
                f"channels{group} ({problem.c_per_group}) a multiple of 32 and K a multiple of 8")
    if grouped and problem.k_per_group not in FRAME_BLOCK_N:
        return (f"it runs a merged group a tile: it needs the output channels{group} one of {FRAME_BLOCK_N}, "
                f"not {problem.k_per_group}")
    fw = frame_columns(problem)[1]
    if fw > 256:
        return "its frame is at most 256 columns: the output width plus the filter's reach must fit"
    block_m = max(64, fw)  # the smallest tile of whole frame rows: 32-channel steps, two weight stages
    smallest = LaunchConfig(block_m, problem.k_per_group if grouped else 64, 32, 8, 8 if block_m == 256 else 4, 2)
    try:
        frame_tiling(problem, smallest)
    except ValueError:
        return ("its frames (a tile's output rows plus the filter's reach rows, each stride phase's) and two "
                "weight stages do not fit in shared memory, even on its smallest tile")
    return None


def launch_implicit_gemm_frame(
    problem: ConvProblem,
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    residual: torch.Tensor | None,
    out: torch.Tensor,
    config: LaunchConfig,
    sub_groups: tuple[int, int] = (0, 0),
):
    """Run :func:`conv2d_frame_kernel`: one program an SM, a one-warp loader copying each tile's
    input frames (one a stride phase: a descriptor over the input's rows a::U, columns b::V each)
    and its taps' weight tiles by TMA, ``config.num_warps`` MMA warps reading every tap's A
    operand as a view of a frame (``config.num_stages`` weight stages, the frame stages and the
    taps' views of :func:`frame_tiling`). An input or output the copy engine cannot address (a
    sliced view, or a stride phase with no input pixel: an input one pixel wide at stride 2) runs
    on the implicit GEMM instead (three stages of the same tile), with the same result.

    A grouped problem runs one group a tile (``GROUPED``: ``config.block_n`` must be K/groups, a
    ValueError otherwise), its frames the group's C/groups channels; ``sub_groups`` = (C/g, K/g)
    of the groups merged into each of ``problem``'s (:func:`launch_grouped_frame`: ``weight`` is
    block-diagonal, and a tile with a non-finite sum is redone group by group)."""
    if residual is not None:
        raise ValueError("implicit_gemm_frame adds no residual (its tiles leave by bulk tensor stores)")
    grouped = problem.groups > 1 or sub_groups[1] > 0
    if grouped and config.block_n != problem.k_per_group:
        raise ValueError(f"config block_n={config.block_n}: implicit_gemm_frame runs a grouped convolution one "
                         f"group a tile, so block_n must be K/groups = {problem.k_per_group}")
    tiling = frame_tiling(problem, config, sub_groups)
    x4, out4 = x.permute(0, 2, 3, 1), out.permute(0, 2, 3, 1)
    u, v = problem.stride
    phase_views = [x4[:, phase.a::u, phase.b::v] for phase in tiling.phases]
    w2d = _ws_weight_matrix(problem, weight)
    subs = tiling.subs
    # The weight tiles the loader copies: the merged groups' diagonal blocks only, where the
    # tile multiplies those (w2d stays the redo's).
    w_tiles = w2d if subs == 1 else diagonal_blocks_weight(weight, subs, config.block_n)
    if not (all(describable(view, problem.itemsize) for view in phase_views)
            and describable(out4, problem.itemsize) and out4.is_contiguous() and describable(w2d, problem.itemsize)
            and describable(w_tiles, problem.itemsize)):
        return launch_implicit_gemm(problem, x, weight, bias, residual, out, replace(config, num_stages=3),
                                    sub_groups=sub_groups)
    swizzle = config.block_k * problem.itemsize
    x_layout = gl.NVMMASharedLayout(swizzle, 16, rank=4)
    x_descs = [GluonTensorDescriptor.from_tensor(view, [1, phase.piece, tiling.fw, config.block_k], x_layout)
               for view, phase in zip(phase_views, tiling.phases, strict=True)]
    x_descs += x_descs[:1] * (FRAME_MAX_PHASES - len(x_descs))  # (stand-ins the kernel never reads)
    w_desc = _gluon_descriptor(w_tiles, [config.block_n, config.block_k // subs], problem)
    out_desc = GluonTensorDescriptor.from_tensor(out4, [1, tiling.tp, tiling.fw, FRAME_EPI_N],
                                                 gl.NVMMASharedLayout(FRAME_EPI_N * problem.itemsize, 16, rank=4))
    tiles_p = cdiv(problem.out_h, tiling.tp)
    num_m, num_n = problem.n * tiles_p, cdiv(problem.k, config.block_n)
    activation = problem.epilogue.activation
    phases = tiling.phases
    return launch(conv2d_frame_kernel, (min(num_m * num_n, sm_count(out.device)),),
                  *x_descs, w_desc, out_desc, bias if bias is not None else out, num_m, num_n, tiles_p,
                  problem.c_per_group, problem.k, activation.alpha, activation.beta,
                  x, w2d, problem.h, problem.w, problem.out_h, problem.out_w, *problem.stride, *problem.padding,
                  *problem.dilation, problem.r, problem.s, x.stride(0), x.stride(2), x.stride(3),
                  ACTIVATION=activation.code, HAS_BIAS=bias is not None, TP=tiling.tp, FW=tiling.fw,
                  FROWS=tiling.frows,
                  PHASE_ROW=tuple(ph.row for ph in phases), PHASE_COL=tuple(ph.col for ph in phases),
                  PHASE_ROWS=tuple(ph.rows for ph in phases), PHASE_BASE=tuple(ph.base for ph in phases),
                  TAP_ROWS=tiling.taps, SWIZZLE=swizzle,
                  BLOCK_M=config.block_m, BLOCK_N=config.block_n, BLOCK_K=config.block_k, GROUP_M=config.group_m,
                  FSTAGES=tiling.fstages, BSTAGES=config.num_stages, NUM_WARPS=config.num_warps,
                  LOADER_REGS=WS_TMA_LOADER_REGS, GROUPED=grouped, SUB_C=sub_groups[0], SUB_K=sub_groups[1],
                  SUBS=subs, SUB_LAG=FRAME_SUB_BLOCK_TAPS_IN_FLIGHT,
                  num_warps=config.num_warps, maxnreg=WS_MAX_REGS[config.num_warps])


# The narrowest 16-bit wgmma reduces over 16 channels (its K): grouped_frame's diagonal blocks are at least that wide.
FRAME_SUB_BLOCK_CHANNELS = 16
# Taps whose wgmmas grouped_frame keeps in flight where it multiplies diagonal blocks (short wgmmas).
FRAME_SUB_BLOCK_TAPS_IN_FLIGHT = 2


def frame_sub_blocks(problem: ConvProblem, config: LaunchConfig, sub_groups: tuple[int, int]) -> int:
    """How many wgmmas grouped_frame's tile issues a tap: with groups merged (``sub_groups`` =
    their (C/g, K/g); ``problem`` the merged problem) and one channel block a tile, the
    block-diagonal weight tile is multiplied as its diagonal blocks of max(16, C/g) input
    channels each (the fewest whole groups one wgmma reduces over), not as a whole: 4-channel
    groups merged 16 to a 64-channel tile issue a quarter of the whole tile's tensor-core work (a
    sixteenth is useful), 16-channel groups only the useful work. 1 (the whole tile) where nothing
    is merged, the tile steps through the channels in more than one block, or one block is all."""
    sub_c, sub_k = sub_groups
    if sub_k == 0 or config.block_k != problem.c_per_group:
        return 1
    width = max(FRAME_SUB_BLOCK_CHANNELS, sub_c)
    if width % sub_c or config.block_k % width or (width * sub_k // sub_c) % 8:
        return 1
    return config.block_k // width


def _ws_weight_matrix(problem: ConvProblem, weight: torch.Tensor) -> torch.Tensor:
    """The weight as implicit_gemm_ws's copy engine reads it: (K, R*S*C/groups), (r, s, c) order."""
    return channels_last_weight(weight).permute(0, 2, 3, 1).reshape(problem.k, problem.gemm_k)


def implicit_gemm_ws_reads(problem: ConvProblem, x: torch.Tensor, weight: torch.Tensor) -> bool:
    """Whether :func:`launch_implicit_gemm_ws` runs its own kernel on these tensors (else it
    hands them to the implicit GEMM)."""
    return _ws_reads(problem, x, _ws_weight_matrix(problem, weight))


def _ws_reads(problem: ConvProblem, x: torch.Tensor, w2d: torch.Tensor) -> bool:
    """:func:`implicit_gemm_ws_reads` given the weight matrix: the loader's 16-byte gathers of x
    need what a copy engine's view of x as (N, H, W, C) needs, and the weight is one."""
    return describable(x.permute(0, 2, 3, 1), problem.itemsize) and describable(w2d, problem.itemsize)


WS_EPILOGUE_BYTES = 128  # the widest column chunk a TMA store of the epilogue writes: one swizzle span


def _ws_output_descriptor(problem: ConvProblem, residual: torch.Tensor | None, out: torch.Tensor,
                          config: LaunchConfig, block_k: int, box_q: int = 0) -> GluonTensorDescriptor | None:
    """The warp-specialized kernels' TMA-store epilogue (``EPI_TMA``): a descriptor over the output
    as the (N*P*Q, K) matrix, block (rows, EPI_N) with rows a tile's (a row slice's: :func:`ws_slices`)
    and EPI_N the columns of 128 bytes (two such buffers a slice: 2 * BLOCK_M rows in all); None
    where the tile leaves by pointer stores instead: a residual (read in the stores' layout),
    ping-pong (two consumers would share the buffers), box tiles (``box_q``), an output that is
    not one dense channels_last matrix, a tile of more than four chunks, or a ring that leaves
    no room for the two chunk buffers."""
    epi_n = ws_epilogue_columns(problem, config)
    budget = (DEFAULT_SM_SHARED_BYTES - BLOCK_SHARED_RESERVE) // max(1, config.persistent)
    if (residual is not None or config.pingpong or box_q or config.block_n > 4 * epi_n
            or ws_tma_store_bytes(problem, config, block_k) > budget):
        return None
    out2d = out.permute(0, 2, 3, 1)
    if not out2d.is_contiguous():
        return None
    out2d = out2d.reshape(problem.gemm_m, problem.k)
    if not describable(out2d, problem.itemsize):
        return None
    return _gluon_descriptor(out2d, [config.block_m // ws_slices(config), epi_n], problem)


def ws_epilogue_columns(problem: ConvProblem, config: LaunchConfig) -> int:
    """The TMA-store epilogue's column chunk: 128 bytes of channels, at most the tile's width."""
    return min(config.block_n, WS_EPILOGUE_BYTES // problem.itemsize)


def ws_tma_store_bytes(problem: ConvProblem, config: LaunchConfig, block_k: int) -> int:
    """Shared memory of a warp-specialized kernel with the TMA-store epilogue: the ring (with
    ``config.resident``, the A stages and the held weight slice), the two chunk buffers of each
    row (2 x block_m x :func:`ws_epilogue_columns`), and 1 KB for the barriers and the compiler's scratch."""
    return (config.ring_bytes(problem.itemsize, block_k, problem.gemm_k)
            + 2 * config.block_m * ws_epilogue_columns(problem, config) * problem.itemsize + 1024)


def ws_slices(config: LaunchConfig) -> int:
    """The MMA partitions sharing each of gemm_1x1_ws's tiles by rows: 3 (of WS_SLICE_ROWS rows
    each) for block_m = 192, a tile no single power-of-two accumulator covers; else 1."""
    return 3 if config.block_m == 3 * WS_SLICE_ROWS else 1


def ws_loader_warps(config: LaunchConfig, grouped: bool) -> int:
    """implicit_gemm_ws's loader warps for ``config``: :data:`WS_WIDE_LOADER_WARPS` for a grouped
    problem (one group a tile) with one MMA warpgroup, one program an SM and no ping-pong, else
    :data:`WS_LOADER_WARPS` (8 MMA warps beside 8 loader warps leave the MMA partition too few
    registers: ptxas refused seed000's 128x256 tile)."""
    if grouped and config.num_warps == 4 and not config.pingpong and config.persistent <= 1:
        return WS_WIDE_LOADER_WARPS
    return WS_LOADER_WARPS


def _ws_options(problem: ConvProblem, config: LaunchConfig, name: str, loader_warps: int = WS_LOADER_WARPS) -> dict:
    """The constexprs and launch options both warp-specialized kernels take from ``config``
    (the ring's depth, the MMA partitions and their registers: ``loader_warps`` beside them, see
    :func:`ws_loader_warps`), after checking that ``name`` can run it."""
    if config.split_k > 1:
        raise ValueError(f"config split_k={config.split_k}: {name} has no split-K (use implicit_gemm)")
    slices = ws_slices(config)
    if config.num_warps not in WS_MAX_REGS or ((config.pingpong or slices > 1) and config.num_warps != 4):
        raise ValueError(f"config num_warps={config.num_warps}: {name} runs 4 or 8 MMA warps "
                         "(4, one warpgroup, for each of ping-pong's two and of a 192-row tile's three)")
    if config.block_m & (config.block_m - 1) and (name != "gemm_1x1_ws" or slices == 1 or config.pingpong):
        raise ValueError(f"config block_m={config.block_m}: {name} takes a power of two"
                         + (", or 192 without ping-pong" if name == "gemm_1x1_ws" else ""))
    maxnreg = WS_PINGPONG_MAX_REGS if config.pingpong else WS_MAX_REGS[config.num_warps]
    if loader_warps == WS_WIDE_LOADER_WARPS:
        maxnreg = WS_WIDE_MAX_REGS
    if config.persistent > 1:  # programs an SM: the register file shared among them
        if config.pingpong or slices > 1 or config.num_warps != 4 or config.persistent > 2:
            raise ValueError(f"config persistent={config.persistent}: {name} runs two programs an SM only with one "
                             "MMA warpgroup (num_warps 4, no ping-pong, no row slices)")
        maxnreg = 65536 // (config.persistent * (config.num_warps + loader_warps) * 32)
    options = dict(STAGES=config.num_stages, MMA_K=8 if problem.dtype == torch.float32 else 16,
                   NUM_WARPS=config.num_warps, CONSUMERS=2 if config.pingpong else 1,
                   CONSUMER_REGS=WS_PINGPONG_CONSUMER_REGS, INT64=needs_int64(problem), num_warps=config.num_warps,
                   maxnreg=maxnreg)
    if name == "gemm_1x1_ws":
        options["SLICES"] = slices
        if slices > 1:
            options.update(CONSUMER_REGS=WS_SLICE_REGS, maxnreg=WS_SLICE_MAX_REGS)
    return options


# gemm_1x1_ws's loader: one warp issuing bulk copies (a tile index and a few coordinates).
WS_TMA_LOADER_REGS = 40


def gemm_1x1_ws_unsupported_reason(problem: ConvProblem) -> str | None:
    """Why :func:`launch_gemm_1x1_ws` cannot run ``problem`` (None if it can)."""
    if (reason := _ws_machine_reason(problem)) is not None:
        return reason
    return gemm_1x1_unsupported_reason(problem)


def launch_gemm_1x1_ws(
    problem: ConvProblem,
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    residual: torch.Tensor | None,
    out: torch.Tensor,
    config: LaunchConfig,
):
    """Run :func:`conv1x1_ws_kernel`: gemm_1x1's operand views (:func:`_gemm_1x1_views`)
    copied by a one-warp TMA loader into a ring of ``config.num_stages`` stages that
    ``config.num_warps`` MMA warps consume (with ``config.pingpong``, two warpgroups in turn;
    with ``block_m`` = 192, stride 1, three warpgroups on 64 rows of each tile: :func:`ws_slices`),
    one program an SM. A tensor the copy engine cannot describe runs on the implicit GEMM
    instead, with the same result."""
    options = _ws_options(problem, config, "gemm_1x1_ws")
    if ws_slices(config) > 1 and problem.stride != (1, 1):
        raise ValueError(f"config block_m={config.block_m}: gemm_1x1_ws's row slices need stride 1 "
                         f"(got stride={problem.stride})")
    b2d = weight.reshape(problem.k, problem.c)
    views = _gemm_1x1_views(problem, x, out, config)
    programs, held = _ws_grid(problem, config, config.block_k, views.m_tiles, out.device)
    if not (describable(views.a, problem.itemsize) and describable(b2d, problem.itemsize)):
        # (a 192-row tile is the slices'; the implicit GEMM takes 128 and 64 rows)
        fallback = replace(config, block_m=128) if ws_slices(config) > 1 else config
        return launch_implicit_gemm(problem, x, weight, bias, residual, out, fallback)
    a_block = [views.a_block[0] // ws_slices(config), *views.a_block[1:]]  # a row slice's (stride 1 only)
    a_desc = _gluon_descriptor(views.a, a_block, problem)
    w_desc = _gluon_descriptor(b2d, [config.block_n, config.block_k], problem)
    pointers, epilogue_strides, epilogue = _epilogue_arguments(problem, bias, residual, out)
    out_desc = _ws_output_descriptor(problem, residual, out, config, config.block_k, views.box_q)
    return launch(conv1x1_ws_kernel, (programs,),
                  a_desc, w_desc, out_desc, *pointers, problem.gemm_m, problem.k, problem.c, problem.out_h, problem.out_w,
                  views.m_tiles, views.grid_rows, *epilogue_strides, **epilogue,
                  BLOCK_M=config.block_m, BLOCK_N=config.block_n, BLOCK_K=config.block_k, GROUP_M=config.group_m,
                  BOX_Q=views.box_q, LOADER_REGS=WS_TMA_LOADER_REGS, EPI_TMA=out_desc is not None,
                  RESIDENT=held, **options)


def _ws_grid(problem: ConvProblem, config: LaunchConfig, block_k: int, m_tiles: int,
             device: torch.device) -> tuple[int, int]:
    """The warp-specialized kernels' grid and their ``RESIDENT``: one program an SM (or
    ``config.persistent`` of them), at most one a tile of ``m_tiles`` x the N slices; with ``config.resident`` (a ValueError where
    :func:`resident_unsupported_reason` says it cannot be) the grid cut to a multiple of the N
    slices, each program holding one, and RESIDENT its weight chunks of ``block_k`` (else 0)."""
    num_sms = sm_count(device)
    num_n = cdiv(problem.k, config.block_n)
    programs = min(m_tiles * num_n, num_sms * max(1, config.persistent))
    if not config.resident:
        return programs, 0
    if (reason := resident_unsupported_reason(problem, replace(config, block_k=block_k), num_sms)) is not None:
        raise ValueError(f"config resident={config.resident}: {reason}")
    return programs - programs % num_n, cdiv(problem.gemm_k, block_k)


def resident_unsupported_reason(problem: ConvProblem, config: LaunchConfig, num_sms: int) -> str | None:
    """Why the warp-specialized kernels cannot hold ``config``'s weight slices in shared memory
    for ``problem`` (None if it can): each program holds one N slice, so there must be no more
    slices than SMs, and the slice (block_n x R*S*C in whole channel blocks) with the ring's A
    stages must fit."""
    num_n = cdiv(problem.k, config.block_n)
    if num_n > num_sms:
        return f"its {num_n} weight slices of {config.block_n} channels outnumber the {num_sms} SMs"
    need = config.ring_bytes(problem.itemsize, channels=problem.gemm_k)
    if need > DEFAULT_SM_SHARED_BYTES - BLOCK_SHARED_RESERVE:
        return (f"a {config.block_n}-channel weight slice of R*S*C={problem.gemm_k} and "
                f"{config.num_stages} A stages take {need} bytes of shared memory, more than a block has")
    return None


def describable(t: torch.Tensor, itemsize: int) -> bool:
    """Whether the copy engine can address ``t``: no empty dimension (a descriptor's sizes are
    positive: a stride phase of an input one pixel wide at stride 2 has none), 16-byte aligned
    start, last dimension contiguous, the other strides multiples of 16 bytes."""
    return (0 not in t.shape and t.data_ptr() % 16 == 0 and t.stride(-1) == 1
            and all(stride * itemsize % 16 == 0 for stride in t.stride()[:-1]))


def aligned16(t: torch.Tensor | None) -> torch.Tensor | None:
    """``t``, or a copy of it starting 16 bytes aligned where it does not (a view at an odd
    offset), for kernels that copy it 16 bytes at a time; None stays None."""
    if t is None or t.data_ptr() % 16 == 0:
        return t
    return t.clone()


MAX_GRID_Y = 65535  # CUDA's limit on a grid's second and third axes


def gemm_1x1_nchw_unsupported_reason(problem: ConvProblem) -> str | None:
    """Why :func:`launch_gemm_1x1_nchw` cannot run ``problem`` (None if it can)."""
    if (reason := _plain_gemm_reason(problem)) is not None:
        return reason
    if problem.layout == "nhwc":
        return "it reads each image's channels as rows of contiguous pixels: it needs an NCHW input"
    if problem.n > MAX_GRID_Y:
        return f"it runs one grid row per image: it needs a batch of at most {MAX_GRID_Y}"
    return None


def _pixels_flat(t: torch.Tensor) -> bool:
    """Whether pixel p = h*W + w of every (n, c) plane of ``t`` sits at offset p."""
    _, _, h, w = t.shape
    return (w == 1 or t.stride(3) == 1) and (h == 1 or t.stride(2) == w)


def launch_gemm_1x1_nchw(
    problem: ConvProblem,
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    residual: torch.Tensor | None,
    out: torch.Tensor,
    config: LaunchConfig,
):
    """Run :func:`conv1x1_nchw_kernel`: one GEMM per image over its contiguous pixels. An
    output whose pixels are not contiguous (never an output tileconv allocates) runs on the
    implicit GEMM instead, with the same result."""
    if config.split_k > 1:
        raise ValueError(f"config split_k={config.split_k}: gemm_1x1_nchw has no split-K (use implicit_gemm)")
    if not _pixels_flat(out):
        return launch_implicit_gemm(problem, x, weight, bias, residual, out, config)
    res = residual if residual is not None else out
    stride_wk, stride_wc = kernel_strides(weight)[:2]
    pixels = problem.h * problem.w
    grid = (cdiv(pixels, config.block_m) * cdiv(problem.k, config.block_n), problem.n)
    return launch(conv1x1_nchw_kernel, grid,
        x, weight, out, bias if bias is not None else out, res,
        problem.k, problem.c, pixels, problem.w,
        *kernel_strides(x), stride_wk, stride_wc, *kernel_strides(out)[:2],
        *kernel_strides(res), problem.epilogue.activation.alpha, problem.epilogue.activation.beta,
        ACTIVATION=problem.epilogue.activation.code, HAS_BIAS=bias is not None, HAS_RESIDUAL=residual is not None,
        X_FLAT=_pixels_flat(x), BLOCK_M=config.block_m, BLOCK_N=config.block_n, BLOCK_K=config.block_k,
        GROUP_M=config.group_m, **dot_constexprs(problem), INT64=needs_int64(problem),
        num_warps=config.num_warps, num_stages=config.num_stages,
    )


# The CUDA-core kernels unroll their tap loops where the loads of the unrolled taps, all in
# flight at once, take at most this many bytes of registers a thread. sm_90 compiles (fp16,
# bias and relu in the epilogue): a 3x3 filter fully unrolled over 16 values a thread (288
# bytes) took 106-123 registers against 64-80 with runtime loops; a 7x7 filter row unrolled
# over 32 values a thread (448 bytes) took 255 and spilled, over 16 (224 bytes) 134.
MAX_UNROLLED_BYTES = 288


def unrolled_taps(problem: ConvProblem, tile_elements: int, num_warps: int) -> dict:
    """The CUDA-core kernels' UNROLL_R / UNROLL_S for a tile of ``tile_elements`` outputs on
    ``num_warps`` warps: the whole filter unrolled at compile time where its taps' loads fit
    :data:`MAX_UNROLLED_BYTES` a thread (channels_last input), else one filter row, else neither (runtime loops,
    one compile for every filter size). With runtime loops a tap's loads are issued only
    after the previous tap's multiply-adds, which wait on its loads: one memory latency a tap
    a warp, hidden only by other warps (the SASS had one input load a loop iteration); the
    3x3 depthwise rows ran at 14%-49% of the copy roofline that way (H200, seventh session).
    Not measured yet (written without a GPU)."""
    per_tap = max(1, tile_elements // (32 * num_warps)) * problem.itemsize
    # In NCHW a tap's loads are element by element, each with its own 64-bit address: the
    # whole 3x3 filter unrolled there spilled (80 bytes at 80 registers), one row did not, and
    # a row of 6 fp32 taps at 8 values a thread (192 bytes) spilled 8: half the budget there.
    if problem.layout == "nhwc" and problem.r * problem.s * per_tap <= MAX_UNROLLED_BYTES:
        return dict(UNROLL_R=problem.r, UNROLL_S=problem.s)
    if problem.s * per_tap <= (MAX_UNROLLED_BYTES if problem.layout == "nhwc" else MAX_UNROLLED_BYTES // 2):
        return dict(UNROLL_R=0, UNROLL_S=problem.s)
    return dict(UNROLL_R=0, UNROLL_S=0)


def launch_direct(
    problem: ConvProblem,
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    residual: torch.Tensor | None,
    out: torch.Tensor,
    config: LaunchConfig,
):
    """Run :func:`conv2d_direct_kernel` over the whole output; returns the compiled kernel."""
    weight = channel_minor_weight(weight)  # one vector load of K weights per tap
    args, geometry, constexprs = _shared_arguments(problem, x, weight, bias, residual, out)
    grid = (cdiv(problem.gemm_m, config.block_m), cdiv(problem.k, config.block_n))
    return launch(conv2d_direct_kernel, grid,
        *args, problem.k, problem.c_per_group, problem.k_per_group, *geometry,
        **constexprs,
        BLOCK_M=config.block_m, BLOCK_N=config.block_n, DENSE=problem.groups == 1,
        **unrolled_taps(problem, config.block_m * config.block_n, config.num_warps),
        num_warps=config.num_warps, num_stages=config.num_stages,
    )


MAX_DIRECT_ROWS_CHANNELS = 16  # direct_rows holds every output channel of its columns in one thread
MAX_DIRECT_ROWS_TAPS = 64  # its filter's taps are unrolled into the channel loop
# Registers a thread for direct_rows in float32 over NCHW input (None: ptxas's choice). seed003
# (C = K = 6, 6x6, 768x512), H200, session 24: ptxas gave a pair of 4-column rows 223 registers
# (8 warps an SM); capped at 168 (12 warps; three values spilled before the channel loop, none
# in it) it took 43.5 us against 63.4 in strict fp32 NCHW; one row of 8 columns 46.7 against
# 72.2. Over channels_last input (a column stride of C, not 1: the taps' offsets are not the
# loads' constants) the cap spilled inside the loop.
DIRECT_ROWS_FP32_MAX_REGS = 168


def direct_rows_unsupported_reason(problem: ConvProblem) -> str | None:
    """Why :func:`launch_direct_rows` cannot run ``problem`` (None if it can)."""
    if problem.itemsize != 4:
        # In 16 bits the banded tensor-core kernel wins these problems (seed003 fp16 NHWC: 24.1 us
        # against 49.9, session 24); and Triton 3.6's LLVM aborted the process (an SLP vectorizer
        # assertion) compiling a bf16 / fp16 NCHW pair of 16-channel rows.
        return "it is the float32 kernel (FMA units); 16-bit few-channel problems run on the tensor cores"
    if problem.groups != 1:
        return "each output channel of its tile reads every input channel: it needs groups=1"
    if problem.k > MAX_DIRECT_ROWS_CHANNELS:
        return (f"a thread holds all K={problem.k} output channels of its columns; at most "
                f"{MAX_DIRECT_ROWS_CHANNELS} fit: it is for few output channels")
    if problem.r * problem.s > MAX_DIRECT_ROWS_TAPS:
        return f"its {problem.r}x{problem.s} filter's taps are unrolled; at most {MAX_DIRECT_ROWS_TAPS} are"
    if problem.n * problem.out_h * cdiv(problem.out_w, 32) >= INT32_LIMIT:
        return "its grid of (image, row, column block) programs would pass 2**31"
    return None


def direct_rows_block_k(problem: ConvProblem) -> int:
    """The channel axis of :func:`launch_direct_rows`'s tile: all of K, a power of two, one
    16-byte vector (4 float32 values) at least."""
    return pow2_at_least(problem.k, 16 // problem.itemsize)


def direct_rows_can_pair(problem: ConvProblem) -> bool:
    """Whether output rows p and p+1 of ``problem`` read input rows p .. p+R (unit row stride
    and dilation), so that :func:`launch_direct_rows` can compute them together."""
    return problem.stride[0] == 1 and problem.dilation[0] == 1


def direct_rows_pairs_rows(problem: ConvProblem, config: LaunchConfig) -> bool:
    """Whether :func:`launch_direct_rows` computes its rows two at a time, sharing the input
    rows they both read: an even number of rows a program where :func:`direct_rows_can_pair`."""
    return config.block_k % 2 == 0 and direct_rows_can_pair(problem)


def launch_direct_rows(
    problem: ConvProblem,
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    residual: torch.Tensor | None,
    out: torch.Tensor,
    config: LaunchConfig,
):
    """Run :func:`conv2d_direct_rows_kernel`: programs of ``config.block_m`` output columns of
    ``config.block_k`` consecutive output rows (two at a time where
    :func:`direct_rows_pairs_rows`), every output channel (``config.block_n`` is not a choice:
    :func:`direct_rows_block_k`)."""
    reason = direct_rows_unsupported_reason(problem)
    if reason is not None:
        raise ValueError(f"direct_rows cannot run {problem.describe()}: {reason}")
    if config.split_k > 1 or config.fuse_sc or config.persistent:
        raise ValueError(f"config {config}: direct_rows has no split-K, fused (s, c) slices or persistent form")
    block_k = direct_rows_block_k(problem)
    weight = padded_channel_minor_weight(weight, block_k)
    pointers, epilogue_strides, epilogue = _epilogue_arguments(problem, bias, residual, out)
    grid = (problem.n * cdiv(problem.out_h, config.block_k) * cdiv(problem.out_w, config.block_m),)
    return launch(conv2d_direct_rows_kernel, grid,
        x, weight, *pointers, problem.n, problem.h, problem.w, problem.out_h, problem.out_w, problem.k, problem.c,
        problem.stride[0], problem.stride[1], problem.padding[0], problem.padding[1],
        problem.dilation[0], problem.dilation[1], *kernel_strides(x), *epilogue_strides,
        R=problem.r, S=problem.s, **epilogue,
        BLOCK_Q=config.block_m, BLOCK_K=block_k, BLOCK_P=config.block_k, INT64=needs_int64(problem),
        PADDED=not problem.is_unpadded,
        PAIR=direct_rows_pairs_rows(problem, config),
        num_warps=config.num_warps, num_stages=1,
        **({"maxnreg": DIRECT_ROWS_FP32_MAX_REGS} if problem.layout == "nchw" else {}),
    )


# Registers a thread for the depthwise kernel with its whole filter unrolled on 4 or more warps
# (None: ptxas's choice): 16 warps an SM, the occupancy the plain kernel compiles to. The stride-2
# 3x3 c96 hw112/2 row's bias + ReLU variant took 132 registers where the plain one took 128, so three
# programs an SM in place of four (Nsight Compute, H200, session 49): 47.9 us against 39.5; capped
# at 128 (no spills), 40.9. Fewer warps (more registers a thread for the same tile) spilled at 128.
DEPTHWISE_UNROLLED_MAX_REGS = 128


def launch_depthwise(
    problem: ConvProblem,
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    residual: torch.Tensor | None,
    out: torch.Tensor,
    config: LaunchConfig,
):
    """Run :func:`conv2d_depthwise_kernel`: tiles of block_m pixels (a block_q-wide
    rectangle, ``config.block_k`` is its width) by block_n channels."""
    weight = channel_minor_weight(weight)  # one vector load of K weights per tap
    args, geometry, constexprs = _shared_arguments(problem, x, weight, bias, residual, out)
    block_q = min(config.block_k, config.block_m)
    block_p = config.block_m // block_q
    grid = (
        problem.n * cdiv(problem.out_h, block_p) * cdiv(problem.out_w, block_q),
        cdiv(problem.k, config.block_n),
    )
    unrolled = unrolled_taps(problem, block_p * block_q * config.block_n, config.num_warps)
    cap = DEPTHWISE_UNROLLED_MAX_REGS if unrolled["UNROLL_R"] > 0 and config.num_warps >= 4 else None
    # ReLU folded into the fp16/bf16 conversion where the output is channels_last (H200, session 50:
    # the stride-2 3x3 rows' bias + ReLU cost; NCHW tiles keep the select, on which ptxas does not
    # fall to 64 registers and spill: see common.apply_activation).
    fold_relu = problem.layout == "nhwc" and problem.itemsize == 2
    return launch(conv2d_depthwise_kernel, grid,
        *args, problem.k, *geometry, **constexprs,
        MULTIPLIER=problem.k // problem.c,
        BLOCK_P=block_p, BLOCK_Q=block_q, BLOCK_C=config.block_n, **unrolled, FOLD_RELU=fold_relu,
        num_warps=config.num_warps, num_stages=config.num_stages,
        **({"maxnreg": cap} if cap else {}),
    )


def depthwise_unsupported_reason(problem: ConvProblem) -> str | None:
    """Why the depthwise kernels cannot run ``problem``: they need one input channel per
    group (None if they can)."""
    if problem.c_per_group != 1 or problem.groups != problem.c:
        return "it needs groups == C (one input channel per group)"
    return None


def depthwise_rows_unsupported_reason(problem: ConvProblem) -> str | None:
    """Why :func:`launch_depthwise_rows` cannot run ``problem`` (None if it can)."""
    reason = depthwise_unsupported_reason(problem)
    if reason is not None:
        return reason
    if (problem.r, problem.s) != (3, 3):
        return "it needs a 3x3 filter"
    if problem.stride[0] not in (1, 2) or problem.dilation != (1, 1):
        return "it streams rows at stride 1 or 2: it needs a row stride of 1 or 2 and dilation 1"
    return None


def launch_depthwise_rows(
    problem: ConvProblem,
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    residual: torch.Tensor | None,
    out: torch.Tensor,
    config: LaunchConfig,
):
    """Run :func:`conv2d_depthwise_rows_kernel`: strips of ``config.block_k`` output rows
    by ``block_m`` columns by ``block_n`` channels, the next input row loaded ahead from
    ``num_stages`` 2 (the problem must pass :func:`depthwise_rows_unsupported_reason`, which
    dispatch checks)."""
    weight = channel_minor_weight(weight)  # one vector load of K weights per tap
    args, geometry, constexprs = _shared_arguments(problem, x, weight, bias, residual, out)
    grid = (
        problem.n * cdiv(problem.out_h, config.block_k) * cdiv(problem.out_w, config.block_m),
        cdiv(problem.k, config.block_n),
    )
    return launch(conv2d_depthwise_rows_kernel, grid,
        *args, problem.k, *geometry, **constexprs,
        MULTIPLIER=problem.k // problem.c,
        BLOCK_P=config.block_k, BLOCK_Q=config.block_m, BLOCK_C=config.block_n,
        STRIDE_H=problem.stride[0], PREFETCH=config.num_stages >= 2,
        num_warps=config.num_warps, num_stages=1,
    )


PLANES_COPY_TILE = (64, 32)  # to_padded_planes_kernel's (pixels, channels) tile
# depthwise_toeplitz: its reduction runs over the input columns one block of output columns
# reads; past this many the [JK x BLOCK_Q] tile of T and the A tile outgrow the registers.
MAX_TOEPLITZ_REACH = 128


def window(outputs: int, stride: int, taps: int, dilation: int) -> int:
    """The input rows (or columns) that ``outputs`` consecutive output rows (columns) read
    through ``taps`` filter taps: ``(outputs - 1)*stride + (taps - 1)*dilation + 1``. The halo
    of the shared-memory kernels, the band height of the Toeplitz ones."""
    return (outputs - 1) * stride + (taps - 1) * dilation + 1


def columns_read(problem: ConvProblem, block_q: int) -> int:
    """The input columns that ``block_q`` consecutive output columns read along one filter
    row: the band height of both Toeplitz kernels."""
    return window(block_q, problem.stride[1], problem.s, problem.dilation[1])


def padded_planes(t: torch.Tensor, channels: int, pad: tuple[int, int], rows: int, columns: int) -> torch.Tensor:
    """``t`` ([N, channels, h, w], any strides) copied by :func:`to_padded_planes_kernel` into
    contiguous zero-bordered channel planes [N, channels, rows, columns] (a scratch tensor),
    ``t`` at rows ``pad[0]``.. and columns ``pad[1]``.."""
    n, _, h, w = t.shape
    copy = scratch((n, channels, rows, columns), t.dtype, t.device)
    block_p, block_c = PLANES_COPY_TILE
    int64 = t.numel() >= INT32_LIMIT or copy.numel() >= INT32_LIMIT
    launch(to_padded_planes_kernel, (cdiv(rows * columns, block_p), cdiv(channels, block_c), n),
           t, copy, channels, h, w, pad[0], pad[1], rows, columns, *kernel_strides(t),
           BLOCK_P=block_p, BLOCK_C=block_c, INT64=int64, num_warps=4)
    return copy


def toeplitz_reach(problem: ConvProblem, block_q: int) -> int:
    """JK of :mod:`.depthwise_toeplitz`: :func:`columns_read` rounded up to a power of two of
    at least 16 (a tensor-core K-slice)."""
    return pow2_at_least(columns_read(problem, block_q), 16)


def depthwise_toeplitz_unsupported_reason(problem: ConvProblem) -> str | None:
    """Why :func:`launch_depthwise_toeplitz` cannot run ``problem`` (None if it can)."""
    reason = depthwise_unsupported_reason(problem)
    if reason is not None:
        return reason
    if toeplitz_reach(problem, 16) > MAX_TOEPLITZ_REACH:
        return (f"16 output columns read more than {MAX_TOEPLITZ_REACH} input columns "
                f"(filter width {problem.s}, stride {problem.stride[1]}, dilation {problem.dilation[1]})")
    if max(problem.n, problem.k) > MAX_GRID_Y:
        # One channel a program: a grid row per output channel, and the plane copy a grid
        # plane per image.
        return f"it needs a batch and output channels of at most {MAX_GRID_Y} each"
    return None


def launch_depthwise_toeplitz(
    problem: ConvProblem,
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    residual: torch.Tensor | None,
    out: torch.Tensor,
    config: LaunchConfig,
):
    """Run :func:`conv2d_depthwise_toeplitz_kernel`: programs of ``block_m`` output rows
    (over images and rows) by ``block_k`` output columns by ``block_n`` channels."""
    block_q = config.block_k
    jk = toeplitz_reach(problem, block_q)
    if jk > MAX_TOEPLITZ_REACH:
        raise ValueError(f"config block_k={block_q}: {block_q} output columns read {jk} input columns, "
                         f"more than depthwise_toeplitz's {MAX_TOEPLITZ_REACH}")
    banded = toeplitz_weight(weight, problem.stride[1], problem.dilation[1], jk, block_q)
    geometry = [problem.h, problem.w, problem.stride[0], problem.stride[1], problem.padding[0], problem.padding[1]]
    if config.block_n == 1:
        # One channel a program reads that channel's rows: copy the input into zero-bordered
        # planes first (one read and one write, small beside a large filter's work), so that
        # its row loads need no padding masks and start 16-byte aligned.
        tiles_q = cdiv(problem.out_w, block_q)
        rows = max(problem.h + problem.padding[0],
                   window(problem.out_h, problem.stride[0], problem.r, problem.dilation[0]))
        columns = cdiv(max(problem.w + problem.padding[1], (tiles_q - 1) * block_q * problem.stride[1] + jk), 16) * 16
        x = padded_planes(x, problem.c, problem.padding, rows, columns)
        geometry = [rows, columns, problem.stride[0], problem.stride[1], 0, 0]
    pointers, epilogue_strides, epilogue = _epilogue_arguments(problem, bias, residual, out)
    grid = (cdiv(problem.n * problem.out_h, config.block_m) * cdiv(problem.out_w, block_q),
            cdiv(problem.k, config.block_n))
    return launch(conv2d_depthwise_toeplitz_kernel, grid,
        x, banded, *pointers, problem.n, geometry[0], geometry[1], problem.out_h, problem.out_w, problem.k,
        *geometry[2:], problem.dilation[0], problem.dilation[1], *kernel_strides(x), *epilogue_strides,
        problem.r, problem.s, MULTIPLIER=problem.k // problem.c, **epilogue, **dot_constexprs(problem),
        BLOCK_M=config.block_m, BLOCK_Q=block_q, BLOCK_C=config.block_n, JK=jk,
        INT64=max(x.numel(), banded.numel()) >= INT32_LIMIT or needs_int64(problem), PLANES=config.block_n == 1,
        num_warps=config.num_warps, num_stages=config.num_stages,
    )


# depthwise_halo: its taps are unrolled at compile time (a filter of up to 7x7), and its halo
# and fp32 filter live in shared memory: at most this much a program (two or more an SM).
MAX_HALO_TAPS = 49
MAX_HALO_SHARED_BYTES = 96 * 1024
HALO_CHUNK = 16  # halo pixels a copy instruction batch (a power of two: shared-memory views)
# The filter's fp32 values a thread held in registers rather than shared memory: a 7x7 at 2
# channels a thread (an sm_90 compile: 128 registers, against 64 registers and 16 KB more
# shared memory a one-warp program with the filter in shared memory).
MAX_HALO_WEIGHT_REGISTERS = 98


@dataclass(frozen=True)
class HaloTiling:
    """depthwise_halo's tile, from a :class:`LaunchConfig`: ``block_m`` output pixels
    (``block_k`` of them wide), ``block_n`` channels, ``num_warps`` warps side by side over
    the channels (``vec`` channels a thread), ``unroll`` pixels of a row a step."""

    tile_h: int
    tile_w: int
    block_c: int
    vec: int
    unroll: int
    halo_pixels: int  # (tile_h-1)*U + (R-1)*dil_h + 1 rows by the same in columns
    chunk: int
    weight_registers: bool  # the fp32 filter in registers (R*S*vec of them a thread), else in shared memory

    def shared_bytes(self, problem: ConvProblem) -> int:
        """The halo and, after its pixels, the filter's taps and the bias a row each (in the input's
        dtype, whole copy chunks); the fp32 filter if it is not in registers."""
        params = problem.r * problem.s + int(problem.epilogue.has_bias)
        chunks = cdiv(self.halo_pixels + params, self.chunk)
        weights = 0 if self.weight_registers else problem.r * problem.s * self.block_c * 4
        return chunks * self.chunk * self.block_c * problem.itemsize + weights


def halo_pixel_tile(config: LaunchConfig | BackwardConfig, itemsize: int, kernel: str,
                    most_a_thread: int | None = None) -> tuple[int, int, int]:
    """(tile_h, tile_w, channels a thread) of a shared-memory halo kernel's ``config``:
    ``block_m`` pixels ``block_k`` wide (both powers of two), ``block_n`` channels over
    ``32 * num_warps`` threads side by side, at most one 16-byte copy wide a lane (and
    ``most_a_thread`` channels a thread if given); a ``ValueError`` naming the fields else."""
    tile_w = config.block_k
    if tile_w < 1 or config.block_m % tile_w or (tile_w & (tile_w - 1)) or (config.block_m & (config.block_m - 1)):
        raise ValueError(f"config block_m={config.block_m}, block_k={config.block_k}: {kernel}'s tile is "
                         "block_m pixels block_k wide, both powers of two")
    lanes = 32 * config.num_warps
    copy_vec = 16 // itemsize
    cap = most_a_thread or config.block_n
    if config.block_n % lanes or config.block_n // lanes > cap or config.block_n > 32 * copy_vec:
        each = f" (1 to {most_a_thread} each)" if most_a_thread else ""
        raise ValueError(f"config block_n={config.block_n}, num_warps={config.num_warps}: {kernel} spreads "
                         f"block_n channels over 32 * num_warps threads{each}, at most {32 * copy_vec}")
    return config.block_m // tile_w, tile_w, config.block_n // lanes


def halo_tiling(problem: ConvProblem, config: LaunchConfig) -> HaloTiling:
    """:class:`HaloTiling` of ``config``; a ``ValueError`` naming the field if the config cannot
    describe a depthwise_halo tile."""
    tile_h, tile_w, vec = halo_pixel_tile(config, problem.itemsize, "depthwise_halo", most_a_thread=8)
    rows = window(tile_h, problem.stride[0], problem.r, problem.dilation[0])
    columns = window(tile_w, problem.stride[1], problem.s, problem.dilation[1])
    halo = rows * columns
    # Pixels a step: 8 at one channel a thread (more independent accumulator chains, and ptxas
    # shares more shared-memory loads between neighbouring pixels: the 7x7 c96 hw56 row 74.2 ->
    # 45.2 us on an H200, session 14), else 4 (at 4 channels a thread 8 lost: 16.6 -> 24.4 us).
    unroll = min(8 if vec == 1 else 4, tile_w)
    return HaloTiling(tile_h, tile_w, config.block_n, vec, unroll,
                      halo, min(HALO_CHUNK, pow2_at_least(halo)),
                      problem.r * problem.s * vec <= MAX_HALO_WEIGHT_REGISTERS)


def depthwise_halo_unsupported_reason(problem: ConvProblem) -> str | None:
    """Why :func:`launch_depthwise_halo` cannot run ``problem`` (None if it can)."""
    if INTERPRET:
        return "it is a Gluon kernel (shared memory, cp.async): it does not run under Triton's interpreter"
    if not has_cp_async():
        return "it is a Gluon kernel built on cp.async: it needs an NVIDIA GPU of compute capability 8.0 or newer"
    reason = depthwise_unsupported_reason(problem)
    if reason is not None:
        return reason
    if problem.k != problem.c:
        return "it needs a channel multiplier of 1 (K == C)"
    if problem.layout != "nhwc":
        return "its halo copies take 16-byte channel segments: it needs channels_last"
    if problem.c % (16 // problem.itemsize):
        return f"its halo copies take 16-byte channel segments: it needs C a multiple of {16 // problem.itemsize}"
    if problem.r * problem.s > MAX_HALO_TAPS:
        return f"its taps are unrolled at compile time: filters of at most {MAX_HALO_TAPS} taps"
    smallest = halo_tiling(problem, LaunchConfig(block_m=16, block_n=32, block_k=4, num_warps=1))
    if smallest.shared_bytes(problem) > MAX_HALO_SHARED_BYTES:
        return (f"a 4x4-pixel tile's halo ({smallest.halo_pixels} pixels) and filter need more than "
                f"{MAX_HALO_SHARED_BYTES // 1024} KB of shared memory (stride {problem.stride}, dilation {problem.dilation})")
    return None


@functools.cache
def has_cp_async() -> bool:
    """Whether this process's GPU has cp.async (NVIDIA sm_80 and newer): asked once."""
    capability = nvidia_capability()
    return capability is not None and capability[0] >= 8


def launch_depthwise_halo(
    problem: ConvProblem,
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    residual: torch.Tensor | None,
    out: torch.Tensor,
    config: LaunchConfig,
):
    """Run :func:`conv2d_depthwise_halo_kernel`: programs of ``block_m`` output pixels (a
    ``block_k``-wide rectangle of one image) by ``block_n`` channels, each staging its input
    halo in shared memory. An input whose channels are not contiguous or whose pixel strides
    are not multiples of 16 bytes (a sliced view) runs on the 2D depthwise kernel instead, with
    the same result."""
    tiling = halo_tiling(problem, config)
    if tiling.shared_bytes(problem) > MAX_HALO_SHARED_BYTES:
        raise ValueError(f"config {config}: depthwise_halo's halo and filter need {tiling.shared_bytes(problem)} "
                         f"bytes of shared memory, more than {MAX_HALO_SHARED_BYTES}")
    if not describable(x.permute(0, 2, 3, 1), problem.itemsize):
        return launch_depthwise(problem, x, weight, bias, residual, out, config)
    # One vector of C weights a tap; the filter's taps and the bias are copied 16 bytes at a time.
    weight = aligned16(channel_minor_weight(weight))
    bias = aligned16(bias)
    pointers, epilogue_strides, epilogue = _epilogue_arguments(problem, bias, residual, out)
    grid = (problem.n * cdiv(problem.out_h, tiling.tile_h) * cdiv(problem.out_w, tiling.tile_w),
            cdiv(problem.c, tiling.block_c))
    return launch(conv2d_depthwise_halo_kernel, grid,
        x, weight, *pointers, problem.h, problem.w, problem.out_h, problem.out_w, problem.c,
        problem.padding[0], problem.padding[1], x.stride(0), x.stride(2), x.stride(3),
        weight.stride(2), weight.stride(3), *epilogue_strides,
        R=problem.r, S=problem.s, U=problem.stride[0], V=problem.stride[1],
        DIL_H=problem.dilation[0], DIL_W=problem.dilation[1], **epilogue,
        TILE_H=tiling.tile_h, TILE_W=tiling.tile_w, BLOCK_C=tiling.block_c, VEC=tiling.vec, UNROLL=tiling.unroll,
        CHUNK=tiling.chunk, WEIGHT_REGISTERS=tiling.weight_registers, COPY_VEC=16 // problem.itemsize,
        NUM_WARPS=config.num_warps, INT64=needs_int64(problem), num_warps=config.num_warps,
    )


# depthwise_window: a thread holds its channel's filter, one input row of its tile and the
# partial sums of R output rows in registers, and a loop step is unrolled (ROWS_A_STEP input
# rows x R*S taps x TILE_W columns of multiply-adds): filters of at most this many taps, steps
# of at most this many multiply-adds a thread.
MAX_WINDOW_TAPS = 49
MAX_WINDOW_STEP_MULTIPLY_ADDS = 4 * 8 * 49
# Tiles of the output's whole width are compiled for the image (depthwise_window._image: every
# tap on padding left out, each strip of output rows unrolled in its own branch): images of at
# most this many multiply-adds a thread over all strips (P*Q*R*S, padding taps counted: a 7x7
# filter over 7x7, a 3x3 over 14x14; a 7x7 over 14x14 spilled), and input rows loaded ahead of
# their use up to this many elements a thread; a thread holds its input rows whole, so inputs at
# most MAX_IMAGE_WIDTH columns wide.
MAX_IMAGE_MULTIPLY_ADDS = 49 * 49
MAX_IMAGE_WIDTH = 32
IMAGE_ROWS_AHEAD_ELEMENTS = 64


@dataclass(frozen=True)
class WindowTiling:
    """depthwise_window's tile, from a :class:`LaunchConfig`: a strip of ``block_m`` output
    rows by ``block_k`` output columns (any sizes) by ``block_n`` channels, one a thread
    (``block_n = 32 * num_warps``), ``num_stages`` input rows a loop step."""

    strip: int
    tile_w: int
    block_c: int
    rows_a_step: int
    image: tuple[int, ...] | None  # the kernel's IMAGE: the tile is the whole image (else None)
    inside: tuple[int, int, bool] | None  # the kernel's INSIDE for strips of tiles (window_inside; else None)


def window_tiling(problem: ConvProblem, config: LaunchConfig) -> WindowTiling:
    """:class:`WindowTiling` of ``config``; a ``ValueError`` naming the fields if ``config``
    cannot describe a depthwise_window tile of ``problem``."""
    strip, tile_w, step = config.block_m, config.block_k, config.num_stages
    if min(strip, tile_w, step) < 1:
        raise ValueError(f"config block_m={strip}, block_k={tile_w}, num_stages={step}: depthwise_window's "
                         "tile is a strip of block_m output rows by block_k columns, num_stages input rows a "
                         "step, at least one of each")
    if config.block_n != 32 * config.num_warps:
        raise ValueError(f"config block_n={config.block_n}, num_warps={config.num_warps}: depthwise_window "
                         "takes one channel a thread (block_n = 32 * num_warps)")
    image = None
    if tile_w >= problem.out_w and image_fits(problem):
        ahead = min(max(IMAGE_ROWS_AHEAD_ELEMENTS // problem.w, 1), problem.h)
        image = (problem.h, problem.w, problem.out_h, problem.out_w, problem.padding[0], problem.padding[1],
                 pow2_at_least(problem.w), ahead)
    elif not window_strips(problem):
        raise ValueError(f"config block_m={strip}, block_k={tile_w}: depthwise_window streams strips of input "
                         f"rows only at row stride and dilation 1 (stride {problem.stride}, dilation "
                         f"{problem.dilation}); here it needs tiles of the output's whole width "
                         f"(block_k >= {problem.out_w})")
    elif strip < problem.r - 1:
        raise ValueError(f"config block_m={strip}: depthwise_window's strips ramp up and down over R - 1 = "
                         f"{problem.r - 1} input rows: they need at least that many output rows")
    work = step * tile_w * problem.r * problem.s
    if image is None and work > MAX_WINDOW_STEP_MULTIPLY_ADDS:
        raise ValueError(f"config block_k={tile_w}, num_stages={step}: {step} input rows of {tile_w} columns "
                         f"of a {problem.r}x{problem.s} filter unroll {work} multiply-adds a thread, more than "
                         f"depthwise_window's {MAX_WINDOW_STEP_MULTIPLY_ADDS}")
    inside = None if image else window_inside(problem, strip, tile_w)
    return WindowTiling(strip, tile_w, config.block_n, step, image, inside)


def window_grid(problem: ConvProblem, strip: int, tile_w: int, block_c: int) -> tuple[int, int]:
    """depthwise_window's grid: (image, strip, tile column) programs by channel blocks."""
    return problem.n * cdiv(problem.out_h, strip) * cdiv(problem.out_w, tile_w), cdiv(problem.k, block_c)


def window_strips(problem: ConvProblem) -> bool:
    """depthwise_window's strips of tiles stream input rows into the output rows they touch:
    they need a row stride and row dilation of 1 (tiles compiled for the image do not)."""
    return problem.stride[0] == 1 and problem.dilation[0] == 1


def window_inside(problem: ConvProblem, strip: int, tile_w: int) -> tuple[int, int, bool]:
    """depthwise_window's INSIDE for strips of ``strip`` output rows by ``tile_w`` columns:
    (COL_LO, COL_HI, CLAMP). Window columns COL_LO .. COL_HI - 1 (input column q0*V - pad_w + c
    of a tile at output column q0) are inside the input in every tile: past the left padding,
    and short of W in the last tile. CLAMP: every strip's steady input rows (R - 1 .. strip - 1
    of its own) are inside the input, so the steady steps load rows without a row mask (the ramp
    down's first row, which the last of them loads, clamped into the input and skipped outside)."""
    win_w = window(tile_w, problem.stride[1], problem.s, problem.dilation[1])
    last_q0 = (cdiv(problem.out_w, tile_w) - 1) * tile_w
    col_lo = min(problem.padding[1], win_w)
    col_hi = max(col_lo, min(win_w, problem.w + problem.padding[1] - last_q0 * problem.stride[1]))
    last_p0 = (cdiv(problem.out_h, strip) - 1) * strip
    clamp = strip < problem.r or (problem.padding[0] <= problem.r - 1
                                  and last_p0 + strip - 1 - problem.padding[0] < problem.h)
    return col_lo, col_hi, clamp


def image_fits(problem: ConvProblem) -> bool:
    """depthwise_window's tiles of the output's whole width are compiled for the image (at
    most :data:`MAX_IMAGE_MULTIPLY_ADDS` multiply-adds a thread, padding taps counted, over
    inputs at most :data:`MAX_IMAGE_WIDTH` wide)."""
    return (problem.out_h * problem.out_w * problem.r * problem.s <= MAX_IMAGE_MULTIPLY_ADDS
            and problem.w <= MAX_IMAGE_WIDTH)


def depthwise_window_unsupported_reason(problem: ConvProblem) -> str | None:
    """Why :func:`launch_depthwise_window` cannot run ``problem`` (None if it can)."""
    reason = depthwise_unsupported_reason(problem)
    if reason is not None:
        return reason
    if not window_strips(problem) and not image_fits(problem):
        return (f"it streams input rows into the output rows they touch: it needs a row stride and row "
                f"dilation of 1 (stride {problem.stride}, dilation {problem.dilation}) unless its tiles span the "
                f"output's width, compiled for the image (at most {MAX_IMAGE_MULTIPLY_ADDS} multiply-adds, "
                f"inputs at most {MAX_IMAGE_WIDTH} wide: {problem.out_h}x{problem.out_w} outputs of a "
                f"{problem.r}x{problem.s} filter over {problem.w} columns)")
    if problem.r * problem.s > MAX_WINDOW_TAPS:
        return (f"it holds the filter in registers: filters of at most {MAX_WINDOW_TAPS} taps "
                f"(this one {problem.r}x{problem.s})")
    if problem.k > MAX_GRID_Y * 32:
        return f"it runs a grid row per 32 output channels: it needs at most {MAX_GRID_Y * 32} of them"
    return None


def launch_depthwise_window(
    problem: ConvProblem,
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    residual: torch.Tensor | None,
    out: torch.Tensor,
    config: LaunchConfig,
):
    """Run :func:`conv2d_depthwise_window_kernel`: programs of a ``block_m``-row strip of
    ``block_k`` output columns of one image by ``block_n`` channels (one a thread), streaming
    the strip's input rows through registers ``num_stages`` at a time."""
    reason = depthwise_window_unsupported_reason(problem)
    if reason is not None:
        raise ValueError(f"depthwise_window cannot run {problem.describe()}: {reason}")
    tiling = window_tiling(problem, config)
    weight = channel_minor_weight(weight)  # one vector of K weights a tap
    pointers, epilogue_strides, epilogue = _epilogue_arguments(problem, bias, residual, out)
    xs = kernel_strides(x)
    win_w = window(tiling.tile_w, problem.stride[1], problem.s, problem.dilation[1])
    grid = window_grid(problem, tiling.strip, tiling.tile_w, tiling.block_c)
    return launch(conv2d_depthwise_window_kernel, grid,
        x, weight, *pointers, problem.h, problem.w, problem.out_h, problem.out_w, problem.k,
        problem.padding[0], problem.padding[1], xs[0], xs[1], xs[2],
        weight.stride(0), *epilogue_strides,
        X_STRIDE_W=xs[3], W_STRIDE_R=weight.stride(2), W_STRIDE_S=weight.stride(3), R=problem.r, S=problem.s,
        U=problem.stride[0], V=problem.stride[1], DIL_H=problem.dilation[0], DIL_W=problem.dilation[1],
        MULTIPLIER=problem.k // problem.c, **epilogue,
        STRIP=tiling.strip, TILE_W=tiling.tile_w, ROWS_A_STEP=tiling.rows_a_step, BLOCK_C=tiling.block_c,
        WIN_W=win_w, WIN_PAD=pow2_at_least(win_w),
        OUT_PAD=pow2_at_least(tiling.tile_w), TAPS_PAD=pow2_at_least(problem.r * problem.s),
        EVEN_K=problem.k % tiling.block_c == 0, INT64=needs_int64(problem), IMAGE=tiling.image,
        INSIDE=tiling.inside,
        num_warps=config.num_warps, num_stages=1,
    )


# depthwise_plane: a channel's whole input and output planes are one GEMM's reduction and N,
# each rounded up to a power of two; past this many pixels T (hw x pq a channel) outgrows a
# tile and the bytes of the input it replaces.
MAX_PLANE_PIXELS = 64


def plane_sizes(problem: ConvProblem) -> tuple[int, int]:
    """(HW_PAD, PQ_PAD) of :mod:`.depthwise_plane`: H*W and P*Q rounded up to powers of two
    of at least 16 (a tensor-core K-slice and N tile)."""
    return pow2_at_least(problem.h * problem.w, 16), pow2_at_least(problem.out_h * problem.out_w, 16)


def depthwise_plane_unsupported_reason(problem: ConvProblem) -> str | None:
    """Why :func:`launch_depthwise_plane` cannot run ``problem`` (None if it can)."""
    reason = depthwise_unsupported_reason(problem)
    if reason is not None:
        return reason
    if max(problem.h * problem.w, problem.out_h * problem.out_w) > MAX_PLANE_PIXELS:
        return (f"its planes have {problem.h * problem.w} input and {problem.out_h * problem.out_w} output pixels: "
                f"it maps whole planes of at most {MAX_PLANE_PIXELS}")
    if problem.k > MAX_GRID_Y:
        return f"it runs a grid row per output channel: it needs at most {MAX_GRID_Y} of them"
    return None


def launch_depthwise_plane(
    problem: ConvProblem,
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    residual: torch.Tensor | None,
    out: torch.Tensor,
    config: LaunchConfig,
):
    """Run :func:`conv2d_depthwise_plane_kernel`: programs of ``config.block_m`` images by
    ``config.block_n`` output channels, each channel's output planes one GEMM of its input
    planes with the channel's plane map."""
    hw_pad, pq_pad = plane_sizes(problem)
    maps = plane_weight(weight, (problem.h, problem.w), (problem.out_h, problem.out_w), problem.stride,
                        problem.padding, problem.dilation, hw_pad, pq_pad)
    args, geometry, constexprs = _shared_arguments(problem, x, weight, bias, residual, out)
    x_arg, w_arg, *pointers = args[:5]
    grid = (cdiv(problem.n, config.block_m), cdiv(problem.k, config.block_n))
    return launch(conv2d_depthwise_plane_kernel, grid,
        x_arg, maps, w_arg, *pointers, *args[5:], problem.k, *geometry,
        **constexprs, MULTIPLIER=problem.k // problem.c, BLOCK_N=config.block_m, BLOCK_C=config.block_n,
        HW_PAD=hw_pad, PQ_PAD=pq_pad, **dot_constexprs(problem),
        num_warps=config.num_warps, num_stages=config.num_stages,
    )


def group_pack_factor(problem: ConvProblem) -> int:
    """How many groups :func:`launch_grouped_gemm` merges: the largest divisor of
    ``groups`` that keeps the merged group within 32 input and 64 output channels
    (one tensor-core K-slice, one N tile); the zeros it adds cost FLOPs, not bytes."""
    return _largest_pack(problem, 32, 64)


def _largest_pack(problem: ConvProblem, max_c: int, max_k: int) -> int:
    """The largest divisor of ``groups`` whose merged group keeps within ``max_c`` input and
    ``max_k`` output channels (1 where no merge does)."""
    best = 1
    for pack in range(2, problem.groups + 1):
        if problem.groups % pack:
            continue
        if problem.c_per_group * pack > max_c or problem.k_per_group * pack > max_k:
            break
        best = pack
    return best


def launch_grouped_gemm(
    problem: ConvProblem,
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    residual: torch.Tensor | None,
    out: torch.Tensor,
    config: LaunchConfig,
):
    """Grouped convolution as an implicit GEMM over merged groups with a block-diagonal
    weight (see :func:`tileconv.kernels.weights.block_diagonal_weight`)."""
    pack = group_pack_factor(problem)
    merged = replace(problem, groups=problem.groups // pack)
    return launch_implicit_gemm(
        merged, x, block_diagonal_weight(weight, problem.groups, pack), bias, residual, out, config,
        sub_groups=(problem.c_per_group, problem.k_per_group),
    )


# grouped_gemm_ws merges groups up to this many bytes of input channels: each gathered pixel row
# one 128-byte line (a group's 16 fp16 channels alone: 32 bytes, a quarter of the line the copy
# visits; ResNeXt's c512 hw28/2 on an H200, session 54: 20.7 us merged four to a 64-channel
# group, 34.2 one group a tile).
GROUPED_WS_MERGED_BYTES = 128


def grouped_ws_pack(problem: ConvProblem) -> int:
    """How many groups :func:`launch_grouped_gemm_ws` merges into one: the most that divide
    ``groups`` within :data:`GROUPED_WS_MERGED_BYTES` of input channels and 256 output channels
    (one wgmma's width)."""
    return _largest_pack(problem, GROUPED_WS_MERGED_BYTES // problem.itemsize, 256)


def grouped_ws_merged(problem: ConvProblem) -> ConvProblem:
    """The problem :func:`launch_grouped_gemm_ws` runs: ``problem`` with :func:`grouped_ws_pack`
    groups merged into each."""
    return replace(problem, groups=problem.groups // grouped_ws_pack(problem))


def grouped_ws_sub_groups(problem: ConvProblem) -> tuple[int, int]:
    """(C/g, K/g) of the groups merged into each of :func:`grouped_ws_merged`'s, (0, 0) where none merge."""
    return (problem.c_per_group, problem.k_per_group) if grouped_ws_pack(problem) > 1 else (0, 0)


def grouped_gemm_ws_unsupported_reason(problem: ConvProblem) -> str | None:
    """Why :func:`launch_grouped_gemm_ws` cannot run ``problem`` (None if it can)."""
    return _merged_groups_reason(problem, _ws_gather_reason)


def _merged_groups_reason(problem: ConvProblem, kernel_reason) -> str | None:
    """grouped_gemm_ws's and grouped_frame's support: a Hopper GPU, groups to merge, and
    ``kernel_reason(merged, grouped=True)`` of the merged problem (:func:`grouped_ws_merged`)."""
    if (reason := _ws_machine_reason(problem)) is not None:
        return reason
    if problem.groups == 1:
        return "it merges groups, and this problem has groups=1"
    return kernel_reason(grouped_ws_merged(problem), grouped=True)


def launch_grouped_gemm_ws(
    problem: ConvProblem,
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    residual: torch.Tensor | None,
    out: torch.Tensor,
    config: LaunchConfig,
):
    """Grouped convolution on implicit_gemm_ws's kernel (Hopper, Gluon), :func:`grouped_ws_pack`
    groups merged into one with a block-diagonal weight, one merged group a tile
    (``config.block_n`` = its K/groups): the copies gather whole 128-byte pixel rows where a thin
    group's are 32 bytes, and a tile whose input holds a NaN or an infinity is redone group by
    group (the zeros between groups would spread it)."""
    merged, merged_weight, sub_groups = _ws_merge(problem, weight)
    return launch_implicit_gemm_ws(merged, x, merged_weight, bias, residual, out, config, sub_groups=sub_groups)


def _ws_merge(problem: ConvProblem, weight: torch.Tensor) -> tuple[ConvProblem, torch.Tensor, tuple[int, int]]:
    """grouped_gemm_ws's and grouped_frame's merge of ``problem``: the merged problem
    (:func:`grouped_ws_merged`), its block-diagonal weight and the merged groups' (C/g, K/g)
    (``sub_groups``; (0, 0) where nothing merges)."""
    merged = grouped_ws_merged(problem)
    merged_weight = block_diagonal_weight(weight, problem.groups, problem.groups // merged.groups)
    return merged, merged_weight, grouped_ws_sub_groups(problem)


def grouped_frame_unsupported_reason(problem: ConvProblem) -> str | None:
    """Why :func:`launch_grouped_frame` cannot run ``problem`` (None if it can)."""
    return _merged_groups_reason(problem, _frame_reason)


def launch_grouped_frame(
    problem: ConvProblem,
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    residual: torch.Tensor | None,
    out: torch.Tensor,
    config: LaunchConfig,
):
    """Grouped convolution on implicit_gemm_frame's kernel (Hopper, Gluon): grouped_gemm_ws's merge
    (:func:`grouped_ws_merged`: 128 bytes of input channels, a block-diagonal weight), one merged
    group a tile (``config.block_n`` = its K/groups), the group's channels copied as frames by TMA
    once a tile and every tap a view of them, where grouped_gemm_ws gathers each tap's rows; a tile
    whose input holds a NaN or an infinity is redone group by group."""
    merged, merged_weight, sub_groups = _ws_merge(problem, weight)
    return launch_implicit_gemm_frame(merged, x, merged_weight, bias, residual, out, config, sub_groups=sub_groups)


# grouped_halo: the taps are unrolled at compile time, and the staged frame rows, the filter and
# (where groups are merged) the non-finite redo's buffer live in shared memory.
GROUPED_HALO_MAX_TAPS = 49
GROUPED_HALO_MAX_SHARED_BYTES = 96 * 1024
GROUPED_HALO_CHUNK = 64  # frame rows a copy batch at least (a power of two: shared-memory views)
# The filter's B operands (each warp holds all of them) stay in registers across a program's items
# up to this many 32-bit registers a thread (a 3x3 of 16x16 blocks: 36), else each tap is re-read
# from shared memory every item.
GROUPED_HALO_WEIGHT_REGISTERS = 40
GROUPED_HALO_WIDTHS = (16, 32)  # merged input channels a program (mma_v2's K: 16-bit operands, 16 a step)
GROUPED_HALO_WALKERS = 4  # walking programs an SM (the heuristics' persistent=4)


@dataclass(frozen=True)
class GroupedHaloTiling:
    """grouped_halo's tile, from a :class:`LaunchConfig`: ``block_m`` frame rows (outputs of
    the padded frame's phases, see :mod:`.grouped_halo`) by ``pack`` merged groups (``block_n``
    input channels: pack * C/g); ``phase_rows`` rows staged of each of the stride's phase frames
    (``block_m`` plus the taps' reach in it), ``rows`` in all (a whole number of ``chunk``s)."""

    block_m: int
    pack: int
    cm: int
    km: int
    frame_width: int
    phase_rows: int
    rows: int
    chunk: int

    planar: bool

    @property
    def plane_rows(self) -> int:
        """Rows of each 8-channel plane of a planar frame: both buffers, a power of two (the
        planes' offset is one bit of the shared layout, see :func:`.grouped_halo.frame_layout`);
        0 for a packed frame."""
        return pow2_at_least(2 * self.rows) if self.planar else 0

    def shared_bytes(self, problem: ConvProblem) -> int:
        """The staged frame (both buffers) and the filter."""
        staged = (self.plane_rows or 2 * self.rows) * self.cm * problem.itemsize
        return staged + problem.r * problem.s * self.cm * self.km * problem.itemsize

    def fits(self, problem: ConvProblem) -> bool:
        """Whether the tile is within the kernel's shared-memory bound."""
        return self.shared_bytes(problem) <= GROUPED_HALO_MAX_SHARED_BYTES


def grouped_halo_frame_width(problem: ConvProblem) -> int:
    """Columns of each phase frame that grouped_halo stages: Q + ((S-1)*dil_w) // stride_w, an
    output row plus its taps' reach in the phase. At stride 1 the one phase is the zero-padded
    input, W + pad_left + pad_right wide."""
    return problem.out_w + (problem.s - 1) * problem.dilation[1] // problem.stride[1]


@functools.cache
def grouped_halo_tiling(problem: ConvProblem, config: LaunchConfig) -> GroupedHaloTiling:
    """:class:`GroupedHaloTiling` of ``config``; a ``ValueError`` naming the field if it cannot
    describe a grouped_halo tile of ``problem``."""
    c_per_group, k_per_group = problem.c_per_group, problem.k_per_group
    if config.block_n not in GROUPED_HALO_WIDTHS or config.block_n % c_per_group:
        raise ValueError(f"config block_n={config.block_n}: grouped_halo merges groups of C/g = {c_per_group} "
                         f"channels into block_n input channels, one of {GROUPED_HALO_WIDTHS}")
    pack = config.block_n // c_per_group
    if problem.groups % pack:
        raise ValueError(f"config block_n={config.block_n}: {pack} merged groups do not divide groups={problem.groups}")
    if config.block_m & (config.block_m - 1) or config.block_m < 16 * config.num_warps:  # mma_v2: 16 rows a warp
        raise ValueError(f"config block_m={config.block_m}, num_warps={config.num_warps}: grouped_halo's "
                         "block_m is a power of two, at least 16 rows a warp")
    frame_width = grouped_halo_frame_width(problem)
    (u, v), (dil_h, dil_w) = problem.stride, problem.dilation
    reach = (problem.r - 1) * dil_h // u * frame_width + (problem.s - 1) * dil_w // v
    # A copy batch: at least the rows one pass of the warps' 16-byte copies covers.
    chunk = max(GROUPED_HALO_CHUNK, 32 * config.num_warps * (16 // problem.itemsize) // config.block_n)
    phase_rows = config.block_m + reach
    rows = cdiv(u * v * phase_rows, chunk) * chunk
    packed = GroupedHaloTiling(config.block_m, pack, config.block_n, pack * k_per_group, frame_width, phase_rows,
                               rows, chunk, planar=False)
    planar = replace(packed, planar=True)
    # Planar (no bank conflicts) where its power-of-two planes cost no program an SM: session 29
    # (H200, probe_grouped.py) measured planar 1.03x-1.06x on the stride-1 ResNeXt rows (rows
    # 192-256), and 0.79x-0.84x on the stride-2 ones (576-640 rows: 70 KB against 45, three
    # programs an SM for four).
    def resident(tiling):
        return min(GROUPED_HALO_WALKERS, programs_fitting(DEFAULT_SM_SHARED_BYTES, tiling.shared_bytes(problem)))

    return planar if planar.fits(problem) and resident(planar) >= resident(packed) else packed


def grouped_halo_unsupported_reason(problem: ConvProblem) -> str | None:
    """Why :func:`launch_grouped_halo` cannot run ``problem`` (None if it can)."""
    if INTERPRET:
        return "it is a Gluon kernel (shared memory, cp.async): it does not run under Triton's interpreter"
    if not has_cp_async():
        return "it is a Gluon kernel built on cp.async: it needs an NVIDIA GPU of compute capability 8.0 or newer"
    if problem.groups == 1 or problem.c_per_group == 1:
        return "it merges thin groups (2 to 32 channels each): it needs groups > 1 and C/g > 1 (depthwise has its own kernels)"
    if problem.layout != "nhwc":
        return "its copies take 16-byte channel segments: it needs channels_last"
    if problem.itemsize != 2:
        return "its products are mma_v2's 16-bit ones: it needs float16 or bfloat16"
    c_per_group, k_per_group = problem.c_per_group, problem.k_per_group
    if c_per_group > max(GROUPED_HALO_WIDTHS) or c_per_group & (c_per_group - 1):
        return f"it merges groups into {GROUPED_HALO_WIDTHS} input channels: C/g = {c_per_group} must be a power of two up to 32"
    if k_per_group & (k_per_group - 1):
        return f"its output tile is K/g * merged groups wide: K/g = {k_per_group} must be a power of two"
    if problem.r * problem.s > GROUPED_HALO_MAX_TAPS:
        return f"its taps are unrolled at compile time: filters of at most {GROUPED_HALO_MAX_TAPS} taps"
    try:
        tiling = grouped_halo_tiling(problem, grouped_halo_smallest(problem))
    except ValueError as error:
        return str(error)
    if tiling.km < 8 or tiling.km > 64:
        return f"its output tile is K/g * merged groups = {tiling.km} channels: it needs 8 to 64"
    if not tiling.fits(problem):
        return (f"a {tiling.block_m}-row tile's staged frame ({tiling.rows} rows) and filter need more than "
                f"{GROUPED_HALO_MAX_SHARED_BYTES // 1024} KB of shared memory (stride {problem.stride}, "
                f"dilation {problem.dilation})")
    return None


def grouped_halo_smallest(problem: ConvProblem) -> LaunchConfig:
    """grouped_halo's smallest tile for ``problem``: 64 frame rows, the fewest groups merged."""
    width = next((w for w in GROUPED_HALO_WIDTHS if w >= problem.c_per_group and problem.groups % (w // problem.c_per_group) == 0),
                 GROUPED_HALO_WIDTHS[-1])
    return LaunchConfig(block_m=64, block_n=width, num_warps=4)


def launch_grouped_halo(
    problem: ConvProblem,
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    residual: torch.Tensor | None,
    out: torch.Tensor,
    config: LaunchConfig,
):
    """Run :func:`conv2d_grouped_halo_kernel`: programs of ``block_m`` consecutive frame rows of
    one image by ``block_n`` merged input channels, each staging its rows in shared memory once.
    An input whose channels are not contiguous or whose pixel strides are not multiples of 16
    bytes (a sliced view) is copied to channels_last first."""
    tiling = grouped_halo_tiling(problem, config)
    shared = tiling.shared_bytes(problem)
    if not tiling.fits(problem):
        raise ValueError(f"config {config}: grouped_halo's staged rows and filter need {shared} "
                         f"bytes of shared memory, more than {GROUPED_HALO_MAX_SHARED_BYTES}")
    if not describable(x.permute(0, 2, 3, 1), problem.itemsize):
        x = x.contiguous(memory_format=torch.channels_last)
    taps = grouped_tap_weight(weight, problem.groups, tiling.pack)
    pointers, epilogue_strides, epilogue = _epilogue_arguments(problem, bias, residual, out)
    group_blocks = problem.groups // tiling.pack
    items = problem.n * cdiv(problem.out_h * tiling.frame_width, tiling.block_m)
    # persistent=k: k programs an SM walk the items (each its merged group's filter loaded once,
    # the next item's rows copied while this one's taps run), no more than fit an SM's shared
    # memory at once (a program that waits for a free SM only adds a tail); 0: one item a program.
    # (A whole number of programs a merged group: the grid is a multiple of group_blocks.)
    walking = min(config.persistent, programs_resident(x.device, shared))
    walkers = max(1, sm_count(x.device) * walking // group_blocks) if config.persistent else items
    grid = (group_blocks * max(1, min(items, walkers)),)
    return launch(conv2d_grouped_halo_kernel, grid,
        x, taps, *pointers, problem.h, problem.w, problem.out_h, problem.out_w, group_blocks,
        items, problem.padding[0], problem.padding[1], x.stride(0), x.stride(2), x.stride(3),
        *epilogue_strides,
        R=problem.r, S=problem.s, U=problem.stride[0], V=problem.stride[1], FWP=tiling.frame_width,
        DIL_H=problem.dilation[0], DIL_W=problem.dilation[1], **epilogue,
        SUB_C=problem.c_per_group, SUB_K=problem.k_per_group, PACK=tiling.pack, BLOCK_M=tiling.block_m,
        PR=tiling.phase_rows, ROWS=tiling.rows, PLANE_ROWS=tiling.plane_rows, CHUNK=tiling.chunk, COPY_VEC=16 // problem.itemsize, NUM_WARPS=config.num_warps,
        WEIGHT_REGISTERS=problem.r * problem.s * tiling.cm * tiling.km <= GROUPED_HALO_WEIGHT_REGISTERS * 32 * 2,
        INT64=max(x.numel(), out.numel()) >= INT32_LIMIT or needs_int64(problem),
        num_warps=config.num_warps,
    )


# The unrolled input costs unrolled_channels / C x Q / W times the input: worth it for few
# channels only (each tap's slice then grows from C to a 16-byte-aligned run).
IM2ROW_MAX_CHANNELS = 64
IM2ROW_COPY_ROWS = 128  # xr rows (input row, output column) per program of the copy


def im2row_unsupported_reason(problem: ConvProblem) -> str | None:
    """Why :func:`launch_im2row` cannot run ``problem`` (None if it can)."""
    if problem.groups != 1:
        return "it unrolls whole filter rows into channels: it needs groups=1"
    if problem.s == 1:
        return "it unrolls filter columns: it needs a filter wider than 1"
    if problem.unrolled_channels > IM2ROW_MAX_CHANNELS:
        return (f"its copy of the input holds S * C rounded up to 16 = {problem.unrolled_channels} channels a "
                f"pixel: it needs at most {IM2ROW_MAX_CHANNELS} (few input channels)")
    return None


def launch_im2row(
    problem: ConvProblem,
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    residual: torch.Tensor | None,
    out: torch.Tensor,
    config: LaunchConfig,
):
    """Unroll the filter columns into channels (:func:`unroll_columns_kernel`, into scratch),
    then run the implicit GEMM on :meth:`ConvProblem.columns_as_channels` with ``config``
    (its tile, for the unrolled problem). Returns the GEMM's compiled kernel."""
    if config.fuse_sc:
        raise ValueError("config fuse_sc=1: im2row has unrolled the filter columns already (use fuse_sc=0)")
    unrolled = problem.columns_as_channels()
    xr = _unroll_columns(problem, unrolled, x)
    return launch_implicit_gemm(unrolled, xr.permute(0, 3, 1, 2), unrolled_columns_weight(weight, unrolled.c),
                                bias, residual, out, config)


def _unroll_columns(problem: ConvProblem, unrolled: ConvProblem, x: torch.Tensor) -> torch.Tensor:
    """im2row's copy (:func:`unroll_columns_kernel`) into scratch: xr[n, h, q, j], ``unrolled.c``
    values a pixel (S*C of them the filter row's, zeros after); ``unrolled``: ``problem``'s
    :meth:`~ConvProblem.columns_as_channels`."""
    rows = problem.n * problem.h * problem.out_w
    channels = unrolled.c
    xr = scratch((problem.n, problem.h, problem.out_w, channels), x.dtype, x.device)
    launch(unroll_columns_kernel, (cdiv(rows, IM2ROW_COPY_ROWS),),
           x, xr, rows, problem.h, problem.w, problem.out_w,
           problem.stride[1], problem.padding[1], problem.dilation[1], *kernel_strides(x),
           C=problem.c, S=problem.s, CHANNELS=channels, BLOCK_ROWS=IM2ROW_COPY_ROWS,
           BLOCK_J=1 << (channels - 1).bit_length(), INT64=needs_int64(unrolled),
           SIGNAL_DEPENDENTS=False, num_warps=4)
    return xr


def im2row_ws_unsupported_reason(problem: ConvProblem) -> str | None:
    """Why :func:`launch_im2row_ws` cannot run ``problem`` (None if it can)."""
    if (reason := im2row_unsupported_reason(problem)) is not None:
        return reason
    return implicit_gemm_ws_unsupported_reason(problem.columns_as_channels())


def launch_im2row_ws(
    problem: ConvProblem,
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    residual: torch.Tensor | None,
    out: torch.Tensor,
    config: LaunchConfig,
):
    """im2row on Hopper: the same copy (:func:`unroll_columns_kernel`), then implicit_gemm_ws
    (warp-specialized, persistent) runs the R x 1 convolution over it with ``config``, that
    kernel's config for :meth:`ConvProblem.columns_as_channels` (``config.resident``: the whole
    unrolled weight, R x unrolled channels x block_n, held in shared memory by every program:
    the ResNet-50 stem's GEMM 62 -> 50 us on an H200, session 51, against im2row's 56)."""
    unrolled = problem.columns_as_channels()
    xr = _unroll_columns(problem, unrolled, x)
    return launch_implicit_gemm_ws(unrolled, xr.permute(0, 3, 1, 2), unrolled_columns_weight(weight, unrolled.c),
                                   bias, residual, out, config)


STAGED_COPY_TILE = (64, 64)  # to_channels_last_kernel's (pixels, channels) tile


def staged_nhwc_unsupported_reason(problem: ConvProblem) -> str | None:
    """Why :func:`launch_staged_nhwc` cannot run ``problem`` (None if it can)."""
    if problem.layout == "nhwc":
        return "it copies a non-channels_last input into channels_last first: this input is channels_last already"
    if problem.n > MAX_GRID_Y:
        return f"its copy runs one grid plane per image: it needs a batch of at most {MAX_GRID_Y}"
    return None


def launch_staged_nhwc(
    problem: ConvProblem,
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    residual: torch.Tensor | None,
    out: torch.Tensor,
    config: LaunchConfig,
):
    """Copy ``x`` into channels_last scratch (:func:`to_channels_last_kernel`), then run the
    implicit GEMM of :meth:`ConvProblem.staged_channels_last` on the copy with ``config``;
    ``out`` keeps its layout. Returns the GEMM's compiled kernel."""
    staged = problem.staged_channels_last()
    channels = problem.staged_channels
    copy = scratch((problem.n, problem.h, problem.w, channels), x.dtype, x.device)
    stride_n, stride_c, stride_h, stride_w = kernel_strides(x)
    block_p, block_c = STAGED_COPY_TILE
    launch(to_channels_last_kernel, (cdiv(problem.h * problem.w, block_p), cdiv(problem.c, block_c), problem.n),
           x, copy, problem.c, problem.h * problem.w, problem.w, stride_n, stride_c, stride_h, stride_w, channels,
           FLAT=_pixels_flat(x), BLOCK_P=block_p, BLOCK_C=block_c,
           INT64=needs_int64(problem) or copy.numel() >= INT32_LIMIT, num_warps=4)
    view = copy[..., : problem.c].permute(0, 3, 1, 2)  # [N, C, H, W] with channels_last strides
    return launch_implicit_gemm(staged, view, weight, bias, residual, out, config)


# dense_toeplitz: a band's rows are the J*C input values a block of output columns reads
# along one filter row. Past this many for a single output column the filter row is too
# wide (or the channels too many) for the band to be anything but zeros.
MAX_DENSE_TOEPLITZ_VALUES = 1024
MAX_DENSE_TOEPLITZ_COLUMNS = 256  # the GEMM's N (output columns x channels): an fp32 accumulator tile
DENSE_TOEPLITZ_COPY_TILE = (4, 256)  # to_padded_rows_kernel's (rows, values) tile


@dataclass(frozen=True)
class DenseToeplitzTiling:
    """How :mod:`.dense_toeplitz` cuts ``problem`` for a config: the one place its sizes are derived."""

    block_q: int  # output columns per program (config.block_k)
    block_kc: int  # output channels per program (config.block_n, at most K)
    block_nn: int  # the GEMM's N: block_q * block_kc rounded up to a power of two (>= 16)
    span: int  # J: input columns block_q output columns read along a filter row
    block_t: int  # reduction values per step
    t_steps: int  # steps per filter row: block_t * t_steps >= J * C
    rows: int  # HP: rows of the zero-bordered copy, (P-1)*U + (R-1)*dil_h + 1
    row_len: int  # values in a row of the copy: the last column block's reach, rounded up to 16
    tiles_q: int
    k_blocks: int

    @property
    def t_len(self) -> int:
        return self.block_t * self.t_steps


def dense_toeplitz_tiling(problem: ConvProblem, config: LaunchConfig) -> DenseToeplitzTiling:
    """The tiling of ``problem`` that ``config`` asks for (``block_m`` output rows, ``block_n``
    output channels, ``block_k`` output columns a program). The reduction step is the deepest
    of 64/32/16 values (32/16 for float32) that pads J*C by at most 8 more than 16 would."""
    block_q = config.block_k
    block_kc = min(config.block_n, problem.k)
    block_nn = pow2_at_least(block_q * block_kc, 16)
    span = columns_read(problem, block_q)
    values = span * problem.c
    least = cdiv(values, 16) * 16
    block_t = next(t for t in ((64, 32, 16) if problem.itemsize == 2 else (32, 16)) if cdiv(values, t) * t <= least + 8)
    t_steps = cdiv(values, block_t)
    tiles_q = cdiv(problem.out_w, block_q)
    rows = (problem.out_h - 1) * problem.stride[0] + (problem.r - 1) * problem.dilation[0] + 1
    reach = (tiles_q - 1) * block_q * problem.stride[1] * problem.c + t_steps * block_t
    return DenseToeplitzTiling(block_q=block_q, block_kc=block_kc, block_nn=block_nn, span=span, block_t=block_t,
                               t_steps=t_steps, rows=rows, row_len=cdiv(reach, 16) * 16, tiles_q=tiles_q,
                               k_blocks=cdiv(problem.k, block_kc))


def dense_toeplitz_unsupported_reason(problem: ConvProblem) -> str | None:
    """Why :func:`launch_dense_toeplitz` cannot run ``problem`` (None if it can)."""
    if problem.groups != 1:
        return "its bands mix all the input channels of a row segment: it needs groups=1"
    if problem.s == 1:
        return "it bands filter columns: it needs a filter wider than 1"
    values = columns_read(problem, 1) * problem.c
    if values > MAX_DENSE_TOEPLITZ_VALUES:
        return (f"one output column reads {values} input values along a filter row (C * dilated filter width), "
                f"more than its bands take ({MAX_DENSE_TOEPLITZ_VALUES}): it is for few input channels")
    tiling = dense_toeplitz_tiling(problem, LaunchConfig(block_m=16, block_n=min(problem.k, 16), block_k=1))
    if cdiv(problem.n * problem.out_h, 16) * tiling.tiles_q * tiling.k_blocks >= INT32_LIMIT:
        return "its grid of (rows, column block, channel block) tiles would pass 2**31 programs"
    if cdiv(tiling.row_len, DENSE_TOEPLITZ_COPY_TILE[1]) > MAX_GRID_Y:
        return "its input copy's rows are too long for the copy's grid"
    return None


def reads_rows_in_place(problem: ConvProblem, x: torch.Tensor) -> bool:
    """Whether :mod:`.dense_toeplitz` reads ``x``'s rows where they lie instead of a
    zero-bordered copy: no padding (the copy's only zeros besides the segments' overrun,
    which the kernel masks), channels_last-contiguous storage (one row a run of W*C values,
    images H rows apart) and rows that start 16 bytes apart (aligned asynchronous copies)."""
    return (problem.is_unpadded and x.is_contiguous(memory_format=torch.channels_last)
            and (problem.w * problem.c * x.element_size()) % 16 == 0 and x.data_ptr() % 16 == 0)


def launch_dense_toeplitz(
    problem: ConvProblem,
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    residual: torch.Tensor | None,
    out: torch.Tensor,
    config: LaunchConfig,
):
    """Copy ``x`` into zero-bordered channels_last rows (:func:`to_padded_rows_kernel`, into
    scratch; not where :func:`reads_rows_in_place`), then run
    :func:`conv2d_dense_toeplitz_kernel`: programs of ``config.block_m`` output rows by
    ``block_k`` output columns by ``block_n`` output channels. Returns the GEMM's compiled
    kernel."""
    if config.split_k > 1 or config.fuse_sc or config.persistent:
        raise ValueError(f"config {config}: dense_toeplitz has no split-K, fused (s, c) slices or persistent form")
    tiling = dense_toeplitz_tiling(problem, config)
    if tiling.span * problem.c > MAX_DENSE_TOEPLITZ_VALUES or tiling.block_nn > MAX_DENSE_TOEPLITZ_COLUMNS:
        raise ValueError(f"config {config}: {tiling.block_q} output columns x {tiling.block_kc} channels make bands of "
                         f"{tiling.span * problem.c} x {tiling.block_nn}, past dense_toeplitz's "
                         f"{MAX_DENSE_TOEPLITZ_VALUES} x {MAX_DENSE_TOEPLITZ_COLUMNS}")
    qq_minor = problem.layout == "nchw"  # the output's layout: its columns contiguous, not its channels
    band = dense_toeplitz_weight(weight, problem.stride[1], problem.dilation[1], tiling.span, tiling.block_q,
                                 tiling.block_kc, tiling.t_len, tiling.block_nn, qq_minor)
    if reads_rows_in_place(problem, x):
        rows, rows_per_image, pitch = x, problem.h, problem.w * problem.c
    else:
        rows = scratch((problem.n, tiling.rows, tiling.row_len), x.dtype, x.device)
        rows_per_image, pitch = tiling.rows, tiling.row_len
    int64 = needs_int64(problem) or max(rows.numel(), band.numel()) >= INT32_LIMIT
    if rows is not x:
        copy_rows, copy_values = DENSE_TOEPLITZ_COPY_TILE
        launch(to_padded_rows_kernel, (cdiv(problem.n * tiling.rows, copy_rows), cdiv(tiling.row_len, copy_values)),
               x, rows, problem.n * tiling.rows, problem.h, problem.w, problem.padding[0], problem.padding[1],
               tiling.rows, tiling.row_len, *kernel_strides(x),
               C=problem.c, BLOCK_ROWS=copy_rows, BLOCK_E=copy_values, INT64=int64, num_warps=4)
    pointers, epilogue_strides, epilogue = _epilogue_arguments(problem, bias, residual, out)
    grid = (cdiv(problem.n * problem.out_h, config.block_m) * tiling.tiles_q * tiling.k_blocks,)
    return launch(conv2d_dense_toeplitz_kernel, grid,
        rows, band, *pointers, problem.n, problem.out_h, problem.out_w, problem.k, rows_per_image, pitch,
        problem.stride[0], problem.dilation[0], problem.dilation[1], *epilogue_strides, problem.r, problem.s,
        C=problem.c, STRIDE_W=problem.stride[1], **epilogue,
        BLOCK_M=config.block_m, BLOCK_Q=tiling.block_q, BLOCK_KC=tiling.block_kc, BLOCK_NN=tiling.block_nn,
        QQ_MINOR=qq_minor, MASK_COLS=rows is x,
        BLOCK_T=tiling.block_t, T_STEPS=tiling.t_steps, **dot_constexprs(problem), INT64=int64,
        num_warps=config.num_warps, num_stages=config.num_stages,
    )
