"""A PTX pass for kernel-development probes: ``install(edit)`` chains ``edit`` onto Triton's
stages-inspection hook (``knobs.runtime.add_stages_inspection_hook``), so that every kernel
compiled from then on has its PTX rewritten by ``edit(ptx, metadata) -> ptx`` between Triton's PTX
and cubin stages; a hook already installed runs first. Triton's compile cache is keyed by a
kernel's source and constants, not by hooks: give an edited run a TRITON_CACHE_DIR of its own (or
put a digest of the edit into the kernel's constants, as probe_multicast.py does)."""

from __future__ import annotations

from collections.abc import Callable


def install(edit: Callable[[str, dict], str]) -> None:
    from triton import knobs

    previous = knobs.runtime.add_stages_inspection_hook

    def hook(backend, stages, options, language, capability):
        if previous is not None:
            previous(backend, stages, options, language, capability)
        make_ptx = stages["ptx"]
        stages["ptx"] = lambda src, metadata: edit(make_ptx(src, metadata), metadata)

    knobs.runtime.add_stages_inspection_hook = hook
