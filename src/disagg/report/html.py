"""`report.html`: one self-contained, offline, interactive page.

plotly.js is embedded once, inline (`include_plotlyjs=True` on the first figure), so
the page needs no network: it opens from a laptop, a cluster login node or an email
attachment alike. Sections: the Pareto chart, the latency view (TTFT/TPOT p50/p90/p99
by concurrency), the summary table, comparisons, skipped points, resolved configs.
"""

from __future__ import annotations

import datetime as dt
import io
from collections.abc import Callable, Sequence
from html import escape
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from disagg.atomic import write_text
from disagg.report import table
from disagg.report.chart import WATERMARK, Chart, ChartPoint, Series
from disagg.report.compare import Change
from disagg.report.model import X_LABEL, ResultPoint, RunResults

PLOTLY_CONFIG = {"displaylogo": False, "responsive": True, "toImageButtonOptions": {"scale": 2}}
PERCENTILES = (("median", "p50", "solid"), ("p90", "p90", "dash"), ("p99", "p99", "dot"))


def pareto_figure(chart: Chart) -> Any:
    fig = go.Figure()
    if chart.frontier:
        fig.add_trace(
            go.Scatter(
                x=[cp.x for cp in chart.frontier],
                y=[cp.y for cp in chart.frontier],
                mode="lines",
                name="Pareto frontier",
                line={"color": "rgba(34,34,34,0.22)", "width": 9},
                hoverinfo="skip",
            )
        )
    for series in chart.series:
        if not series.points:
            continue
        fig.add_trace(_pareto_trace(chart, series))
    fig.update_layout(
        template="plotly_white",
        title={"text": _title(chart), "x": 0.01},
        xaxis={"title": X_LABEL, "rangemode": "tozero"},
        yaxis={"title": chart.y_metric.label, "rangemode": "tozero", "tickformat": ",.0f"},
        legend={"title": "variant (click to hide)"},
        hoverlabel={"align": "left"},
        height=620,
        margin={"t": 70},
    )
    _watermark(fig, chart)
    return fig


def _title(chart: Chart) -> str:
    title = chart.title
    if chart.subtitle:
        title += (
            f"<br><sup>{escape(chart.subtitle)} · labels: concurrency · upper right is better</sup>"
        )
    return title


def _pareto_trace(chart: Chart, series: Series) -> Any:
    points = series.points
    return go.Scatter(
        x=[cp.x for cp in points],
        y=[cp.y for cp in points],
        mode="lines+markers+text",
        name=chart.legend_label(series),
        text=[cp.conc_label if chart.annotate(cp) else "" for cp in points],
        textposition="top right",
        textfont={"size": 10, "color": series.color},
        line={"color": series.color, "width": 1.6, "dash": "dash" if series.simulated else "solid"},
        marker={"symbol": series.plotly_marker, "size": 9, "color": series.color,
                "line": {"width": 1.5, "color": series.color}},
        customdata=[_hover_data(cp) for cp in points],
        hovertemplate=(
            "<b>%{fullData.name}</b><br>concurrency %{customdata[0]}<br>"
            "%{y:,.1f} tok/s/GPU · %{x:,.1f} tok/s/user<br>"
            "TTFT p50 %{customdata[1]:,.1f} ms · p99 %{customdata[2]:,.1f} ms<br>"
            "TPOT p50 %{customdata[3]:,.2f} ms · p99 %{customdata[4]:,.2f} ms<br>"
            "%{customdata[5]:,.2f} req/s · GPUs %{customdata[6]}<extra></extra>"
        ),
    )  # fmt: skip


def _hover_data(cp: ChartPoint) -> list[Any]:
    point = cp.point
    return [
        cp.conc_label,
        point.metric("median_ttft_ms"),
        point.metric("p99_ttft_ms"),
        point.metric("median_tpot_ms"),
        point.metric("p99_tpot_ms"),
        point.metric("request_throughput"),
        f"{point.prefill_gpus}+{point.decode_gpus}",
    ]


def latency_figure(chart: Chart) -> Any:
    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=("Time to first token (ms)", "Time per output token (ms)"),
        horizontal_spacing=0.08,
    )
    load_name, load = _load_axis(chart)
    for series in chart.series:
        points = [p for p in series.run.points if load(p) is not None]
        if not points:
            continue
        xs = [load(p) for p in points]
        for col, metric in ((1, "ttft"), (2, "tpot")):
            for stat, short, dash in PERCENTILES:
                fig.add_trace(
                    go.Scatter(
                        x=xs,
                        y=[p.metric(f"{stat}_{metric}_ms") for p in points],
                        mode="lines+markers",
                        name=chart.legend_label(series),
                        legendgroup=series.label,
                        showlegend=col == 1 and short == "p50",
                        line={"color": series.color, "dash": dash, "width": 1.6},
                        marker={"symbol": series.plotly_marker, "size": 6, "color": series.color},
                        hovertemplate=(
                            f"<b>{escape(series.label)}</b><br>{load_name} %{{x}}<br>"
                            f"{metric.upper()} {short} %{{y:,.2f}} ms<extra></extra>"
                        ),
                    ),
                    row=1,
                    col=col,
                )
    fig.update_xaxes(type="log", title=load_name)
    fig.update_yaxes(rangemode="tozero", tickformat=",.0f", col=1)
    fig.update_yaxes(rangemode="tozero", col=2)
    fig.update_layout(
        template="plotly_white",
        title={
            "text": "Latency by point<br><sup>solid p50 · dashed p90 · dotted p99</sup>",
            "x": 0.01,
        },
        legend={"title": "variant (click to hide)"},
        height=520,
        margin={"t": 90},
    )
    _watermark(fig, chart)
    return fig


def _load_axis(chart: Chart) -> tuple[str, Callable[[ResultPoint], float | None]]:
    """Concurrency on the x axis, unless the sweep is by request rate alone."""
    points = [p for series in chart.series for p in series.run.points]
    if points and all(p.conc is None and p.request_rate is not None for p in points):
        return "request rate (req/s)", lambda p: p.request_rate
    return "concurrency", lambda p: float(p.conc) if p.conc is not None else None


def _watermark(fig: Any, chart: Chart) -> None:
    if not chart.any_simulated:
        return
    fig.add_annotation(
        text=WATERMARK,
        xref="paper",
        yref="paper",
        x=0.5,
        y=0.5,
        showarrow=False,
        textangle=-25,
        font={"size": 80, "color": "rgba(128,128,128,0.13)"},
    )


def render(
    runs: Sequence[RunResults],
    chart: Chart,
    changes: Sequence[Change],
    title: str = "disagg report",
) -> str:
    from disagg import __version__

    pareto = pareto_figure(chart).to_html(
        full_html=False, include_plotlyjs=True, div_id="pareto", config=PLOTLY_CONFIG
    )
    latency = latency_figure(chart).to_html(
        full_html=False, include_plotlyjs=False, div_id="latency", config=PLOTLY_CONFIG
    )
    generated = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    points = sum(len(run.points) for run in runs)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(title)}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
        f'<p class="meta">{len(runs)} run(s), {points} valid point(s) · '
        f"generated {generated} by disagg {escape(__version__)}</p>",
    ]
    if chart.any_simulated:
        parts.append(
            '<p class="sim">Contains SIMULATED results (marked with open markers and dashed '
            "lines): they come from the simulated engine and are not hardware measurements.</p>"
        )
    parts += [
        "<section><h2>Pareto chart</h2>",
        pareto,
        "</section><section><h2>Latency</h2>",
        latency,
        "</section>",
        _summary_table(runs, chart),
        _compare_table(changes),
        _skipped(runs),
        _configs(runs),
        "</body></html>",
    ]
    return "\n".join(part for part in parts if part)


def _summary_table(runs: Sequence[RunResults], chart: Chart) -> str:
    cols = table.columns(chart)
    head = "".join(f"<th>{escape(col.header)}</th>" for col in cols) + "<th></th>"
    body = []
    for row in table.rows(runs, chart):
        marks = ("★ frontier " if row.frontier else "") + ("simulated" if row.simulated else "")
        cells = "".join(
            f'<td class="{"num" if col.numeric else ""}">{escape(cell)}</td>'
            for col, cell in zip(cols, row.cells, strict=True)
        )
        body.append(f"<tr>{cells}<td>{escape(marks.strip())}</td></tr>")
    return (
        "<section><h2>Summary</h2><p>Latencies in ms; ★ marks points on the Pareto frontier.</p>"
        "<table><thead><tr>"
        + head
        + "</tr></thead><tbody>"
        + "".join(body)
        + "</tbody></table></section>"
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
    return (
        "<section><h2>Runs compared</h2><p>Runs that share a variant, against the first run "
        "given (the baseline).</p><table><thead><tr><th>variant</th><th>point</th>"
        "<th>metric</th><th>baseline run</th><th>baseline</th><th>run</th><th>value</th>"
        "<th>change</th></tr></thead><tbody>" + "".join(body) + "</tbody></table></section>"
    )


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
    blocks = []
    for run in runs:
        if run.config is None:
            continue
        blocks.append(
            f"<details><summary><b>{escape(run.label or run.name)}</b> · "
            f"<code>{escape(run.selector or '')}</code> · {escape(str(run.run_dir))}</summary>"
            f"<pre>{escape(_yaml(run.config))}</pre></details>"
        )
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


def write_html(
    runs: Sequence[RunResults], chart: Chart, changes: Sequence[Change], path: Path
) -> Path:
    write_text(path, render(runs, chart, changes))
    return path


_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px auto;
max-width:1400px;padding:0 16px;color:#222}
h1{margin-bottom:4px}h2{margin-top:36px;border-bottom:1px solid #ddd;padding-bottom:4px}
.meta{color:#666;margin-top:0}
.sim{background:#fff4e5;border-left:4px solid #e69f00;padding:8px 12px}
table{border-collapse:collapse;font-size:13px;width:100%}
th,td{padding:4px 8px;border-bottom:1px solid #eee;text-align:left;white-space:nowrap}
th{background:#f6f6f6;position:sticky;top:0}td.num{text-align:right;font-variant-numeric:tabular-nums}
td.better{color:#0a7d32}td.worse{color:#b3261e}
details{margin:8px 0}summary{cursor:pointer}
pre{background:#f6f8fa;padding:12px;overflow:auto;font-size:12px}
"""
