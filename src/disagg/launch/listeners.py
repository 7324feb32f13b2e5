"""Who listens on a TCP port of this host: `/proc/net/tcp{,6}` inodes matched to `/proc/PID/fd`.

An HTTP 200 on a role's port proves only that something answers there: another
program (or a leftover of an earlier run) may hold the port while the role itself
failed to bind it. The health gate therefore asks whether the listening socket
belongs to the role's own processes. Linux only; elsewhere nothing can be told
(None), and the gate goes by the answer alone, as before.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

_LISTEN = "0A"


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
            _, _, hex_port = fields[1].rpartition(":")
            try:
                if int(hex_port, 16) == port:
                    found.add(int(fields[9]))
            except ValueError:
                continue
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


def held_by(pids: Iterable[int], inodes: set[int]) -> bool:
    """Whether one of `pids` holds one of the sockets `inodes`."""
    return any(socket_inodes(pid) & inodes for pid in pids)


def holders(inodes: set[int]) -> list[str]:
    """`NAME (pid N)` of each process on this host holding one of `inodes` (for messages)."""
    found: list[str] = []
    try:
        pids = sorted(int(name) for name in os.listdir("/proc") if name.isdigit())
    except OSError:
        return found
    for pid in pids:
        if socket_inodes(pid) & inodes:
            try:
                with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as handle:
                    name = handle.read().strip()
            except OSError:
                continue
            found.append(f"{name} (pid {pid})")
    return found


def foreign_listener(name: str, owned: Iterable[bool | None], port: int) -> str | None:
    """Why an answer on `port` is not role `name` answering, else None. `owned` holds, for
    each of the role's tasks on that node, whether it listens there (None: the executor
    cannot tell, which counts as its own)."""
    if any(answer is not False for answer in owned):
        return None
    held = ", ".join(holders(listening_inodes(port) or set())) or "another process"
    return f"port {port} answers, but not from {name}'s processes (held by {held})"
