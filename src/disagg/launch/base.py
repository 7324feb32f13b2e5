"""The executor interface the orchestrator uses to start roles.

The orchestrator (`disagg.launch.job`) is the same on a laptop and on Slurm; only
the `RoleLauncher` differs: `LocalLauncher` starts subprocesses on this machine,
`SrunLauncher` starts `srun --overlap` steps pinned to the role's nodes.
"""

from __future__ import annotations

import os
import subprocess
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

from disagg.errors import DisaggError
from disagg.plan.model import MpiPlan


class RoleProcess(ABC):
    """One launched task of a role (one per node for multi-node workers)."""

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
        """Whether the task's own processes hold the listening socket of `port`; None when
        this executor cannot tell (the task runs on another host)."""
        return None


class RoleLauncher(ABC):
    """Starts role tasks and knows the allocation's nodes."""

    @abstractmethod
    def node_addresses(self) -> list[str]:
        """Address of each node rank of the allocation (index = node rank)."""

    @abstractmethod
    def node_names(self) -> list[str]:
        """Scheduler name of each node rank (for `--nodelist`)."""

    @abstractmethod
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
        """Start one task of `role` on node `node_rank`, output appended to `log_path`.

        `env` is the complete set of variables the orchestrator adds for this task;
        implementations pass it without re-splitting anything on commas. With `mpi`, the
        task is one MPI step over the nodes `mpi_nodes` (head first), `mpi.tasks_per_node`
        ranks on each; an executor that cannot start one refuses. `srun_options` are the
        role's own (Slurm only; a local process has no srun step).
        """

    def port_is_free(self, node_rank: int, port: int) -> bool:
        """Bind probe; the default probes on this host, which is right for local runs."""
        import socket

        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("0.0.0.0", port))
            except OSError:
                return False
        return True

    def lost_nodes(self) -> dict[int, str]:
        """Node ranks that left the allocation (a failed node), each described in words.

        Asked when a task ends unexpectedly, so that the failure names the node; a
        launcher on one machine never loses one.
        """
        return {}

    def track(self) -> None:  # noqa: B027 - optional hook
        """Note what each running task has started (called every few seconds while a run
        lasts), so that teardown can stop it even after it left the task's group."""

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
    """Start `argv` in its own session, output appended to `log_path` after a banner line.

    Its own session (process group) lets teardown signal the whole tree a role starts;
    the environment is this process's plus `env`, passed as a mapping and never split.
    """
    from disagg.launch.logs import open_log

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
