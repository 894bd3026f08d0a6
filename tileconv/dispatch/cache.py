"""The persistent tuning cache: measured winners that later processes reuse without tuning.

One JSON file holds every winner ``tileconv tune`` measured, for every GPU and Triton
version it ran with::

    {
      "format": "tileconv-tuning",
      "version": 1,
      "entries": {
        "NVIDIA H100 80GB HBM3|triton-3.6.0|n32c64h56w56k64r1s1u1v1p0.0.0.0d1.1g1-float16-nhwc": {
          "algorithm": "implicit_gemm",
          "config": {"block_m": 128, "block_n": 64, "block_k": 64, "group_m": 8,
                     "num_warps": 4, "num_stages": 4},
          "time_ms": 0.0412,
          "default_ms": 0.0530,
          "best_per_algorithm": {"implicit_gemm": {"config": {...}, "time_ms": 0.0412}},
          "problem": "32,64,56,56 -> 64, 1x1/1, p0, g1",
          "epilogue": "bias+relu",
          "tuned_at": "2025-01-01T00:00:00+00:00"
        }
      }
    }

The key is ``f"{device name}|triton-{triton version}|{ConvProblem.cache_key()}"``: a
winner on one GPU or one Triton release says nothing about another, so neither is ever
used for the other. The device name is ``torch.cuda.get_device_name(index)`` for a CUDA
device, and ``"cpu"`` for CPU tensors (the Triton interpreter, used by the tests).

Reading is cheap and lock-free: the file is parsed once per process, on the first lookup,
and writers replace it atomically (write to a temporary file, ``os.replace``), so a reader
sees the old file or the new one, never half of one. Writers serialise on an ``flock`` of
a lock file beside it and merge: re-read under the lock, update, write. Two processes
tuning at once therefore both keep their winners. A file that cannot be parsed is ignored
with a :class:`TuningCacheWarning` naming it, and rebuilt by the next write.

Location: ``$TILECONV_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/tileconv``, else
``~/.cache/tileconv``.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import tempfile
import warnings
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch
import triton

from ..kernels import ALGORITHMS, BackwardConfig, LaunchConfig
from ..problem import ConvProblem

try:  # POSIX; elsewhere writers are not serialised (os.replace still keeps the file whole)
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

FORMAT_NAME = "tileconv-tuning"
FORMAT_VERSION = 1
FILE_NAME = f"tuning-v{FORMAT_VERSION}.json"

Entry = dict[str, Any]


class TuningCacheWarning(UserWarning):
    """The tuning cache file could not be used (it is ignored, and rebuilt on the next write)."""


# --------------------------------------------------------------------- where and what
def cache_dir() -> Path:
    """The folder of the cache: $TILECONV_CACHE_DIR, else $XDG_CACHE_HOME/tileconv, else
    ~/.cache/tileconv. Read from the environment on every call, so tests can redirect it."""
    explicit = os.environ.get("TILECONV_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "tileconv"


def cache_file() -> Path:
    """The JSON file that holds the tuned winners."""
    return cache_dir() / FILE_NAME


_device_names: dict[torch.device, str] = {}


def device_name(device: torch.device | str | int | None = None) -> str:
    """The name winners are keyed by: the CUDA device's name, or ``"cpu"``.

    ``None`` means the current CUDA device (``"cpu"`` without CUDA). Names are remembered
    per device: ``torch.cuda.get_device_name`` is a driver query.
    """
    if device is None:
        device = torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else "cpu"
    elif isinstance(device, int):
        device = torch.device("cuda", device)
    device = torch.device(device)
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    name = _device_names.get(device)
    if name is None:
        name = torch.cuda.get_device_name(device) if device.type == "cuda" else device.type
        _device_names[device] = name
    return name


def triton_version() -> str:
    return triton.__version__


def entry_key(problem: ConvProblem, device: str, triton_ver: str | None = None) -> str:
    """``f"{device}|triton-{version}|{problem.cache_key()}"``; ``device`` is a
    :func:`device_name`."""
    return f"{device}|triton-{triton_ver or triton_version()}|{problem.cache_key()}"


def backward_key(problem: ConvProblem, device: str, gradient: str, triton_ver: str | None = None) -> str:
    """The key of ``problem``'s tuned ``gradient`` ('dgrad' or 'wgrad') config: the forward's
    :func:`entry_key` and ``|dgrad`` or ``|wgrad``."""
    return f"{entry_key(problem, device, triton_ver)}|{gradient}"


def make_backward_entry(
    algorithm: str,
    config: BackwardConfig,
    gradient: str,
    *,
    time_ms: float | None = None,
    default_ms: float | None = None,
    problem: ConvProblem | None = None,
) -> Entry:
    """The JSON value stored for one backward winner (``gradient`` marks it as one)."""
    entry: Entry = {"algorithm": algorithm, "gradient": gradient, "config": config.to_dict()}
    if time_ms is not None:
        entry["time_ms"] = round(float(time_ms), 6)
    if default_ms is not None:
        entry["default_ms"] = round(float(default_ms), 6)
    if problem is not None:
        entry["problem"] = problem.describe()
    entry["tuned_at"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    return entry


def make_entry(
    algorithm: str,
    config: LaunchConfig,
    *,
    time_ms: float | None = None,
    default_ms: float | None = None,
    best_per_algorithm: Mapping[str, tuple[LaunchConfig, float]] | None = None,
    problem: ConvProblem | None = None,
) -> Entry:
    """The JSON value stored for one winner (only ``algorithm`` and ``config`` are read
    back by :func:`lookup`; the rest is for people reading the file)."""
    entry: Entry = {"algorithm": algorithm, "config": config.to_dict()}
    if time_ms is not None:
        entry["time_ms"] = round(float(time_ms), 6)
    if default_ms is not None:
        entry["default_ms"] = round(float(default_ms), 6)
    if best_per_algorithm:
        entry["best_per_algorithm"] = {
            name: {"config": cfg.to_dict(), "time_ms": round(float(ms), 6)}
            for name, (cfg, ms) in best_per_algorithm.items()
        }
    if problem is not None:
        entry["problem"] = problem.describe()
        entry["epilogue"] = str(problem.epilogue)
    entry["tuned_at"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    return entry


# --------------------------------------------------------------------- reading
@dataclass(frozen=True)
class TunedChoice:
    """A cached winner, parsed: what :func:`tileconv.dispatch.select` uses."""

    algorithm: str
    config: LaunchConfig
    time_ms: float | None = None
    # The fastest config measured for each algorithm tried (used when one is forced).
    per_algorithm: dict[str, LaunchConfig] = field(default_factory=dict)


class _CorruptCache(Exception):
    pass


def _parse(text: str) -> dict[str, Entry]:
    """The entries of a cache file's text; raises _CorruptCache saying what is wrong."""
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise _CorruptCache(f"it is not valid JSON ({err})") from err
    if not isinstance(data, dict) or data.get("format") != FORMAT_NAME:
        raise _CorruptCache(f"it is not a {FORMAT_NAME} file")
    if data.get("version") != FORMAT_VERSION:
        raise _CorruptCache(f"its version is {data.get('version')!r}, expected {FORMAT_VERSION}")
    entries = data.get("entries")
    if not isinstance(entries, dict) or not all(isinstance(v, dict) for v in entries.values()):
        raise _CorruptCache("its 'entries' is not an object of objects")
    return entries


def _read(path: Path, purpose: str) -> dict[str, Entry]:
    """The entries in ``path``: {} if it is missing; {} and a warning if it is corrupt."""
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return {}
    except OSError as err:  # unreadable (permissions, a folder of that name): conv2d must still run
        _warn_corrupt(path, f"it cannot be read ({err})", purpose)
        return {}
    except UnicodeDecodeError as err:
        _warn_corrupt(path, f"it is not UTF-8 text ({err})", purpose)
        return {}
    try:
        return _parse(text)
    except _CorruptCache as err:
        _warn_corrupt(path, str(err), purpose)
        return {}


def _warn_corrupt(path: Path, why: str, purpose: str) -> None:
    warnings.warn(
        f"tileconv: ignoring the tuning cache {path}: {why}; {purpose}",
        TuningCacheWarning,
        stacklevel=4,
    )


def load(path: Path | None = None) -> dict[str, Entry]:
    """Every entry of the cache file (a fresh read; a corrupt file warns and gives {})."""
    return _read(path or cache_file(), "it will be rebuilt on the next write")


# Parsed files, by path: loaded on the first lookup and kept for the process, so that a
# lookup is a dict access. Keyed by path so that a changed $TILECONV_CACHE_DIR is honoured.
_loaded: dict[Path, dict[str, Entry]] = {}


def _entries(path: Path) -> dict[str, Entry]:
    entries = _loaded.get(path)
    if entries is None:
        entries = _read(path, "tuned winners are not used until it is rebuilt by `tileconv tune`")
        _loaded[path] = entries
    return entries


def reload() -> None:
    """Forget the parsed file(s): the next lookup reads the file again. (A process does not
    otherwise see winners that another process wrote after its first lookup.)"""
    _loaded.clear()


def parse_entry(entry: Entry) -> TunedChoice | None:
    """The choice stored in ``entry``, or None if it names an unknown algorithm or holds a
    malformed config (a newer tileconv may have written it)."""
    try:
        algorithm = entry["algorithm"]
        if algorithm not in ALGORITHMS:
            return None
        config = LaunchConfig.from_dict(entry["config"])
        per_algorithm = {}
        for name, best in (entry.get("best_per_algorithm") or {}).items():
            if name in ALGORITHMS:
                per_algorithm[name] = LaunchConfig.from_dict(best["config"])
        time_ms = entry.get("time_ms")
        return TunedChoice(algorithm, config, float(time_ms) if time_ms is not None else None, per_algorithm)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


# A problem tuned in one 16-bit float type stands in for the same problem in the other where
# that has no entry of its own: the same kernels, tiles and bytes, the same tensor-core rate
# (bf16 ran within 3% of fp16 row by row, both tuned: README), and a winner beats the
# heuristics' guess. A model trained under bf16 autocast on a GPU tuned by `tune --suite`
# (fp16) gets the tuned kernels. Tuning itself asks for exact entries only (``sibling=False``).
_SIBLING_DTYPE = {torch.float16: torch.bfloat16, torch.bfloat16: torch.float16}


def _find(problem: ConvProblem, key_of: Callable[[ConvProblem], str], sibling: bool) -> Entry | None:
    """The cache file's entry under ``key_of(problem)``; with ``sibling``, where there is none,
    the entry of the same problem in the other 16-bit type."""
    entries = _entries(cache_file())
    entry = entries.get(key_of(problem))
    other = _SIBLING_DTYPE.get(problem.dtype) if sibling else None
    if entry is None and other is not None:
        entry = entries.get(key_of(replace(problem, dtype=other)))
    return entry


def lookup(problem: ConvProblem, device: torch.device | str | int | None = None, *,
           sibling: bool = True) -> TunedChoice | None:
    """The cached winner for ``problem`` on ``device`` with this Triton, if tuned (with
    ``sibling``, else the winner of the same problem in the other 16-bit type)."""
    name = device_name(device)
    entry = _find(problem, lambda p: entry_key(p, name), sibling)
    return parse_entry(entry) if entry is not None else None


def lookup_backward(problem: ConvProblem, gradient: str,
                    device: torch.device | str | int | None = None,
                    algorithms: Collection[str] | None = None, *, sibling: bool = True) -> BackwardConfig | None:
    """The tuned ``gradient`` config for ``problem`` on ``device`` with this Triton, if any
    (None too for an entry this version cannot read, or, where ``algorithms`` is given, one
    tuned for a backward algorithm not among them: its config would mean another kernel's
    tile). With ``sibling``, the other 16-bit type's entry where the problem has none."""
    name = device_name(device)
    entry = _find(problem, lambda p: backward_key(p, name, gradient), sibling)
    if entry is None or entry.get("gradient") != gradient:
        return None
    if algorithms is not None and entry.get("algorithm") not in algorithms:
        return None
    try:
        return BackwardConfig.from_dict(entry["config"])
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


# --------------------------------------------------------------------- writing
@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive flock on ``path``'s lock file (blocks while another writer holds it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if fcntl is None:  # pragma: no cover
        yield
        return
    with open(path.with_name(path.name + ".lock"), "a+b") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


def _write_atomically(path: Path, entries: Mapping[str, Entry]) -> None:
    data = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "entries": dict(sorted(entries.items()))}
    fd, tmp_name = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as tmp:
            json.dump(data, tmp, indent=1)
            tmp.write("\n")
            tmp.flush()
            os.fsync(tmp.fileno())  # the rename must never publish a file whose data is not on disk
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise


def store(updates: Mapping[str, Entry], path: Path | None = None) -> None:
    """Merge ``updates`` (entry key -> entry) into the cache file.

    Under the lock: re-read the file (another process may have written since this one
    read it), update, write a temporary file and rename it over the old one. A corrupt
    file is replaced by one holding just ``updates`` (after a warning). The process's
    parsed copy is refreshed too, so its next lookups see the new winners.
    """
    path = path or cache_file()
    with _locked(path):
        entries = _read(path, "rebuilding it")
        entries.update(updates)
        _write_atomically(path, entries)
    _loaded[path] = entries


def remove(keys: list[str], path: Path | None = None) -> int:
    """Delete entries by key; returns how many were present."""
    path = path or cache_file()
    with _locked(path):
        entries = _read(path, "rebuilding it")
        removed = sum(entries.pop(key, None) is not None for key in keys)
        _write_atomically(path, entries)
    _loaded[path] = entries
    return removed


def cache_summary() -> dict[str, Any]:
    """For ``tileconv info``: ``{"path": str, "entries": int, "bytes": int, "corrupt": bool}``
    (a missing file has 0 entries and 0 bytes)."""
    path = cache_file()
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return {"path": str(path), "entries": 0, "bytes": 0, "corrupt": False}
    try:
        entries = len(_parse(path.read_bytes().decode("utf-8")))
        corrupt = False
    except (_CorruptCache, UnicodeDecodeError, OSError):
        entries, corrupt = 0, True
    return {"path": str(path), "entries": entries, "bytes": size, "corrupt": corrupt}
