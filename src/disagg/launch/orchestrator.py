"""The in-allocation orchestrator: one plan.json in, roles up, points measured, roles down.

A monitor thread polls every task in every phase; the first task that exits, a passed
deadline or time limit, or a signal sets one stop event every phase waits on, so a
broken run ends within seconds with its measured points kept and its failing role named.
Teardown never depends on a write succeeding: a summary that cannot be written fails
the run but leaves nothing running.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

from disagg.errors import DisaggError
from disagg.launch.bench_command import run_bench_command
from disagg.launch.executor import RoleLauncher, RoleProcess
from disagg.launch.host_setup import run_host_teardown
from disagg.launch.logs import close_log
from disagg.launch.point_loop import mark_done_points, measure_points, run_canary
from disagg.launch.role_start import RoleStarter
from disagg.launch.run_context import (
    EXIT_CANCELLED,
    EXIT_COMPLETED,
    EXIT_FAILED,
    OrchestratorOptions,
    RunContext,
    Stop,
)
from disagg.launch.runlock import stop_stale_roles
from disagg.launch.slurm import TIME_LIMIT_SIGNAL, warning_signal
from disagg.launch.state import (
    SUMMARY_FILE,
    Failure,
    Phase,
    PointStatus,
    RunRecord,
    RunStatus,
    RunSummary,
)
from disagg.plan.model import Plan, RolePlan

__all__ = ["Orchestrator", "OrchestratorOptions", "make_launcher"]

MONITOR_INTERVAL_S = 0.1
TRACK_INTERVAL_S = 1.0  # how often the launcher notes what each task has started
EXECUTORS = ("local", "slurm")


def make_launcher(kind: str, plan: Plan, run_dir: Path) -> RoleLauncher:
    """The executor called `kind`; each is imported on first use (`disagg.job` starts light)."""
    if kind == "local":
        from disagg.launch.local import LocalLauncher

        return LocalLauncher(nodes=plan.nodes)
    if kind == "slurm":
        from disagg.launch.srun import SrunLauncher

        return SrunLauncher.from_environment(plan.slurm, run_dir=run_dir)
    raise DisaggError(f"unknown executor {kind!r}", hint=f"choose one of: {', '.join(EXECUTORS)}")


class Orchestrator(RunContext):
    """Runs one plan in one run directory; `run()` returns the summary it wrote."""

    def run(self) -> RunSummary:
        self.started = time.time()
        # Before state.json is replaced: roles an earlier, killed run left behind.
        for line in stop_stale_roles(self.run_dir, grace_s=self.options.stop_grace_s):
            self.log.warning("%s", line)
        self.publish()
        monitor = threading.Thread(target=self._monitor, name="role-monitor", daemon=True)
        error_code = EXIT_FAILED
        with self._signals():
            monitor.start()
            try:
                self._run_phases()
            except Stop:
                pass
            except DisaggError as exc:
                error_code = exc.exit_code
                self.fail(str(exc))
            except OSError as exc:  # a result or log that cannot be written (disk full)
                where = f" {exc.filename}" if exc.filename else ""
                self.fail(f"cannot write{where}: {exc.strerror or exc}")
            except Exception as exc:  # a bug must still tear everything down
                self.log.exception("internal error")
                self.fail(f"internal error: {type(exc).__name__}: {exc}")
            finally:
                self._teardown()
        return self._finish(error_code)

    def _run_phases(self) -> None:
        plan = self.plan
        self.log.info(
            "run %s (%s), %d point(s), executor %s%s",
            plan.name,
            plan.selector,
            len(plan.bench.points),
            self.options.executor,
            f", simulated by {plan.simulator or 'disagg sim-engine'}" if plan.simulated else "",
        )
        from disagg.workloads import adapter_for

        workload = adapter_for(plan.bench.type)
        bench = workload.resolve(plan.bench)
        if bench is not plan.bench:
            self.measure_bench(bench)
            plan = self.plan
            self.log.info(
                "benchmark inputs read and checked at run time: %d request(s) in %d point(s)",
                sum(point.num_prompts for point in bench.points),
                len(bench.points),
            )
        if plan.bench.command is None and mark_done_points(self):
            self.log.info("every point already has a valid result; nothing to run")
            return
        starter = RoleStarter(self)
        starter.start_all()
        watch = starter.watch_liveness()
        try:
            with self.phase(Phase.CANARY):
                run_canary(self)
                self.mark("canary_ok")
            with self.phase(Phase.MEASURE):
                if plan.bench.command is not None:
                    run_bench_command(self, watch)
                else:
                    measure_points(self, workload.measure(), watch)
        finally:
            watch.close()

    def _monitor(self) -> None:
        """Notice within ~100 ms that any role task ended (or the run's time limit), and stop."""
        run_limit = self.plan.limits.run_timeout_s
        started = tracked = time.monotonic()
        while not self.tearing_down:
            if run_limit is not None and time.monotonic() - started > run_limit:
                self.time_out(f"the run's time limit of {run_limit:g} s was reached (limits)")
            self.poll_tasks()
            if time.monotonic() - tracked >= TRACK_INTERVAL_S:
                tracked = time.monotonic()
                self.launcher.track()
            time.sleep(MONITOR_INTERVAL_S)

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

        def warned(signum: int, frame: FrameType | None) -> None:
            self.time_out(
                f"Slurm's time limit is near ({signal.Signals(signum).name} from "
                "--signal): stopped to keep the results"
            )

        # SIGHUP (a closed terminal) stops the run like SIGTERM: nothing is left behind.
        signals = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
        previous = {sig: signal.signal(sig, handler) for sig in signals}
        if self.options.executor == "slurm":  # `#SBATCH --signal=B:USR1@N` (launch.slurm)
            name = warning_signal(self.plan.slurm) or TIME_LIMIT_SIGNAL
            warning = signal.Signals[f"SIG{name}"]
            previous[warning] = signal.signal(warning, warned)
        try:
            yield
        finally:
            for sig, old in previous.items():
                signal.signal(sig, old)

    def _teardown(self) -> None:
        """Stop every task (in parallel, newest first), whatever ended the run."""
        with self.phase(Phase.TEARDOWN, checked=False):
            self.tearing_down = True
            with self.lock:
                tasks = list(reversed(self.tasks))
            if tasks:
                self._stop_tasks(tasks)
            run_host_teardown(self)  # after every role has stopped, however the run ended
            if not tasks and self.plan.host_setup is None:
                return
            try:
                self.launcher.close()
            except Exception:
                self.log.exception("launcher close failed")

    def _stop_tasks(self, tasks: list[tuple[RolePlan, RoleProcess]]) -> None:
        self.log.info("stopping %d task(s)", len(tasks))
        grace = self.options.stop_grace_s
        with ThreadPoolExecutor(max_workers=min(32, len(tasks))) as pool:
            codes = list(pool.map(lambda t: t[1].stop(grace), tasks))
        for (role, process), code in zip(tasks, codes, strict=True):
            self.note_swept(role.name, process)
            key = (role.name, process.node_rank)
            if key not in self.ended:
                self.ended.add(key)
                self.record_exit(role.name, process.node_rank, code, stopped=True)

    def _finish(self, error_code: int) -> RunSummary:
        """Decide the run's status and exit code, write summary.json, close the log."""
        with self.lock:
            failure = self.state.failure
            if self.cancelled:
                status, code = RunStatus.CANCELLED, EXIT_CANCELLED
            elif self.timed_out:
                status, code = RunStatus.TIMEOUT, EXIT_FAILED
            elif failure is not None:
                status, code = RunStatus.FAILED, error_code
            elif self.write_error is not None:  # results may be fine; the record is not
                failure = self.state.failure = Failure(reason=self.write_error)
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
            started = {r.name: r.tasks for r in self.state.roles if any(t.pid for t in r.tasks)}
            summary = RunSummary(
                **self.state.model_dump(include=set(RunRecord.model_fields)),
                status=status,
                exit_code=code,
                reason=failure.reason if failure else None,
                failure=failure if status in (RunStatus.FAILED, RunStatus.TIMEOUT) else None,
                started_at=self.started,
                finished_at=time.time(),
                phase_seconds=dict(self.phase_seconds),
                timeline=dict(self.timeline),
                role_exit_codes={role: [t.exit_code for t in ts] for role, ts in started.items()},
                role_pids={role: [t.pid for t in ts if t.pid] for role, ts in started.items()},
                points=points,
                points_measured=sum(p.status is PointStatus.MEASURED for p in points),
                points_skipped=sum(p.status is PointStatus.SKIPPED for p in points),
                points_invalid=sum(p.status is PointStatus.INVALID for p in points),
                profile_posts=list(self.state.profile_posts),
            )
        try:
            summary.write(self.run_dir)
        except OSError as exc:
            self.write_failed(SUMMARY_FILE, exc)
            if summary.exit_code == EXIT_COMPLETED:
                summary.status, summary.exit_code = RunStatus.FAILED, EXIT_FAILED
                summary.reason = self.write_error
        self.publish()
        self.log.info(
            "run %s: %d measured, %d skipped, %d invalid; %.1f s",
            status.value,
            summary.points_measured,
            summary.points_skipped,
            summary.points_invalid,
            summary.finished_at - self.started,
        )
        close_log(self.log)
        return summary
