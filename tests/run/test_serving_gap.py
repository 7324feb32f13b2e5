"""A role that stops serving during a point, for less than the liveness limit, taints it.

The role is SIGSTOPped a few seconds into a point and SIGCONTed well before
`limits.liveness_timeout`, so the run itself goes on. The point it paused in is not a
result: it is measured once more when every role answers again, and stays invalid
(failing the run, naming the role) if the role stops serving again.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from disagg.launch.local import LocalLauncher
from disagg.launch.orchestrator import Orchestrator, OrchestratorOptions
from disagg.launch.state import PointStatus, RunState, RunStatus, RunSummary
from disagg.plan.limits import LimitsPlan
from disagg.plan.model import Plan

from .conftest import make_plan, sim_pd_roles, wait_gone

OPTIONS = OrchestratorOptions(echo=False, quiet_bench=True, handle_signals=False)
PAUSE_S = 6.0  # well over limits.serving_gap (2.5 s), well under limits.liveness_timeout


def paused_plan() -> Plan:
    plan = make_plan(
        sim_pd_roles(1, 2), points=(4, 8), num_prompts=60, decode_gpus=2, isl=64, osl=64
    )
    plan.limits = LimitsPlan(liveness_timeout_s=60.0, liveness_interval_s=0.2, serving_gap_s=2.5)
    return plan


class Pauser:
    """SIGSTOPs decode-1 at the start of the first `times` attempts of point conc4,
    and SIGCONTs it PAUSE_S later."""

    def __init__(self, times: int) -> None:
        self.times = times
        self.attempts: list[float] = []  # started_at of each attempt seen
        self.pids: list[int] = []
        self.timers: list[threading.Timer] = []

    def hook(self, state: RunState) -> None:
        point = state.points[0]
        if state.current_point != "conc4" or point.started_at is None:
            return
        if point.started_at in self.attempts:
            return
        self.attempts.append(point.started_at)
        if len(self.attempts) > self.times:
            return
        pid = state.role("decode-1").tasks[0].pid
        assert pid is not None
        os.kill(pid, signal.SIGSTOP)  # alive, holding its port, answering nothing
        self.pids.append(pid)
        timer = threading.Timer(PAUSE_S, self.resume, args=(pid,))
        self.timers.append(timer)
        timer.start()

    @staticmethod
    def resume(pid: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)

    def close(self) -> None:
        for timer in self.timers:
            timer.cancel()
        for pid in self.pids:
            self.resume(pid)


def orchestrate(
    run_dir: Path, plan: Plan, hook: Callable[[RunState], None] | None = None
) -> RunSummary:
    plan.write(run_dir)
    return Orchestrator(run_dir, plan, LocalLauncher(), OPTIONS, on_update=hook).run()


def assert_nothing_left(summary: RunSummary) -> None:
    pids = [pid for group in summary.role_pids.values() for pid in group]
    assert wait_gone(pids, timeout_s=30) == []


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_point_a_role_paused_in_is_measured_again(tmp_path: Path) -> None:
    pauser = Pauser(times=1)
    try:
        summary = orchestrate(tmp_path, paused_plan(), pauser.hook)
    finally:
        pauser.close()

    assert len(pauser.pids) == 1
    assert summary.status is RunStatus.COMPLETED, summary.reason
    assert summary.exit_code == 0
    first, second = summary.points
    assert len(pauser.attempts) == 2, "conc4 was measured a second time"
    assert first.status is PointStatus.MEASURED and first.attempts == 2
    assert first.discarded, "the discarded attempt says why"
    assert first.discarded[0].startswith("role decode-1 stopped serving for ")
    assert second.status is PointStatus.MEASURED and second.attempts == 1
    assert not second.discarded
    result = json.loads(Path(first.result or "").read_text())
    assert result["valid"] is True
    log = (tmp_path / "logs" / "orchestrator.log").read_text()
    assert "point conc4: role decode-1 stopped serving for " in log
    assert "measuring it once more" in log
    assert_nothing_left(summary)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_role_that_pauses_again_leaves_the_point_invalid_and_fails_the_run(
    tmp_path: Path,
) -> None:
    pauser = Pauser(times=2)
    try:
        summary = orchestrate(tmp_path, paused_plan(), pauser.hook)
    finally:
        pauser.close()

    assert len(pauser.pids) == 2
    assert summary.status is RunStatus.FAILED and summary.exit_code == 1
    first, second = summary.points
    assert first.status is PointStatus.INVALID and first.attempts == 2
    assert first.reason is not None
    assert first.reason.startswith("role decode-1 stopped serving for ")
    # the role answered again, so the sweep went on: the next point is a result
    assert second.status is PointStatus.MEASURED
    assert summary.reason is not None
    assert summary.reason.startswith("1 invalid point(s): conc4 (first: role decode-1 stopped")
    assert summary.failure is not None and summary.failure.role == "decode-1"
    result = json.loads(Path(first.result or "").read_text())
    assert result["valid"] is False
    assert result["invalid_reason"] == first.reason
    assert_nothing_left(summary)


def test_run_output_says_which_attempt_was_discarded_and_why(tmp_path: Path) -> None:
    from io import StringIO

    from rich.console import Console

    from disagg.launch.runner import _print_outcome, points_table
    from disagg.launch.state import PointState

    why = "role decode-1 stopped serving for 4.1 s during the point (no healthy answer)"
    summary = RunSummary(
        name="t",
        selector="t.yaml:base",
        run_dir=str(tmp_path),
        simulated=True,
        executor="local",
        status=RunStatus.COMPLETED,
        exit_code=0,
        started_at=0.0,
        finished_at=1.0,
        points=[
            PointState(key="conc4", status=PointStatus.MEASURED, attempts=2, discarded=[why]),
            PointState(key="conc8", status=PointStatus.MEASURED, attempts=1),
        ],
    )
    out = StringIO()
    console = Console(file=out, width=200, color_system=None)
    console.print(points_table(summary.points))
    _print_outcome(console, summary, tmp_path)
    text = out.getvalue()
    assert "measured (2 tries)" in text
    assert text.count("tries") == 1
    assert f"conc4: attempt 1 discarded: {why}" in text
    assert "completed" in text
