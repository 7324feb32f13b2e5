"""Runs sharing a variant side by side: the change column is right, and only matching points."""

from __future__ import annotations

from pathlib import Path

import pytest

from disagg.report.aggregate import load_runs
from disagg.report.axes import YMetric
from disagg.report.build import analyse
from disagg.report.compare import compare
from disagg.report.write import write_report

from .report_fixtures import RunFactory


def test_change_against_the_first_run_of_a_shared_variant(make_run: RunFactory) -> None:
    before = make_run("before", concs=(16, 64))
    after = make_run("after", concs=(16, 64, 256), speed=1.25)  # 25% faster everywhere
    other = make_run("other", selector="x.yaml:override_tp8", concs=(16,))

    changes = compare(load_runs([before, after, other]), YMetric.OUTPUT)

    assert {c.variant for c in changes} == {"recipes/h200/dsr1-1k1k.yaml:override_dep8"}
    assert sorted({c.point for c in changes}) == ["conc16", "conc64"]  # 256: baseline lacks it
    by = {(c.point, c.metric): c for c in changes}
    throughput = by[("conc64", "y:output")]
    assert throughput.baseline_run.endswith("before") and throughput.run.endswith("after")
    assert throughput.change_pct == pytest.approx(25.0)
    assert throughput.improved is True
    ttft = by[("conc64", "median_ttft_ms")]
    assert ttft.change_pct == pytest.approx(-20.0)  # 1 / 1.25 - 1
    assert ttft.improved is True
    assert by[("conc16", "tokens_per_s_per_user")].change_pct == pytest.approx(25.0)


def test_a_slower_rerun_is_flagged_worse(make_run: RunFactory) -> None:
    runs = load_runs([make_run("a", concs=(8,)), make_run("b", concs=(8,), speed=0.8)])
    by = {c.metric: c for c in compare(runs, YMetric.OUTPUT)}

    assert by["y:output"].change_pct == pytest.approx(-20.0)
    assert by["y:output"].improved is False
    assert by["p99_tpot_ms"].change_pct == pytest.approx(25.0)
    assert by["p99_tpot_ms"].improved is False


def test_no_shared_variant_means_no_comparison_file(make_run: RunFactory, tmp_path: Path) -> None:
    out = tmp_path / "out"
    shared = analyse(load_runs([make_run("a"), make_run("b")]))
    write_report(shared, out)
    assert (out / "compare.csv").is_file()

    alone = analyse(load_runs([make_run("c", selector="y.yaml:base")]))
    write_report(alone, out)
    assert alone.changes == []
    assert not (out / "compare.csv").exists()  # the earlier one would mislead
