"""A report from a real simulated run: `disagg run` on the simulated engine, then `disagg report`.

Skipped only while the pieces `disagg run` needs (recipe planning, the load generator)
are missing from the installation; a run that fails is a failure, with its output shown.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

RECIPE = Path(__file__).parent / "data" / "sim-tiny.yaml"


def _disagg(args: list[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    """Run the CLI in its own process group, so a timeout stops everything it started."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "disagg", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={**os.environ, "COLUMNS": "120", "NO_COLOR": "1"},
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
        pytest.fail(f"disagg {args[0]} timed out\n{out}\n{err}")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.mark.slow
def test_report_from_a_simulated_run(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    run = _disagg(["run", str(RECIPE), "--local", "--out", str(runs)], tmp_path, 240)
    assert run.returncode == 0, run.stdout + run.stderr

    proc = _disagg(["report", str(runs), "--out", str(tmp_path / "rep"), "--json"], tmp_path, 120)

    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["valid_points"] == 2
    assert [p["conc"] for p in data["points"]] == [1, 4]
    assert all(p["simulated"] is True for p in data["points"])
    assert all(p["output_tokens_per_s_per_gpu"] > 0 for p in data["points"])
    html = (tmp_path / "rep" / "report.html").read_text()
    assert "SIMULATED" in html and "sim-tiny.yaml" in html
    assert (tmp_path / "rep" / "pareto.png").stat().st_size > 10_000
