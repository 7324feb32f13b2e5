"""The in-allocation orchestrator: one plan.json in, roles up, points measured, roles down.

Phases: stage models -> allocate ports -> start the plan's stages in order (services,
workers, frontends: each launched, then health-gated) -> canary -> measure each point
-> teardown -> summary.json. Each phase is its own module (`role_start`,
`point_loop`, `bench_command`, `teardown`); they share one `RunContext`.

A monitor thread polls every role task during all phases. The first task that
exits, a health deadline or time limit that passes, SIGTERM/SIGINT, or (under Slurm)
the SIGUSR1 that warns of the job's time limit sets one stop event that
every phase waits on, so a broken run ends within seconds: results of points
already measured stay, the failing role is named and the end of its log shown.
The same code runs on a laptop (`LocalLauncher`) and inside a Slurm job
(`SrunLauncher`); only the launcher differs.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

from disagg.errors import DisaggError
from disagg.launch.bench_command import run_bench_command
from disagg.launch.canary import run_canary
from disagg.launch.executor import RoleLauncher
from disagg.launch.point_loop import mark_done_points, measure_points
from disagg.launch.role_start import RoleStarter
from disagg.launch.run_context import (
    EXIT_BAD_PLAN,
    EXIT_CANCELLED,
    EXIT_COMPLETED,
    EXIT_FAILED,
    OrchestratorOptions,
    RunContext,
    Stop,
    UpdateHook,
)
from disagg.launch.sbatch import TIME_LIMIT_SIGNAL, warning_signal
from disagg.launch.stale import stop_stale_roles
from disagg.launch.state import Phase, RunState, RunSummary
from disagg.launch.teardown import finish, teardown
from disagg.plan.model import Plan

__all__ = [
    "EXIT_BAD_PLAN",
    "EXIT_CANCELLED",
    "EXIT_COMPLETED",
    "EXIT_FAILED",
    "Orchestrator",
    "OrchestratorOptions",
    "UpdateHook",
]

MONITOR_INTERVAL_S = 0.1
TRACK_INTERVAL_S = 1.0  # how often the launcher notes what each task has started


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
        options = options or OrchestratorOptions()
        self.context = RunContext(run_dir, plan, launcher, options, on_update)

    @property
    def state(self) -> RunState:
        return self.context.state

    @property
    def stop(self) -> threading.Event:
        return self.context.stop

    def run(self) -> RunSummary:
        run = self.context
        run.started = time.time()
        # Before state.json is replaced: roles an earlier, killed run left behind.
        for line in stop_stale_roles(run.run_dir, grace_s=run.options.stop_grace_s):
            run.log.warning("%s", line)
        run.publish()
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
                run.fail(str(exc))
            except OSError as exc:  # a result or log that cannot be written (disk full)
                where = f" {exc.filename}" if exc.filename else ""
                run.fail(f"cannot write{where}: {exc.strerror or exc}")
            except Exception as exc:  # a bug must still tear everything down
                run.log.exception("internal error")
                run.fail(f"internal error: {type(exc).__name__}: {exc}")
            finally:
                teardown(run)
        return finish(run, error_code)

    def cancel(self, reason: str = "cancelled") -> None:
        """Stop the run as cancelled (what SIGTERM/SIGINT do)."""
        self.context.cancel(reason)

    def _run_phases(self) -> None:
        run = self.context
        plan = run.plan
        run.log.info(
            "run %s (%s), %d point(s), executor %s%s",
            plan.name,
            plan.selector,
            len(plan.bench.points),
            run.options.executor,
            f", simulated by {plan.simulator or 'disagg sim-engine'}" if plan.simulated else "",
        )
        from disagg.workloads import adapter_for

        workload = adapter_for(plan.bench.type)
        bench = workload.resolve(plan.bench)
        if bench is not plan.bench:
            run.measure_bench(bench)
            plan = run.plan
            run.log.info(
                "benchmark inputs read and checked at run time: %d request(s) in %d point(s)",
                sum(point.num_prompts for point in bench.points),
                len(bench.points),
            )
        if plan.bench.command is None and mark_done_points(run):
            run.log.info("every point already has a valid result; nothing to run")
            return
        starter = RoleStarter(run)
        starter.start_all()
        watch = starter.watch_liveness()
        try:
            with run.phase(Phase.CANARY):
                run_canary(run)
                run.mark("canary_ok")
            with run.phase(Phase.MEASURE):
                if plan.bench.command is not None:
                    run_bench_command(run, watch)
                else:
                    measure_points(run, workload.measure(), watch)
        finally:
            watch.close()

    def _monitor(self) -> None:
        """Notice within ~100 ms that any role task ended (or the run's time limit), and stop."""
        run = self.context
        run_limit = run.plan.limits.run_timeout_s
        started = tracked = time.monotonic()
        while not run.tearing_down:
            if run_limit is not None and time.monotonic() - started > run_limit:
                run.time_out(f"the run's time limit of {run_limit:g} s was reached (limits)")
            run.poll_tasks()
            if time.monotonic() - tracked >= TRACK_INTERVAL_S:
                tracked = time.monotonic()
                run.launcher.track()
            time.sleep(MONITOR_INTERVAL_S)

    @contextmanager
    def _signals(self) -> Iterator[None]:
        run = self.context
        if (
            not run.options.handle_signals
            or threading.current_thread() is not threading.main_thread()
        ):
            yield
            return

        def handler(signum: int, frame: FrameType | None) -> None:
            self.cancel(f"received {signal.Signals(signum).name}")

        def warned(signum: int, frame: FrameType | None) -> None:
            run.time_out(
                f"Slurm's time limit is near ({signal.Signals(signum).name} from "
                "--signal): stopped to keep the results"
            )

        # SIGHUP (a closed terminal) stops the run like SIGTERM: nothing is left behind.
        signals = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
        previous = {sig: signal.signal(sig, handler) for sig in signals}
        if run.options.executor == "slurm":  # `#SBATCH --signal=B:USR1@N` (launch.sbatch)
            name = warning_signal(run.plan.slurm) or TIME_LIMIT_SIGNAL
            warning = signal.Signals[f"SIG{name}"]
            previous[warning] = signal.signal(warning, warned)
        try:
            yield
        finally:
            for sig, old in previous.items():
                signal.signal(sig, old)
