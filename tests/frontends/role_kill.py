"""A role SIGKILLed in the middle of a run's second point, and what the run must then say.

Shared by the Dynamo, mocker and service tests: whichever role dies (a worker, the
frontend, etcd, NATS), the run fails naming it, keeps the point measured before, aborts
the one after, and leaves nothing running.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from pathlib import Path

from disagg.launch.local import LocalLauncher
from disagg.launch.orchestrator import Orchestrator, OrchestratorOptions
from disagg.launch.state import PointStatus, RunState, RunStatus, RunSummary
from disagg.plan.from_recipe import plans_for
from run.conftest import wait_gone

OPTIONS = OrchestratorOptions(echo=False, quiet_bench=True, handle_signals=False)


def run_killing(recipe: Path, run_dir: Path, victim: str) -> RunSummary:
    """Run `recipe`'s one plan locally, SIGKILL `victim` 0.3 s into its second point, and
    check the run's verdict; returns the summary for the caller's own checks."""
    [plan] = plans_for([str(recipe)], None)
    plan.bench.points[1].num_prompts = 400  # long enough to be killed in the middle
    run_dir.mkdir()
    plan.write(run_dir)
    killed: list[int] = []

    def kill(state: RunState) -> None:
        pid = state.role(victim).tasks[0].pid
        assert pid is not None
        killed.append(pid)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)

    def hook(state: RunState) -> None:
        if state.current_point == plan.bench.points[1].key and not killed:
            killed.append(0)  # arm once
            threading.Timer(0.3, kill, args=(state,)).start()

    summary = Orchestrator(run_dir, plan, LocalLauncher(plan.nodes), OPTIONS, on_update=hook).run()
    assert killed and killed[-1] > 0, f"{victim} was never killed"
    assert summary.status is RunStatus.FAILED and summary.exit_code == 1
    assert summary.reason == f"role {victim} exited with code -9", summary.reason
    assert summary.failure is not None and summary.failure.role == victim
    first, during, after = (p.status for p in summary.points)
    assert first is PointStatus.MEASURED
    # Requests to a dead role fail at once: the point may end invalid before it is aborted.
    assert during in (PointStatus.ABORTED, PointStatus.INVALID)
    assert after is PointStatus.ABORTED
    assert wait_gone([pid for pids in summary.role_pids.values() for pid in pids]) == []
    return summary
