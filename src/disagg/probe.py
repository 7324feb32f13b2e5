"""Look a user-given path up, and read a file, without letting the OS's refusal escape.

`Path.exists()` raises for a name the OS will not look up at all (a component over 255
bytes), so commands stat user paths here and report the reason as bad input.
`read_limited` reads every file disagg is given, refusing a FIFO, a device or an
oversized file in bounded time and memory.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from disagg.errors import DisaggError

MIB = 1024 * 1024
# Upper bounds, far over any real file of the kind (the largest recipe of the corpora is
# under 100 KB, a plan under 1 MB, a result with per-request samples a few MB).
MAX_RECIPE_BYTES = 64 * MIB
MAX_PLAN_BYTES = 64 * MIB
MAX_RECORD_BYTES = 16 * MIB  # state.json, summary.json, slurm.json
MAX_RESULT_BYTES = 64 * MIB


@dataclass(frozen=True, slots=True)
class PathProbe:
    """What a path is: `problem` is the OS's reason when it cannot even be looked up."""

    exists: bool
    is_dir: bool = False
    is_file: bool = False
    problem: str | None = None


def probe(path: Path | str) -> PathProbe:
    """Stat `path` (following symlinks); a missing path is `exists=False`, never an error."""
    try:
        info = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return PathProbe(exists=False)
    except OSError as exc:
        return PathProbe(exists=False, problem=exc.strerror or str(exc))
    except ValueError as exc:  # an embedded NUL byte
        return PathProbe(exists=False, problem=str(exc))
    mode = info.st_mode
    return PathProbe(exists=True, is_dir=stat.S_ISDIR(mode), is_file=stat.S_ISREG(mode))


def shortened(name: str | Path, limit: int = 120) -> str:
    """A path as named in a message, cut when it is too long to be a real name anyway."""
    text = str(name)
    return text if len(text) <= limit else f"{text[: limit - 3]}..."


class UnreadableFile(DisaggError, ValueError):
    """A file that cannot be what it should be (not a plain file, too large, unreadable);
    a ValueError too, so a caller that treats a malformed record as absent handles both."""


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def read_limited(path: Path | str, *, what: str, limit: int) -> bytes:
    """The bytes of the regular file `path` (links followed), at most `limit` of them.

    Opened without blocking, so a FIFO is refused, not waited on; a file that grows past
    `limit` while read is refused after `limit + 1` bytes."""
    name = shortened(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise UnreadableFile(f"{what} {name}: no such file") from None
    except OSError as exc:
        raise UnreadableFile(f"{what} {name}: cannot read: {exc.strerror or exc}") from None
    except ValueError as exc:  # an embedded NUL byte
        raise UnreadableFile(f"{what} {name}: {exc}") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise UnreadableFile(f"{what} {name}: {_kind(info.st_mode)}, not a file")
    with os.fdopen(fd, "rb") as handle:
        if info.st_size > limit:
            raise UnreadableFile(_too_large(what, name, limit))
        try:
            data = _read_at_most(handle, info.st_size, limit)
        except OSError as exc:
            raise UnreadableFile(f"{what} {name}: cannot read: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise UnreadableFile(_too_large(what, name, limit))
    return data


def _read_at_most(handle: BinaryIO, size: int, limit: int) -> bytes:
    """The file's bytes, `limit + 1` at most; memory follows what is read, not `limit`
    (a file that says its size, as most do, is read in one go)."""
    want = min(size, limit) + 1
    data = handle.read(want)
    if len(data) < want:
        return data
    chunks, total = [data], len(data)
    while total <= limit:  # it grew, or says size 0 (a /proc file)
        more = handle.read(min(1 << 20, limit + 1 - total))
        if not more:
            break
        chunks.append(more)
        total += len(more)
    return b"".join(chunks)


def _too_large(what: str, name: str, limit: int) -> str:
    bound = f"{limit // MIB} MiB" if limit >= MIB else f"{limit} bytes"
    return f"{what} {name}: larger than {bound}, more than any {what} can be"
