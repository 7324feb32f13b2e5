"""A full disk or read-only run directory never leaves roles running or hides the failure."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from disagg.launch.local import LocalLauncher
from disagg.launch.orchestrator import Orchestrator, OrchestratorOptions
from disagg.launch.state import Phase, RunState, RunStatus, RunSummary

from .conftest import make_plan, python_role, sim_worker, wait_gone

OPTIONS = OrchestratorOptions(echo=False, handle_signals=False, stop_grace_s=2.0)


def _disk_full(*_args: object) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


def _fail_state_writes_from(phase: Phase, monkeypatch: pytest.MonkeyPatch) -> None:
    original = RunState.write

    def write(self: RunState, run_dir: Path) -> None:
        if self.phase in (phase, Phase.DONE):
            _disk_full()
        original(self, run_dir)

    monkeypatch.setattr(RunState, "write", write)


def test_state_write_failing_at_teardown_still_stops_every_role(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fail_state_writes_from(Phase.TEARDOWN, monkeypatch)
    plan = make_plan([python_role("decode-0", "import time; time.sleep(60)", deadline_s=0.5)])
    plan.write(tmp_path)

    summary = Orchestrator(tmp_path, plan, LocalLauncher(), OPTIONS).run()

    assert summary.status is RunStatus.FAILED and summary.exit_code == 1
    assert summary.reason is not None and "not healthy" in summary.reason  # the first cause
    pids = [pid for group in summary.role_pids.values() for pid in group]
    assert pids and wait_gone(pids) == []
    assert RunSummary.read(tmp_path) is not None  # the summary still got written
    log = (tmp_path / "logs" / "orchestrator.log").read_text()
    assert log.count("cannot write") == 1
    assert "No space left on device" in log


def test_a_summary_that_cannot_be_written_makes_the_exit_non_zero(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(RunSummary, "write", lambda self, run_dir: _disk_full())
    plan = make_plan([python_role("decode-0", "import time; time.sleep(60)", deadline_s=60)])
    plan.bench.points.clear()  # nothing to measure: the run would complete
    plan.write(tmp_path)

    summary = Orchestrator(tmp_path, plan, LocalLauncher(), OPTIONS).run()

    assert summary.exit_code == 1
    assert summary.reason is not None and "summary.json" in summary.reason
    assert "No space left on device" in summary.reason


@pytest.mark.slow
def test_a_result_that_cannot_be_written_fails_the_run_clearly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from disagg.bench import runner

    def full(*_args: object, **_kw: object) -> Path:
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "results" / "x"))

    monkeypatch.setattr(runner, "write_point", full)
    plan = make_plan([sim_worker("aggregated-0", "aggregated")])
    plan.write(tmp_path)

    summary = Orchestrator(tmp_path, plan, LocalLauncher(), OPTIONS).run()

    assert summary.status is RunStatus.FAILED and summary.exit_code == 1
    assert summary.reason == f"cannot write {tmp_path}/results/x: No space left on device"
    pids = [pid for group in summary.role_pids.values() for pid in group]
    assert pids and wait_gone(pids) == []
