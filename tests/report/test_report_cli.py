"""`disagg report` as a user runs it: files, terminal summary, --json, exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from disagg.errors import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE

from .report_fixtures import RunFactory


def _disagg(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "120", "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "disagg", "report", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
    )


def test_report_of_one_run_writes_files_beside_it(make_run: RunFactory, tmp_path: Path) -> None:
    run_dir = make_run("r1", invalid=(256,))

    proc = _disagg(run_dir, cwd=tmp_path)

    assert proc.returncode == EXIT_OK, proc.stderr
    out = run_dir / "report"
    for name in ("summary.csv", "pareto.png", "report.html"):
        assert (out / name).stat().st_size > 0
        assert str(out / name) in proc.stdout
    assert "4 valid point(s) from 1 run(s)" in proc.stdout
    assert "dsr1-1k1k.yaml:override_dep8" in proc.stdout
    assert "skipped" in proc.stderr and "_conc256_" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_json_summary_for_scripts(make_run: RunFactory, tmp_path: Path) -> None:
    a, b = make_run("a"), make_run("b", speed=1.1)

    proc = _disagg(a, b, "--out", tmp_path / "rep", "--json", cwd=tmp_path)

    assert proc.returncode == EXIT_OK, proc.stderr
    data = json.loads(proc.stdout)
    assert data["valid_points"] == 10
    assert set(data["files"]) == {"summary_csv", "pareto_png", "report_html", "compare_csv"}
    assert [run["points"] for run in data["runs"]] == [5, 5]
    change = next(c for c in data["changes"] if c["metric"] == "y:output")
    assert round(change["change_pct"], 6) == 10.0 and change["improved"] is True


def test_several_runs_default_to_report_in_the_working_directory(
    make_run: RunFactory, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    proc = _disagg(make_run("a"), make_run("b"), cwd=work)

    assert proc.returncode == EXIT_OK, proc.stderr
    assert (work / "report" / "compare.csv").is_file()
    assert "dsr1-1k1k.yaml:override_dep8: against a" in proc.stdout
    assert "+0.0%" in proc.stdout  # the same numbers in both runs


def test_comparison_table_names_the_chosen_throughput_axis(
    make_run: RunFactory, tmp_path: Path
) -> None:
    proc = _disagg(make_run("a"), make_run("b"), "--y", "total", cwd=tmp_path)

    assert proc.returncode == EXIT_OK, proc.stderr
    assert "against a" in proc.stdout
    assert "tok/s/GPU" in proc.stdout and "out tok/s/GPU" not in proc.stdout


def test_no_valid_point_exits_1_and_writes_nothing(make_run: RunFactory, tmp_path: Path) -> None:
    run_dir = make_run("r1", concs=(4, 8), invalid=(4, 8))

    proc = _disagg(run_dir, cwd=tmp_path)

    assert proc.returncode == EXIT_FINDINGS
    assert "no valid points in 1 run(s)" in proc.stderr
    assert not (run_dir / "report").exists()


def test_bad_input_exits_2_with_a_message_not_a_traceback(
    make_run: RunFactory, tmp_path: Path
) -> None:
    missing = _disagg(tmp_path / "nope", cwd=tmp_path)
    assert missing.returncode == EXIT_USAGE
    assert "no such directory" in missing.stderr and "hint:" in missing.stderr

    run_dir = make_run("r1")
    (run_dir / "plan.json").write_text("{\n  not json")
    broken = _disagg(run_dir, cwd=tmp_path)
    assert broken.returncode == EXIT_USAGE
    assert f"{run_dir / 'plan.json'}:2:3" in broken.stderr
    assert "Traceback" not in broken.stderr + missing.stderr
