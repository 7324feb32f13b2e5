"""`report.html`: one self-contained, offline, interactive page.

plotly.js is embedded once, inline, so the page opens without a network from a laptop,
a login node or an email alike. Per workload its charts and a table of the variants;
then the summary, comparisons, config differences, files left out and resolved configs.
"""

from __future__ import annotations

import datetime as dt
import io
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

from disagg.atomic import write_text
from disagg.report import table
from disagg.report.build import Report
from disagg.report.chart import Chart, View
from disagg.report.compare import Change
from disagg.report.figures import (
    FILTER_FIELDS,
    distribution_figure,
    latency_figure,
    pareto_figure,
    trace_meta,
)
from disagg.report.model import RunResults
from disagg.report.requests import goodput

__all__ = ["latency_figure", "pareto_figure", "render", "write_html"]

PLOTLY_CONFIG = {"displaylogo": False, "responsive": True, "toImageButtonOptions": {"scale": 2}}
MISSING = "—"  # a config difference's value where the run does not set it
MAX_ROWS = 300


def render(report: Report, title: str = "disagg report") -> str:
    from disagg import __version__

    slo = report.slo
    charts = report.charts.charts
    generated = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(title)}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
        f'<p class="meta">{len(report.runs)} run(s), {report.point_count} valid point(s), '
        f"{len(charts)} workload(s) · generated {generated} by disagg {escape(__version__)}</p>",
    ]
    if report.filters:
        said = "; ".join(f"{k} in {', '.join(v)}" for k, v in report.filters.items())
        parts.append(
            f'<p class="meta">Filtered: {escape(said)} ({len(report.filtered_out)} run(s) '
            "left out)</p>"
        )
    predicted = list(dict.fromkeys(run.predicted for run in report.runs if run.predicted))
    if predicted:
        parts.append(
            f'<p class="sim">Contains PREDICTED results ({escape("; ".join(predicted))}): '
            "every engine step timed by AIConfigurator's performance model, not measured on "
            "hardware.</p>"
        )
    if report.charts.any_simulated and any(r.simulated and not r.predicted for r in report.runs):
        parts.append(
            '<p class="sim">Contains SIMULATED results (marked with open markers and dashed '
            "lines): they come from the simulated engine and are not hardware measurements.</p>"
        )
    if slo:
        limits = ", ".join(f"{key} &le; {value:g} ms" for key, value in slo.items())
        parts.append(f'<p class="meta">Goodput SLO: {limits} (every limit, per request).</p>')
    parts.append(_filter_bar(charts))
    for index, chart in enumerate(charts):
        figures = [("pareto", pareto_figure(chart, slo)), ("latency", latency_figure(chart))]
        distribution = distribution_figure(chart)
        if distribution is not None:
            figures.append(("dist", distribution))
        parts.append(
            f'<section class="workload" id="workload-{index}">'
            f"<h2>{escape(chart.subtitle or 'All points')}</h2>"
        )
        for kind, fig in figures:
            div = "pareto" if kind == "pareto" and len(charts) == 1 else f"{kind}-{index}"
            first = index == 0 and kind == "pareto"  # plotly.js goes in once, with the first
            parts.append(
                fig.to_html(
                    full_html=False, include_plotlyjs=first, div_id=div, config=PLOTLY_CONFIG
                )
            )
        parts += [_variants_table(chart, slo), "</section>"]
    parts += [
        _summary_table(report.runs, report.charts, slo),
        _compare_table(report.changes),
        _diff_table(report.runs),
        _skipped(report.runs),
        _configs(report.runs),
        f"<script>{_FILTER_JS}</script>",
        "</body></html>",
    ]
    return "\n".join(part for part in parts if part)


def _filter_bar(charts: Sequence[Chart]) -> str:
    """A select per filter field that has more than one value across the runs."""
    metas = [trace_meta(series) for chart in charts for series in chart.series]
    selects = []
    for name in FILTER_FIELDS:
        values = sorted({meta[name] for meta in metas})
        if len(values) < 2:
            continue
        options = "".join(f'<option value="{escape(v)}">{escape(v)}</option>' for v in values)
        selects.append(
            f'<label>{escape(name)} <select data-filter="{escape(name)}">'
            f'<option value="">all</option>{options}</select></label>'
        )
    if not selects:
        return ""
    return f'<p class="filters">Show only: {" ".join(selects)}</p>'


def _variants_table(chart: Chart, slo: Mapping[str, float]) -> str:
    """Per series: its best throughput, the per-user speed there, its best per-user speed."""
    x = chart.x_metric
    best_x = max if x.higher_is_better else min
    head = (
        "<th>series</th><th>run</th><th>points</th>"
        f"<th>peak {escape(chart.y_metric.header)}</th><th>{escape(x.short)} at peak</th>"
        f"<th>best {escape(x.short)}</th><th>lowest TTFT p50</th>"
    )
    if slo:
        head += "<th>best goodput req/s</th>"
    body = []
    for series in chart.series:
        if not series.points:
            continue
        peak = max(series.points, key=lambda cp: cp.y)
        ttfts = [v for cp in series.points if (v := cp.point.metric("median_ttft_ms")) is not None]
        cells = [
            escape(chart.legend_label(series)),
            escape(series.run.label or series.run.name),
            str(len(series.points)),
            table.number(peak.y),
            table.number(peak.x, 2),
            table.number(best_x(cp.x for cp in series.points), 2),
            table.number(min(ttfts) if ttfts else None),
        ]
        if slo:
            rates = [g.per_s for cp in series.points if (g := goodput(cp.point, slo)) and g.per_s]
            cells.append(table.number(max(rates) if rates else None, 2))
        body.append("<tr>" + "".join(_td(c, i >= 2) for i, c in enumerate(cells)) + "</tr>")
    return "<h3>Variants compared</h3>" + _table(head, body)


def flatten(config: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in config.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out |= flatten(value, path + ".")
        else:
            out[path] = value if isinstance(value, str) else json.dumps(value, default=str)
    return out


@dataclass(frozen=True)
class DiffRow:
    path: str
    values: list[str]  # one per run, MISSING where the run does not set it


def config_diff(runs: Sequence[RunResults]) -> tuple[list[RunResults], list[DiffRow]]:
    """The runs that have a config, and the settings whose value is not the same in every
    run (missing from one counts), flattened to dotted paths with lists compared whole:
    the report shows this instead of asking readers to diff YAML."""
    with_config = [run for run in runs if run.config is not None]
    if len(with_config) < 2:
        return with_config, []
    flat = [flatten(run.config or {}) for run in with_config]
    paths = sorted({path for config in flat for path in config})
    rows = []
    for path in paths:
        values = [config.get(path, MISSING) for config in flat]
        if len(set(values)) > 1:
            rows.append(DiffRow(path, values))
    return with_config, rows[:MAX_ROWS]


def _diff_table(runs: Sequence[RunResults]) -> str:
    with_config, rows = config_diff(runs)
    if not rows:
        return ""
    head = "".join(f"<th>{escape(run.label or run.name)}</th>" for run in with_config)
    body = "".join(
        f"<tr><td><code>{escape(row.path)}</code></td>"
        + "".join(f"<td>{escape(value)}</td>" for value in row.values)
        + "</tr>"
        for row in rows
    )
    return (
        "<section><h2>Config differences</h2><p>Settings of the resolved configs that are not "
        f"the same in every run (— : not set).</p>{_table('<th>setting</th>' + head, body)}"
        "</section>"
    )


def _summary_table(runs: Sequence[RunResults], chart: View, slo: Mapping[str, float]) -> str:
    cols = table.columns(chart)
    head = "".join(f"<th>{escape(col.header)}</th>" for col in cols)
    if slo:
        head += "<th>goodput req/s</th><th>in SLO</th>"
    head += "<th></th>"
    body = []
    points = [point for run in runs for point in run.points]
    for row, point in zip(table.rows(runs, chart), points, strict=True):
        kind = "predicted" if row.predicted else ("simulated" if row.simulated else "")
        marks = ("★ frontier " if row.frontier else "") + kind
        cells = "".join(
            _td(escape(cell), col.numeric) for col, cell in zip(cols, row.cells, strict=True)
        )
        if slo:
            good = goodput(point, slo)
            rate = table.number(good.per_s, 2) if good else "-"
            share = f"{good.share:.0%}" if good else "-"
            cells += f'<td class="num">{rate}</td><td class="num">{share}</td>'
        body.append(f"<tr>{cells}<td>{escape(marks.strip())}</td></tr>")
    return (
        "<section><h2>Summary</h2><p>Latencies in ms; ★ marks points on the Pareto frontier.</p>"
        f"{_table(head, body)}</section>"
    )


def _compare_table(changes: Sequence[Change]) -> str:
    if not changes:
        return ""
    body = []
    for change in changes:
        pct = change.change_pct
        css = {True: "better", False: "worse", None: ""}[change.improved]
        body.append(
            f"<tr><td>{escape(change.variant)}</td><td>{escape(change.point)}</td>"
            f"<td>{escape(change.label)}</td><td>{escape(change.baseline_run)}</td>"
            f'<td class="num">{table.number(change.baseline, 2)}</td><td>{escape(change.run)}</td>'
            f'<td class="num">{table.number(change.value, 2)}</td>'
            f'<td class="num {css}">{"-" if pct is None else f"{pct:+.1f}%"}</td></tr>'
        )
    note = ""
    if any(change.run_predicted for change in changes):
        note = (
            "<p>A predicted run is compared against a measured run of its variant: its "
            "change is the prediction's error (predicted - measured).</p>"
        )
    names = ("variant", "point", "metric", "baseline run", "baseline", "run", "value", "change")
    head = "".join(f"<th>{name}</th>" for name in names)
    return (
        "<section><h2>Runs compared</h2><p>Runs that share a variant, against the first run "
        f"given (the baseline).</p>{note}{_table(head, body)}</section>"
    )


def _td(html: str, numeric: bool) -> str:
    return f'<td class="{"num" if numeric else ""}">{html}</td>'


def _table(head: str, body: Iterable[str]) -> str:
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _skipped(runs: Sequence[RunResults]) -> str:
    skipped = [(run, item) for run in runs for item in run.skipped]
    if not skipped:
        return ""
    items = "".join(
        f"<li><code>{escape(item.path.name)}</code> ({escape(run.label or run.name)}): "
        f"{escape(item.reason)}</li>"
        for run, item in skipped
    )
    return (
        f"<section><details><summary>{len(skipped)} result file(s) left out of this "
        f"report</summary><ul>{items}</ul></details></section>"
    )


def _configs(runs: Sequence[RunResults]) -> str:
    blocks = [
        f"<details><summary><b>{escape(run.label or run.name)}</b> · "
        f"<code>{escape(run.selector or '')}</code> · {escape(str(run.run_dir))}</summary>"
        f"<pre>{escape(_yaml(run.config))}</pre></details>"
        for run in runs
        if run.config is not None
    ]
    if not blocks:
        return ""
    return "<section><h2>Resolved configs</h2>" + "".join(blocks) + "</section>"


def _yaml(config: dict[str, Any]) -> str:
    from ruamel.yaml import YAML

    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.sort_base_mapping_type_on_output = False  # type: ignore[assignment]
    buffer = io.StringIO()
    yaml.dump(config, buffer)
    return buffer.getvalue()


def write_html(report: Report, path: Path) -> Path:
    write_text(path, render(report))
    return path


_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px auto;
max-width:1400px;padding:0 16px;color:#222}
h1{margin-bottom:4px}h2{margin-top:36px;border-bottom:1px solid #ddd;padding-bottom:4px}
.meta{color:#666;margin-top:0}
.sim{background:#fff4e5;border-left:4px solid #e69f00;padding:8px 12px}
table{border-collapse:collapse;font-size:13px;display:block;overflow-x:auto;max-width:100%}
th,td{padding:4px 8px;border-bottom:1px solid #eee;text-align:left;white-space:nowrap}
th{background:#f6f6f6;position:sticky;top:0}td.num{text-align:right;font-variant-numeric:tabular-nums}
td.better{color:#0a7d32}td.worse{color:#b3261e}
details{margin:8px 0}summary{cursor:pointer}
pre{background:#f6f8fa;padding:12px;overflow:auto;font-size:12px}
.filters{background:#f6f6f6;padding:8px 12px}.filters label{margin-right:16px}
h3{margin-top:20px}
"""

# Hide every trace whose run does not match the selected hardware/framework/precision.
_FILTER_JS = """
(function(){
  var selects = document.querySelectorAll('select[data-filter]');
  function apply(){
    var wanted = {};
    selects.forEach(function(s){ if (s.value) wanted[s.dataset.filter] = s.value; });
    document.querySelectorAll('.js-plotly-plot').forEach(function(div){
      var visible = div.data.map(function(trace){
        if (!trace.meta) return true;
        return Object.keys(wanted).every(function(k){ return trace.meta[k] === wanted[k]; });
      });
      Plotly.restyle(div, {visible: visible});
    });
  }
  selects.forEach(function(s){ s.addEventListener('change', apply); });
})();
"""
