"""The executor seam: how one task starts on a node and how it stops.

The start sequence is written once, over this interface; an executor (`local.py`,
`srun.py`) only starts a `Task`, stops it, and answers what it alone can. Every task
carries a mark in its environment (`procs.MARK_VAR`), so that what it leaves outside
its process group is found and stopped.
"""

from __future__ import annotations

import os
import subprocess
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from disagg.errors import DisaggError
from disagg.launch import procs
from disagg.launch.logs import open_log
from disagg.plan.model import MpiPlan, RolePlan


@dataclass(frozen=True)
class Task:
    """One task of a role on one node; `env` is passed as a mapping, never split on commas.
    With `mpi`, one MPI step over `mpi_nodes` (head first)."""

    role: str
    node_rank: int
    argv: Sequence[str]
    env: Mapping[str, str]
    log_path: Path
    container_image: str | None = None
    mpi: MpiPlan | None = None
    mpi_nodes: Sequence[int] = ()
    srun_options: Mapping[str, str] | None = None

    @classmethod
    def of(
        cls, role: RolePlan, rank: int, argv: Sequence[str], env: Mapping[str, str], log: Path
    ) -> Task:
        """A task of a planned role: its container, its MPI step and its srun options."""
        mpi_nodes = role.node_ranks if role.mpi is not None else ()
        image, options = role.container_image, role.srun_options
        return cls(role.name, rank, argv, env, log, image, role.mpi, mpi_nodes, options)


class RoleProcess(ABC):
    """One started task, as the orchestrator sees it."""

    role: str
    node_rank: int
    # `NAME (pid N)` of each process the task left outside its process group, stopped by `stop`
    swept: tuple[str, ...] = ()

    @property
    @abstractmethod
    def pid(self) -> int: ...

    @abstractmethod
    def poll(self) -> int | None:
        """Exit code if the task ended, else None."""

    @abstractmethod
    def stop(self, grace_s: float = 5.0) -> int | None:
        """Terminate, wait up to `grace_s`, then kill; return the exit code."""

    def listens_on(self, port: int) -> bool | None:
        """Whether the task's own processes hold `port`'s listening socket; None: cannot tell."""
        return None


class StartedTask(RoleProcess):
    """A task an executor started: the process here that runs it (the task, or its srun)."""

    def __init__(
        self, launcher: RoleLauncher, task: Task, popen: subprocess.Popen[bytes], mark: str
    ) -> None:
        self.launcher, self.task, self.popen, self.mark = launcher, task, popen, mark
        self.role, self.node_rank = task.role, task.node_rank

    @property
    def pid(self) -> int:
        return self.popen.pid

    def poll(self) -> int | None:
        return self.popen.poll()

    def stop(self, grace_s: float = 5.0) -> int | None:
        return self.launcher.stop(self, grace_s)

    def listens_on(self, port: int) -> bool | None:
        return self.launcher.listens_on(self, port)


class RoleLauncher(ABC):
    """Starts role tasks on the allocation's nodes, and stops them."""

    def __init__(self, token: str) -> None:
        self.token = token  # this run's task marks: TOKEN/ROLE.RANK
        self.launched: list[StartedTask] = []

    def launch(self, task: Task) -> StartedTask:
        """Start `task` on its node, output appended to `task.log_path`."""
        if not task.argv:
            raise DisaggError(f"role {task.role} has an empty command")
        mark = f"{self.token}/{task.role}.{task.node_rank}"
        popen = self.start(task, {**task.env, procs.MARK_VAR: mark})
        process = StartedTask(self, task, popen, mark)
        self.launched.append(process)
        return process

    @abstractmethod
    def start(self, task: Task, env: Mapping[str, str]) -> subprocess.Popen[bytes]:
        """Start the process that runs `task` with the variables `env` (`spawn_logged`)."""

    @abstractmethod
    def stop(self, process: StartedTask, grace_s: float) -> int | None:
        """End the task, then what it left outside its process group; its exit code."""

    @abstractmethod
    def node_addresses(self) -> list[str]:
        """Address of each node rank of the allocation (index = node rank)."""

    @abstractmethod
    def node_names(self) -> list[str]:
        """Scheduler name of each node rank (for `--nodelist`)."""

    def listens_on(self, process: StartedTask, port: int) -> bool | None:
        return None

    def port_is_free(self, node_rank: int, port: int) -> bool:
        """Bind probe; the default probes on this host, which is right for local runs."""
        return not procs.busy_ports(port, 1)

    def lost_nodes(self) -> dict[int, str]:
        """Node ranks that left the allocation, described, so that a failure names the node."""
        return {}

    def track(self) -> None:  # noqa: B027 - optional hook
        """Note what each running task has started, for teardown to stop even after it left
        the task's group."""

    def close(self) -> None:  # noqa: B027 - optional hook, most launchers hold nothing
        """Release anything the launcher holds (for example cancel leftover steps)."""


def spawn_logged(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    log_path: Path,
    banner: str,
    failure: str,
    hint: str,
) -> subprocess.Popen[bytes]:
    """Start `argv` in its own session, so that teardown can signal the whole tree it starts;
    output appended to `log_path` after a banner line."""
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    with open_log(log_path) as log:
        log.write(f"=== disagg: {banner} started {stamp}\n".encode())
        log.flush()
        try:
            return subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, **env},
                start_new_session=True,
                close_fds=True,
            )
        except OSError as exc:
            raise DisaggError(f"{failure}: {exc.strerror or exc}", hint=hint, exit_code=1) from exc
