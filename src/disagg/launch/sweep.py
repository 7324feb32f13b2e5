"""Find and stop what a role left running outside its process group.

Stopping a role's process group misses a child that left it (`setsid cmd &`, a daemon
that double-forks): once its parent exits it belongs to init and nothing links it to
the role but what it inherited. Every role task is therefore started with
`DISAGG_TASK_MARK=<run token>/<role>.<rank>` in its environment, and a sweep walks
`/proc` for processes that carry the mark (or descend from the task while it still
runs, or were seen below it while it ran: `ProcessTable`), stops them and names each
one, so no child outlives its run silently.

Standard library only: on Slurm the orchestrator runs this file as a short step on
each node (`python -I -c <this file> MARK GRACE`), since a role's node is another host.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time

MARK_VAR = "DISAGG_TASK_MARK"
_MARK_KEY = MARK_VAR.encode() + b"="


def _pids() -> list[int]:
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    return [int(name) for name in names if name.isdigit()]


def _stat(pid: int) -> tuple[int, int, str] | None:
    """(parent pid, start ticks, state) of a live process; None for a gone one or a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            text = handle.read().decode(errors="replace")
    except OSError:
        return None
    fields = text.rsplit(")", 1)[-1].split()
    if len(fields) < 20 or fields[0] in ("Z", "X"):
        return None
    return int(fields[1]), int(fields[19]), fields[0]


def carries_mark(pid: int, mark: str) -> bool:
    """Whether `pid`'s environment holds the mark `mark` (or a mark below it: `mark/...`)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            environ = handle.read(1 << 20)
    except OSError:  # gone, or another user's process: never ours
        return False
    wanted = mark.encode()
    for entry in environ.split(b"\0"):
        if entry.startswith(_MARK_KEY):
            value = entry[len(_MARK_KEY) :]
            return value == wanted or value.startswith(wanted + b"/")
    return False


class ProcessTable:
    """One look at every process of this host: parent and start time of each."""

    def __init__(self) -> None:
        self.parents: dict[int, int] = {}
        self.started: dict[int, int] = {}
        for pid in _pids():
            found = _stat(pid)
            if found is not None:
                self.parents[pid], self.started[pid], _ = found
        self.children: dict[int, list[int]] = {}
        for pid, parent in self.parents.items():
            self.children.setdefault(parent, []).append(pid)

    def descendants(self, roots: tuple[int, ...]) -> dict[int, int]:
        """Every process below `roots` (pid -> start ticks), the roots and this one excepted."""
        me = os.getpid()
        chosen: set[int] = set()
        stack = [child for root in roots for child in self.children.get(root, [])]
        while stack:
            pid = stack.pop()
            if pid in chosen or pid == me:
                continue
            chosen.add(pid)
            stack.extend(self.children.get(pid, []))
        chosen.difference_update(roots)
        return {pid: self.started[pid] for pid in chosen}


def find(mark: str, roots: tuple[int, ...] = ()) -> dict[int, int]:
    """Processes (pid -> start ticks) carrying `mark` or descending from a pid of `roots`.

    The roots themselves are not included (their owner stops them); neither is this process.
    """
    table = ProcessTable()
    me = os.getpid()
    found = table.descendants(roots)
    for pid, ticks in table.started.items():
        if pid != me and pid not in roots and pid not in found and carries_mark(pid, mark):
            found[pid] = ticks
    return found


def name_of(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm", "rb") as handle:
            return handle.read().decode(errors="replace").strip() or "?"
    except OSError:
        return "?"


def is_alive(pid: int, ticks: int) -> bool:
    """Whether `pid` still names the process that started at `ticks` (and is no zombie)."""
    found = _stat(pid)
    return found is not None and found[1] == ticks


def _signal(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signum)


def stop(found: dict[int, int], grace_s: float) -> list[str]:
    """SIGTERM each process (still the same one: PID and start time), SIGKILL what is left
    after `grace_s`; returns `NAME (pid N)` for each one stopped."""
    names = {pid: name_of(pid) for pid in found}
    for pid, ticks in found.items():
        if is_alive(pid, ticks):
            _signal(pid, signal.SIGTERM)
            _signal(pid, signal.SIGCONT)  # a stopped process must run to see SIGTERM
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(is_alive(p, t) for p, t in found.items()):
        time.sleep(0.02)
    for pid, ticks in found.items():
        if is_alive(pid, ticks):
            _signal(pid, signal.SIGKILL)
    return [f"{names[pid]} (pid {pid})" for pid in sorted(found)]


def sweep(mark: str, grace_s: float, roots: tuple[int, ...] = ()) -> list[str]:
    """Stop every process carrying `mark` (or below `roots`); describe each one."""
    return stop(find(mark, roots), grace_s)


def main(argv: list[str]) -> int:
    if len(argv) != 2 or not argv[0]:
        print("usage: sweep.py MARK GRACE_S", file=sys.stderr)
        return 2
    for line in sweep(argv[0], float(argv[1])):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
