"""Weights in the layouts the kernels read best, derived once per weight version.

- :func:`channels_last_weight`: the implicit-GEMM kernel's B tile runs along the input
  channels, so it wants (K, R, S, C/g) in memory; nn.Conv2d's weights are NCHW, where
  consecutive channels lie R*S elements apart.
- :func:`channel_minor_weight`: the CUDA-core kernels read one weight per output channel
  at every tap, so they want the output channel contiguous: (R, S, C/g, K) in memory.
- :func:`block_diagonal_weight`: grouped convolutions with few channels per group merge
  ``pack`` groups into one wider group whose weight is block-diagonal (zeros between the
  groups), so that a tensor-core tile is filled (ResNeXt's 4-channel groups).

Deriving these on every call would add a copy kernel to every convolution, so a derived
copy is kept while its weight is alive and unmodified: ``Tensor._version`` moves on every
in-place update (an optimizer step), ``data_ptr`` on ``.data`` reassignment.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable

import torch

from ..problem import subpixel_taps

_MAX_ENTRIES = 256
# (id(weight), tag) -> (weakref to weight, data_ptr, version, derived tensor, build)
_derived: dict[tuple[int, str], tuple[weakref.ref, int, int, torch.Tensor, Callable]] = {}


def _cached(weight: torch.Tensor, tag: str, build: Callable[[torch.Tensor], torch.Tensor]) -> torch.Tensor:
    if weight.requires_grad and torch.is_grad_enabled():
        # Inside a graph being recorded: derive afresh, never keep.
        return build(weight.detach())
    key = (id(weight), tag)
    hit = _derived.get(key)
    if hit is not None:
        ref, ptr, version, derived, _ = hit
        if ref() is weight and ptr == weight.data_ptr() and version == weight._version:
            return derived
    derived = build(weight.detach())
    if len(_derived) >= _MAX_ENTRIES:
        _derived.clear()
    _derived[key] = (weakref.ref(weight, lambda _, key=key: _derived.pop(key, None)), weight.data_ptr(),
                     weight._version, derived, build)
    return derived


def derivation(weight: torch.Tensor, tensor, by_address: bool = False) -> Callable[[torch.Tensor], torch.Tensor] | None:
    """If ``tensor`` is the kept derived copy of ``weight`` (one of the layouts below), the
    function that gives it again for a later call: the kept copy while ``weight`` is
    unchanged, a fresh one after an update. None otherwise. ``by_address``: ``tensor``
    is anything whose ``data_ptr()`` is the copy's (a view of it starting where it does: a
    kernel's pointer argument, or the tensor under a TMA descriptor).
    A recorded call (:mod:`tileconv.call_plans`) replays a derived weight through it."""
    entries = list(_derived.items())
    for (weight_id, tag), (ref, _, _, derived, build) in entries:
        same = derived.data_ptr() == tensor.data_ptr() if by_address else derived is tensor
        if weight_id == id(weight) and same and ref() is weight:
            return lambda w, tag=tag, build=build: _cached(w, tag, build)
    # A copy derived from one of the weight's own derived copies (a depthwise dgrad runs the
    # depthwise forward over the transposed weight, which re-lays that out again).
    for (weight_id, tag), (ref, _, _, derived, build) in entries:
        if weight_id == id(weight) and ref() is weight and derived is not tensor:
            inner = derivation(derived, tensor, by_address)
            if inner is not None:
                return lambda w, tag=tag, build=build, inner=inner: inner(_cached(w, tag, build))
    return None


def channels_last_weight(weight: torch.Tensor) -> torch.Tensor:
    """``weight`` laid out as channels_last (itself if it already is)."""
    if weight.is_contiguous(memory_format=torch.channels_last):
        return weight
    return _cached(weight, "channels_last", lambda w: w.contiguous(memory_format=torch.channels_last))


def channel_minor_weight(weight: torch.Tensor) -> torch.Tensor:
    """``weight`` (K, C/g, R, S) stored as (R, S, C/g, K): the output channel is the
    contiguous axis. The CUDA-core kernels (direct, depthwise) read one weight per output
    channel of their tile at every tap; along K that is one vector load instead of a
    scalar load per channel (R*S apart in an NCHW weight). Returned as a (K, C/g, R, S)
    view, so kernels address it through its strides like any other."""
    if weight.permute(2, 3, 1, 0).is_contiguous():
        return weight
    return _cached(weight, "channel_minor", lambda w: w.permute(2, 3, 1, 0).contiguous().permute(3, 2, 0, 1))


def _block_diagonal(w: torch.Tensor, groups: int, pack: int) -> torch.Tensor:
    """(K, C/g * pack, R, S), contiguous: see :func:`block_diagonal_weight`."""
    k, c_per_group, r, s = w.shape
    position = (torch.arange(k, device=w.device) // (k // groups)) % pack
    index = position[:, None] * c_per_group + torch.arange(c_per_group, device=w.device)[None, :]
    merged = w.new_zeros((k, c_per_group * pack, r, s))
    merged.scatter_(1, index[:, :, None, None].expand(k, c_per_group, r, s), w)
    return merged


def block_diagonal_weight(weight: torch.Tensor, groups: int, pack: int) -> torch.Tensor:
    """The (K, C/g * pack, R, S) weight of the same convolution with groups / pack groups,
    stored channels_last.

    Output channel k belongs to group k // (K/g), which sits at position
    (k // (K/g)) % pack inside its merged group; its C/g filter channels go to that
    position's slice of the merged group's C/g * pack channels, zeros elsewhere.
    """
    return _cached(weight, f"block_diagonal/{groups}/{pack}",
                   lambda w: _block_diagonal(w, groups, pack).contiguous(memory_format=torch.channels_last))


def diagonal_blocks_weight(merged: torch.Tensor, subs: int, block_n: int) -> torch.Tensor:
    """grouped_frame's weight where it multiplies each merged group's block-diagonal weight as
    ``subs`` diagonal blocks (:func:`tileconv.kernels.launch.frame_sub_blocks`): from ``merged``
    (:func:`block_diagonal_weight`, (K, CM, R, S), merged groups of ``block_n`` outputs), the
    (K, R*S*CM/subs) matrix whose row k holds, tap by tap ((r, s) order), only the CM/subs input
    channels of its own block (block (k mod block_n) // (block_n/subs)): a quarter of the bytes
    a tap where four blocks make the merged group."""

    def build(w: torch.Tensor) -> torch.Tensor:
        k, cm, r, s = w.shape
        rows = torch.arange(k, device=w.device)
        block = (rows % block_n) // (block_n // subs)
        taps = w.permute(0, 2, 3, 1).reshape(k, r * s, subs, cm // subs)
        return taps[rows, :, block, :].reshape(k, r * s * (cm // subs)).contiguous()

    return _cached(merged, f"diagonal_blocks/{subs}/{block_n}", build)


def grouped_tap_weight(weight: torch.Tensor, groups: int, pack: int) -> torch.Tensor:
    """:func:`block_diagonal_weight` laid out for :mod:`tileconv.kernels.grouped_halo`: the
    (G/pack, R, S, C/g * pack, K/g * pack) contiguous tensor whose [j, r, s] matrix is merged
    group j's tap (r, s), input channels by output channels (one tensor-core B tile a tap)."""

    def build(w: torch.Tensor) -> torch.Tensor:
        k, c_per_group, r, s = w.shape
        blocks = groups // pack
        merged = _block_diagonal(w, groups, pack)  # (K, CM, R, S)
        return merged.reshape(blocks, k // blocks, c_per_group * pack, r, s).permute(0, 3, 4, 2, 1).contiguous()

    return _cached(weight, f"grouped_taps/{groups}/{pack}", build)


def dgrad_weight(weight: torch.Tensor, groups: int) -> torch.Tensor:
    """The weight of the forward convolution that computes a stride-1 convolution's input
    gradient (:meth:`tileconv.problem.ConvProblem.dgrad_as_forward`): (C, K/g, R, S) with
    ``w'[g*C/g + c, k, r, s] = w[g*K/g + k, c, R-1-r, S-1-s]`` (each group's channel axes
    swapped, the taps flipped), stored channels_last (the reduction axis, K/g, contiguous:
    what the implicit GEMM's B tile and gemm_1x1's bulk copies read).

    Flipping both filter axes reverses the tap index t = r*S + s (to R*S-1-t), so the whole
    derivation is one gather: ``index_select`` of the reversed taps from ``weight`` viewed
    as (g, C/g, R*S, K/g), whose output is contiguous in that order, i.e. channels_last
    (C, K/g, R, S). One kernel; a training step derives it again on every backward (the
    autocast copy of the weight is new each step), where a flip and a copy cost two."""

    def build(w: torch.Tensor) -> torch.Tensor:
        k, c_per_group, r, s = w.shape
        k_per_group = k // groups
        taps = w.reshape(groups, k_per_group, c_per_group, r * s).permute(0, 2, 3, 1)  # (g, C/g, R*S, K/g)
        gathered = torch.index_select(taps, 2, _reversed_taps(r * s, w.device))  # contiguous
        return gathered.view(groups * c_per_group, r, s, k_per_group).permute(0, 3, 1, 2)

    return _cached(weight, f"dgrad/{groups}", build)


def subpixel_dgrad_weight(weight: torch.Tensor, stride: tuple[int, int], padding: tuple[int, int],
                          channels: int) -> torch.Tensor:
    """The weight of :meth:`tileconv.problem.ConvProblem.dgrad_as_subpixel_forward` for a dense
    (K, C, R, S) ``weight``: (channels, K, T_h, T_w) with ``w'[(a*V + b)*C + c, k, t, u] =
    w[k, c, r, s]`` where phase (a, b) reads tap (r, s) at (t, u) (:func:`~tileconv.problem.subpixel_taps`),
    zero elsewhere (and in the channels past U*V*C), stored channels_last. One gather from
    ``weight`` with a zero appended, by an index made once per geometry."""

    def build(w: torch.Tensor) -> torch.Tensor:
        k, c, r, s = w.shape
        index = _subpixel_index(c, r, s, stride, padding, channels, w.device)  # (channels, T_h, T_w)
        flat = torch.cat([w.reshape(k, c * r * s), w.new_zeros(k, 1)], dim=1)  # column c*R*S: zero
        gathered = torch.index_select(flat, 1, index.flatten()).t().contiguous()  # (channels*T_h*T_w, K)
        return gathered.view(*index.shape, k).permute(0, 3, 1, 2)

    return _cached(weight, f"subpixel/{stride}/{padding}/{channels}", build)


@functools.cache
def _subpixel_index(c: int, r: int, s: int, stride: tuple[int, int], padding: tuple[int, int], channels: int,
                    device: torch.device) -> torch.Tensor:
    """For each (output channel, t, u) of :func:`subpixel_dgrad_weight`, the flat index of the
    weight element (c, r, s) it takes, c*R*S + r*S + s, or c*R*S (zero) where it takes none."""
    _, span_h, rows = subpixel_taps(r, stride[0], padding[0])
    _, span_w, cols = subpixel_taps(s, stride[1], padding[1])
    index = torch.full((channels, span_h, span_w), c * r * s, dtype=torch.long)
    for a, row_taps in enumerate(rows):
        for b, col_taps in enumerate(cols):
            for channel in range(c):
                out = (a * stride[1] + b) * c + channel
                for t, tap_r in row_taps:
                    for u, tap_s in col_taps:
                        index[out, t, u] = (channel * r + tap_r) * s + tap_s
    return index.to(device)


@functools.cache
def _reversed_taps(taps: int, device: torch.device) -> torch.Tensor:
    """``arange(taps - 1, -1, -1)`` on ``device``, made once."""
    return torch.arange(taps - 1, -1, -1, device=device)


def unrolled_columns_weight(weight: torch.Tensor, channels: int) -> torch.Tensor:
    """The (K, channels, R, 1) weight of :meth:`tileconv.problem.ConvProblem.columns_as_channels`:
    ``w'[k, s*C + c, r, 0] = w[k, c, r, s]`` for a dense (K, C, R, S) ``weight``, zeros in
    the channels past S*C, stored channels_last (what the implicit GEMM's B tile reads)."""

    def build(w: torch.Tensor) -> torch.Tensor:
        k, c, r, s = w.shape
        out = w.new_zeros((k, r, 1, channels))  # channels_last memory of (K, channels, R, 1)
        out[:, :, 0, : s * c].copy_(w.permute(0, 2, 3, 1).reshape(k, r, s * c))
        return out.permute(0, 3, 1, 2)

    return _cached(weight, f"unrolled_columns/{channels}", build)


def toeplitz_weight(weight: torch.Tensor, stride_w: int, dil_w: int, jk: int, block_q: int) -> torch.Tensor:
    """The banded filter rows of :mod:`tileconv.kernels.depthwise_toeplitz`: a contiguous
    (K, R, jk, block_q) tensor with ``T[k, r, j, q] = w[k, 0, r, s]`` where
    ``j = q*stride_w + s*dil_w`` for a tap ``0 <= s < S``, zeros elsewhere, so that a block
    of ``block_q`` output columns is ``x[columns j] @ T[k, r]`` along filter row ``r``.
    ``weight`` is a depthwise (K, 1, R, S) filter."""

    def build(w: torch.Tensor) -> torch.Tensor:
        tap, inside = _band_taps(jk, block_q, stride_w, dil_w, w.shape[3], w.device)
        rows = w[:, 0][:, :, tap]  # (K, R, jk, block_q)
        return torch.where(inside, rows, torch.zeros((), dtype=w.dtype, device=w.device)).contiguous()

    return _cached(weight, f"toeplitz/{stride_w}/{dil_w}/{jk}/{block_q}", build)


def _band_taps(rows: int, block_q: int, stride_w: int, dil_w: int, s_taps: int,
               device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """For band row ``j`` (an input column of a block) and column ``q`` (an output column of
    it), the filter tap s with ``j = q*stride_w + s*dil_w`` (clamped into range where none) and
    whether there is one: both (rows, block_q). The Toeplitz kernels' bands are built from it."""
    offset = (torch.arange(rows, device=device)[:, None]
              - stride_w * torch.arange(block_q, device=device)[None, :])  # j - q*V
    tap = torch.div(offset, dil_w, rounding_mode="floor")
    inside = (offset >= 0) & (offset % dil_w == 0) & (tap < s_taps)
    return tap.clamp(0, s_taps - 1), inside


def dense_toeplitz_weight(weight: torch.Tensor, stride_w: int, dil_w: int, span: int, block_q: int, block_kc: int,
                          t_len: int, block_nn: int, qq_minor: bool = False) -> torch.Tensor:
    """The banded filter rows of :mod:`tileconv.kernels.dense_toeplitz`: a contiguous
    (ceil(K / block_kc), R, t_len, block_nn) tensor with

        T[kb, r, j*C + c, qq*block_kc + kk] = w[kb*block_kc + kk, c, r, s]
        where j = qq*stride_w + s*dil_w for a tap 0 <= s < S,

    (column ``kk*block_q + qq`` instead with ``qq_minor``: an NCHW output's order)

    zeros elsewhere (other j, output channels past K, rows past the J*C values a block of
    ``block_q`` output columns reads, ``span`` = J, columns past block_q*block_kc), so that
    along filter row ``r`` those output columns are ``segment @ T[kb, r]``. ``weight`` is a
    dense (K, C, R, S) filter."""

    def build(w: torch.Tensor) -> torch.Tensor:
        k, c, r, s = w.shape
        k_blocks = -(-k // block_kc)
        if span * c > t_len or block_q * block_kc > block_nn:
            raise ValueError(f"a band of {span * c} x {block_q * block_kc} does not fit ({t_len}, {block_nn})")
        padded = w.new_zeros((k_blocks * block_kc, c, r, s))
        padded[:k] = w
        tap, inside = _band_taps(span, block_q, stride_w, dil_w, s, w.device)
        taps = padded[:, :, :, tap]  # (K', C, R, J, BQ)
        taps = torch.where(inside, taps, torch.zeros((), dtype=w.dtype, device=w.device))
        # (kb, kk, c, r, j, qq) -> (kb, r, j, c, qq, kk) or (.., kk, qq): rows in the input's
        # (column, channel) order, columns in the output's.
        band = taps.reshape(k_blocks, block_kc, c, r, span, block_q)
        band = band.permute(0, 3, 4, 2, 1, 5) if qq_minor else band.permute(0, 3, 4, 2, 5, 1)
        out = w.new_zeros((k_blocks, r, t_len, block_nn))
        out[:, :, : span * c, : block_q * block_kc] = band.reshape(k_blocks, r, span * c, block_q * block_kc)
        return out

    return _cached(weight, f"dense_toeplitz/{stride_w}/{dil_w}/{span}/{block_q}/{block_kc}/{t_len}/{block_nn}/"
                           f"{int(qq_minor)}", build)


def plane_weight(weight: torch.Tensor, plane: tuple[int, int], out_plane: tuple[int, int],
                 stride: tuple[int, int], padding: tuple[int, int], dilation: tuple[int, int],
                 hw_pad: int, pq_pad: int) -> torch.Tensor:
    """The per-channel plane maps of :mod:`tileconv.kernels.depthwise_plane`: a contiguous
    (K, hw_pad, pq_pad) tensor with

        T[k, h*W + w, p*Q + q] = w[k, 0, r, s]  where h = p*U - pad_h + r*dil_h,
                                                      w = q*V - pad_w + s*dil_w

    for the taps that land inside the ``plane`` (H, W), zeros elsewhere (taps in the padding,
    rows and columns past H*W and P*Q), so that a channel's output plane is its input plane
    times T[k]. ``weight`` is a depthwise (K, 1, R, S) filter; ``out_plane`` is (P, Q)."""
    (height, width), (out_h, out_w) = plane, out_plane

    def build(w: torch.Tensor) -> torch.Tensor:
        k, _, r, s = w.shape
        dev = w.device
        p = torch.arange(out_h, device=dev).view(-1, 1, 1, 1)
        q = torch.arange(out_w, device=dev).view(1, -1, 1, 1)
        tap_r = torch.arange(r, device=dev).view(1, 1, -1, 1)
        tap_s = torch.arange(s, device=dev).view(1, 1, 1, -1)
        h = p * stride[0] - padding[0] + tap_r * dilation[0]
        col = q * stride[1] - padding[1] + tap_s * dilation[1]
        inside = ((h >= 0) & (h < height) & (col >= 0) & (col < width)).expand(out_h, out_w, r, s)
        source = (h * width + col).expand(out_h, out_w, r, s)[inside]  # input pixel of each tap inside
        target = (p * out_w + q).expand(out_h, out_w, r, s)[inside]  # its output pixel
        tap = (tap_r * s + tap_s).expand(out_h, out_w, r, s)[inside]  # and which tap it is
        out = w.new_zeros((k, hw_pad, pq_pad))
        out[:, source, target] = w.reshape(k, r * s)[:, tap]  # distinct taps of an output meet distinct pixels
        return out

    key = f"plane/{height}x{width}/{out_h}x{out_w}/{stride}/{padding}/{dilation}/{hw_pad}/{pq_pad}"
    return _cached(weight, key, build)


def padded_channel_minor_weight(weight: torch.Tensor, block_k: int) -> torch.Tensor:
    """``weight`` (K, C, R, S) as a contiguous (C, R, S, block_k) tensor, zeros past K: the
    output channels of a tap one aligned vector, the taps of an input channel consecutive
    (:mod:`tileconv.kernels.direct_rows` loads all of a tap's channels at once, each tap a
    constant step from the channel's first)."""

    def build(w: torch.Tensor) -> torch.Tensor:
        out = w.new_zeros((*w.shape[1:], block_k))
        out[..., : w.shape[0]] = w.permute(1, 2, 3, 0)
        return out

    return _cached(weight, f"padded_channel_minor/{block_k}", build)
