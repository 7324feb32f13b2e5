"""Whether a path given for output can be written, found by looking (creating nothing).

A run directory under a regular file or on a read-only file system would otherwise fail
half-way through a command as an OSError from deep inside; looking first gives one line.
"""

from __future__ import annotations

import os
from pathlib import Path

from disagg.probe import probe, shortened


def why_unwritable(path: Path | str, *, directory: bool) -> str | None:
    """Why `path` cannot be created (with its missing parents) and written: as a directory
    to write files into, or as a file written beside its parent's other files. None when
    nothing in the way can be seen (the disk may still fill)."""
    target = Path(path)
    found = probe(target)
    if found.problem is not None:
        return found.problem
    if found.exists:
        if directory and not found.is_dir:
            return "exists and is not a directory"
        if not directory and found.is_dir:
            return "is a directory"
        # a file is replaced by a new one renamed over it: its directory is written
        return _not_writable(target if directory else target.parent)
    for parent in target.parents:
        above = probe(parent)
        if above.problem is not None:
            return f"{shortened(parent)}: {above.problem}"
        if not above.exists:
            continue
        if not above.is_dir:
            return f"{shortened(parent)} is not a directory"
        return _not_writable(parent)
    return None


def _not_writable(directory: Path) -> str | None:
    """Why files cannot be made in the existing `directory`, if they cannot."""
    name = shortened(directory)
    try:
        read_only = bool(os.statvfs(directory).f_flag & os.ST_RDONLY)
    except OSError as exc:
        return f"{name}: {exc.strerror or exc}"
    if read_only:
        return f"{name} is on a read-only file system"
    if not os.access(directory, os.W_OK | os.X_OK):
        return f"{name} is not writable (permission denied)"
    return None
