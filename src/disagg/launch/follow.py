"""`disagg logs --follow`: print what role logs gain, like `tail -f` over several files.

Stops by itself once the run's `state.json` says it ended, or its orchestrator is
dead, or (without a readable `state.json`) no live run holds the directory's lock,
after printing what was still written, so a script can follow a run to its end.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

from disagg.launch.state import RunState, RunStatus

POLL_S = 0.2


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
    """Whether nothing will write the run's logs any more.

    `state.json` says so when there is a readable one; without one (deleted, truncated,
    not yet written) the run lock decides: no live holder means no run.
    """
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


def follow(
    run_dir: Path,
    cursors: Sequence[Cursor],
    emit: Callable[[str], None],
    *,
    until_ended: bool = True,
) -> None:
    """Print what the files gain after each cursor until the run ends (or forever)."""
    while True:
        ended = until_ended and run_ended(run_dir)
        for cursor in cursors:
            for line in cursor.read_new():
                emit(line)
        if ended:
            return
        time.sleep(POLL_S)
