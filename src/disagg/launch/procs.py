"""This host's processes as `/proc` shows them: identity, leftovers, listeners, busy ports.

A PID alone is not an identity (after a crash the number may be reused); PID + start
time (`/proc/PID/stat` field 22) + host and boot id names one process. A child that left
its task's process group (`setsid cmd &`) is found by the mark every task inherits
(`MARK_VAR`), or by having been seen below the task, and stopped by name.

Standard library only: on Slurm this file runs as a short step on a role's node
(`python -I -c <this file> MARK GRACE`, or `--ports START COUNT`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

MARK_VAR = "DISAGG_TASK_MARK"
_MARK_KEY = MARK_VAR.encode() + b"="
_LISTEN = "0A"


def pids() -> list[int]:
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    return [int(name) for name in names if name.isdigit()]


def stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, start ticks) of a live process; None for a gone one or a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            text = handle.read().decode(errors="replace")
    except OSError:
        return None
    fields = text.rsplit(")", 1)[-1].split()  # fields[0] is field 3 of the whole line
    if len(fields) < 20 or fields[0] in ("Z", "X"):
        return None
    return int(fields[1]), int(fields[19])


def start_ticks(pid: int) -> int | None:
    """The process's start time in clock ticks since boot; None if it is gone or a zombie."""
    found = stat(pid)
    return found[1] if found is not None else None


def is_alive(pid: int, ticks: int) -> bool:
    """Whether `pid` still names the process that started at `ticks` (and is no zombie)."""
    return start_ticks(pid) == ticks


def name_of(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm", "rb") as handle:
            return handle.read().decode(errors="replace").strip() or "?"
    except OSError:
        return "?"


def host_id() -> str:
    """This host's name and boot id: a PID means nothing on another host or boot."""
    boot = ""
    with contextlib.suppress(OSError):
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    return f"{socket.gethostname()}/{boot}"


@dataclass(frozen=True)
class ProcessIdentity:
    """One process: where it ran, its PID and its start time."""

    host: str
    pid: int
    started: int | None

    def alive(self) -> bool | None:
        """True/False on this host; None elsewhere (nothing here can tell)."""
        if self.host != host_id():
            return None
        now = start_ticks(self.pid)
        return now is not None and (self.started is None or now == self.started)


def signal_group(pgid: int, signum: int) -> bool:
    """Send `signum` to a process group; False when the group is gone."""
    try:
        os.killpg(pgid, signum)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stop_group(pgid: int, grace_s: float) -> None:
    """SIGTERM a process group, wait up to `grace_s` for it to go, then SIGKILL what is left."""
    signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while signal_group(pgid, 0) and time.monotonic() < deadline:
        time.sleep(0.02)
    if signal_group(pgid, 0):
        signal_group(pgid, signal.SIGKILL)


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
        for pid in pids():
            found = stat(pid)
            if found is not None:
                self.parents[pid], self.started[pid] = found
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
    """Processes (pid -> start ticks) carrying `mark` or below `roots`; not the roots (their
    owner stops them), nor this process."""
    table = ProcessTable()
    me = os.getpid()
    found = table.descendants(roots)
    for pid, ticks in table.started.items():
        if pid != me and pid not in roots and pid not in found and carries_mark(pid, mark):
            found[pid] = ticks
    return found


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


def listening_inodes(port: int) -> set[int] | None:
    """Socket inodes listening on `port` (IPv4 and IPv6); None when /proc/net cannot be read."""
    found: set[int] = set()
    readable = False
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, encoding="ascii", errors="replace") as handle:
                lines = handle.read().splitlines()[1:]
        except OSError:
            continue
        readable = True
        for line in lines:
            fields = line.split()
            if len(fields) < 10 or fields[3] != _LISTEN:
                continue
            with contextlib.suppress(ValueError):
                if int(fields[1].rpartition(":")[2], 16) == port:
                    found.add(int(fields[9]))
    return found if readable else None


def socket_inodes(pid: int) -> set[int]:
    """Inodes of the sockets process `pid` holds open (empty when it cannot be looked at)."""
    inodes: set[int] = set()
    directory = f"/proc/{pid}/fd"
    try:
        names = os.listdir(directory)
    except OSError:
        return inodes
    for name in names:
        try:
            target = os.readlink(f"{directory}/{name}")
        except OSError:
            continue
        if target.startswith("socket:[") and target.endswith("]"):
            inodes.add(int(target[8:-1]))
    return inodes


def holders(port: int) -> str:
    """`NAME (pid N), ...` of the processes on this host listening on `port` (for messages)."""
    inodes = listening_inodes(port) or set()
    held = [pid for pid in sorted(pids()) if inodes and socket_inodes(pid) & inodes]
    return ", ".join(f"{name_of(pid)} (pid {pid})" for pid in held)


def foreign_listener(name: str, owned: Iterable[bool | None], port: int) -> str | None:
    """Why an answer on `port` is not role `name` answering, else None; `owned`: whether each
    of the role's tasks there listens on it (None, cannot tell, counts as its own)."""
    if any(answer is not False for answer in owned):
        return None
    held = holders(port) or "another process"
    return f"port {port} answers, but not from {name}'s processes (held by {held})"


def busy_ports(start: int, count: int) -> list[int]:
    """The ports of `start`..`start + count - 1` that cannot be bound here."""
    busy = []
    for port in range(start, start + count):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("0.0.0.0", port))
            except OSError:
                busy.append(port)
    return busy


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[0] == "--ports":
        print("\n".join(str(port) for port in busy_ports(int(argv[1]), int(argv[2]))))
        return 0
    if len(argv) != 2 or not argv[0]:
        print("usage: procs.py MARK GRACE_S | procs.py --ports START COUNT", file=sys.stderr)
        return 2
    for line in stop(find(argv[0]), float(argv[1])):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
