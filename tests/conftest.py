"""Where the tests run: the GPU if there is one, else Triton's interpreter on the CPU.

Triton reads ``TRITON_INTERPRET`` when a kernel is decorated and tileconv reads it when it is
imported, so it is set here, before any test module imports tileconv. Without a GPU it is
forced to 1: with it unset the CPU would take PyTorch's fallback and every correctness test
would compare PyTorch with PyTorch.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

import pytest
import torch

# Plain `pytest` (unlike `python3 -m pytest`) does not put the checkout on sys.path.
REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

HAS_CUDA = torch.cuda.is_available()
if not HAS_CUDA:
    if "tileconv" in sys.modules and os.environ.get("TRITON_INTERPRET") != "1":
        raise RuntimeError("tileconv was imported before tests/conftest.py could set TRITON_INTERPRET=1")
    os.environ["TRITON_INTERPRET"] = "1"

from tileconv.functional import uses_triton  # noqa: E402

DEVICE = "cuda" if HAS_CUDA else "cpu"

# Inputs are fresh random numbers every run; a failure prints the seed that made them, and
# TILECONV_TEST_SEED=<seed> replays that run.
_SESSION_SEED = int(os.environ.get("TILECONV_TEST_SEED", "0") or 0) or int.from_bytes(os.urandom(4), "little")


def pytest_report_header(config) -> list[str]:
    mode = "CUDA" if HAS_CUDA else "CPU through TRITON_INTERPRET=1"
    return [f"tileconv tests on {DEVICE} ({mode}); TILECONV_TEST_SEED={_SESSION_SEED}"]


def pytest_configure(config) -> None:
    # Triton's interpreter calls a numpy API that numpy deprecates, on every index: noise.
    config.addinivalue_line("filterwarnings", "ignore::DeprecationWarning:triton.runtime.interpreter")
    # PyTorch (the reference) notes that 'same' with an even kernel copies its input: expected.
    config.addinivalue_line("filterwarnings", "ignore:Using padding='same' with even kernel:UserWarning")
    if not uses_triton(torch.empty(0, device=DEVICE)):
        raise pytest.UsageError(
            f"tileconv would not run its Triton kernels on {DEVICE} (TRITON_INTERPRET="
            f"{os.environ.get('TRITON_INTERPRET')!r}): the tests would only check PyTorch's fallback"
        )


def pytest_collection_modifyitems(config, items) -> None:
    if HAS_CUDA:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def device() -> str:
    """The device tileconv's kernels are tested on: 'cuda' if present, else 'cpu' (interpreter)."""
    return DEVICE


@pytest.fixture
def seed(request) -> int:
    """A seed for this test's random inputs: new every session, stable within it, printed on failure."""
    digest = hashlib.sha256(f"{_SESSION_SEED}:{request.node.nodeid}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


@pytest.fixture
def allow_tf32():
    """Restores torch.backends.cudnn.allow_tf32 after a test that sets it."""
    previous = torch.backends.cudnn.allow_tf32
    yield
    torch.backends.cudnn.allow_tf32 = previous


@pytest.fixture
def isolated_cache(tmp_path, monkeypatch) -> Path:
    """A private, empty tuning-cache folder, and no remembered selections before or after
    (tests of the tuning cache and of tuning; nothing reads or writes the user's cache)."""
    from tileconv.dispatch import clear_selection_cache

    directory = tmp_path / "tileconv-cache"
    monkeypatch.setenv("TILECONV_CACHE_DIR", str(directory))
    clear_selection_cache()
    yield directory
    clear_selection_cache()
