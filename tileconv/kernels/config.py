"""Launch choices as data: tests pin them, heuristics pick them, the tuning cache stores them."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch

from .._runtime import INT32_LIMIT, INTERPRET


@dataclass(frozen=True)
class LaunchConfig:
    """Tile sizes and launch parameters of one kernel launch."""

    block_m: int = 64  # output pixels per program
    block_n: int = 64  # output channels per program
    block_k: int = 32  # input channels per reduction step (implicit GEMM only)
    group_m: int = 8  # tile-order swizzle width (implicit GEMM only)
    num_warps: int = 4
    num_stages: int = 3
    fuse_sc: int = 0  # implicit GEMM only: 1 = reduce over (filter column, channel) jointly
    split_k: int = 1  # implicit GEMM only (groups = 1, no fuse_sc): programs sharing a tile's reduction
    persistent: int = 0  # tma_rows, gemm_1x1: 1 = one program an SM; grouped_halo, the ws kernels: k an SM
    pingpong: int = 0  # implicit_gemm_ws only: 1 = two MMA warpgroups taking the tiles in turn
    resident: int = 0  # implicit_gemm_ws, gemm_1x1_ws: 1 = a program's weight slice (block_n x R*S*C) held in shared memory

    def to_dict(self) -> dict:
        return asdict(self)

    def ring_bytes(self, itemsize: int, block_k: int | None = None, channels: int = 0) -> int:
        """Bytes of the GEMM kernels' operand ring: ``num_stages`` copies of an A (block_m x block_k)
        and a B (block_k x block_n) tile; ``block_k``: the kernel's own channel block where its
        launcher narrows the config's (implicit_gemm_ws). With ``resident``, the ring's A tiles and
        the held weight slice: ``channels`` (the reduction, R*S*C) in whole blocks of block_k, block_n wide."""
        block_k = self.block_k if block_k is None else block_k
        if self.resident:
            return (self.num_stages * self.block_m + -(-channels // block_k) * self.block_n) * block_k * itemsize
        return self.num_stages * (self.block_m + self.block_n) * block_k * itemsize

    @classmethod
    def from_dict(cls, data: dict) -> LaunchConfig:
        return cls(**{k: int(data[k]) for k in cls.__dataclass_fields__ if k in data})

    def __str__(self) -> str:
        return (
            f"{self.block_m}x{self.block_n}x{self.block_k} g{self.group_m} "
            f"w{self.num_warps} s{self.num_stages}" + (" fused-sc" if self.fuse_sc else "")
            + (f" split-k{self.split_k}" if self.split_k > 1 else "")
            + (" persistent" if self.persistent == 1 else f" persistent{self.persistent}" if self.persistent else "")
            + (" pingpong" if self.pingpong else "") + (" resident" if self.resident else "")
        )


WS_GATHER = 1  # BackwardConfig.ws: the warp-specialized wgrad, its input gathered by cp.async
WS_TMA = 2  # ... its input copied by TMA where wgrad_ws.input_by_tma allows


@dataclass(frozen=True)
class BackwardConfig:
    """Tile sizes of one backward launch (dgrad or wgrad).

    dgrad: ``block_m`` input pixels x ``block_n`` input channels, ``block_k`` output
    channels per reduction step. wgrad: ``block_m`` output channels x ``block_n`` filter
    columns (r, s, c), ``block_k`` pixels per reduction step; ``split_k`` programs share
    the N*P*Q reduction (1: none; 0: the launcher decides from the problem's size);
    ``ws``: wgrad on the warp-specialized Hopper kernel (:mod:`tileconv.kernels.wgrad_ws`),
    :data:`WS_GATHER` (1) gathering its input, :data:`WS_TMA` (2) copying it by TMA where
    ``wgrad_ws.input_by_tma`` allows (gathering it elsewhere).
    Depthwise kernels: ``block_m`` pixels x ``block_n`` channels. ``tap_rows``: the halo
    wgrad's filter rows a program (0: all of them).
    """

    block_m: int = 64
    block_n: int = 64
    block_k: int = 32
    split_k: int = 0
    num_warps: int = 4
    num_stages: int = 3
    tap_rows: int = 0
    ws: int = 0

    def to_dict(self) -> dict:
        return asdict(self)

    def __str__(self) -> str:
        split = "auto" if self.split_k == 0 else str(self.split_k)
        rows = f" tap-rows {self.tap_rows}" if self.tap_rows else ""
        return (f"{self.block_m}x{self.block_n}x{self.block_k} w{self.num_warps} s{self.num_stages} "
                f"split-k {split}{rows}{' ws' if self.ws else ''}{' tma' if self.ws == WS_TMA else ''}")

    @classmethod
    def from_dict(cls, data: dict) -> BackwardConfig:
        return cls(**{k: int(data[k]) for k in cls.__dataclass_fields__ if k in data})


def dot_constexprs(problem) -> dict:
    """``tl.dot``'s options for ``problem``'s kernels (ignored for 16-bit inputs):

    - float32 with ``problem.allow_tf32`` (PyTorch's conv would use TF32): ``"tf32"``.
    - strict float32: ``"tf32x3"``, error-compensated TF32 (CUTLASS's 3xTF32): each operand
      is split into a TF32 part and the TF32 rounding of its remainder, and three tensor-core
      products (big*big + big*small + small*big) recover float32-level accuracy, about 2**-21
      relative per product against IEEE's 2**-24, far below the fp32 sum's own rounding over
      a reduction (tests and ``verify`` hold it to the strict float32 tolerance against a
      float64 reference). IEEE ``tl.dot`` runs on the CUDA cores at a fraction of the rate.

    Under the interpreter bf16 tiles are upcast to fp32 first, its bf16 dot being wrong."""
    fp32 = problem.dtype == torch.float32
    return dict(DOT_PRECISION=("tf32" if problem.allow_tf32 else "tf32x3") if fp32 else "ieee",
                UPCAST_DOT=INTERPRET and problem.dtype == torch.bfloat16)


def needs_int64(problem) -> bool:
    """Whether some tensor of ``problem`` holds 2**31 elements or more: index in int64."""
    return problem.max_elements >= INT32_LIMIT
