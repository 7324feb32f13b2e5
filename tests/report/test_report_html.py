"""report.html: self-contained, interactive, with the series, latency view and configs."""

from __future__ import annotations

import json
import re
from pathlib import Path

from disagg.report.aggregate import load_runs
from disagg.report.axes import YMetric
from disagg.report.build import analyse
from disagg.report.html import latency_figure, pareto_figure, render

from .report_fixtures import (
    INVALID_SPEED,
    LEGEND,
    SIM_LEGEND,
    TP8_DECODE,
    TP8_LEGEND,
    RunFactory,
    make_result,
)


def _without_plotly_js(html: str) -> str:
    """The page minus the inline plotly.js bundle, whose 4 MB of code match any short number."""
    start = html.rindex("<script", 0, html.index("plotly.js v"))
    end = html.index("</script>", start)
    return html[:start] + html[end:]


def _html(paths: list[Path]) -> str:
    report = analyse(load_runs(paths), YMetric.OUTPUT)
    return render(report)


def test_the_page_needs_no_network(make_run: RunFactory) -> None:
    html = _html([make_run("r1")])

    assert not re.search(r"<script[^>]+src=", html, re.IGNORECASE)
    assert not re.search(r"<link[^>]+href=[\"']?https?:", html, re.IGNORECASE)
    assert not re.search(r"@import\s+url\(", html)
    # plotly.js itself is inline, once.
    assert html.count("Plotly.newPlot") == 2
    assert len(re.findall(r"plotly\.js v\d", html)) == 1


def test_series_latency_view_and_resolved_configs_are_on_the_page(make_run: RunFactory) -> None:
    html = _html(
        [
            make_run("dep8"),
            make_run(
                "tp8", selector="recipes/h200/dsr1-1k1k.yaml:override_tp8", decode_args=TP8_DECODE
            ),
        ]
    )

    unescaped = html.replace("\\u002f", "/")  # plotly writes "/" in its JSON as \u002f
    for name in (LEGEND, TP8_LEGEND):
        assert f'"name":"{name}"' in unescaped
    assert "Time to first token (ms)" in html and "Time per output token (ms)" in html
    assert "<details>" in html and "mem-fraction-static: 0.85" in html
    assert "recipes/h200/dsr1-1k1k.yaml:override_tp8" in html


def test_latency_view_has_p50_p90_p99_of_ttft_and_tpot_per_variant(make_run: RunFactory) -> None:
    report = analyse(load_runs([make_run("r1")]), YMetric.OUTPUT)
    fig = latency_figure(report.chart)

    assert len(fig.data) == 6
    point = report.runs[0].points[0]
    ttft = [trace.y[0] for trace in fig.data[:3]]
    assert ttft == [point.metrics[f"{s}_ttft_ms"] for s in ("median", "p90", "p99")]
    assert [trace.line.dash for trace in fig.data[:3]] == ["solid", "dash", "dot"]


def test_an_invalid_point_appears_nowhere_on_the_page(make_run: RunFactory) -> None:
    run_dir = make_run("r1", invalid=(64,))
    invalid = make_result(conc=64, speed=INVALID_SPEED)
    report = analyse(load_runs([run_dir]), YMetric.OUTPUT)
    html = _without_plotly_js(render(report))

    for trace in pareto_figure(report.chart).data:
        assert "64" not in [c[0] for c in (trace.customdata or [])]
    for trace in latency_figure(report.chart).data:
        assert 64 not in list(trace.x)
    for field in ("median_ttft_ms", "p99_ttft_ms", "median_tpot_ms", "output_throughput"):
        value = invalid[field]
        for text in (f"{value:,.1f}", f"{value:,.2f}", json.dumps(value)[:8]):
            assert text not in html, field
    assert "1 result file(s) left out" in html  # said, without its numbers


def test_simulated_results_are_flagged(make_run: RunFactory) -> None:
    real = make_run("real")
    sim = make_run("sim", simulated=True, selector="r.yaml:base")
    report = analyse(load_runs([real, sim]), YMetric.OUTPUT)
    fig = pareto_figure(report.chart)

    assert [a.text for a in fig.layout.annotations] == ["SIMULATED"]
    names = {t.name: t for t in fig.data}
    assert names[f"{SIM_LEGEND} (simulated)"].marker.symbol.endswith("-open")
    assert names[f"{SIM_LEGEND} (simulated)"].line.dash == "dash"
    assert not names[LEGEND].marker.symbol.endswith("-open")
    assert "Contains SIMULATED results" in render(report)


def test_an_all_simulated_report_says_so_in_the_title(make_run: RunFactory) -> None:
    report = analyse(load_runs([make_run("sim", simulated=True)]), YMetric.OUTPUT)
    fig = pareto_figure(report.chart)

    assert "(simulated)" in fig.layout.title.text
    assert [a.text for a in fig.layout.annotations] == ["SIMULATED"]


def test_real_results_carry_no_simulated_mark(make_run: RunFactory) -> None:
    report = analyse(load_runs([make_run("real")]), YMetric.OUTPUT)
    fig = pareto_figure(report.chart)

    assert not fig.layout.annotations
    assert "SIMULATED" not in _without_plotly_js(render(report))


def test_text_from_run_data_is_escaped(make_run: RunFactory) -> None:
    html = _html([make_run("r1", selector="<b>evil</b>.yaml:override_x")])
    assert "<b>evil</b>" not in html


def test_a_rate_sweep_plots_latency_against_request_rate(make_run: RunFactory) -> None:
    run_dir = make_run("r1", concs=())
    for rate in (2, 8):
        result = make_result(conc=16) | {"conc": None, "max_concurrency": None}
        result |= {"request_rate": float(rate), "point": f"rate{rate}"}
        (run_dir / "results" / f"r1_rate{rate}_concinf.json").write_text(json.dumps(result))
    report = analyse(load_runs([run_dir]), YMetric.OUTPUT)

    fig = latency_figure(report.chart)

    assert fig.layout.xaxis.title.text == "request rate (req/s)"
    assert list(fig.data[0].x) == [2.0, 8.0]
