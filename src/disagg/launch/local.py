"""The local executor: every role task is a subprocess on this machine.

Each task runs in its own session (and so its own process group), so that stopping
a role reaches every process it spawned (an engine's workers, a router's children),
not just the first one; what left the group (`setsid cmd &`) is found by the task
mark in its environment or by having been seen below the task, and stopped too
(`sweep.py`). The health gate asks the task whether it holds the listening socket
of its port (`listeners.py`). Each task also gets SIGTERM when the orchestrator dies
(`pdeath.py`), so a killed `disagg run` leaves nothing running. Every node rank maps
to 127.0.0.1: a local run is a one-host allocation with as many "nodes" as the plan
asks for.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from disagg.errors import DisaggError
from disagg.launch import listeners, sweep
from disagg.launch.base import RoleLauncher, RoleProcess, spawn_logged
from disagg.launch.liveness import stop_group
from disagg.plan.model import MpiPlan

PDEATH = Path(__file__).with_name("pdeath.py")

LOOPBACK = "127.0.0.1"


class LocalProcess(RoleProcess):
    """A role task started with `subprocess.Popen` in a new session."""

    def __init__(
        self, role: str, node_rank: int, popen: subprocess.Popen[bytes], mark: str = ""
    ) -> None:
        self.role = role
        self.node_rank = node_rank
        self.mark = mark  # DISAGG_TASK_MARK of this task (see `sweep`)
        self.seen: dict[int, int] = {}  # descendants seen while it ran: pid -> start ticks
        self._popen = popen

    @property
    def pid(self) -> int:
        return self._popen.pid

    def poll(self) -> int | None:
        return self._popen.poll()

    def signal_group(self, signum: int) -> None:
        """Send `signum` to the task's whole process group (ignores a group already gone)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._popen.pid, signum)

    def listens_on(self, port: int) -> bool | None:
        """Whether the listener of `port` is this task's: the task, a descendant, or a
        process carrying its mark holds the socket."""
        inodes = listeners.listening_inodes(port)
        if not inodes:  # unreadable, or the answer came from where this host cannot see
            return None
        found = sweep.find(self.mark, (self.pid,)) if self.mark else {}
        return listeners.held_by([self.pid, *found], inodes)

    def stop(self, grace_s: float = 5.0) -> int | None:
        """Stop the task's process group, then whatever it left outside the group."""
        code = self._popen.poll()
        # Looked up first: while the group lives, its members still lead to their children.
        found = sweep.find(self.mark, (self.pid,)) if self.mark else {}
        # Even when the leader already exited, children may still hold the group.
        self.signal_group(signal.SIGTERM)
        self.signal_group(signal.SIGCONT)  # a stopped (hung) task must run to see SIGTERM
        if code is None:
            try:
                code = self._popen.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                self.signal_group(signal.SIGKILL)
                code = self._popen.wait()
        stop_group(self._popen.pid, grace_s)  # members left after the leader went
        if self.mark:
            found.update(sweep.find(self.mark))
            found.update(self.seen)  # one that also shed the mark (env -i) but was seen below
            left = {pid: ticks for pid, ticks in found.items() if sweep.is_alive(pid, ticks)}
            if left:
                self.swept = (*self.swept, *sweep.stop(left, grace_s))
        return code


class LocalLauncher(RoleLauncher):
    """Starts role tasks as local subprocesses; `nodes` loopback "nodes"."""

    def __init__(self, nodes: int = 1) -> None:
        self._nodes = max(1, nodes)
        self.token = f"local-{os.getpid()}-{secrets.token_hex(6)}"  # this run's task marks
        self._launched: list[LocalProcess] = []

    def track(self) -> None:
        """Note the descendants of every running task (one look at /proc for all of them)."""
        running = [process for process in self._launched if process.poll() is None]
        if not running:
            return
        table = sweep.ProcessTable()
        for process in running:  # replaced, not changed in place: `stop` may be reading it
            process.seen = {**process.seen, **table.descendants((process.pid,))}

    def node_addresses(self) -> list[str]:
        return [LOOPBACK] * self._nodes

    def node_names(self) -> list[str]:
        return [f"local{rank}" for rank in range(self._nodes)]

    def launch(
        self,
        *,
        role: str,
        node_rank: int,
        argv: Sequence[str],
        env: Mapping[str, str],
        log_path: Path,
        container_image: str | None = None,
        mpi: MpiPlan | None = None,
        mpi_nodes: Sequence[int] = (),
        srun_options: Mapping[str, str] | None = None,
    ) -> RoleProcess:
        if not argv:
            raise DisaggError(f"role {role} has an empty command")
        if mpi is not None:
            raise DisaggError(
                f"role {role} is one MPI step over {len(mpi_nodes)} nodes; the local executor "
                "starts plain processes",
                hint="run it on Slurm (disagg submit)",
            )
        failure = f"role {role}: cannot start {argv[0]!r}"
        # Looked up on the PATH the role runs with (its env may put an engine's bin first),
        # and said here, not as exit 127 of the wrapper.
        if shutil.which(argv[0], path=env.get("PATH")) is None:
            raise DisaggError(
                f"{failure}: not found", hint="check the role's command in plan.json", exit_code=1
            )
        # Call from a thread that lives as long as the run: Linux sends the parent-death
        # signal when the thread that started the child ends.
        wrapped = [sys.executable, "-I", str(PDEATH), str(os.getpid()), *argv]
        mark = f"{self.token}/{role}.{node_rank}"
        popen = spawn_logged(
            wrapped,
            env={**env, sweep.MARK_VAR: mark},
            log_path=log_path,
            banner=f"{role} node {node_rank}",
            failure=failure,
            hint="check the role's command in plan.json",
        )
        process = LocalProcess(role, node_rank, popen, mark)
        self._launched.append(process)
        return process
