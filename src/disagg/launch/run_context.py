"""What every phase of a run shares: the plan, the state record, the stop event.

One lock guards the state and one stop event ends every phase; `fail` keeps the first
failure only, since later ones are its consequences.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from disagg.launch.bindings import Bindings, render_task
from disagg.launch.executor import RoleLauncher, RoleProcess
from disagg.launch.logs import make_logger, tail, task_log_path
from disagg.launch.procs import host_id, start_ticks
from disagg.launch.state import STATE_FILE, Failure, Phase, PointState, RunState
from disagg.plan.model import BenchPlan, Plan, RoleKind, RolePlan

EXIT_COMPLETED = 0
EXIT_FAILED = 1
EXIT_CANCELLED = 3

RESULTS_DIR = "results"
LOG_TAIL_LINES = 30
# How long an invalid point waits for a dead role to be seen: a SIGKILLed process's
# sockets close before its exit can be collected, the more so on a loaded machine.
DEATH_SETTLE_S = 1.0

T = TypeVar("T")
UpdateHook = Callable[[RunState], None]


@dataclass(frozen=True)
class OrchestratorOptions:
    executor: str = "local"
    echo: bool = True  # also print the orchestrator's log lines on stderr
    quiet_bench: bool = False  # let measure_point print its own progress unless set
    stop_grace_s: float = 5.0
    handle_signals: bool = True  # SIGTERM/SIGINT/SIGHUP -> cancel (main thread only)


class Stop(Exception):
    """Raised inside a phase once the stop event is set; the reason is already recorded."""


class RunContext:
    """The run's shared record; every method may be called from any thread."""

    def __init__(
        self,
        run_dir: Path,
        plan: Plan,
        launcher: RoleLauncher,
        options: OrchestratorOptions | None = None,
        on_update: UpdateHook | None = None,
    ) -> None:
        options = options or OrchestratorOptions()
        self.run_dir, self.plan, self.launcher, self.options = run_dir, plan, launcher, options
        self.on_update = on_update
        self.results_dir = run_dir / RESULTS_DIR
        self.stop = threading.Event()
        self.lock = threading.RLock()
        self.cancelled = False
        self.timed_out = False
        self.tearing_down = False
        self.tasks: list[tuple[RolePlan, RoleProcess]] = []
        self.ended: set[tuple[str, int]] = set()  # (role, node rank) of tasks seen to end
        self.phase_seconds: dict[str, float] = {}
        self.timeline: dict[str, float] = {}
        self.started = time.time()
        self.bindings: Bindings = {}
        self.write_error: str | None = None  # the first state/summary write that failed
        self.log = make_logger(run_dir, echo=options.echo)
        self.state = RunState(
            name=plan.name,
            selector=plan.selector,
            run_dir=str(run_dir),
            simulated=plan.simulated,
            executor=options.executor,
            orchestrator_pid=os.getpid(),
            orchestrator_host=host_id(),
            orchestrator_started=start_ticks(os.getpid()),
            points=[
                PointState(
                    key=p.key,
                    requests=p.num_prompts + p.warmup_requests,
                    streams=p.concurrency if p.request_rate is None else None,
                )
                for p in plan.bench.points
            ],
        )

    # ---- stopping and failing -------------------------------------------------------

    def check_stop(self) -> None:
        if self.stop.is_set():
            raise Stop

    def fail(
        self,
        reason: str,
        *,
        role: str | None = None,
        node_rank: int | None = None,
        nodes_lost: list[str] | None = None,
    ) -> None:
        """Record the first failure (later ones are consequences) and set the stop event."""
        with self.lock:
            if self.stop.is_set():
                return
            failure = Failure(reason=reason, role=role, nodes_lost=nodes_lost or [])
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
        self.publish()

    def fail_invalid_points(
        self, keys: list[str], first_reason: str | None, *, role: str | None
    ) -> None:
        self.fail(
            f"{len(keys)} invalid point(s): {', '.join(keys)} (first: {first_reason})", role=role
        )

    def time_out(self, reason: str) -> None:
        """Stop the run as timed out (its own time limit, or Slurm's warning before its)."""
        with self.lock:
            if not self.stop.is_set():
                self.timed_out = True
                self.fail(reason)

    def cancel(self, reason: str = "cancelled") -> None:
        """Stop the run as cancelled (what SIGTERM/SIGINT do)."""
        with self.lock:
            if not self.stop.is_set():
                self.cancelled = True
                self.state.failure = Failure(reason=reason)
                self.log.info("%s: stopping", reason)
        self.stop.set()

    # ---- role tasks -----------------------------------------------------------------

    def render(self, role: RolePlan, node_rank: int) -> tuple[list[str], dict[str, str]]:
        return render_task(self.plan, role, node_rank, self.bindings)

    def poll_tasks(self) -> None:
        """Record every task that ended since the last poll; the first one fails the run."""
        with self.lock:
            tasks = list(self.tasks)
        for role, process in tasks:
            code = process.poll()
            if code is None or self.tearing_down:
                continue
            key = (role.name, process.node_rank)
            with self.lock:
                if key in self.ended:
                    continue
                self.ended.add(key)
            self.record_exit(role.name, process.node_rank, code)
            node = f" on node {process.node_rank}" if role.nnodes > 1 else ""
            if not role.critical:  # a sidecar: its end costs its own log, not the run
                self.log.warning(
                    "service %s%s exited with code %s (not critical: the run goes on)",
                    role.name,
                    node,
                    code,
                )
            elif not self.stop.is_set():
                if lost := self.launcher.lost_nodes():
                    self._fail_lost_nodes(lost, role=role.name, node_rank=process.node_rank)
                else:
                    self.fail(
                        f"role {role.name}{node} exited with code {code}",
                        role=role.name,
                        node_rank=process.node_rank,
                    )

    def name_dead_roles(self) -> None:
        """Poll up to DEATH_SETTLE_S for a role that died, so that it is named before a
        point's failed requests are blamed on the point."""
        deadline = time.monotonic() + DEATH_SETTLE_S
        while True:
            self.poll_tasks()
            if self.stop.is_set() or time.monotonic() >= deadline:
                return
            time.sleep(0.05)

    def _fail_lost_nodes(self, lost: dict[int, str], *, role: str, node_rank: int) -> None:
        """A node left the job (Slurm saw it fail): name it and every role that ran there."""
        on_lost = [
            r.name
            for r in self.plan.roles
            if r.kind is not RoleKind.BENCH and set(r.node_ranks) & set(lost)
        ]
        ranks, names = sorted(lost), self.launcher.node_names()
        self.fail(
            f"lost node {', '.join(lost[rank] for rank in ranks)}: Slurm removed it from the "
            f"job; role(s) {', '.join(on_lost) or role} ended with it",
            role=role,
            node_rank=node_rank,
            nodes_lost=[names[rank] for rank in ranks],
        )

    def role_tasks(self, name: str) -> list[RoleProcess]:
        with self.lock:
            return [process for role, process in self.tasks if role.name == name]

    def mark_healthy(self, name: str, after_s: float, word: str) -> None:
        """The role passed its gate `after_s` seconds after its stage began."""
        with self.lock:
            state = self.state.role(name)
            state.healthy = True
            state.healthy_after_s = round(after_s, 3)
        self.log.info("%s %s after %.2f s", name, word, after_s)
        self.publish()

    def record_exit(
        self, role: str, node_rank: int, code: int | None, *, stopped: bool = False
    ) -> None:
        with self.lock:
            for task in self.state.role(role).tasks:
                if task.node_rank == node_rank:
                    task.exit_code = code
                    task.stopped = stopped

    def note_swept(self, role: str, process: RoleProcess) -> None:
        if process.swept:
            self.log.warning(
                "%s left %d process(es) running outside its process group, stopped: %s",
                role,
                len(process.swept),
                ", ".join(process.swept),
            )

    # ---- recording ------------------------------------------------------------------

    def mark(self, milestone: str) -> None:
        self.timeline[milestone] = round(time.time() - self.started, 4)

    def measure_bench(self, bench: BenchPlan) -> None:
        """Measure `bench`, the plan's filled in at run time; the request counts follow it."""
        self.plan = self.plan.model_copy(update={"bench": bench})
        with self.lock:
            for point, state in zip(bench.points, self.state.points, strict=True):
                state.requests = point.num_prompts + point.warmup_requests
        self.publish()

    def publish(self) -> None:
        write_error: OSError | None = None
        with self.lock:
            try:
                self.state.write(self.run_dir)
            except OSError as exc:
                write_error = exc
            # a copy for the hook alone (the live view); a run without one copies nothing
            hook = self.on_update
            snapshot = self.state.model_copy(deep=True) if hook is not None else None
        if write_error is not None:
            self.write_failed(STATE_FILE, write_error)
        if hook is not None and snapshot is not None:
            hook(snapshot)

    def write_failed(self, name: str, exc: OSError) -> None:
        """Said once and fails the run, but stops nothing else: a failed write must never
        leave roles running."""
        with self.lock:
            if self.write_error is not None:
                return
            self.write_error = f"cannot write {self.run_dir / name}: {exc.strerror or exc}"
            already_stopping = self.stop.is_set()
        if already_stopping:  # `fail` keeps the first reason; this one is still said
            self.log.error("FAILED: %s", self.write_error)
        else:
            self.fail(self.write_error)

    @contextmanager
    def phase(self, phase: Phase, *, checked: bool = True) -> Iterator[None]:
        if checked:
            self.check_stop()
        with self.lock:
            self.state.phase = phase
        self.publish()
        started = time.monotonic()
        try:
            yield
        finally:
            self.phase_seconds[phase.value] = round(time.monotonic() - started, 3)

    def interruptible(self, fn: Callable[[], T], *, grace_s: float = 0.0) -> T:
        """Run `fn` in a worker thread; once the run stops, wait `grace_s` for it, then give up
        (the load generator gets a grace to write what it measured; a stuck canary does not)."""
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
                    raise Stop
        if errors:
            raise errors[0]
        return box[0]
