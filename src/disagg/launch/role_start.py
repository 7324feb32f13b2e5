"""Bringing roles up: stage models, bind ports, start the plan's stages health-gated.

Start order comes from the plan (the frontend adapter's stages: services, workers,
frontends); each stage answers its health check before the next one starts, and
every command is rendered before anything starts, so a placeholder typo costs
nothing. Once up, every role with a health check stays watched (`LivenessWatch`).
"""

from __future__ import annotations

import importlib
import threading
import time
from contextlib import suppress
from pathlib import Path
from urllib.parse import urlsplit

from disagg.errors import DisaggError
from disagg.launch import listeners
from disagg.launch.bindings import build_bindings, write_role_files
from disagg.launch.health import probe
from disagg.launch.host_setup import run_host_setup
from disagg.launch.liveness import start_ticks
from disagg.launch.logs import task_log_path
from disagg.launch.ports import allocate_ports
from disagg.launch.readiness_gate import ReadinessGate
from disagg.launch.run_context import RunContext, Stop
from disagg.launch.state import Phase, RoleState, TaskState
from disagg.launch.watch import LivenessWatch, Watched
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
        main = next((m for m in staging.models if m.purpose == "main"), None)
        draft = next((m for m in staging.models if m.purpose == "draft"), None)
        if staging.skip:
            name = staging.local_path or (main.repo_id if main else run.plan.bench.model_name)
            return name, draft.repo_id if draft else ""
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
        ports = allocate_ports(run.plan, run.launcher, base=run.options.port_base)
        bindings = build_bindings(
            run.plan,
            addresses=addresses,
            ports=ports,
            model_path=models[0],
            draft_path=models[1],
            run_dir=run.run_dir,
            names=run.launcher.node_names(),
        )
        run.bindings = bindings
        names = run.launcher.node_names()
        with run.lock:
            run.state.roles = [
                RoleState(
                    name=role.name,
                    kind=role.kind.value,
                    host=bindings[role.name]["host"],
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
            write_role_files(run.plan, role, bindings, run.run_dir)
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
                process = run.launcher.launch(
                    role=role.name,
                    node_rank=rank,
                    argv=argv,
                    env=env,
                    log_path=Path(task_state.log),
                    container_image=role.container_image,
                    mpi=role.mpi,
                    mpi_nodes=role.node_ranks if role.mpi is not None else (),
                    srun_options=role.srun_options,
                )
                with run.lock:
                    run.tasks.append((role, process))
                    task_state.pid = process.pid
                    task_state.started = start_ticks(process.pid)
        run.publish()

    def check_ports_still_free(self, role: RolePlan, ports: dict[str, int]) -> None:
        """Probe the role's ports again just before it starts: one taken since they were
        handed out would be answered by something else, and the role would fail to bind."""
        for field, port in ports.items():
            for rank in role.node_ranks or [0]:
                if self.run.launcher.port_is_free(rank, port):
                    continue
                inodes = listeners.listening_inodes(port) or set()
                held = ", ".join(listeners.holders(inodes)) if inodes else ""
                raise DisaggError(
                    f"port {port} ({field}) of role {role.name} was taken after it was "
                    f"handed out{f', by {held}' if held else ''}",
                    hint="something else started listening there; re-run (ports are "
                    "chosen again) or stop it",
                    exit_code=1,
                )

    def serving_role(self, name: str, url: str) -> str | None:
        """Why an HTTP 200 on `url` is not `name` answering, else None.

        Healthy means the process the plan started answers: a role with a task that has
        ended never is, and where the executor can tell (the local one), the listening
        socket must belong to the role's own processes, not to another program that took
        the port.
        """
        run = self.run
        with run.lock:
            tasks = [process for role, process in run.tasks if role.name == name]
        if any(process.poll() is not None for process in tasks):
            return f"{name}'s process has exited"
        port = urlsplit(url).port
        if port is None or not tasks:
            return None
        return listeners.foreign_listener(name, (p.listens_on(port) for p in tasks), port)

    def wait_healthy(self, roles: list[RolePlan]) -> None:
        """Poll each role's health URL until 200; a passed deadline fails the run."""
        run = self.run
        start = time.monotonic()
        waiting: dict[str, tuple[RolePlan, str]] = {}
        for role in roles:
            if role.readiness is not None:
                continue  # its own gate, on each of its nodes (ReadinessGate)
            if role.health is None:
                run.state.role(role.name).healthy = True
                continue
            url = health_url(run, role)
            if url is None:
                raise DisaggError(f"role {role.name} has a health check but no http port")
            waiting[role.name] = (role, url)
        gated = {role.name: ReadinessGate(run, role) for role in roles if role.readiness}
        intervals = [r.health.interval_s for r, _ in waiting.values() if r.health]
        intervals += [gate.plan.interval_s for gate in gated.values()]
        interval = min(intervals, default=0.2)
        timeout = min(2.0, max(0.5, interval * 5))  # one probe's limit
        last: dict[str, str] = {}
        while waiting or gated:
            run.check_stop()
            elapsed = time.monotonic() - start
            for name, gate in list(gated.items()):
                if gate.poll(elapsed, timeout):
                    del gated[name]
            for name, (role, url) in list(waiting.items()):
                assert role.health is not None
                health = role.health
                ok, detail = probe(
                    url, timeout_s=timeout, expect=health.expect, any_status=health.any_status
                )
                if ok and (impostor := self.serving_role(name, url)) is not None:
                    ok, detail = False, impostor
                if ok:
                    del waiting[name]
                    with run.lock:
                        role_state = run.state.role(name)
                        role_state.healthy = True
                        role_state.healthy_after_s = round(time.monotonic() - start, 3)
                    run.log.info("%s healthy after %.2f s", name, time.monotonic() - start)
                    run.publish()
                    continue
                last[name] = detail
                if elapsed > role.health.deadline_s:
                    run.fail(
                        f"role {name} not healthy after {role.health.deadline_s:g} s "
                        f"(GET {url}: {detail})",
                        role=name,
                    )
                    raise Stop
            if (waiting or gated) and run.stop.wait(interval):
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


def health_url(run: RunContext, role: RolePlan) -> str | None:
    """Where `role` answers its health check; None without a check or the port it names."""
    fields = run.bindings.get(role.name, {})
    if role.health is None:
        return None
    port = fields.get(f"{role.health.port}_port")
    if port is None:
        return None
    return f"http://{fields['host']}:{port}{role.health.path}"


def stage_labels(stages: list[list[RolePlan]]) -> list[str]:
    """Timeline names of the start stages: `workers`, `router`, `services` (a second stage
    of the same kind gets its number, e.g. `services3`), else `stageN`."""
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
