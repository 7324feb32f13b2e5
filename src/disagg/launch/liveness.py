"""Is a recorded process still the one we started? (PID plus start time, on this host.)

A PID alone is not an identity: after a crash the number may belong to something
else by the time a re-run or `disagg status` looks. Linux's start time of a process
(`/proc/PID/stat` field 22, clock ticks since boot) is fixed for its life and
survives exec, so PID + start time + host (with its boot id) names one process.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import time
from dataclasses import dataclass
from pathlib import Path


def host_id() -> str:
    """This host's name and boot id: a PID means nothing on another host or boot."""
    boot = ""
    with contextlib.suppress(OSError):
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    return f"{socket.gethostname()}/{boot}"


def start_ticks(pid: int) -> int | None:
    """The process's start time in clock ticks since boot; None if it is gone or a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    if fields[0] in ("Z", "X"):
        return None
    return int(fields[19])  # field 22 of the whole line; fields[0] is field 3


@dataclass(frozen=True)
class ProcessIdentity:
    """One process: where it ran, its PID and its start time."""

    host: str
    pid: int
    started: int | None

    @classmethod
    def of(cls, pid: int) -> ProcessIdentity:
        return cls(host=host_id(), pid=pid, started=start_ticks(pid))

    def on_this_host(self) -> bool:
        return self.host == host_id()

    def alive(self) -> bool | None:
        """True/False on this host; None elsewhere (nothing here can tell)."""
        if not self.on_this_host():
            return None
        now = start_ticks(self.pid)
        return now is not None and (self.started is None or now == self.started)


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stop_group(pgid: int, grace_s: float) -> None:
    """SIGTERM a process group, wait up to `grace_s` for it to go, then SIGKILL what is left."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.02)
    if group_alive(pgid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
