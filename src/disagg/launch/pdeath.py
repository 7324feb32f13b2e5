"""Run a role's command so that it ends when the orchestrator that started it dies.

`python pdeath.py PARENT_PID COMMAND [ARG...]` asks Linux for SIGTERM on its parent's
death, checks the parent is still PARENT_PID, then execs COMMAND, which keeps the
request: a SIGKILLed `disagg run` leaves no engine holding ports or GPU memory.
Standard library only: the launcher runs this file directly.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1
EXIT_NOT_STARTED = 127


def main(argv: list[str]) -> int:
    if len(argv) < 2 or not argv[0].isdigit():
        print("usage: pdeath.py PARENT_PID COMMAND [ARG...]", file=sys.stderr)
        return 2
    parent, command = int(argv[0]), argv[1:]
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0) != 0:
            print(f"disagg: prctl failed: {os.strerror(ctypes.get_errno())}", file=sys.stderr)
    if os.getppid() != parent:
        print(f"disagg: the orchestrator (pid {parent}) is gone; not starting", file=sys.stderr)
        return EXIT_NOT_STARTED
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        print(f"disagg: cannot start {command[0]!r}: {exc.strerror or exc}", file=sys.stderr)
    return EXIT_NOT_STARTED


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
