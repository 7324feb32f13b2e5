"""Resume keeps only results measured under the same plan and says what it measures again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from disagg.launch.local import LocalLauncher
from disagg.launch.orchestrator import Orchestrator, OrchestratorOptions
from disagg.launch.state import PointStatus, RunStatus, RunSummary
from disagg.plan.model import Plan

from .conftest import make_plan, sim_worker

OPTIONS = OrchestratorOptions(echo=False, quiet_bench=True, handle_signals=False)
pytestmark = pytest.mark.slow


def sim_plan(*, points: tuple[int, ...] = (1,), isl: int = 16) -> Plan:
    return make_plan([sim_worker("aggregated-0", "aggregated")], points=points, isl=isl)


def orchestrate(run_dir: Path, plan: Plan) -> RunSummary:
    plan.write(run_dir)
    return Orchestrator(run_dir, plan, LocalLauncher(), OPTIONS).run()


def log_of(run_dir: Path) -> str:
    return (run_dir / "logs" / "orchestrator.log").read_text()


def test_a_changed_isl_measures_again_and_names_the_change(tmp_path: Path) -> None:
    first = orchestrate(tmp_path, sim_plan(isl=16))
    assert first.status is RunStatus.COMPLETED, first.reason
    same = orchestrate(tmp_path, sim_plan(isl=16))
    assert [p.status for p in same.points] == [PointStatus.SKIPPED]

    changed = orchestrate(tmp_path, sim_plan(isl=32))

    assert changed.status is RunStatus.COMPLETED, changed.reason
    assert [p.status for p in changed.points] == [PointStatus.MEASURED]
    result = json.loads(Path(changed.points[0].result or "").read_text())
    assert result["measured_under"]["bench"]["isl"] == 32
    assert result["measurement_fingerprint"].startswith("sha256:")
    assert (
        "point conc1: the existing result was measured under another plan "
        "(bench.isl: 16 -> 32); measuring it again" in log_of(tmp_path)
    )


def test_adding_a_point_keeps_the_others(tmp_path: Path) -> None:
    orchestrate(tmp_path, sim_plan(points=(1,)))
    grown = orchestrate(tmp_path, sim_plan(points=(1, 2)))
    assert [p.status for p in grown.points] == [PointStatus.SKIPPED, PointStatus.MEASURED]


def test_a_result_without_a_fingerprint_is_measured_again(tmp_path: Path) -> None:
    first = orchestrate(tmp_path, sim_plan())
    path = Path(first.points[0].result or "")
    old = json.loads(path.read_text())
    del old["measurement_fingerprint"], old["measured_under"]
    path.write_text(json.dumps(old))

    again = orchestrate(tmp_path, sim_plan())

    assert [p.status for p in again.points] == [PointStatus.MEASURED]
    assert "it carries no measurement fingerprint (written by an older disagg)" in log_of(tmp_path)


def test_another_gpu_type_is_another_measurement() -> None:
    from disagg.bench.fingerprint import fingerprint_fields, mismatch

    h100, h200 = sim_plan(), sim_plan()
    h100.config = {"resources": {"gpu_type": "h100"}}
    h200.config = {"resources": {"gpu_type": "h200"}}
    point = h100.bench.points[0]
    old = fingerprint_fields(h100, point)
    assert mismatch(old, fingerprint_fields(h100, point)) == []
    assert mismatch(old, fingerprint_fields(h200, point)) == ['gpu_type: "h100" -> "h200"']
