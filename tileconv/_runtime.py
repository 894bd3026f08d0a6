"""Facts about where tileconv runs, read once at import."""

import os

# Triton reads TRITON_INTERPRET when a kernel is decorated, so this must match import time.
INTERPRET: bool = os.environ.get("TRITON_INTERPRET", "0") == "1"

INT32_LIMIT = 2**31  # element counts at or past this need int64 index math


def cdiv(a: int, b: int) -> int:
    """Ceiling division on the host (``triton.cdiv`` costs microseconds a call there: it is a
    constexpr_function)."""
    return -(-a // b)


def pow2_at_least(value: int, floor: int = 1) -> int:
    """The least power of two that is at least ``value`` and ``floor`` (a tile edge), on the
    host without ``triton.next_power_of_2`` (a constexpr_function: microseconds a call)."""
    return max(floor, 1 << (max(int(value), 1) - 1).bit_length())


def kernel_strides(tensor) -> tuple[int, ...]:
    """``tensor.stride()`` as a kernel should see it: a dimension of size 1 is never
    stepped along, so its stride is given as 0. PyTorch reports 1 there for a contiguous
    [K, C, 1, 1] weight; a kernel computing ``r * stride_r`` with such a 1 cannot prove
    the address 16-byte aligned and falls back to 2-byte loads (seen in the SASS of the
    1x1 convolutions), while Triton marks 0 as divisible by 16."""
    return tuple([0 if size == 1 else stride for size, stride in zip(tensor.shape, tensor.stride(), strict=True)])


# The interpreter runs programs one after another on the CPU: a persistent grid there needs
# only a few programs to walk several tiles each (what its tests check).
INTERPRETER_SM_COUNT = 3
_sm_counts: dict[int, int] = {}


def sm_count(device) -> int:
    """Streaming multiprocessors of ``device`` (a CUDA device; a CPU tensor's device under
    the interpreter gets :data:`INTERPRETER_SM_COUNT`). Read once per device: the property
    query costs microseconds, and persistent launches ask on every call."""
    if device.type != "cuda":
        return INTERPRETER_SM_COUNT
    index = device.index if device.index is not None else 0
    count = _sm_counts.get(index)
    if count is None:
        import torch

        count = _sm_counts[index] = torch.cuda.get_device_properties(index).multi_processor_count
    return count


# Shared memory of an SM where the device does not say (Hopper's 228 KB); a block's reserve.
DEFAULT_SM_SHARED_BYTES = 228 * 1024
BLOCK_SHARED_RESERVE = 1024
_sm_shared: dict[int, int] = {}


def programs_fitting(per_sm_bytes: int, shared_bytes: int) -> int:
    """Programs of ``shared_bytes`` shared memory each (plus a block's reserve) that fit an SM
    of ``per_sm_bytes`` at once, at least 1."""
    return max(1, per_sm_bytes // (shared_bytes + BLOCK_SHARED_RESERVE))


def programs_resident(device, shared_bytes: int) -> int:
    """:func:`programs_fitting` on one SM of ``device`` (shared memory only: registers and
    warps may bound it lower). Read once per device, as :func:`sm_count`."""
    if device.type != "cuda":
        per_sm = DEFAULT_SM_SHARED_BYTES
    else:
        index = device.index if device.index is not None else 0
        per_sm = _sm_shared.get(index)
        if per_sm is None:
            import torch

            props = torch.cuda.get_device_properties(index)
            per_sm = _sm_shared[index] = getattr(props, "shared_memory_per_multiprocessor", 0) or DEFAULT_SM_SHARED_BYTES
    return programs_fitting(per_sm, shared_bytes)


# Programmatic dependent launch (PDL, compute capability 9.0 on): a kernel launched with it may be
# scheduled while the kernel before it in the stream is still running, once every program of that
# kernel has signalled (``griddepcontrol.launch_dependents``) or exited; it waits for that kernel's
# completion and memory (``griddepcontrol.wait``) before it reads anything. tileconv launches the
# second kernel of a call (the split sums after a weight gradient) this way, so that its launch and
# its programs' arrival on the SMs overlap the first kernel's last wave. ``TILECONV_PDL=0`` turns it
# off (the probes' A/B switch; this module attribute is read at every launch).
PDL_ENABLED: bool = os.environ.get("TILECONV_PDL", "1") != "0"
_pdl_capable: dict[int, bool] = {}


def nvidia_capability(index: int | None = None) -> tuple[int, int] | None:
    """The compute capability of NVIDIA GPU ``index`` (default: the current device), or None
    (no GPU, or a ROCm build, whose capabilities, (9, 4) for an MI300, are not NVIDIA's)."""
    import torch

    if torch.version.hip is not None or not torch.cuda.is_available():
        return None
    return torch.cuda.get_device_capability(index)


def programmatic_launch(device) -> bool:
    """Whether a launch on ``device`` uses programmatic dependent launch: an NVIDIA GPU of
    compute capability 9.0 or later (``griddepcontrol`` is sm_90 PTX), not under the
    interpreter, :data:`PDL_ENABLED` set. Read once per device, as :func:`sm_count`."""
    if not PDL_ENABLED or device.type != "cuda":
        return False
    index = device.index if device.index is not None else 0
    capable = _pdl_capable.get(index)
    if capable is None:
        capability = nvidia_capability(index)
        capable = _pdl_capable[index] = capability is not None and capability >= (9, 0)
    return capable
