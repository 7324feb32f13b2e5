"""`benchmark.type: custom` end to end on this machine: the recipe's own client loop runs
in the bench role against the live frontend, its exit status decides the run, and the
point files it writes become results that `disagg report` shows."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from disagg.launch.state import PointStatus, RunState, RunStatus, RunSummary

from .workload_support import disagg

pytestmark = pytest.mark.slow

RECIPE = Path(__file__).parent / "data" / "sim-custom.yaml"
PAUSE_S = 6.0  # over override_paused's serving_gap (2.5 s), far under its liveness_timeout


def test_custom_fixed_sequence_loop_runs_and_its_points_reach_the_report(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    done = disagg("run", f"{RECIPE}:base", "--local", "--out", run_dir)
    assert done.returncode == 0, done.stderr[-3000:]

    summary = RunSummary.read(run_dir)
    assert summary is not None and summary.status is RunStatus.COMPLETED
    assert sorted(p.key for p in summary.points) == ["conc1", "conc2", "conc4"]
    assert all(p.status is PointStatus.MEASURED for p in summary.points)
    for point in summary.points:
        assert point.result is not None
        result = json.loads(Path(point.result).read_text())
        assert result["valid"] is True and result["simulated"] is True
        assert result["benchmark_type"] == "custom"
        assert result["completed"] == 4 * result["max_concurrency"]
        assert result["num_prefill_gpu"] == 2 and result["num_decode_gpu"] == 2
        assert Path(result["client_result_file"]).is_relative_to(run_dir / "bench-results")
    # The contract variables reached the script: topology as InferenceX names it, a job id.
    topology = (run_dir / "bench-results" / "topology.txt").read_text().split()
    assert topology[:2] == ["1x2", "1x2"] and topology[2].startswith("local-")
    log = (run_dir / "logs" / "orchestrator.log").read_text()
    assert "kept " + str(run_dir / "bench-results" / "topology.txt") in log

    report = disagg("report", run_dir, "--out", tmp_path / "report", "--json")
    assert report.returncode == 0, report.stderr
    shown = json.loads(report.stdout)
    assert shown["valid_points"] == 3
    assert sorted(point["conc"] for point in shown["points"]) == [1, 2, 4]

    collected = disagg(
        "collect", run_dir, "--out", tmp_path / "rows", "--allow-simulated", "--json"
    )
    assert collected.returncode == 0, collected.stderr
    assert sorted(row["point"] for row in json.loads(collected.stdout)) == [
        "conc1",
        "conc2",
        "conc4",
    ]


def test_custom_command_that_exits_non_zero_fails_the_run(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    done = disagg("run", f"{RECIPE}:override_fails", "--local", "--out", run_dir)

    assert done.returncode == 1
    summary = RunSummary.read(run_dir)
    assert summary is not None and summary.status is RunStatus.FAILED
    assert summary.reason == "benchmark command exited with code 3"
    assert summary.failure is not None and summary.failure.role == "bench"
    assert any("cannot reach the dataset" in line for line in summary.failure.log_tail)
    assert summary.points == []
    assert not list((run_dir / "results").glob("*conc*"))


@pytest.mark.timeout(300)
def test_a_role_that_paused_while_the_command_ran_leaves_no_valid_point(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    command = [sys.executable, "-m", "disagg", "run", f"{RECIPE}:override_paused"]
    proc = subprocess.Popen(
        [*command, "--local", "--out", str(run_dir)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        state = None
        while state is None or state.phase.value != "measure":  # the test's timeout bounds it
            assert proc.poll() is None, f"disagg run ended early with {proc.returncode}"
            time.sleep(0.1)
            with contextlib.suppress(ValueError):
                state = RunState.read(run_dir)
        pid = state.role("decode-0").tasks[0].pid
        assert pid is not None
        os.kill(pid, signal.SIGSTOP)
        try:
            time.sleep(PAUSE_S)  # the fault's length, not a check of any speed
        finally:
            os.kill(pid, signal.SIGCONT)
        assert proc.wait(timeout=240) == 1
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=60)

    summary = RunSummary.read(run_dir)
    assert summary is not None and summary.status is RunStatus.FAILED
    assert summary.failure is not None and summary.failure.role == "decode-0"
    assert summary.points and all(p.status is PointStatus.INVALID for p in summary.points)
    for point in summary.points:
        assert point.reason is not None
        assert point.reason.startswith("role decode-0 stopped serving for ")
        assert "during the benchmark command" in point.reason
        assert json.loads(Path(point.result or "").read_text())["valid"] is False
