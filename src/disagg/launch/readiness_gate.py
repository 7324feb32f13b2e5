"""Waiting on a service's readiness gate: every node of it, within its own deadline.

Polled from `RoleStarter.wait_healthy` next to the HTTP health checks of the other roles
of the same stage. A node that passes stays passed; a task of the service that ends
before the gate passes fails the run by the service's name (for a non-critical service
too: the stage cannot go on without it); a gate still shut at its deadline fails the
run, as srt-slurm's does.
"""

from __future__ import annotations

from disagg.launch import listeners
from disagg.launch.bindings import NODES
from disagg.launch.logs import task_log_path
from disagg.launch.readiness import NodeTarget, node_ready, port_of
from disagg.launch.run_context import RunContext, Stop
from disagg.plan.model import ReadinessPlan, RolePlan


class ReadinessGate:
    """One service role's gate over its nodes."""

    def __init__(self, run: RunContext, role: RolePlan) -> None:
        assert role.readiness is not None
        self.run = run
        self.role = role
        self.plan: ReadinessPlan = role.readiness
        addresses = run.bindings.get(NODES, {})
        ports = run.state.role(role.name).ports
        self.pending = {
            rank: NodeTarget(
                host=addresses.get(str(rank), "127.0.0.1"),
                log=task_log_path(run.run_dir, role.name, rank, role.nnodes),
                ports=dict(ports),
            )
            for rank in role.node_ranks
        }
        self.last = ""

    def poll(self, elapsed: float, timeout_s: float) -> bool:
        """Probe the nodes not yet ready; True once all are (the role is marked healthy)."""
        run = self.run
        with run.lock:
            ended = [p for r, p in run.tasks if r.name == self.role.name and p.poll() is not None]
        if ended:
            node = f" on node {ended[0].node_rank}" if self.role.nnodes > 1 else ""
            run.fail(
                f"service {self.role.name}{node} exited with code {ended[0].poll()} before "
                "it was ready",
                role=self.role.name,
                node_rank=ended[0].node_rank,
            )
            raise Stop
        for rank, target in list(self.pending.items()):
            ok, detail = node_ready(self.plan, target, timeout_s)
            if ok and (impostor := self.impostor(rank, target)) is not None:
                ok, detail = False, impostor
            if ok:
                del self.pending[rank]
            else:
                self.last = detail
        if not self.pending:
            with run.lock:
                state = run.state.role(self.role.name)
                state.healthy = True
                state.healthy_after_s = round(elapsed, 3)
            run.log.info("%s ready after %.2f s", self.role.name, elapsed)
            run.publish()
            return True
        if elapsed > self.plan.timeout_s:
            waiting = ", ".join(str(rank) for rank in self.pending)
            run.fail(
                f"service {self.role.name} not ready after {self.plan.timeout_s:g} s on "
                f"node(s) {waiting} ({self.last})",
                role=self.role.name,
            )
            raise Stop
        return False

    def impostor(self, rank: int, target: NodeTarget) -> str | None:
        """Why a port that answers on `rank` is not this service answering, else None: where
        the executor can tell (the local one), the listening socket must be its own task's."""
        with self.run.lock:
            tasks = [p for r, p in self.run.tasks if r.name == self.role.name]
        task = next((p for p in tasks if p.node_rank == rank), None)
        for value in (self.plan.tcp_port, self.plan.http_port):
            port = port_of(value, target.ports) if value is not None else None
            if port is None or task is None:
                continue
            foreign = listeners.foreign_listener(self.role.name, [task.listens_on(port)], port)
            if foreign is not None:
                return foreign
        return None
