"""Launch choices as data: tests pin them, heuristics pick them, the tuning cache stores them."""

from __future__ import annotations

from dataclasses import asdict, dataclass


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

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> LaunchConfig:
        return cls(**{k: int(data[k]) for k in cls.__dataclass_fields__ if k in data})

    def __str__(self) -> str:
        return (
            f"{self.block_m}x{self.block_n}x{self.block_k} g{self.group_m} "
            f"w{self.num_warps} s{self.num_stages}" + (" fused-sc" if self.fuse_sc else "")
            + (f" split-k{self.split_k}" if self.split_k > 1 else "")
        )


@dataclass(frozen=True)
class BackwardConfig:
    """Tile sizes of one backward launch (dgrad or wgrad).

    dgrad: ``block_m`` input pixels x ``block_n`` input channels, ``block_k`` output
    channels per reduction step. wgrad: ``block_m`` output channels x ``block_n`` filter
    columns (r, s, c), ``block_k`` pixels per reduction step; ``split_k`` programs share
    the N*P*Q reduction (1: none; 0: the launcher decides from the problem's size).
    Depthwise kernels: ``block_m`` pixels x ``block_n`` channels.
    """

    block_m: int = 64
    block_n: int = 64
    block_k: int = 32
    split_k: int = 0
    num_warps: int = 4
    num_stages: int = 3

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> BackwardConfig:
        return cls(**{k: int(data[k]) for k in cls.__dataclass_fields__ if k in data})
