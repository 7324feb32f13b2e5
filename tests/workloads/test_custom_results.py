"""What a custom command leaves behind is judged, never trusted: impossible numbers make
an invalid point that every reader (the run's table, status, report, collect) agrees on,
and a command that writes no result fails the run unless the recipe says it writes none."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from disagg.launch.state import PointStatus, RunState, RunStatus, RunSummary

from .workload_support import disagg

pytestmark = pytest.mark.slow

RECIPE = Path(__file__).parent / "data" / "sim-custom.yaml"


def test_impossible_numbers_claiming_valid_are_invalid_for_every_reader(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    done = disagg("run", f"{RECIPE}:override_impossible", "--local", "--out", run_dir)

    assert "Traceback" not in done.stderr + done.stdout
    assert done.returncode == 1, done.stderr[-3000:]
    summary = RunSummary.read(run_dir)
    assert summary is not None and summary.status is RunStatus.FAILED
    [point] = summary.points
    assert point.status is PointStatus.INVALID
    assert point.reason is not None and "not a finite number" in point.reason
    # state.json keeps only finite numbers, so it reads back and `status` shows it
    state_text = (run_dir / "state.json").read_text()
    assert "NaN" not in state_text and "null" not in json.dumps(
        json.loads(state_text)["points"][0]["headline"]
    )
    assert RunState.read(run_dir) is not None
    status = disagg("status", run_dir)
    assert status.returncode in (0, 1) and "Traceback" not in status.stderr, status.stderr
    assert "invalid" in status.stdout.lower()
    # the copy in results/ is strict JSON
    written = Path(point.result or "").read_text()
    json.loads(written, parse_constant=lambda name: pytest.fail(f"{name} in {written}"))

    report = disagg("report", run_dir, "--out", tmp_path / "report", "--json")
    assert "Traceback" not in report.stderr, report.stderr
    shown = json.loads(report.stdout)
    assert shown["points"] == [] and "not a finite number" in report.stdout

    rows = tmp_path / "rows"
    collected = disagg("collect", run_dir, "--out", rows, "--allow-simulated", "--json")
    assert collected.returncode == 0, collected.stderr
    assert json.loads(collected.stdout) == []
    assert not list(rows.glob("agg_*.json"))


def test_a_point_file_edited_to_impossible_numbers_is_dropped_by_collect_and_report(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "run"
    done = disagg("run", f"{RECIPE}:base", "--local", "--out", run_dir)
    assert done.returncode == 0, done.stderr[-3000:]
    results = sorted((run_dir / "results").glob("*conc2*.json"))
    assert results
    for path in results:
        data = json.loads(path.read_text())
        data |= {"valid": True, "output_throughput": -420.5, "duration": 0}
        path.write_text(json.dumps(data))

    rows = tmp_path / "rows"
    collected = disagg("collect", run_dir, "--out", rows, "--allow-simulated", "--json")
    assert collected.returncode == 0, collected.stderr
    assert sorted(row["point"] for row in json.loads(collected.stdout)) == ["conc1", "conc4"]
    for row in rows.glob("agg_*.json"):
        json.loads(row.read_text(), parse_constant=lambda name: pytest.fail(name))

    report = disagg("report", run_dir, "--out", tmp_path / "report", "--json")
    assert report.returncode == 0, report.stderr
    assert sorted(p["conc"] for p in json.loads(report.stdout)["points"]) == [1, 4]


def test_a_command_that_writes_no_result_fails_naming_its_results_directory(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "run"
    done = disagg("run", f"{RECIPE}:override_writes_nothing", "--local", "--out", run_dir)

    assert done.returncode == 1, done.stderr[-3000:]
    summary = RunSummary.read(run_dir)
    assert summary is not None and summary.status is RunStatus.FAILED
    assert summary.reason is not None
    assert "wrote no point result" in summary.reason
    assert (
        str(run_dir.resolve() / "bench-results") in summary.reason
        or str(run_dir / "bench-results") in summary.reason
    )


def test_a_command_that_says_it_writes_no_result_completes(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    done = disagg("run", f"{RECIPE}:override_writes_nothing_by_design", "--local", "--out", run_dir)

    assert done.returncode == 0, done.stderr[-3000:]
    summary = RunSummary.read(run_dir)
    assert summary is not None and summary.status is RunStatus.COMPLETED
    assert summary.points == []
