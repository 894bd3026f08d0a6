"""Replayed calls: a repeated ``tileconv.conv2d`` call costs a dict lookup and its launches.

A forward call on the normal path validates its arguments, selects a kernel and config,
builds some 40 kernel arguments, and asks Triton to launch them; on an H200's host that
came to about 100 us of CPU time a call, three times ``F.conv2d``'s, and a small
convolution whose kernel runs for less than that measures the host, not the GPU.

The first call with a given set of arguments (tensor shapes, strides, dtypes, devices and
16-byte alignments, the convolution's options, the TF32 flag, the current GPU) runs the
normal path while :func:`tileconv.kernels.fast_launch.recording` writes down each launch:
the compiled kernel, its grid, every argument. If every tensor among those arguments is
one of the call's own (input, weight, bias, residual, the new output, or a view starting
where one of them does) or a derived copy of its weight (:mod:`tileconv.kernels.weights`), and every Triton launch of the call went
through the recorder, the call becomes a :class:`CallPlan`. A later call with the same
arguments allocates its output and hands the same kernels their arguments with this
call's pointers, straight to Triton's compiled launcher.

The same replay serves :func:`tileconv.functional.conv2d_problem` called directly (the
autograd forward, ``bench --algo NAME``, the custom op's implementation), keyed by the
problem, the forced algorithm and config, and the tensors' layouts and alignments.

Calls that are never planned take the normal path each time: at the ``conv2d`` level,
autograd (a tensor needs a gradient; its forward is planned one level down) and autocast;
at both levels torch.compile tracing, :func:`tileconv.poison_outputs`, a Triton launch hook
(a profiler) being set, unbatched input, CPU tensors, tensors without storage (validation
then says what is wrong), any call whose launches touch another tensor (a bias made
contiguous), and any call that passes one tensor as two arguments. Scratch tensors taken
from :func:`tileconv.kernels.fast_launch.workspace` (split-K's partial sums) are allocated
afresh by each replay. Plans are dropped with the selection cache
(:func:`tileconv.dispatch.clear_selection_cache`), so that a new tuning result is used.

What a replay re-runs: the output's allocation, the weight's derivations, scratch
allocations and the Triton launches. Anything else a launcher did in PyTorch (a ``zero_``,
a ``copy_``) would be skipped, so forward launchers do nothing else once a weight's derived
copies exist; tests/test_call_plans.py logs every aten op of such a call on a GPU to hold
them to it.

Recording is process-wide: a call recorded while another thread launches kernels through
the normal path sees launches that are not its own, and is refused (never replayed).
"""

from __future__ import annotations

import torch
from triton import knobs
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor as GluonTensorDescriptor
from triton.tools.tensor_descriptor import TensorDescriptor

from ._runtime import INTERPRET
from .kernels import fast_launch
from .kernels.weights import derivation
from .problem import tensor_key, validation_key

MAX_PLANS = 4096  # past this many, the table starts over (a caller whose shapes never repeat)
_plans: dict[tuple, CallPlan] = {}
_NOT_PLANNABLE = object()  # a key whose call was recorded and cannot be replayed
_counts = {"replays": 0, "recorded": 0, "refused": 0}
_enabled = True


def stats() -> dict[str, int]:
    """Calls replayed from a plan, calls recorded into one, recorded calls that could not
    be planned (they take the normal path each time), and plans held."""
    return {**_counts, "plans": sum(plan is not _NOT_PLANNABLE for plan in _plans.values())}


def set_enabled(enabled: bool) -> bool:
    """Turn replays on or off for this process (``bench --host-cost`` measures both);
    returns the previous setting."""
    global _enabled
    previous, _enabled = _enabled, bool(enabled)
    return previous


def clear() -> None:
    """Forget every plan (the selection or the tuning cache changed)."""
    _plans.clear()


def _alignment(t: torch.Tensor | None) -> int | None:
    """Where ``t`` starts within 16 bytes: the compiled kernel's pointer specialisation."""
    return None if t is None else t.data_ptr() & 15


def _hooks_set() -> bool:
    runtime = knobs.runtime
    return bool(getattr(runtime.launch_enter_hook, "calls", True)) or bool(
        getattr(runtime.launch_exit_hook, "calls", True))


def plan_key(input, weight, bias, residual, stride, padding, dilation, groups, activation) -> tuple | None:
    """The key of this call's plan, or None when the call must take the normal path (see
    the module's docstring for which; the caller checks :func:`tileconv.poison_outputs`)."""
    if (INTERPRET or not _enabled or not isinstance(input, torch.Tensor) or not input.is_cuda or input.dim() != 4
            or torch.compiler.is_compiling() or torch.is_autocast_enabled("cuda")):
        return None
    try:
        if torch.is_grad_enabled() and (input.requires_grad or weight.requires_grad
                                        or (bias is not None and bias.requires_grad)
                                        or (residual is not None and residual.requires_grad)):
            return None  # autograd records the call itself
        if _hooks_set():
            return None
        # Everything argument validation looks at (its memo key), and the alignments.
        validated = validation_key(input, weight, bias, residual, stride, padding, dilation, groups, activation)
        if validated is None:
            return None
        key = (validated, _alignment(input), _alignment(weight), _alignment(bias), _alignment(residual),
               torch._C._cuda_getDevice())  # torch.cuda.current_device() minus its Python wrapper
        hash(key)
    except (AttributeError, TypeError, RuntimeError):  # a non-tensor, a list, a tensor without storage
        return None
    return key


def problem_key(problem, x, weight, bias, residual, algo: str, config) -> tuple | None:
    """The key of a plan for :func:`tileconv.functional.conv2d_problem` (an already
    validated problem, a forced algorithm or config): the autograd forward, ``bench --algo
    NAME``, the custom op's implementation. None when the call must take the normal path,
    including inside a call being recorded (the outer call's plan covers it)."""
    return _validated_call_key(("problem", problem, algo, config), (x, weight, bias, residual))


def _validated_call_key(options: tuple, tensors: tuple) -> tuple | None:
    """The plan key of a call below ``tileconv.conv2d`` (its problem already validated):
    ``options`` plus the tensors' keys and alignments and the current GPU; None where such
    a call is never planned (see :func:`problem_key`)."""
    if (INTERPRET or not _enabled or fast_launch._recording is not None or not tensors[0].is_cuda
            or torch.compiler.is_compiling() or _hooks_set()):
        return None
    try:
        key = (*options, *map(tensor_key, tensors), *map(_alignment, tensors), torch._C._cuda_getDevice())
        hash(key)
    except (AttributeError, TypeError, RuntimeError):
        return None
    return key


def lookup(key: tuple) -> CallPlan | None:
    """The plan recorded under ``key``, if one could be."""
    plan = _plans.get(key)
    return None if plan is _NOT_PLANNABLE else plan


def is_known(key: tuple) -> bool:
    """Whether a call under ``key`` was recorded before (plannable or not)."""
    return key in _plans


def backward_key(problem, grad, x, weight, need_input: bool, need_weight: bool, algo: str,
                 dgrad_config, wgrad_config) -> tuple | None:
    """The key of a plan for :func:`tileconv.functional.conv2d_backward_problem` (both
    gradients' launches in one plan), or None when the call must take the normal path
    (as :func:`problem_key`, and for an empty batch)."""
    if problem.n == 0:
        return None
    return _validated_call_key(("backward", problem, algo, need_input, need_weight, dgrad_config, wgrad_config),
                               (grad, x, weight))


def replay_or_record(key: tuple, run, *tensors, weight_slot: int = 1):
    """The call under ``key``: replayed if a plan exists, recorded (running ``run()``, the
    normal path) the first time, else ``run()`` (a call that could not be planned).
    ``tensors`` are the call's own tensors (None where absent), ``tensors[weight_slot]``
    the weight whose derived copies the launches may read; ``run()`` returns the output,
    or a tuple of outputs (None where not computed)."""
    plan = _plans.get(key)
    if plan is None:
        return record(key, run, *tensors, weight_slot=weight_slot)
    if plan is _NOT_PLANNABLE:
        return run()
    return plan(*tensors)


class _Address:
    """A device address standing in for a tensor where only ``data_ptr()`` is read."""

    __slots__ = ("address",)

    def __init__(self, address: int) -> None:
        self.address = address

    def data_ptr(self) -> int:
        return self.address


class _Descriptor:
    """A host-side TMA descriptor (Triton's ``TensorDescriptor``) over a new address: the
    launcher reads its ``base.data_ptr()``, ``shape``, ``strides`` and ``padding``."""

    __slots__ = ("base", "shape", "strides", "block_shape", "padding")

    def __init__(self, address: int, layout: tuple) -> None:
        self.base = _Address(address)
        self.shape, self.strides, self.block_shape, self.padding = layout


class _Step:
    """One kernel launch of a plan: Triton's compiled launcher with the grid, the
    arguments that do not change between calls, and where the call's pointers go (a
    tensor argument becomes its address, a TMA descriptor is described again over the
    new address of the tensor it views)."""

    __slots__ = ("launch", "head", "template", "pointer_slots", "descriptor_slots", "encoded")

    def __init__(self, compiled, grid: tuple[int, int, int], arguments: list, slot_of, descriptor_source) -> None:
        launcher = compiled.run  # loads the module on first use
        if launcher.global_scratch_size or launcher.profile_scratch_size:
            raise _Unplannable("the kernel needs scratch memory")
        self.launch = launcher.launch
        # Everything the launcher takes before the kernel's arguments: grid, stream (filled
        # per call), function, cooperative / PDL flags, no scratch, the kernel's metadata,
        # no launch metadata and no hooks (a set hook refuses the plan at lookup).
        self.head = [grid[0], grid[1], grid[2], None, compiled.function, launcher.launch_cooperative_grid,
                     launcher.launch_pdl, None, None, compiled.packed_metadata, None, None, None]
        self.template = list(arguments)
        self.pointer_slots = []
        self.descriptor_slots = []
        for position, value in enumerate(arguments):
            if isinstance(value, torch.Tensor):
                self.pointer_slots.append((position, slot_of(value)))
                self.template[position] = None
            elif isinstance(value, (TensorDescriptor, GluonTensorDescriptor)):
                # The descriptor views one of the call's tensors (x as an (N*H*W, C) matrix):
                # same start address, shape and strides fixed by the plan's key.
                # Only its layout is kept: the recorded descriptor's base would keep the input alive.
                layout = (list(value.shape), list(value.strides), list(value.block_shape), value.padding)
                self.descriptor_slots.append((position, *descriptor_source(value.base), layout))
                self.template[position] = None
        self.encoded = _EncodedDescriptors.of(self.launch, self.template, self.pointer_slots, self.descriptor_slots)

    def __call__(self, stream: int, pointers: list[int]) -> None:
        head = self.head.copy()
        head[3] = stream
        if self.encoded is not None:
            self.encoded.launch(head, pointers)
            return
        arguments = self.template.copy()
        for position, slot in self.pointer_slots:
            arguments[position] = pointers[slot]
        for position, slot, offset, layout in self.descriptor_slots:
            arguments[position] = _Descriptor(pointers[slot] + offset, layout)
        self.launch(*head, *arguments)


class _EncodedDescriptors:
    """A step's launch with its TMA descriptors encoded by the plan, not by Triton's wrapper.

    Triton 3.6 wraps the compiled launcher of a kernel with tensor-descriptor arguments in a
    Python function that walks all of the kernel's arguments and encodes every descriptor
    (``cuTensorMapEncodeTiled``) on every launch. A plan knows each descriptor's layout, so
    the arguments are laid out once, as the wrapper would expand them, and a descriptor is
    encoded again only when its tensor's address changes: each slot keeps the encodings of
    the last few addresses it saw (a training step's tensors come back at the same
    addresses from PyTorch's caching allocator). The encoded map is a plain value that the
    launcher copies into the kernel's parameters, so reusing it is safe.

    :meth:`of` returns None when the launcher is not the wrapper it knows (no descriptor
    arguments, another Triton): the step then launches through Triton's own path.
    """

    KEPT = 4  # encodings kept per descriptor argument

    __slots__ = ("raw", "fill", "template", "pointer_positions", "fills")

    @classmethod
    def of(cls, launch, template: list, pointer_slots: list, descriptor_slots: list) -> _EncodedDescriptors | None:
        code, closure = getattr(launch, "__code__", None), getattr(launch, "__closure__", None)
        if not descriptor_slots or code is None or closure is None or code.co_name != "inner":
            return None
        cells = dict(zip(code.co_freevars, (cell.cell_contents for cell in closure), strict=True))
        raw, indices, metas = cells.get("launcher"), cells.get("tensordesc_indices"), cells.get("tensordesc_meta")
        if raw is None or indices is None or metas is None or len(metas) != len(descriptor_slots) \
                or sorted(indices) != [position for position, *_ in descriptor_slots]:
            return None
        if any(meta is not None and meta.get("fp4_padded", True) for meta in metas) \
                or any(layout[1][-1] != 1 for *_, layout in descriptor_slots):
            return None  # layouts the wrapper would change before encoding: left to it
        # The wrapper's own module encodes the same way it would: its dtype map, its driver.
        dtypes, triton_module = launch.__globals__.get("TMA_DTYPE_DEVICE_TO_HOST"), launch.__globals__.get("triton")
        if dtypes is None or triton_module is None:
            return None
        fill = triton_module.runtime.driver.active.utils.fill_tma_descriptor
        return cls(raw, fill, dtypes, template, pointer_slots, descriptor_slots, metas)

    def __init__(self, raw, fill, dtypes: dict, template: list, pointer_slots: list, descriptor_slots: list,
                 metas: list) -> None:
        self.raw, self.fill = raw, fill
        pointer_at = dict(pointer_slots)
        descriptors = {position: (slot, offset, layout, meta)
                       for (position, slot, offset, layout), meta in zip(descriptor_slots, metas, strict=True)}
        self.template, self.pointer_positions, self.fills = [], [], []
        for position, value in enumerate(template):
            if position in pointer_at:
                self.pointer_positions.append((len(self.template), pointer_at[position], 0))
                self.template.append(None)
            elif position in descriptors:
                slot, offset, (shape, strides, block_shape, padding), meta = descriptors[position]
                if meta is None:  # decomposed by the frontend: the base pointer, then the layout twice
                    self.pointer_positions.append((len(self.template), slot, offset))
                    self.template += [None, *shape, *strides, padding == "nan", *shape, *strides]
                    continue
                encode = (meta["swizzle"], meta["elem_size"], dtypes[meta["elem_type"]],
                          meta["block_size"], shape, strides, 1 if padding == "nan" else 0)
                self.fills.append((len(self.template), slot, offset, encode, {}))
                self.template += [None, *shape, *strides]
            else:
                self.template.append(value)

    def launch(self, head: list, pointers: list[int]) -> None:
        arguments = self.template.copy()
        for position, slot, offset in self.pointer_positions:
            arguments[position] = pointers[slot] + offset
        for position, slot, offset, encode, kept in self.fills:
            address = pointers[slot] + offset
            encoded = kept.get(address)
            if encoded is None:
                if len(kept) >= self.KEPT:
                    kept.clear()
                swizzle, elem_size, elem_type, block, shape, strides, padding = encode
                encoded = kept[address] = self.fill(address, swizzle, elem_size, elem_type, block, shape, strides,
                                                    padding)
            arguments[position] = encoded
        self.raw(*head, *arguments)


class _Workspace:
    """A replayed call's scratch tensor: new each call, like the recorded one."""

    __slots__ = ("shape", "dtype", "device")

    def __init__(self, like: torch.Tensor) -> None:
        self.shape, self.dtype, self.device = tuple(like.shape), like.dtype, like.device

    def __call__(self, _weight: torch.Tensor) -> torch.Tensor:
        return torch.empty(self.shape, dtype=self.dtype, device=self.device)


class _Unplannable(Exception):
    pass


def _extent(t: torch.Tensor) -> int:
    """The bytes from a non-empty tensor's first element to just past its last."""
    return t.element_size() * (1 + sum((size - 1) * stride for size, stride in zip(t.shape, t.stride(), strict=True)))


class CallPlan:
    """The launches of one recorded call, replayed for a later call with the same key:
    allocate the outputs like the recorded ones, derive the weight's copies as the
    launchers would, launch each step on the current stream.

    ``tensors``: the call's own (a forward's input, weight, bias, residual; a backward's
    upstream gradient, input, weight), None where absent; ``tensors[weight_slot]`` is the
    weight. ``out``: the output, or a tuple of outputs (None where not computed)."""

    __slots__ = ("outs", "single", "device_index", "derivations", "steps", "weight_slot")

    def __init__(self, record: fast_launch.Recording, tensors: list[torch.Tensor | None], out,
                 weight_slot: int = 1) -> None:
        if not record.replayable:
            raise _Unplannable("a launch went around the recorder")
        self.single = not isinstance(out, tuple)
        outs = [out] if self.single else list(out)
        own = [*tensors, *outs]
        self.derivations = []
        derived: list[torch.Tensor] = []
        scratch_slots: dict[int, int] = {}  # a scratch tensor's address -> its slot
        weight = tensors[weight_slot]

        def slot_of(t: torch.Tensor, by_address: bool = False) -> int:
            """Where ``t`` comes from: one of the call's tensors, else a derived copy of its
            weight (each by identity, or for a view by start address). A tensor that two of the
            call's arguments are (input passed as residual too) is refused: a later call
            may pass two different tensors there."""
            matches = [] if by_address else [slot for slot, candidate in enumerate(own) if t is candidate]
            if not matches and t.data_ptr():  # a view starting where one of them does (a strided
                # dgrad's dx[:, :, ::U, ::V]): its strides are the launch's recorded arguments
                matches = [slot for slot, c in enumerate(own) if c is not None and c.data_ptr() == t.data_ptr()]
            if len(matches) > 1:
                raise _Unplannable("two of the call's arguments are the same tensor")
            if matches:
                return matches[0]
            for index, candidate in enumerate(derived):
                if t is candidate or t.data_ptr() == candidate.data_ptr():
                    return len(own) + index
            # Scratch, or a view of it starting where it does (im2row's unrolled input, read
            # as NCHW-strided channels_last; the sub-pixel dgrad's cells, written through a
            # descriptor): a replay allocates the whole scratch tensor afresh and hands every
            # view of it the new address.
            scratch = [w for w in record.workspaces if w.numel() and w.data_ptr() == t.data_ptr()]
            if scratch:
                slot = scratch_slots.get(t.data_ptr())
                if slot is None:
                    derived.append(scratch[0])
                    self.derivations.append(_Workspace(scratch[0]))
                    slot = scratch_slots[t.data_ptr()] = len(own) + len(derived) - 1
                return slot
            # A derived weight, or a view starting where one does, as for the call's own tensors:
            # a pointer argument hands the kernel only its address (grouped_frame's redo reads the
            # merged weight as a (K, R*S*C) matrix view), and a descriptor views it by address
            # (dgrad's 1x1 weight under gemm_1x1).
            again = derivation(weight, t, by_address=True)
            if again is None:
                raise _Unplannable("a launch reads a tensor that is not the call's own")
            derived.append(t)
            self.derivations.append(again)
            return len(own) + len(derived) - 1

        def descriptor_source(t: torch.Tensor) -> tuple[int, int]:
            """Where a TMA descriptor's tensor comes from, and how many bytes into it the
            descriptor starts: :func:`slot_of` by address, else a view starting inside one
            of the call's tensors (implicit_gemm_frame's stride phases, x[:, :, a::U, b::V]),
            whose offset the plan's key fixes (it holds the tensors' shapes and strides)."""
            try:
                return slot_of(t, by_address=True), 0
            except _Unplannable:
                inside = [slot for slot, c in enumerate(own) if c is not None and c.numel()
                          and c.untyped_storage().data_ptr() == t.untyped_storage().data_ptr()
                          and 0 <= t.data_ptr() - c.data_ptr() < _extent(c)]
                if len(inside) != 1:
                    raise
                return inside[0], t.data_ptr() - own[inside[0]].data_ptr()

        self.steps = [_Step(compiled, grid, arguments, slot_of, descriptor_source)
                      for compiled, grid, arguments in record.steps]
        self.outs = [None if t is None else (tuple(t.shape), t.stride(), t.dtype) for t in outs]
        self.device_index = torch._C._cuda_getDevice()  # part of the key: launches go to the current GPU
        self.weight_slot = weight_slot

    def __call__(self, *tensors):
        device = tensors[0].device
        outs = [None if spec is None else torch.empty_strided(spec[0], spec[1], dtype=spec[2], device=device)
                for spec in self.outs]
        pointers = [0 if t is None else t.data_ptr() for t in (*tensors, *outs)]
        weight = tensors[self.weight_slot]
        extra = [again(weight) for again in self.derivations]  # derived weights, scratch: alive until launched
        pointers += [t.data_ptr() for t in extra]
        stream = torch._C._cuda_getCurrentRawStream(self.device_index)
        for step in self.steps:
            step(stream, pointers)
        _counts["replays"] += 1
        return outs[0] if self.single else tuple(outs)


def record(key: tuple, run, *tensors, weight_slot: int = 1):
    """Run ``run()`` (the normal path of the call, returning its output or outputs) while
    recording its launches, and keep a plan under ``key`` if the call can be replayed
    (``tensors`` and ``weight_slot`` as for :class:`CallPlan`)."""
    with fast_launch.recording() as recorded:
        out = run()
    try:
        plan = CallPlan(recorded, list(tensors), out, weight_slot)
        _counts["recorded"] += 1
    except (_Unplannable, AttributeError):  # AttributeError: a Triton whose launcher differs from 3.6's
        plan = _NOT_PLANNABLE
        _counts["refused"] += 1
    if len(_plans) >= MAX_PLANS:
        _plans.clear()
    _plans[key] = plan
    return out
