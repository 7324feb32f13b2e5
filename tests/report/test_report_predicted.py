"""A predicted run beside a measured run of the same recipe: one chart, the error per point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from disagg.report.aggregate import load_runs
from disagg.report.axes import YMetric
from disagg.report.build import analyse
from disagg.report.compare import compare
from disagg.report.write import write_report

from .report_fixtures import RunFactory

LABEL = "predicted (aiconfigurator-core 0.12.0, h200_sxm, sglang 0.5.14 database)"


def _predicted(make_run: RunFactory, name: str, **kwargs: object) -> Path:
    """A run directory as `disagg run --predict` leaves it: the plan and every result labelled."""
    run_dir = make_run(name, simulated=True, **kwargs)
    plan = json.loads((run_dir / "plan.json").read_text())
    plan["predicted"] = {"label": LABEL, "accept_rate": None, "time_scale": 1.0}
    (run_dir / "plan.json").write_text(json.dumps(plan))
    for path in (run_dir / "results").glob("*.json"):
        data = json.loads(path.read_text())
        data["predicted"] = LABEL
        path.write_text(json.dumps(data))
    return run_dir


def test_a_prediction_is_compared_against_the_measurement_whatever_the_order(
    make_run: RunFactory,
) -> None:
    predicted = _predicted(make_run, "predicted", concs=(16, 64), speed=1.1)
    measured = make_run("measured", concs=(16, 64))

    runs = load_runs([predicted, measured])  # the prediction given first
    assert runs[0].predicted == LABEL and runs[1].predicted is None
    changes = compare(runs, YMetric.OUTPUT)

    assert changes and all(c.baseline_name == "measured" for c in changes)
    assert all(c.run_predicted == LABEL for c in changes)
    by = {(c.point, c.metric): c for c in changes}
    assert by[("conc64", "y:output")].change_pct == pytest.approx(10.0)  # predicted 10% high
    assert by[("conc16", "median_tpot_ms")].change_pct == pytest.approx(100 / 1.1 - 100)


def test_both_runs_share_one_chart_with_the_prediction_named(
    make_run: RunFactory, tmp_path: Path
) -> None:
    predicted = _predicted(make_run, "predicted", concs=(16, 64))
    measured = make_run("measured", concs=(16, 64))
    report = analyse(load_runs([measured, predicted]))

    [chart] = report.charts.charts
    labels = [chart.legend_label(series) for series in chart.series]
    assert len(labels) == 2
    assert sum(LABEL in label for label in labels) == 1
    assert chart.watermark == "PREDICTED"

    out = tmp_path / "out"
    write_report(report, out)
    html = (out / "report.html").read_text()
    assert "Contains PREDICTED results" in html and LABEL in html
    assert "Contains SIMULATED results" not in html  # the only simulated run is the prediction
    assert "its change is the prediction's error" in html


def test_disagg_report_prints_the_prediction_error_per_point(
    make_run: RunFactory, tmp_path: Path
) -> None:
    predicted = _predicted(make_run, "predicted", concs=(16, 64), speed=0.8)
    measured = make_run("measured", concs=(16, 64))
    result = subprocess.run(
        [sys.executable, "-m", "disagg", "report", predicted, measured, "--out", tmp_path / "o"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200", "NO_COLOR": "1"},
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    out = " ".join(result.stdout.split())  # the terminal wraps long titles
    assert "prediction error against the measured measured" in out
    assert "-20.0%" in out  # 0.8x the measured throughput and per-user speed
    assert LABEL in out
