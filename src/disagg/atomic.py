"""Crash-safe file writes: write a temporary file beside the target, fsync, then rename.

A reader never sees a half-written plan, result or summary, and a crash leaves the
previous version in place.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any


def _creation_mode() -> int:
    """The mode `open()` gives a new file (0o666 less the umask); mkstemp alone gives 0o600,
    which hides plans, results and reports from the rest of a team on a shared filesystem."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


_MODE = _creation_mode()
_SCOPED_MODE: ContextVar[int | None] = ContextVar("atomic_file_mode", default=None)


@contextmanager
def files_created_with(mode: int | None) -> Iterator[None]:
    """Files written inside get `mode` (0o600 for a report that may quote a recipe's
    settings) unless a write names its own."""
    token = _SCOPED_MODE.set(mode)
    try:
        yield
    finally:
        _SCOPED_MODE.reset(token)


def write_bytes(path: Path, data: bytes, *, mode: int | None = None) -> None:
    """Write `data` to `path` atomically; `mode` (e.g. 0o600 for a file holding a secret)
    replaces the usual umask-derived mode."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            if mode is None:
                mode = _SCOPED_MODE.get()
            os.fchmod(handle.fileno(), _MODE if mode is None else mode)
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text(path: Path, text: str, *, mode: int | None = None) -> None:
    write_bytes(path, text.encode(), mode=mode)


def write_json(path: Path, obj: Any) -> None:
    write_text(path, json.dumps(obj, indent=2, sort_keys=False) + "\n")
