"""The local executor: every task is a subprocess on this machine, every node 127.0.0.1.

Each task runs in its own session, so that stopping it reaches every process it spawned,
and gets SIGTERM when the orchestrator dies (`pdeath.py`), so that a killed `disagg run`
leaves nothing running.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from disagg.errors import DisaggError
from disagg.launch import procs
from disagg.launch.executor import RoleLauncher, StartedTask, Task, spawn_logged

PDEATH = Path(__file__).with_name("pdeath.py")
LOOPBACK = "127.0.0.1"


def stop_session(popen: subprocess.Popen[bytes], grace_s: float) -> int | None:
    """SIGTERM the process group `popen` leads, wait up to `grace_s` for it, then SIGKILL;
    then stop the members the leader left in the group; its exit code."""
    code = popen.poll()
    # Even when the leader already exited, children may still hold the group.
    procs.signal_group(popen.pid, signal.SIGTERM)
    procs.signal_group(popen.pid, signal.SIGCONT)  # a stopped (hung) task must run to see SIGTERM
    if code is None:
        try:
            code = popen.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            procs.signal_group(popen.pid, signal.SIGKILL)
            code = popen.wait()
    procs.stop_group(popen.pid, grace_s)  # members left after the leader went
    return code


class LocalLauncher(RoleLauncher):
    """Starts role tasks as local subprocesses; `nodes` loopback "nodes"."""

    def __init__(self, nodes: int = 1) -> None:
        super().__init__(f"local-{os.getpid()}-{secrets.token_hex(6)}")
        self._nodes = max(1, nodes)
        self._seen: dict[StartedTask, dict[int, int]] = {}  # descendants seen: pid -> ticks

    def node_addresses(self) -> list[str]:
        return [LOOPBACK] * self._nodes

    def node_names(self) -> list[str]:
        return [f"local{rank}" for rank in range(self._nodes)]

    def start(self, task: Task, env: Mapping[str, str]) -> subprocess.Popen[bytes]:
        if task.mpi is not None:
            raise DisaggError(
                f"role {task.role} is one MPI step over {len(task.mpi_nodes)} nodes; the local "
                "executor starts plain processes",
                hint="run it on Slurm (disagg submit)",
            )
        failure = f"role {task.role}: cannot start {task.argv[0]!r}"
        hint = "check the role's command in plan.json"
        # Looked up on the PATH the role runs with (its env may put an engine's bin first),
        # and said here, not as exit 127 of the wrapper.
        if shutil.which(task.argv[0], path=env.get("PATH")) is None:
            raise DisaggError(f"{failure}: not found", hint=hint, exit_code=1)
        # Call from a thread that lives as long as the run: Linux sends the parent-death
        # signal when the thread that started the child ends.
        wrapped = [sys.executable, "-I", str(PDEATH), str(os.getpid()), *task.argv]
        banner = f"{task.role} node {task.node_rank}"
        return spawn_logged(
            wrapped, env=env, log_path=task.log_path, banner=banner, failure=failure, hint=hint
        )

    def stop(self, process: StartedTask, grace_s: float) -> int | None:
        """Stop the task's process group, then whatever it left outside the group."""
        # Looked up first: while the group lives, its members still lead to their children.
        found = procs.find(process.mark, (process.pid,))
        code = stop_session(process.popen, grace_s)
        found.update(procs.find(process.mark))
        found.update(self._seen.get(process, {}))  # shed the mark too (env -i), seen below
        left = {pid: ticks for pid, ticks in found.items() if procs.is_alive(pid, ticks)}
        if left:
            process.swept = (*process.swept, *procs.stop(left, grace_s))
        return code

    def listens_on(self, process: StartedTask, port: int) -> bool | None:
        """Whether the listener of `port` is the task's: the task, a descendant, or a
        process carrying its mark holds the socket."""
        inodes = procs.listening_inodes(port)
        if not inodes:  # unreadable, or the answer came from where this host cannot see
            return None
        owned = [process.pid, *procs.find(process.mark, (process.pid,))]
        return any(procs.socket_inodes(pid) & inodes for pid in owned)

    def track(self) -> None:
        """Note the descendants of every running task (one look at /proc for all of them)."""
        running = [process for process in self.launched if process.poll() is None]
        if not running:
            return
        table = procs.ProcessTable()
        for process in running:  # replaced, not changed in place: `stop` may be reading it
            seen = self._seen.get(process, {})
            self._seen[process] = {**seen, **table.descendants((process.pid,))}
