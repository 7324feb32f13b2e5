"""Run logs: where they live, how they are written, and how their ends are read.

One file per task (`logs/<role>.log`, `<role>.<node_rank>.log` over several nodes) and
`orchestrator.log`. `disagg logs --follow` stops by itself once the run ended, so that
a script can follow a run to its end.
"""

from __future__ import annotations

import errno
import io
import logging
import os
import re
import stat
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import BinaryIO

from disagg.errors import DisaggError
from disagg.launch.state import RunState, RunStatus

LOG_DIR = "logs"
ORCHESTRATOR_LOG = "orchestrator.log"
LOG_MODE = 0o644
POLL_S = 0.2
TAIL_BYTES = 256 * 1024
ERROR_SCAN_BYTES = 1024 * 1024


def open_log(path: Path) -> BinaryIO:
    """Open a log for appending, refusing a link, FIFO or device planted in a shared run
    directory: the run would write wherever it points."""
    directory = path.parent
    directory.mkdir(parents=True, exist_ok=True)
    try:
        dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise _refused(directory, exc) from None
    try:
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
        fd = os.open(path.name, flags | os.O_CLOEXEC, LOG_MODE, dir_fd=dir_fd)
    except OSError as exc:
        raise _refused(path, exc) from None
    finally:
        os.close(dir_fd)
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_nlink > 1:
        os.close(fd)
        what = "has another name (a hard link)" if stat.S_ISREG(info.st_mode) else "not a file"
        raise DisaggError(f"refusing to write log {path}: {what}", hint=_HINT)
    os.set_blocking(fd, True)
    return os.fdopen(fd, "ab")


_HINT = "remove it; disagg creates its logs itself"


def _refused(path: Path, exc: OSError) -> DisaggError:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        return DisaggError(f"refusing to write log {path}: a symbolic link", hint=_HINT)
    if exc.errno == errno.ENXIO:  # a FIFO nobody reads
        return DisaggError(f"refusing to write log {path}: not a file", hint=_HINT)
    return DisaggError(f"cannot write log {path}: {exc.strerror or exc}", exit_code=1)


def log_dir(run_dir: Path) -> Path:
    return run_dir / LOG_DIR


def task_log_path(run_dir: Path, role: str, node_rank: int, nnodes: int) -> Path:
    name = f"{role}.log" if nnodes <= 1 else f"{role}.{node_rank}.log"
    return log_dir(run_dir) / name


def tail(path: Path, lines: int = 30, *, end: int | None = None) -> list[str]:
    """The last `lines` lines of a text file, up to byte `end` (reads at most 256 KiB)."""
    try:
        with path.open("rb") as handle:
            size = handle.seek(0, 2) if end is None else end
            handle.seek(max(0, size - TAIL_BYTES))
            data = handle.read(size - handle.tell())
    except OSError:
        return []
    text = data.decode("utf-8", errors="replace")
    return text.splitlines()[-lines:] if lines > 0 else []


def role_logs(run_dir: Path) -> dict[str, list[Path]]:
    """Role (or `orchestrator`) -> its log files, sorted by node rank."""
    found: dict[str, list[Path]] = {}
    for path in sorted(log_dir(run_dir).glob("*.log")):  # none when there is no directory
        stem = path.name[: -len(".log")]
        head, _, rank = stem.rpartition(".")
        role = head if head and rank.isdigit() else stem
        found.setdefault(role, []).append(path)
    return found


# What engines, routers and Python print when something went wrong: a logger's ERROR or
# CRITICAL level, a traceback, a Rust panic.
_ERROR_LINE = re.compile(
    r"\b(?:ERROR|CRITICAL|FATAL|panicked)\b|Traceback \(most recent call last\)"
)


def log_sizes(paths: list[Path]) -> dict[Path, int]:
    """Each log's current size: where `first_error_line` starts reading later."""
    sizes: dict[Path, int] = {}
    for path in paths:
        try:
            sizes[path] = path.stat().st_size
        except OSError:
            sizes[path] = 0
    return sizes


def first_error_line(path: Path, since: int) -> str | None:
    """The first error line `path` got after byte `since` (reads at most 1 MiB)."""
    try:
        with path.open("rb") as handle:
            handle.seek(since)
            data = handle.read(ERROR_SCAN_BYTES)
    except OSError:
        return None
    for line in data.decode("utf-8", errors="replace").splitlines():
        if _ERROR_LINE.search(line):
            return line.strip()
    return None


class _LogFileHandler(logging.FileHandler):
    """The orchestrator's log file; a failed write (disk full) is said once on stderr, not
    as logging's traceback per lost line, which would bury the error that ended the run."""

    _reported = False

    def _open(self) -> io.TextIOWrapper:
        """Opened without following a link planted in the run directory."""
        return io.TextIOWrapper(open_log(Path(self.baseFilename)), encoding="utf-8")

    def handleError(self, record: logging.LogRecord) -> None:
        if not self._reported:
            self._reported = True
            error = sys.exc_info()[1]
            print(f"disagg: cannot write {self.baseFilename}: {error}", file=sys.stderr)


def make_logger(run_dir: Path, *, echo: bool) -> logging.Logger:
    logger = logging.getLogger(f"disagg.job.{id(run_dir)}.{time.monotonic_ns()}")
    logger.setLevel(logging.INFO)
    logger.propagate = False
    formatter = logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S")
    file_handler = _LogFileHandler(log_dir(run_dir) / ORCHESTRATOR_LOG)
    file_handler.setFormatter(formatter)
    logger.addHandler(file_handler)
    if echo:
        stream = logging.StreamHandler(sys.stderr)
        stream.setFormatter(formatter)
        logger.addHandler(stream)
    return logger


def close_log(log: logging.Logger) -> None:
    for handler in list(log.handlers):
        handler.close()
        log.removeHandler(handler)


class Cursor:
    """A read position in one log file; starts at the file's current end."""

    def __init__(self, path: Path, prefix: str = "") -> None:
        self.path = path
        self.prefix = prefix
        self.offset = path.stat().st_size if path.exists() else 0
        self.partial = b""

    def read_new(self) -> list[str]:
        try:
            size = self.path.stat().st_size
        except OSError:
            return []
        if size < self.offset:  # truncated or replaced: start over
            self.offset = 0
        if size == self.offset:
            return []
        with self.path.open("rb") as handle:
            handle.seek(self.offset)
            data = handle.read(size - self.offset)
        self.offset += len(data)
        data = self.partial + data
        *lines, self.partial = data.split(b"\n")
        return [self.prefix + line.decode("utf-8", errors="replace") for line in lines]


def run_ended(run_dir: Path) -> bool:
    """Whether nothing will write the run's logs any more: `state.json` says, else the run
    lock (no live holder, no run)."""
    from disagg.launch.runlock import run_dir_held

    try:
        state = RunState.read(run_dir)
    except (OSError, ValueError):
        state = None
    if state is not None:
        return state.status is not RunStatus.RUNNING or state.orchestrator_dead()
    return not run_dir_held(run_dir)


def cursors_for(paths: Sequence[Path], *, prefixed: bool) -> list[Cursor]:
    return [Cursor(p, f"[{p.stem}] " if prefixed else "") for p in paths]


def follow(run_dir: Path, cursors: Sequence[Cursor], emit: Callable[[str], None]) -> None:
    """Print what the files gain after each cursor until the run ends."""
    while True:
        ended = run_ended(run_dir)
        for cursor in cursors:
            for line in cursor.read_new():
                emit(line)
        if ended:
            return
        time.sleep(POLL_S)
