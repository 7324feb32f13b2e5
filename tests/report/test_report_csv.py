"""summary.csv: one row per valid point, numbers a spreadsheet can use, frontier marked."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from disagg.report.aggregate import load_runs
from disagg.report.axes import YMetric
from disagg.report.build import analyse
from disagg.report.csv import SUMMARY_COLUMNS, write_summary

from .report_fixtures import RunFactory


def _rows(paths: list[Path], out: Path) -> list[dict[str, str]]:
    report = analyse(load_runs(paths), YMetric.OUTPUT)
    path = write_summary(report.runs, report.chart, out / "summary.csv")
    with path.open(newline="") as handle:
        reader = csv.DictReader(handle)
        assert tuple(reader.fieldnames or ()) == SUMMARY_COLUMNS
        return list(reader)


def test_one_row_per_valid_point_and_none_for_invalid(make_run: RunFactory, tmp_path: Path) -> None:
    rows = _rows([make_run("r1", invalid=(16,))], tmp_path)

    assert [row["conc"] for row in rows] == ["1", "4", "64", "256"]
    assert all("_conc16_" not in row["result_file"] for row in rows)


def test_values_are_the_result_fields_and_derived_axes(
    make_run: RunFactory, tmp_path: Path
) -> None:
    run_dir = make_run("r1", concs=(64,), prefill_gpus=4, decode_gpus=12)
    [point] = load_runs([run_dir])[0].points
    [row] = _rows([run_dir], tmp_path)

    assert row["selector"] == "recipes/h200/dsr1-1k1k.yaml:override_dep8"
    assert row["variant"] == "dsr1-1k1k.yaml:override_dep8"
    assert (row["prefill_gpus"], row["decode_gpus"], row["total_gpus"]) == ("4", "12", "16")
    assert float(row["median_ttft_ms"]) == pytest.approx(point.metrics["median_ttft_ms"], 1e-5)
    output = point.metrics["output_throughput"]
    assert float(row["output_tokens_per_s_per_gpu"]) == pytest.approx(output / 16, 1e-5)
    assert float(row["output_tput_per_gpu"]) == pytest.approx(output / 12, 1e-5)
    assert float(row["tokens_per_s_per_user"]) == pytest.approx(
        1000 / point.metrics["median_tpot_ms"], 1e-5
    )
    assert row["simulated"] == "false"
    assert row["on_frontier"] == "true"


def test_frontier_column_marks_only_non_dominated_points(
    make_run: RunFactory, tmp_path: Path
) -> None:
    slow = make_run("slow", selector="x.yaml:override_slow", speed=0.5)
    fast = make_run("fast", selector="x.yaml:override_fast", speed=2.0)
    rows = _rows([slow, fast], tmp_path)

    # The fast variant beats the slow one at every point on both axes.
    assert {row["run"] for row in rows if row["on_frontier"] == "true"} == {"x.yaml:override_fast"}
