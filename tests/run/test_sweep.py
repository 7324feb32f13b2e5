"""End to end on loopback: simulated workers behind the real sglang-router, run by the orchestrator.

These are the behaviours a user of `disagg run` relies on: every point measured,
load spread over the decode workers, a dying worker stopping the run at once
(earlier results kept), a half-finished run resumed, and nothing left running.
"""

from __future__ import annotations

import json
import os
import signal
import urllib.request
from pathlib import Path

import pytest

from disagg.launch.local import LocalLauncher
from disagg.launch.orchestrator import Orchestrator, OrchestratorOptions
from disagg.launch.state import PointStatus, RunState, RunStatus, RunSummary
from disagg.plan.model import Plan

from .conftest import make_plan, sim_pd_roles, wait_gone

pytestmark = pytest.mark.slow

OPTIONS = OrchestratorOptions(echo=False, quiet_bench=True, handle_signals=False)


def pd_plan(points: tuple[int, ...], num_prompts: int = 8) -> Plan:
    # round_robin: smg's default (cache_aware) may keep every similar prompt on one decode
    # worker, depending on timing; the spread asserted below is round robin's
    roles = sim_pd_roles(1, 2, policy="round_robin")
    return make_plan(roles, points=points, num_prompts=num_prompts, decode_gpus=2, isl=64, osl=16)


def orchestrate(run_dir: Path, plan: Plan, hook: object = None) -> RunSummary:
    plan.write(run_dir)
    return Orchestrator(run_dir, plan, LocalLauncher(), OPTIONS, on_update=hook).run()  # type: ignore[arg-type]


def pids_of(summary: RunSummary) -> list[int]:
    return [pid for pids in summary.role_pids.values() for pid in pids]


def sim_stats(state: RunState, role: str) -> dict[str, int]:
    port = state.role(role).ports["http_port"]
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/sim/stats", timeout=5) as response:
        stats: dict[str, int] = json.load(response)
    return stats


def test_1p2d_sweep_measures_every_point_through_the_router(tmp_path: Path) -> None:
    stats: dict[str, dict[str, int]] = {}

    def hook(state: RunState) -> None:
        # After the last point and before teardown, the workers are still up: read their counters.
        if not stats and state.phase.value == "measure" and state.points_done == 3:
            for role in ("decode-0", "decode-1"):
                stats[role] = sim_stats(state, role)

    summary = orchestrate(tmp_path, pd_plan((1, 2, 4)), hook)

    assert summary.status is RunStatus.COMPLETED, summary.reason
    assert summary.exit_code == 0
    assert [p.status for p in summary.points] == [PointStatus.MEASURED] * 3
    for point in summary.points:
        assert point.result is not None
        result = json.loads(Path(point.result).read_text())
        assert result["valid"] is True
        assert result["completed"] == 8
        assert result["simulated"] is True
    # Round-robin over two decode workers: both did real decode work.
    assert stats["decode-0"]["output_tokens"] > 0
    assert stats["decode-1"]["output_tokens"] > 0
    assert stats["decode-0"]["requests"] + stats["decode-1"]["requests"] >= 24
    assert set(summary.role_pids) == {"prefill-0", "decode-0", "decode-1", "router"}
    assert wait_gone(pids_of(summary), timeout_s=1) == []
    assert set(summary.phase_seconds) >= {"launch", "health", "canary", "measure", "teardown"}


def test_killing_a_decode_worker_fails_the_run_and_keeps_earlier_points(
    tmp_path: Path,
) -> None:
    # Killed as soon as conc2 starts (64 requests): the death, not the point's end, stops
    # the run. How fast it stops is measured by benchmarks/orchestration.py, not here.
    killed: list[int] = []

    def hook(state: RunState) -> None:
        if state.current_point == "conc2" and not killed:
            pid = state.role("decode-1").tasks[0].pid
            assert pid is not None
            killed.append(pid)
            os.kill(pid, signal.SIGKILL)

    plan = pd_plan((1, 2, 4), num_prompts=4)
    plan.bench.points[1].num_prompts = 64  # long enough to be killed in the middle
    summary = orchestrate(tmp_path, plan, hook)

    assert killed
    assert summary.status is RunStatus.FAILED
    assert summary.exit_code == 1
    assert summary.reason == "role decode-1 exited with code -9"
    assert summary.failure is not None and summary.failure.role == "decode-1"
    assert summary.failure.log == str(tmp_path / "logs" / "decode-1.log")
    statuses = [p.status for p in summary.points]
    assert statuses == [PointStatus.MEASURED, PointStatus.ABORTED, PointStatus.ABORTED]
    first = summary.points[0].result
    assert first is not None and json.loads(Path(first).read_text())["valid"] is True
    assert summary.role_exit_codes["decode-1"] == [-9]
    assert wait_gone(pids_of(summary)) == []


def test_rerun_measures_only_the_missing_points(tmp_path: Path) -> None:
    plan = pd_plan((1, 2, 4), num_prompts=4)
    holder: list[Orchestrator] = []

    def cancel_after_first_point(state: RunState) -> None:
        if state.points[0].status is PointStatus.MEASURED:
            holder[0].cancel("stopped by the test")

    plan.write(tmp_path)
    first_run = Orchestrator(
        tmp_path, plan, LocalLauncher(), OPTIONS, on_update=cancel_after_first_point
    )
    holder.append(first_run)
    half = first_run.run()
    assert half.status is RunStatus.CANCELLED
    assert half.exit_code == 3
    assert [p.status for p in half.points] == [
        PointStatus.MEASURED,
        PointStatus.ABORTED,
        PointStatus.ABORTED,
    ]
    kept = Path(half.points[0].result or "")
    before = kept.read_bytes()

    summary = orchestrate(tmp_path, plan)

    assert summary.status is RunStatus.COMPLETED, summary.reason
    statuses = [p.status for p in summary.points]
    assert statuses == [PointStatus.SKIPPED, PointStatus.MEASURED, PointStatus.MEASURED]
    assert kept.read_bytes() == before
    assert wait_gone(pids_of(half) + pids_of(summary), timeout_s=1) == []


def test_rerun_of_a_finished_run_starts_nothing(tmp_path: Path) -> None:
    plan = pd_plan((1,), num_prompts=4)
    assert orchestrate(tmp_path, plan).status is RunStatus.COMPLETED
    again = orchestrate(tmp_path, plan)
    assert again.status is RunStatus.COMPLETED
    assert [p.status for p in again.points] == [PointStatus.SKIPPED]
    assert again.role_pids == {}  # nothing was started
    assert "staging" not in again.phase_seconds
