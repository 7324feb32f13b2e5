"""Charts per workload, legends from the setup fields, fitted axes, labels that do not
collide, axis choices, filters, config differences and goodput."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from disagg.bench.metrics import parse_slo
from disagg.errors import DisaggError
from disagg.report.aggregate import load_runs
from disagg.report.axes import XMetric, YMetric
from disagg.report.build import analyse, matches
from disagg.report.chart import build_chart
from disagg.report.html import config_diff
from disagg.report.labels import _box, place
from disagg.report.png import FRONTIER_LABEL, build_figure
from disagg.report.requests import goodput

from .report_fixtures import LEGEND, RunFactory


def _three_workloads(make_run: RunFactory) -> list[Path]:
    return [
        make_run("a", isl=1024, osl=1024),
        make_run("b", isl=8192, osl=1024, gpu_type="mi355x", framework="vllm", speed=0.7),
        make_run("c", isl=1024, osl=8192, precision="fp4", speed=1.2),
        make_run("d", isl=1024, osl=1024, gpu_type="b200", speed=1.5),
    ]


def test_each_workload_gets_its_own_chart_and_frontier(make_run: RunFactory) -> None:
    report = analyse(load_runs(_three_workloads(make_run)))

    charts = report.charts.charts
    assert [c.subtitle for c in charts] == [
        "DeepSeek-R1 · ISL 1024 · OSL 1024",
        "DeepSeek-R1 · ISL 1024 · OSL 8192",
        "DeepSeek-R1 · ISL 8192 · OSL 1024",
    ]
    for chart in charts:
        workloads = {cp.point.workload for s in chart.series for cp in s.points}
        assert workloads == {chart.workload}
        assert all(cp.point.workload == chart.workload for cp in chart.frontier)
    assert [s.label for s in charts[0].series] == [
        LEGEND,
        LEGEND.replace("H200", "B200"),
    ]
    assert charts[2].series[0].label == LEGEND.replace("H200", "MI355X").replace("sglang", "vllm")
    with pytest.raises(ValueError):
        _ = report.chart  # several workloads: no single chart to hand out


def test_one_run_draws_no_frontier_band(make_run: RunFactory) -> None:
    chart = build_chart(load_runs([make_run("only")]), YMetric.OUTPUT)
    assert chart.frontier and not chart.show_frontier

    [ax] = build_figure(chart).axes
    assert FRONTIER_LABEL not in [line.get_label() for line in ax.get_lines()]


def test_axes_are_fitted_to_the_data_not_to_zero(make_run: RunFactory) -> None:
    chart = build_chart(load_runs([make_run("r", concs=(16, 64, 256))]), YMetric.OUTPUT)
    xs = [cp.x for s in chart.series for cp in s.points]
    low, high = chart.x_range
    assert 0 < low < min(xs) and max(xs) < high
    assert (high - low) < 1.2 * (max(xs) - min(xs))

    [ax] = build_figure(chart).axes
    assert ax.get_xlim() == pytest.approx(chart.x_range)


def test_labels_of_neighbouring_points_do_not_overlap() -> None:
    points = [(0.5, 0.5), (0.503, 0.502), (0.506, 0.499), (0.2, 0.8)]
    texts = ["128", "128", "64", "1"]
    spots = place(points, texts, (900.0, 480.0))
    assert spots[0] is not None and spots[3] is not None
    boxes = [
        _box(spot, x * 900, y * 480, 0.62 * 10 * len(t), 11.5)
        for (x, y), t, spot in zip(points, texts, spots, strict=True)
        if spot is not None
    ]
    for i, first in enumerate(boxes):
        assert not any(first.overlaps(other) for other in boxes[i + 1 :])


def test_a_latency_x_axis_keeps_the_lower_left_frontier(make_run: RunFactory) -> None:
    runs = load_runs([make_run("slow"), make_run("fast", speed=1.5)])
    chart = build_chart(runs, YMetric.TOTAL, XMetric.TTFT)

    assert chart.x_metric.label == "Median time to first token (ms)"
    assert {cp.point.run_name for cp in chart.frontier} == {"fast"}
    assert [cp.x for cp in chart.frontier] == sorted(cp.x for cp in chart.frontier)
    assert chart.better == "upper left is better"


def test_filters_keep_matching_runs_only(make_run: RunFactory) -> None:
    runs = load_runs(_three_workloads(make_run))
    report = analyse(runs, filters={"hw": ["MI355X", "b200"], "precision": []})

    assert sorted(run.name for run in report.runs) == ["b", "d"]
    assert sorted(run.name for run in report.filtered_out) == ["a", "c"]
    # a field given with no wanted value filters nothing, whoever calls
    assert all(matches(run, {"precision": []}) for run in runs)
    assert [matches(run, {"hw": ["mi355x"], "precision": []}) for run in runs].count(True) == 1


def test_config_diff_lists_the_settings_that_differ(make_run: RunFactory) -> None:
    runs = load_runs(_three_workloads(make_run))
    _, rows = config_diff(runs)

    by_path = {row.path: row.values for row in rows}
    assert by_path["resources.gpu_type"] == ["h200", "mi355x", "h200", "b200"]
    assert by_path["model.precision"] == ["fp8", "fp8", "fp4", "fp8"]
    assert "name" not in by_path  # the same everywhere


def test_goodput_counts_requests_within_every_limit(make_run: RunFactory) -> None:
    run_dir = make_run("r", concs=(4,))
    [result] = sorted((run_dir / "results").glob("*.json"))
    records = [
        {"success": True, "ttft_ms": 40.0, "e2el_ms": 400.0, "output_len": 11, "itls_ms": [36.0]},
        {"success": True, "ttft_ms": 90.0, "e2el_ms": 450.0, "output_len": 11, "itls_ms": [36.0]},
        {"success": True, "ttft_ms": 30.0, "e2el_ms": 930.0, "output_len": 11, "itls_ms": [90.0]},
        {"success": False, "ttft_ms": 0.0, "e2el_ms": 0.0, "output_len": 0},
    ]
    result.with_suffix(".jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    [point] = load_runs([run_dir])[0].points

    good = goodput(point, parse_slo(["ttft:50,tpot:50"]))
    assert good is not None and (good.good, good.total) == (1, 3)
    assert good.per_s == pytest.approx(1 / point.metrics["duration"])
    assert goodput(point, {}) is None


def test_a_bad_goodput_limit_is_a_usage_error() -> None:
    for text in ("ttft", "latency:5", "tpot:-1", "ttft:abc"):
        with pytest.raises(DisaggError, match="expected KEY:MS"):
            parse_slo([text])
