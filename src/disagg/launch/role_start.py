"""Bringing roles up: stage models, bind ports, start the plan's stages health-gated.

Every command is rendered before anything starts, so a placeholder typo costs nothing;
a gate passes only when the role's own processes answer, never a task that ended.
"""

from __future__ import annotations

import importlib
import threading
import time
from contextlib import suppress
from pathlib import Path
from urllib.parse import urlsplit

from disagg.errors import DisaggError
from disagg.launch import procs
from disagg.launch.bindings import NODES, allocate_ports, build_bindings, write_role_files
from disagg.launch.bound import model_paths
from disagg.launch.executor import RoleProcess, Task
from disagg.launch.health import LivenessWatch, NodeTarget, Watched, node_ready, port_of, probe
from disagg.launch.host_setup import run_host_setup
from disagg.launch.logs import task_log_path
from disagg.launch.run_context import RunContext, Stop
from disagg.launch.state import Phase, RoleState, TaskState
from disagg.plan.model import WORKER_KINDS, RoleKind, RolePlan
from disagg.redact import redact


class RoleStarter:
    """The phases before the canary: staging, ports, launch and health."""

    def __init__(self, run: RunContext) -> None:
        self.run = run

    def start_all(self) -> None:
        run = self.run
        if run.plan.host_setup is not None and run.plan.host_setup.commands:
            with run.phase(Phase.HOST_SETUP):
                run_host_setup(run)
        with run.phase(Phase.STAGING):
            models = self.stage()
        with run.phase(Phase.PORTS):
            self.bind(models)
        warm_bench_imports()
        stages = run.plan.launch_stages()
        labels = stage_labels(stages)
        with run.phase(Phase.LAUNCH):
            if stages:
                run.mark(f"{labels[0]}_launch")
                self.launch(stages[0])
        with run.phase(Phase.HEALTH):
            for number, stage in enumerate(stages):
                if number:
                    run.mark(f"{labels[number]}_launch")
                    self.launch(stage)
                self.wait_healthy(stage)
                run.mark(f"{labels[number]}_healthy")

    def stage(self) -> tuple[str, str]:
        """(main model path, draft model path): staged snapshots, or names when skipped."""
        run = self.run
        staging = run.plan.staging
        if staging.skip:
            return model_paths(run.plan)
        from disagg.staging import stage_plan

        run.log.info("staging %d model(s)", len(staging.models))
        staged = stage_plan(staging, log=run.log.info)
        run.check_stop()
        return str(staged.main_path), str(staged.draft_path or "")

    def bind(self, models: tuple[str, str]) -> None:
        """Pick ports and fill every `${scope.field}` value the roles may use."""
        run = self.run
        addresses = run.launcher.node_addresses()
        if len(addresses) < run.plan.nodes:
            raise DisaggError(
                f"the plan needs {run.plan.nodes} node(s), the allocation has {len(addresses)}"
            )
        ports = allocate_ports(run.plan, run.launcher)
        names = run.launcher.node_names()
        run.bindings = build_bindings(
            run.plan,
            addresses=addresses,
            ports=ports,
            model_path=models[0],
            draft_path=models[1],
            run_dir=run.run_dir,
            names=names,
        )
        with run.lock:
            run.state.roles = [
                RoleState(
                    name=role.name,
                    kind=role.kind.value,
                    host=run.bindings[role.name]["host"],
                    ports=ports[role.name],
                    tasks=[
                        TaskState(
                            node_rank=rank,
                            node=names[rank] if rank < len(names) else str(rank),
                            log=str(task_log_path(run.run_dir, role.name, rank, role.nnodes)),
                        )
                        for rank in role.launch_ranks
                    ],
                )
                for role in run.plan.roles
            ]
        for role in run.plan.roles:
            if ports[role.name]:
                listed = ", ".join(f"{k}={v}" for k, v in ports[role.name].items())
                run.log.info("%s: %s", role.name, listed)
        # Render every command now, so a placeholder typo fails before anything starts.
        for role in run.plan.roles:
            for rank in role.node_ranks:
                run.render(role, rank)
            write_role_files(run.plan, role, run.bindings, run.run_dir)
        for relative in run.plan.profile_dirs:  # where profiled workers write their traces
            (run.run_dir / relative).mkdir(parents=True, exist_ok=True)

    def launch(self, roles: list[RolePlan]) -> None:
        run = self.run
        for role in roles:
            role_state = run.state.role(role.name)
            self.check_ports_still_free(role, role_state.ports)
            for task_state, rank in zip(role_state.tasks, role.launch_ranks, strict=True):
                run.check_stop()
                argv, env = run.render(role, rank)
                shown = " ".join(redact(argv))  # the log is printed and kept in the run dir
                run.log.info("start %s on node %d: %s", role.name, rank, shown)
                process = run.launcher.launch(Task.of(role, rank, argv, env, Path(task_state.log)))
                with run.lock:
                    run.tasks.append((role, process))
                    task_state.pid = process.pid
                    task_state.started = procs.start_ticks(process.pid)
        run.publish()

    def check_ports_still_free(self, role: RolePlan, ports: dict[str, int]) -> None:
        """A port taken since it was handed out would fail the role's bind: probe again."""
        for field, port in ports.items():
            for rank in role.node_ranks or [0]:
                if self.run.launcher.port_is_free(rank, port):
                    continue
                held = procs.holders(port)
                raise DisaggError(
                    f"port {port} ({field}) of role {role.name} was taken after it was "
                    f"handed out{f', by {held}' if held else ''}",
                    hint="something else started listening there; re-run (ports are "
                    "chosen again) or stop it",
                    exit_code=1,
                )

    def serving_role(self, name: str, url: str) -> str | None:
        """Why an HTTP 200 on `url` is not `name` answering, else None."""
        tasks = self.run.role_tasks(name)
        if any(process.poll() is not None for process in tasks):
            return f"{name}'s process has exited"
        port = urlsplit(url).port
        if port is None or not tasks:
            return None
        return procs.foreign_listener(name, (p.listens_on(port) for p in tasks), port)

    def wait_healthy(self, roles: list[RolePlan]) -> None:
        """Poll every gate of the stage until it passes; a passed deadline fails the run."""
        run = self.run
        start = time.monotonic()
        gates: list[HealthGate | ReadinessGate] = []
        for role in roles:
            if role.readiness is not None:
                gates.append(ReadinessGate(run, role))
            elif role.health is None:
                run.state.role(role.name).healthy = True
            elif (url := health_url(run, role)) is None:
                raise DisaggError(f"role {role.name} has a health check but no http port")
            else:
                gates.append(HealthGate(self, role, url, start))
        gates.sort(key=lambda gate: isinstance(gate, HealthGate))  # readiness gates first
        interval = min((gate.interval_s for gate in gates), default=0.2)
        timeout = min(2.0, max(0.5, interval * 5))  # one probe's limit
        while gates:
            run.check_stop()
            elapsed = time.monotonic() - start
            gates = [gate for gate in gates if not gate.passed(elapsed, timeout)]
            if gates and run.stop.wait(interval):
                raise Stop

    def watch_liveness(self) -> LivenessWatch:
        """Keep probing every role with a health check until the points are measured."""
        run = self.run
        limits = run.plan.limits
        targets = [
            Watched(
                role.name,
                url,
                expect=role.health.expect if role.health.any_status else None,
                any_status=role.health.any_status,
            )
            for role in run.plan.roles
            if role.health is not None and (url := health_url(run, role)) is not None
        ]
        return LivenessWatch(
            targets,
            interval_s=limits.liveness_interval_s,
            timeout_s=limits.liveness_timeout_s,
            gap_s=limits.serving_gap_s,
            stop=run.stop,
            on_dead=lambda role, reason: run.fail(reason, role=role),
        ).start()


class HealthGate:
    """A role's HTTP health check: a 200 (or the answer it expects) from its own processes."""

    def __init__(self, starter: RoleStarter, role: RolePlan, url: str, start: float) -> None:
        assert role.health is not None
        self.starter, self.name, self.url, self.start = starter, role.name, url, start
        self.health = role.health
        self.interval_s = role.health.interval_s

    def passed(self, elapsed: float, timeout_s: float) -> bool:
        health, run = self.health, self.starter.run
        ok, detail = probe(
            self.url, timeout_s=timeout_s, expect=health.expect, any_status=health.any_status
        )
        if ok and (impostor := self.starter.serving_role(self.name, self.url)) is not None:
            ok, detail = False, impostor
        if ok:
            run.mark_healthy(self.name, time.monotonic() - self.start, "healthy")
            return True
        if elapsed > health.deadline_s:
            run.fail(
                f"role {self.name} not healthy after {health.deadline_s:g} s "
                f"(GET {self.url}: {detail})",
                role=self.name,
            )
            raise Stop
        return False


class ReadinessGate:
    """A service's own gate over its nodes (srt-slurm's `readiness:`); a task that ends
    first fails the run, a non-critical service's too: the stage cannot go on without it."""

    def __init__(self, run: RunContext, role: RolePlan) -> None:
        assert role.readiness is not None
        self.run, self.role, self.plan = run, role, role.readiness
        self.interval_s = role.readiness.interval_s
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

    def passed(self, elapsed: float, timeout_s: float) -> bool:
        run, name = self.run, self.role.name
        tasks = run.role_tasks(name)
        ended = [process for process in tasks if process.poll() is not None]
        if ended:
            node = f" on node {ended[0].node_rank}" if self.role.nnodes > 1 else ""
            run.fail(
                f"service {name}{node} exited with code {ended[0].poll()} before it was ready",
                role=name,
                node_rank=ended[0].node_rank,
            )
            raise Stop
        for rank, target in list(self.pending.items()):
            ok, detail = node_ready(self.plan, target, timeout_s)
            task = next((p for p in tasks if p.node_rank == rank), None)
            if ok and (impostor := self.impostor(task, target)) is not None:
                ok, detail = False, impostor
            if ok:
                del self.pending[rank]
            else:
                self.last = detail
        if not self.pending:
            run.mark_healthy(name, elapsed, "ready")
            return True
        if elapsed > self.plan.timeout_s:
            waiting = ", ".join(str(rank) for rank in self.pending)
            run.fail(
                f"service {name} not ready after {self.plan.timeout_s:g} s on "
                f"node(s) {waiting} ({self.last})",
                role=name,
            )
            raise Stop
        return False

    def impostor(self, task: RoleProcess | None, target: NodeTarget) -> str | None:
        """Why a port that answers on the node is not this service answering, else None."""
        for value in (self.plan.tcp_port, self.plan.http_port):
            port = port_of(value, target.ports) if value is not None else None
            if port is not None and task is not None:
                foreign = procs.foreign_listener(self.role.name, [task.listens_on(port)], port)
                if foreign is not None:
                    return foreign
        return None


def health_url(run: RunContext, role: RolePlan) -> str | None:
    """Where `role` answers its health check; None without a check or the port it names."""
    fields = run.bindings.get(role.name, {})
    if role.health is None or (port := fields.get(f"{role.health.port}_port")) is None:
        return None
    return f"http://{fields['host']}:{port}{role.health.path}"


def stage_labels(stages: list[list[RolePlan]]) -> list[str]:
    """Timeline names of the start stages: `workers`, `router`, `services`, else `stageN`
    (a repeated name gets its stage number, e.g. `services3`)."""
    labels: list[str] = []
    for number, stage in enumerate(stages):
        kinds = {role.kind for role in stage}
        if kinds <= set(WORKER_KINDS):
            label = "workers"
        elif kinds == {RoleKind.ROUTER}:
            label = "router"
        elif kinds == {RoleKind.SERVICE}:
            label = "services"
        else:
            label = "stage"
        labels.append(f"{label}{number}" if label in labels or label == "stage" else label)
    return labels


def warm_bench_imports() -> None:
    """Import the load generator while engines start, so the first point starts at once."""

    def load() -> None:
        for module in ("disagg.bench.runner", "aiohttp"):
            with suppress(Exception):
                importlib.import_module(module)

    threading.Thread(target=load, name="warm-imports", daemon=True).start()
