"""The in-allocation orchestrator: one plan.json in, roles up, points measured, roles down.

Phases: stage models -> allocate ports -> start the plan's stages in order (services,
workers, frontends: each launched, then health-gated) -> canary -> measure each point
-> teardown -> summary.json.

A monitor thread polls every role task during all phases. The first task that
exits, a health deadline that passes, or SIGTERM/SIGINT sets one stop event that
every phase waits on, so a broken run ends within seconds: results of points
already measured stay, the failing role is named and the end of its log shown.
The same code runs on a laptop (`LocalLauncher`) and inside a Slurm job
(`SrunLauncher`); only the launcher differs.
"""

from __future__ import annotations

import importlib
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TypeVar

from disagg.errors import DisaggError
from disagg.launch.base import RoleLauncher, RoleProcess
from disagg.launch.bindings import Bindings, build_bindings, render_task, write_role_files
from disagg.launch.health import canary, probe
from disagg.launch.liveness import host_id, start_ticks
from disagg.launch.logs import ORCHESTRATOR_LOG, log_dir, tail, task_log_path
from disagg.launch.ports import allocate_ports
from disagg.launch.stale import stop_stale_roles
from disagg.launch.state import (
    STATE_FILE,
    SUMMARY_FILE,
    Failure,
    Phase,
    PointState,
    PointStatus,
    RoleState,
    RunState,
    RunStatus,
    RunSummary,
    TaskState,
    duration_text,
    sweep_eta,
)
from disagg.launch.watch import LivenessWatch, Watched
from disagg.plan.model import WORKER_KINDS, BenchPlan, Plan, RoleKind, RolePlan
from disagg.plan.templates import substitute
from disagg.redact import redact
from disagg.workloads.base import MeasureFn

EXIT_COMPLETED = 0
EXIT_FAILED = 1
EXIT_BAD_PLAN = 2
EXIT_CANCELLED = 3

RESULTS_DIR = "results"
MONITOR_INTERVAL_S = 0.1
MEASURE_STOP_GRACE_S = 10.0  # the load generator promises to end within ~1 s of `stop`
LOG_TAIL_LINES = 30

T = TypeVar("T")
UpdateHook = Callable[[RunState], None]


@dataclass(frozen=True)
class OrchestratorOptions:
    executor: str = "local"
    echo: bool = True  # also print the orchestrator's log lines on stderr
    quiet_bench: bool = False  # let measure_point print its own progress unless set
    stop_grace_s: float = 5.0
    canary_timeout_s: float = 60.0
    handle_signals: bool = True  # SIGTERM/SIGINT/SIGHUP -> cancel (main thread only)
    port_base: int | None = None


class _Stop(Exception):
    """Raised inside a phase once the stop event is set; the reason is already recorded."""


class Orchestrator:
    """Runs one plan in one run directory; `run()` returns the summary it wrote."""

    def __init__(
        self,
        run_dir: Path,
        plan: Plan,
        launcher: RoleLauncher,
        options: OrchestratorOptions | None = None,
        on_update: UpdateHook | None = None,
    ) -> None:
        self.run_dir = run_dir
        self.plan = plan
        self.launcher = launcher
        self.options = options or OrchestratorOptions()
        self.on_update = on_update
        self.results_dir = run_dir / RESULTS_DIR
        self.stop = threading.Event()
        self._lock = threading.RLock()
        self._cancelled = False
        self._tearing_down = False
        self._tasks: list[tuple[RolePlan, RoleProcess]] = []
        self._exit_codes: dict[tuple[str, int], int | None] = {}
        self._phase_seconds: dict[str, float] = {}
        self._timeline: dict[str, float] = {}
        self._started = time.time()
        self._bindings: Bindings = {}
        self._write_error: str | None = None  # the first state/summary write that failed
        self.log = _make_logger(run_dir, echo=self.options.echo)
        self.state = RunState(
            name=plan.name,
            selector=plan.selector,
            run_dir=str(run_dir),
            simulated=plan.simulated,
            executor=self.options.executor,
            orchestrator_pid=os.getpid(),
            orchestrator_host=host_id(),
            orchestrator_started=start_ticks(os.getpid()),
            points=[
                PointState(key=p.key, requests=p.num_prompts + p.warmup_requests)
                for p in plan.bench.points
            ],
        )

    # ---- public -------------------------------------------------------------------

    def run(self) -> RunSummary:
        started = self._started = time.time()
        # Before state.json is replaced: roles an earlier, killed run left behind.
        for line in stop_stale_roles(self.run_dir, grace_s=self.options.stop_grace_s):
            self.log.warning("%s", line)
        self._publish()
        monitor = threading.Thread(target=self._monitor, name="role-monitor", daemon=True)
        error_code = EXIT_FAILED
        with self._signals():
            monitor.start()
            try:
                self._run_phases()
            except _Stop:
                pass
            except DisaggError as exc:
                error_code = exc.exit_code
                self._fail(str(exc))
            except OSError as exc:  # a result or log that cannot be written (disk full)
                where = f" {exc.filename}" if exc.filename else ""
                self._fail(f"cannot write{where}: {exc.strerror or exc}")
            except Exception as exc:  # a bug must still tear everything down
                self.log.exception("internal error")
                self._fail(f"internal error: {type(exc).__name__}: {exc}")
            finally:
                self._teardown()
        return self._finish(started, error_code)

    def cancel(self, reason: str = "cancelled") -> None:
        """Stop the run as cancelled (what SIGTERM/SIGINT do)."""
        with self._lock:
            if not self.stop.is_set():
                self._cancelled = True
                self.state.failure = Failure(reason=reason)
                self.log.info("%s: stopping", reason)
        self.stop.set()

    # ---- phases -------------------------------------------------------------------

    def _run_phases(self) -> None:
        self.log.info(
            "run %s (%s), %d point(s), executor %s%s",
            self.plan.name,
            self.plan.selector,
            len(self.plan.bench.points),
            self.options.executor,
            f", simulated by {self.plan.simulator or 'disagg sim-engine'}"
            if self.plan.simulated
            else "",
        )
        from disagg.workloads import adapter_for

        workload = adapter_for(self.plan.bench.type)
        workload.prepare(self.plan.bench)
        if self.plan.bench.command is None and self._all_points_done():
            self.log.info("every point already has a valid result; nothing to run")
            return
        with self._phase(Phase.STAGING):
            models = self._stage()
        with self._phase(Phase.PORTS):
            self._bind(models)
        _warm_bench_imports()
        # Start order and health gating come from the plan (the frontend adapter's
        # stages: services, workers, frontends); each stage is healthy before the next.
        stages = self.plan.launch_stages()
        labels = _stage_labels(stages)
        with self._phase(Phase.LAUNCH):
            if stages:
                self._mark(f"{labels[0]}_launch")
                self._launch(stages[0])
        with self._phase(Phase.HEALTH):
            for number, stage in enumerate(stages):
                if number:
                    self._mark(f"{labels[number]}_launch")
                    self._launch(stage)
                self._wait_healthy(stage)
                self._mark(f"{labels[number]}_healthy")
        watch = self._watch_liveness()
        try:
            with self._phase(Phase.CANARY):
                self._canary()
                self._mark("canary_ok")
            with self._phase(Phase.MEASURE):
                if self.plan.bench.command is not None:
                    self._run_bench_command()
                else:
                    self._measure_points(workload.measure())
        finally:
            watch.close()

    def _all_points_done(self) -> bool:
        """Mark every point that already has a valid result measured under this plan as
        skipped (once, before staging); say why another plan's result is measured again."""
        from disagg.bench.api import reusable_result
        from disagg.bench.fingerprint import fingerprint_fields

        done = True
        for point, state in zip(self.plan.bench.points, self.state.points, strict=True):
            found, why = reusable_result(
                self.results_dir, point, fingerprint_fields(self.plan, point)
            )
            if found is not None:
                _mark_skipped(state, found)
                continue
            done = False
            if why:
                shown = "; ".join(why[:5]) + (f"; {len(why) - 5} more" if len(why) > 5 else "")
                self.log.info(
                    "point %s: the existing result was measured under another plan (%s); "
                    "measuring it again",
                    point.key,
                    shown,
                )
        return done

    def _stage(self) -> tuple[str, str]:
        """(main model path, draft model path): staged snapshots, or names when skipped."""
        staging = self.plan.staging
        main = next((m for m in staging.models if m.purpose == "main"), None)
        draft = next((m for m in staging.models if m.purpose == "draft"), None)
        if staging.skip:
            name = staging.local_path or (main.repo_id if main else self.plan.bench.model_name)
            return name, draft.repo_id if draft else ""
        from disagg.staging import stage_plan

        self.log.info("staging %d model(s)", len(staging.models))
        staged = stage_plan(staging, log=self.log.info)
        self._check_stop()
        return str(staged.main_path), str(staged.draft_path or "")

    def _bind(self, models: tuple[str, str]) -> None:
        """Pick ports and fill every `${scope.field}` value the roles may use."""
        addresses = self.launcher.node_addresses()
        if len(addresses) < self.plan.nodes:
            raise DisaggError(
                f"the plan needs {self.plan.nodes} node(s), the allocation has {len(addresses)}"
            )
        ports = allocate_ports(self.plan, self.launcher, base=self.options.port_base)
        bindings = build_bindings(
            self.plan,
            addresses=addresses,
            ports=ports,
            model_path=models[0],
            draft_path=models[1],
            run_dir=self.run_dir,
        )
        self._bindings = bindings
        names = self.launcher.node_names()
        with self._lock:
            self.state.roles = [
                RoleState(
                    name=role.name,
                    kind=role.kind.value,
                    host=bindings[role.name]["host"],
                    ports=ports[role.name],
                    tasks=[
                        TaskState(
                            node_rank=rank,
                            node=names[rank] if rank < len(names) else str(rank),
                            log=str(task_log_path(self.run_dir, role.name, rank, role.nnodes)),
                        )
                        for rank in role.launch_ranks
                    ],
                )
                for role in self.plan.roles
            ]
        for role in self.plan.roles:
            if ports[role.name]:
                listed = ", ".join(f"{k}={v}" for k, v in ports[role.name].items())
                self.log.info("%s: %s", role.name, listed)
        # Render every command now, so a placeholder typo fails before anything starts.
        for role in self.plan.roles:
            for rank in role.node_ranks:
                self._render(role, rank)
            write_role_files(self.plan, role, bindings, self.run_dir)

    def _render(self, role: RolePlan, node_rank: int) -> tuple[list[str], dict[str, str]]:
        return render_task(self.plan, role, node_rank, self._bindings)

    def _launch(self, roles: list[RolePlan]) -> None:
        for role in roles:
            role_state = self.state.role(role.name)
            for task_state, rank in zip(role_state.tasks, role.launch_ranks, strict=True):
                self._check_stop()
                argv, env = self._render(role, rank)
                shown = " ".join(redact(argv))  # the log is printed and kept in the run dir
                self.log.info("start %s on node %d: %s", role.name, rank, shown)
                process = self.launcher.launch(
                    role=role.name,
                    node_rank=rank,
                    argv=argv,
                    env=env,
                    log_path=Path(task_state.log),
                    container_image=role.container_image,
                    mpi=role.mpi,
                    mpi_nodes=role.node_ranks if role.mpi is not None else (),
                )
                with self._lock:
                    self._tasks.append((role, process))
                    task_state.pid = process.pid
                    task_state.started = start_ticks(process.pid)
        self._publish()

    def _wait_healthy(self, roles: list[RolePlan]) -> None:
        """Poll each role's health URL until 200; a passed deadline fails the run."""
        start = time.monotonic()
        waiting: dict[str, tuple[RolePlan, str]] = {}
        for role in roles:
            if role.health is None:
                self.state.role(role.name).healthy = True
                continue
            fields = self._bindings[role.name]
            if "http_port" not in fields:
                raise DisaggError(f"role {role.name} has a health check but no http port")
            url = f"http://{fields['host']}:{fields['http_port']}{role.health.path}"
            waiting[role.name] = (role, url)
        interval = min((r.health.interval_s for r, _ in waiting.values() if r.health), default=0.2)
        last: dict[str, str] = {}
        while waiting:
            self._check_stop()
            elapsed = time.monotonic() - start
            for name, (role, url) in list(waiting.items()):
                assert role.health is not None
                timeout = min(2.0, max(0.5, interval * 5))
                ok, detail = probe(url, timeout_s=timeout, expect=role.health.expect)
                if ok:
                    del waiting[name]
                    with self._lock:
                        role_state = self.state.role(name)
                        role_state.healthy = True
                        role_state.healthy_after_s = round(time.monotonic() - start, 3)
                    self.log.info("%s healthy after %.2f s", name, time.monotonic() - start)
                    self._publish()
                    continue
                last[name] = detail
                if elapsed > role.health.deadline_s:
                    self._fail(
                        f"role {name} not healthy after {role.health.deadline_s:g} s "
                        f"(GET {url}: {detail})",
                        role=name,
                    )
                    raise _Stop
            if waiting and self.stop.wait(interval):
                raise _Stop

    def _watch_liveness(self) -> LivenessWatch:
        """Keep probing every role with a health check until the points are measured."""
        limits = self.plan.limits
        targets = []
        for role in self.plan.roles:
            fields = self._bindings.get(role.name, {})
            if role.health is not None and "http_port" in fields:
                url = f"http://{fields['host']}:{fields['http_port']}{role.health.path}"
                targets.append(Watched(role.name, url))
        return LivenessWatch(
            targets,
            interval_s=limits.liveness_interval_s,
            timeout_s=limits.liveness_timeout_s,
            stop=self.stop,
            on_dead=lambda role, reason: self._fail(reason, role=role),
        ).start()

    def _serving_url(self) -> str:
        if self.plan.serving_role is not None:
            return self._bindings[self.plan.serving_role]["url"]
        for kind in (RoleKind.ROUTER, RoleKind.AGGREGATED, RoleKind.DECODE):
            for role in self.plan.roles_of(kind):
                url = self._bindings.get(role.name, {}).get("url")
                if url:
                    return url
        raise DisaggError("the plan has no router or worker with an http port to send load to")

    def _canary(self) -> None:
        url = self._serving_url()
        result = self._interruptible(
            lambda: canary(url, self.plan.bench, timeout_s=self.options.canary_timeout_s)
        )
        if not result.ok:
            self._fail(f"canary request failed: {result.detail}")
            raise _Stop
        self.log.info("canary ok through %s: %r", url, result.detail)

    def _measure_points(self, measure_point: MeasureFn) -> None:
        from disagg.bench.api import GpuCounts
        from disagg.bench.fingerprint import fingerprint_fields
        from disagg.bench.identity import setup_fields

        setup = setup_fields(self.plan)
        url = self._serving_url()
        bench = self._rendered_bench()
        gpus = GpuCounts(prefill=self.plan.prefill_gpus, decode=self.plan.decode_gpus)
        invalid: list[tuple[str, str | None]] = []
        for point, point_state in zip(self.plan.bench.points, self.state.points, strict=True):
            self._check_stop()
            if point_state.status is PointStatus.SKIPPED:  # found by `_all_points_done`
                self.log.info("point %s: valid result exists, skipped", point.key)
                continue
            with self._lock:
                self.state.current_point = point.key
                point_state.status = PointStatus.RUNNING
                point_state.started_at = time.time()
            self._publish()
            eta = sweep_eta(self.state.points, time.time())
            self.log.info(
                "point %s (%d of %d): measuring %d request(s)%s",
                point.key,
                self.state.points.index(point_state) + 1,
                len(self.state.points),
                point.num_prompts,
                f"; sweep ETA ~{duration_text(eta)}" if eta is not None else "",
            )
            started = time.monotonic()
            outcome = self._interruptible(
                lambda point=point: measure_point(  # type: ignore[misc]
                    base_url=url,
                    bench=bench,
                    point=point,
                    out_dir=self.results_dir,
                    gpus=gpus,
                    run_name=self.plan.name,
                    simulated=self.plan.simulated,
                    disaggregated=self.plan.disaggregated,
                    quiet=self.options.quiet_bench,
                    stop=self.stop,
                    limits=self.plan.limits,
                    setup={**setup, **fingerprint_fields(self.plan, point)},
                ),
                grace_s=MEASURE_STOP_GRACE_S,
            )
            if not outcome.valid:  # a role that died fails requests at once: name it first
                self._poll_tasks()
            with self._lock:
                point_state.seconds = round(time.monotonic() - started, 3)
                point_state.finished_at = time.time()
                point_state.headline = dict(outcome.summary)
                self.state.current_point = None
                if self.stop.is_set() and not outcome.valid:
                    point_state.status = PointStatus.ABORTED
                    point_state.reason = outcome.reason
                elif outcome.valid:
                    point_state.status, point_state.result = PointStatus.MEASURED, str(outcome.path)
                else:
                    point_state.status = PointStatus.INVALID
                    point_state.reason = outcome.reason
                    invalid.append((point.key, outcome.reason))
            self._publish()
            self.log.info("point %s: %s %s", point.key, point_state.status.value, _brief(outcome))
        self._check_stop()
        if invalid:
            keys = ", ".join(key for key, _ in invalid)
            self._fail(f"{len(invalid)} invalid point(s): {keys} (first: {invalid[0][1]})")

    def _run_bench_command(self) -> None:
        """The recipe's own client in the bench role; its exit status decides the run."""
        from disagg.workloads.collect import collect

        command = self.plan.bench.command
        assert command is not None
        role = next(r for r in self.plan.roles if r.kind is RoleKind.BENCH)
        argv, env = self._render(role, role.node_ranks[0])
        results = Path(substitute(command.results_dir, self._bindings, self_name=role.name))
        results.mkdir(parents=True, exist_ok=True)
        task = self.state.role(role.name).tasks[0]
        self.log.info("start %s: %s", role.name, " ".join(argv))
        process = self.launcher.launch(
            role=role.name,
            node_rank=role.node_ranks[0],
            argv=argv,
            env=env,
            log_path=Path(task.log),
            container_image=role.container_image,
        )
        with self._lock:
            task.pid = process.pid
        self._publish()
        code: int | None = None
        try:
            while (code := process.poll()) is None:
                if self.stop.wait(0.2):
                    break
        finally:
            if code is None:
                code = process.stop(self.options.stop_grace_s)
                self._record_exit(role.name, process.node_rank, code, stopped=True)
            else:
                self._record_exit(role.name, process.node_rank, code)
        found = collect(results, self.plan, self.results_dir)
        with self._lock:
            for point in found.points:
                self.state.points.append(
                    PointState(
                        key=point.key,
                        status=PointStatus.MEASURED if point.valid else PointStatus.INVALID,
                        result=str(point.result),
                        reason=point.reason,
                        headline=point.headline,
                    )
                )
        self._publish()
        for point in found.points:
            state = "valid" if point.valid else f"INVALID ({point.reason})"
            self.log.info("result %s from %s: %s", point.key, point.source, state)
        for other in found.other_files:
            self.log.info("kept %s", other)
        self._check_stop()
        if code != 0:
            self._fail(f"benchmark command exited with code {code}", role=role.name)
            return
        invalid = [p for p in found.points if not p.valid]
        if invalid:
            keys = ", ".join(p.key for p in invalid)
            self._fail(f"{len(invalid)} invalid point(s): {keys} (first: {invalid[0].reason})")

    def _rendered_bench(self) -> BenchPlan:
        bench = self.plan.bench
        name = "bench"
        bindings = {**self._bindings, name: {}}
        update: dict[str, object] = {}
        if bench.tokenizer:
            update["tokenizer"] = substitute(bench.tokenizer, bindings, self_name=name)
        return bench.model_copy(update=update) if update else bench

    # ---- monitoring, failure, teardown --------------------------------------------

    def _monitor(self) -> None:
        """Notice within ~100 ms that any role task ended (or the run's time limit), and stop."""
        run_limit = self.plan.limits.run_timeout_s
        started = time.monotonic()
        while not self._tearing_down:
            if run_limit is not None and time.monotonic() - started > run_limit:
                self._fail(f"the run's time limit of {run_limit:g} s was reached (limits)")
            self._poll_tasks()
            time.sleep(MONITOR_INTERVAL_S)

    def _poll_tasks(self) -> None:
        """Record every task that ended since the last poll; the first one fails the run."""
        with self._lock:
            tasks = list(self._tasks)
        for role, process in tasks:
            code = process.poll()
            if code is None or self._tearing_down:
                continue
            key = (role.name, process.node_rank)
            with self._lock:
                if key in self._exit_codes:
                    continue
                self._exit_codes[key] = code
            self._record_exit(role.name, process.node_rank, code)
            if not self.stop.is_set():
                node = f" on node {process.node_rank}" if role.nnodes > 1 else ""
                self._fail(
                    f"role {role.name}{node} exited with code {code}",
                    role=role.name,
                    node_rank=process.node_rank,
                )

    def _record_exit(
        self, role: str, node_rank: int, code: int | None, *, stopped: bool = False
    ) -> None:
        with self._lock:
            for task in self.state.role(role).tasks:
                if task.node_rank == node_rank:
                    task.exit_code = code
                    task.stopped = stopped

    def _fail(self, reason: str, *, role: str | None = None, node_rank: int | None = None) -> None:
        """Record the first failure (later ones are consequences) and set the stop event."""
        with self._lock:
            if self.stop.is_set():
                return
            failure = Failure(reason=reason, role=role)
            if role is not None:
                role_plan = self.plan.role(role)
                rank = role_plan.node_ranks[0] if node_rank is None else node_rank
                log_path = task_log_path(self.run_dir, role, rank, role_plan.nnodes)
                failure.log = str(log_path)
                failure.log_tail = tail(log_path, LOG_TAIL_LINES)
            self.state.failure = failure
            self.stop.set()
        self.log.error("FAILED: %s", reason)
        if failure.log_tail:
            self.log.error("last %d lines of %s:", len(failure.log_tail), failure.log)
            for line in failure.log_tail:
                self.log.error("  | %s", line)
        self._publish()

    def _teardown(self) -> None:
        with self._phase(Phase.TEARDOWN, checked=False):
            self._tearing_down = True
            with self._lock:
                tasks = list(reversed(self._tasks))
            if not tasks:
                return
            self.log.info("stopping %d task(s)", len(tasks))
            grace = self.options.stop_grace_s
            with ThreadPoolExecutor(max_workers=min(32, len(tasks))) as pool:
                codes = list(pool.map(lambda t: t[1].stop(grace), tasks))
            for (role, process), code in zip(tasks, codes, strict=True):
                key = (role.name, process.node_rank)
                if key not in self._exit_codes:
                    self._exit_codes[key] = code
                    self._record_exit(role.name, process.node_rank, code, stopped=True)
            try:
                self.launcher.close()
            except Exception:
                self.log.exception("launcher close failed")

    def _finish(self, started: float, error_code: int) -> RunSummary:
        with self._lock:
            failure = self.state.failure
            if self._cancelled:
                status, code = RunStatus.CANCELLED, EXIT_CANCELLED
            elif failure is not None:
                status, code = RunStatus.FAILED, error_code
            elif self._write_error is not None:  # results may be fine; the record is not
                failure = self.state.failure = Failure(reason=self._write_error)
                status, code = RunStatus.FAILED, EXIT_FAILED
            else:
                status, code = RunStatus.COMPLETED, EXIT_COMPLETED
            for point in self.state.points:
                if point.status in (PointStatus.PENDING, PointStatus.RUNNING) and failure:
                    point.status = PointStatus.ABORTED
            self.state.status = status
            self.state.phase = Phase.DONE
            self.state.current_point = None
            points = [p.model_copy() for p in self.state.points]
            summary = RunSummary(
                name=self.plan.name,
                selector=self.plan.selector,
                run_dir=str(self.run_dir),
                simulated=self.plan.simulated,
                executor=self.options.executor,
                status=status,
                exit_code=code,
                reason=failure.reason if failure else None,
                failure=failure if status is RunStatus.FAILED else None,
                started_at=started,
                finished_at=time.time(),
                phase_seconds=dict(self._phase_seconds),
                timeline=dict(self._timeline),
                role_exit_codes={
                    r.name: [t.exit_code for t in r.tasks]
                    for r in self.state.roles
                    if any(t.pid for t in r.tasks)
                },
                role_pids={
                    r.name: [t.pid for t in r.tasks if t.pid is not None]
                    for r in self.state.roles
                    if any(t.pid for t in r.tasks)
                },
                points=points,
                points_measured=sum(p.status is PointStatus.MEASURED for p in points),
                points_skipped=sum(p.status is PointStatus.SKIPPED for p in points),
                points_invalid=sum(p.status is PointStatus.INVALID for p in points),
            )
        try:
            summary.write(self.run_dir)
        except OSError as exc:
            self._write_failed(SUMMARY_FILE, exc)
            if summary.exit_code == EXIT_COMPLETED:
                summary.status, summary.exit_code = RunStatus.FAILED, EXIT_FAILED
                summary.reason = self._write_error
        self._publish()
        self.log.info(
            "run %s: %d measured, %d skipped, %d invalid; %.1f s",
            status.value,
            summary.points_measured,
            summary.points_skipped,
            summary.points_invalid,
            summary.finished_at - started,
        )
        for handler in list(self.log.handlers):
            handler.close()
            self.log.removeHandler(handler)
        return summary

    # ---- helpers ------------------------------------------------------------------

    def _mark(self, milestone: str) -> None:
        self._timeline[milestone] = round(time.time() - self._started, 4)

    def _check_stop(self) -> None:
        if self.stop.is_set():
            raise _Stop

    def _publish(self) -> None:
        with self._lock:
            try:
                self.state.write(self.run_dir)
            except OSError as exc:
                write_error: OSError | None = exc
            else:
                write_error = None
            snapshot = self.state.model_copy(deep=True)
        if write_error is not None:
            self._write_failed(STATE_FILE, write_error)
        if self.on_update is not None:
            self.on_update(snapshot)

    def _write_failed(self, name: str, exc: OSError) -> None:
        """A full disk or read-only run directory: said once, fails the run, stops nothing else.

        Teardown and the summary go on regardless: a write that fails must never leave
        roles running.
        """
        with self._lock:
            if self._write_error is not None:
                return
            self._write_error = f"cannot write {self.run_dir / name}: {exc.strerror or exc}"
            already_stopping = self.stop.is_set()
        if already_stopping:  # `_fail` keeps the first reason; this one is still said
            self.log.error("FAILED: %s", self._write_error)
        else:
            self._fail(self._write_error)

    @contextmanager
    def _phase(self, phase: Phase, *, checked: bool = True) -> Iterator[None]:
        if checked:
            self._check_stop()
        with self._lock:
            self.state.phase = phase
        self._publish()
        started = time.monotonic()
        try:
            yield
        finally:
            self._phase_seconds[phase.value] = round(time.monotonic() - started, 3)

    def _interruptible(self, fn: Callable[[], T], *, grace_s: float = 0.0) -> T:
        """Run `fn` in a worker thread; once the run stops, wait `grace_s` for it, then give up.

        The load generator ends a point within a second of the stop event, so it gets a
        grace period to write what it measured; a canary stuck on a dead router does not.
        """
        box: list[T] = []
        errors: list[BaseException] = []

        def target() -> None:
            try:
                box.append(fn())
            except BaseException as exc:
                errors.append(exc)

        worker = threading.Thread(target=target, name="phase-worker", daemon=True)
        worker.start()
        while worker.is_alive():
            if self.stop.wait(0.05):
                worker.join(grace_s)
                if worker.is_alive():
                    raise _Stop
        if errors:
            raise errors[0]
        return box[0]

    @contextmanager
    def _signals(self) -> Iterator[None]:
        if (
            not self.options.handle_signals
            or threading.current_thread() is not threading.main_thread()
        ):
            yield
            return

        def handler(signum: int, frame: FrameType | None) -> None:
            self.cancel(f"received {signal.Signals(signum).name}")

        # SIGHUP (a closed terminal) stops the run like SIGTERM: nothing is left behind.
        signals = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
        previous = {sig: signal.signal(sig, handler) for sig in signals}
        try:
            yield
        finally:
            for sig, old in previous.items():
                signal.signal(sig, old)


def _stage_labels(stages: list[list[RolePlan]]) -> list[str]:
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


def _brief(outcome: object) -> str:
    summary = getattr(outcome, "summary", {}) or {}
    reason = getattr(outcome, "reason", None)
    parts = [f"{k}={v:.4g}" for k, v in list(summary.items())[:4]]
    if reason:
        parts.append(f"({reason})")
    return " ".join(parts)


def _warm_bench_imports() -> None:
    """Import the load generator while engines start, so the first point starts at once."""

    def load() -> None:
        for module in ("disagg.bench.api", "aiohttp"):
            with suppress(Exception):
                importlib.import_module(module)

    threading.Thread(target=load, name="warm-imports", daemon=True).start()


class _LogFileHandler(logging.FileHandler):
    """The orchestrator's log file; a failed write (disk full) is said once on stderr.

    logging's default prints a traceback per lost line, which would bury the one
    error that explains the run's end.
    """

    _reported = False

    def handleError(self, record: logging.LogRecord) -> None:
        if not self._reported:
            self._reported = True
            error = sys.exc_info()[1]
            print(f"disagg: cannot write {self.baseFilename}: {error}", file=sys.stderr)


def _make_logger(run_dir: Path, *, echo: bool) -> logging.Logger:
    directory = log_dir(run_dir)
    directory.mkdir(parents=True, exist_ok=True)
    logger = logging.getLogger(f"disagg.job.{id(run_dir)}.{time.monotonic_ns()}")
    logger.setLevel(logging.INFO)
    logger.propagate = False
    formatter = logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S")
    file_handler = _LogFileHandler(directory / ORCHESTRATOR_LOG)
    file_handler.setFormatter(formatter)
    logger.addHandler(file_handler)
    if echo:
        stream = logging.StreamHandler(sys.stderr)
        stream.setFormatter(formatter)
        logger.addHandler(stream)
    return logger


def _mark_skipped(state: PointState, result: Path) -> None:
    """A point measured by an earlier run: keep its file and show its numbers again."""
    from disagg.bench.results import read_result
    from disagg.bench.runner import headline

    state.status, state.result = PointStatus.SKIPPED, str(result)
    data = read_result(result)
    if data is not None:
        state.headline = headline(data)
