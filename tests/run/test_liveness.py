"""A role that stops serving during the points fails the run within its liveness limit."""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from disagg.launch.local import LocalLauncher
from disagg.launch.orchestrator import Orchestrator, OrchestratorOptions
from disagg.launch.state import PointStatus, RunState, RunStatus, RunSummary
from disagg.plan.limits import LimitsPlan
from disagg.plan.model import Plan

from .conftest import make_plan, python_role, sim_pd_roles, sim_worker, wait_gone

OPTIONS = OrchestratorOptions(echo=False, quiet_bench=True, handle_signals=False)


def orchestrate(
    run_dir: Path, plan: Plan, hook: Callable[[RunState], None] | None = None
) -> RunSummary:
    plan.write(run_dir)
    return Orchestrator(run_dir, plan, LocalLauncher(), OPTIONS, on_update=hook).run()


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_sigstopped_decode_worker_fails_the_run_naming_it(tmp_path: Path) -> None:
    plan = make_plan(
        sim_pd_roles(1, 2), points=(4, 8, 16), num_prompts=400, decode_gpus=2, isl=64, osl=64
    )
    plan.limits = LimitsPlan(liveness_timeout_s=5.0, liveness_interval_s=0.2)
    stopped: list[int] = []

    def hook(state: RunState) -> None:
        if not stopped and state.current_point == "conc4":
            pid = state.role("decode-1").tasks[0].pid
            assert pid is not None
            os.kill(pid, signal.SIGSTOP)  # alive, holding its port, answering nothing
            stopped.append(pid)

    try:
        summary = orchestrate(tmp_path, plan, hook)
    finally:
        for pid in stopped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)

    assert stopped
    assert summary.status is RunStatus.FAILED and summary.exit_code == 1
    assert summary.failure is not None and summary.failure.role == "decode-1"
    assert summary.reason is not None
    assert summary.reason.startswith("role decode-1 stopped serving")
    statuses = [p.status for p in summary.points]
    assert statuses == [PointStatus.ABORTED] * 3  # the point it stopped in is not a result
    for result in (tmp_path / "results").glob("*.json"):
        assert json.loads(result.read_text())["valid"] is False
    pids = [pid for group in summary.role_pids.values() for pid in group]
    assert wait_gone(pids, timeout_s=30) == []


@pytest.mark.timeout(120)
def test_the_run_ends_at_its_time_limit(tmp_path: Path) -> None:
    plan = make_plan([sim_worker("aggregated-0", "aggregated")], points=(1, 2, 4), num_prompts=2000)
    plan.limits = LimitsPlan(run_timeout_s=1.0)

    summary = orchestrate(tmp_path, plan)

    assert summary.status is RunStatus.TIMEOUT and summary.exit_code == 1
    assert summary.reason == "the run's time limit of 1 s was reached (limits)"
    assert summary.failure is not None and summary.failure.reason == summary.reason
    assert PointStatus.MEASURED not in [p.status for p in summary.points]
    pids = [pid for group in summary.role_pids.values() for pid in group]
    assert wait_gone(pids, timeout_s=30) == []


@pytest.mark.parametrize(
    ("directives", "warning"),
    [({}, signal.SIGUSR1), ({"signal": "B:USR2@90"}, signal.SIGUSR2)],
)
def test_slurms_time_limit_warning_stops_the_run_as_timed_out(
    tmp_path: Path, directives: dict[str, str], warning: signal.Signals
) -> None:
    # What `#SBATCH --signal=B:USR1@N` (or the recipe's own) sends before the time limit.
    plan = make_plan([python_role("decode-0", "import time; time.sleep(60)", deadline_s=60)])
    plan.slurm.directives = directives
    plan.write(tmp_path)
    sent: list[int] = []

    def hook(state: RunState) -> None:
        pid = state.roles[0].tasks[0].pid if state.roles and state.roles[0].tasks else None
        if pid and not sent:
            sent.append(pid)
            os.kill(os.getpid(), warning)

    options = OrchestratorOptions(echo=False, quiet_bench=True, executor="slurm")
    before = signal.getsignal(warning)
    summary = Orchestrator(tmp_path, plan, LocalLauncher(), options, on_update=hook).run()

    assert sent
    assert summary.status is RunStatus.TIMEOUT and summary.exit_code == 1
    assert summary.reason is not None
    assert summary.reason.startswith(f"Slurm's time limit is near ({warning.name}")
    state = RunState.read(tmp_path)
    assert state is not None and state.status is RunStatus.TIMEOUT
    assert signal.getsignal(warning) == before  # given back after the run
    assert wait_gone(sent) == []
