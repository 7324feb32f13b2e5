"""The plotly figures of report.html: per workload, the Pareto chart, the latency view and
the per-point TTFT/ITL distributions.

Every trace carries `meta` = the run's hardware, framework and precision, which the
page's filters read to show or hide it.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Callable, Mapping
from html import escape
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from disagg.report.chart import Chart, ChartPoint, Series
from disagg.report.legend import topology
from disagg.report.model import ResultPoint
from disagg.report.requests import box, goodput, requests_of

PERCENTILES = (
    ("median", "p50", "solid", "circle"),
    ("p90", "p90", "dash", "square"),
    ("p99", "p99", "dot", "diamond"),
)
FILTER_FIELDS = ("hw", "framework", "precision")


def trace_meta(series: Series) -> dict[str, str]:
    """The run's values of the filter fields (lower case; `-` when unknown)."""
    return {name: str(series.run.setup.get(name) or "-").lower() for name in FILTER_FIELDS}


def pareto_figure(chart: Chart, slo: Mapping[str, float] | None = None) -> Any:
    title = chart.title
    if chart.subtitle:
        title += f"<br><sup>{escape(chart.subtitle)} · labels: concurrency · {chart.better}</sup>"
    fig = go.Figure()
    if chart.show_frontier:
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
        if series.points:
            fig.add_trace(_pareto_trace(chart, series, slo or {}))
    fig.update_layout(
        template="plotly_white",
        title={"text": title, "x": 0.01},
        xaxis={"title": chart.x_metric.label, "range": list(chart.x_range)},
        yaxis={"title": chart.y_metric.label, "range": list(chart.y_range), "tickformat": ",.0f"},
        showlegend=True,  # also for one series: the legend is what names the setup
        legend={"title": "model · GPU · engine · topology · precision (click to hide)"},
        hoverlabel={"align": "left"},
        height=620,
        margin={"t": 70},
    )
    watermark(fig, chart)
    return fig


def _pareto_trace(chart: Chart, series: Series, slo: Mapping[str, float]) -> Any:
    points = series.points
    spots = [chart.label_spot(cp) for cp in points]
    return go.Scatter(
        x=[cp.x for cp in points],
        y=[cp.y for cp in points],
        mode="lines+markers+text",
        name=chart.legend_label(series),
        meta=trace_meta(series),
        text=[cp.conc_label if spot else "" for cp, spot in zip(points, spots, strict=True)],
        textposition=[spot or "top right" for spot in spots],
        textfont={"size": 10, "color": series.color},
        line={"color": series.color, "width": 1.6,
              "dash": "dash" if series.run.simulated else "solid"},
        marker={"symbol": series.plotly_marker, "size": 9, "color": series.color,
                "line": {"width": 1.5, "color": series.color}},
        customdata=[_hover_data(series, cp, slo) for cp in points],
        hovertemplate=(
            "<b>%{fullData.name}</b><br>concurrency %{customdata[0]}<br>"
            "%{y:,.1f} tok/s/GPU · %{x:,.2f} " + escape(chart.x_metric.short) + "<br>"
            "TTFT p50 %{customdata[1]:,.1f} ms · p99 %{customdata[2]:,.1f} ms<br>"
            "TPOT p50 %{customdata[3]:,.2f} ms · p99 %{customdata[4]:,.2f} ms<br>"
            "%{customdata[5]:,.2f} req/s · GPUs %{customdata[6]}<br>"
            "%{customdata[7]} requests · %{customdata[8]} failed · %{customdata[9]:,.1f} s"
            "%{customdata[10]}<br>%{customdata[11]}<br>image: %{customdata[12]}"
            "%{customdata[13]}<extra></extra>"
        ),
    )  # fmt: skip


def _hover_data(series: Series, cp: ChartPoint, slo: Mapping[str, float]) -> list[Any]:
    point = cp.point
    run = series.run
    good = goodput(point, slo)
    good_text = (
        f"<br>goodput {good.per_s:,.2f} req/s ({good.share:.0%} within SLO)"
        if good is not None and good.per_s is not None
        else ""
    )
    flags = "".join(
        f"<br>{escape(kind)}: {escape(_wrap(text))}" for kind, text in run.worker_flags.items()
    )
    shown = ("median_ttft_ms", "p99_ttft_ms", "median_tpot_ms", "p99_tpot_ms", "request_throughput")
    return [
        cp.conc_label,
        *(point.metric(name) for name in shown),
        f"{point.prefill_gpus}+{point.decode_gpus}",
        int(point.metric("completed") or 0),
        int(point.metric("failed") or 0),
        point.metric("duration") or 0.0,
        good_text,
        escape(topology(run.setup) or "topology unknown"),
        escape(str(run.setup.get("image") or "none")),
        flags,
    ]


def _wrap(text: str, width: int = 90) -> str:
    """Long flag lists broken at spaces so the hover box stays on screen."""
    words = " ".join(text.split())
    lines = textwrap.wrap(words, width, break_long_words=False, break_on_hyphens=False)
    return "<br>&nbsp;&nbsp;".join(lines)


def latency_figure(chart: Chart) -> Any:
    fig = _two_panels("Time to first token (ms)", "Time per output token (ms)")
    load_name, load = _load_axis(chart)
    for series in chart.series:
        points = [cp.point for cp in series.points if load(cp.point) is not None]
        if not points:
            continue
        xs = [load(p) for p in points]
        for col, metric in ((1, "ttft"), (2, "tpot")):
            for stat, short, dash, symbol in PERCENTILES:
                fig.add_trace(
                    go.Scatter(
                        x=xs,
                        y=[p.metric(f"{stat}_{metric}_ms") for p in points],
                        mode="lines+markers",
                        name=chart.legend_label(series),
                        meta=trace_meta(series),
                        legendgroup=series.label,
                        showlegend=col == 1 and short == "p50",
                        line={"color": series.color, "dash": dash, "width": 1.6},
                        marker={"symbol": symbol, "size": 7, "color": series.color},
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
    return _finish_latency(
        fig,
        chart,
        f"Latency by point: {escape(chart.subtitle)}<br><sup>colour: run · "
        "p50 solid line, circles · p90 dashed, squares · p99 dotted, diamonds</sup>",
        legend="run (click to hide)",
        height=520,
    )


def distribution_figure(chart: Chart) -> Any | None:
    """Per point, a box of its requests' TTFT and of their ITLs; None without records."""
    fig = _two_panels("TTFT per request (ms)", "Inter-token latency (ms)")
    drawn = False
    spans: dict[int, list[float]] = {1: [], 2: []}  # whisker ends per panel, for the y range
    for series in chart.series:
        for col, field in ((1, "ttft_ms"), (2, "itl_ms")):
            labels: list[str] = []
            boxes = []
            for cp in series.points:
                records = requests_of(cp.point)
                stats = box(getattr(records, field)) if records is not None else None
                if stats is not None:
                    labels.append(f"c{cp.conc_label}")
                    boxes.append(stats)
            if not boxes:
                continue
            drawn = True
            spans[col] += [b.low for b in boxes] + [b.high for b in boxes]
            fig.add_trace(
                go.Box(
                    x=labels,
                    q1=[b.q1 for b in boxes],
                    median=[b.median for b in boxes],
                    q3=[b.q3 for b in boxes],
                    lowerfence=[b.low for b in boxes],
                    upperfence=[b.high for b in boxes],
                    name=chart.legend_label(series),
                    meta=trace_meta(series),
                    legendgroup=series.label,
                    showlegend=col == 1,
                    marker={"color": series.color},
                    line={"color": series.color},
                ),
                row=1,
                col=col,
            )
    if not drawn:
        return None
    for col, values in spans.items():
        positive = [v for v in values if v > 0]
        if positive:  # plotly's autorange ignores precomputed whiskers: fit them explicitly
            low, high = math.log10(min(positive) / 1.3), math.log10(max(positive) * 1.3)
            fig.update_yaxes(type="log", range=[low, high], row=1, col=col)
    fig.update_layout(boxmode="group")
    return _finish_latency(
        fig,
        chart,
        f"Latency distributions per point: {escape(chart.subtitle)}<br><sup>"
        "box: p25-p75 with the median · whiskers: p1-p99 · x: concurrency</sup>",
        legend="run",
        height=480,
    )


def _two_panels(left: str, right: str) -> Any:
    return make_subplots(rows=1, cols=2, subplot_titles=(left, right), horizontal_spacing=0.08)


def _finish_latency(fig: Any, chart: Chart, title: str, *, legend: str, height: int) -> Any:
    """The layout both latency panels share: one place for template, title, legend, watermark."""
    fig.update_layout(
        template="plotly_white",
        title={"text": title, "x": 0.01},
        showlegend=True,
        legend={"title": legend},
        height=height,
        margin={"t": 90},
    )
    watermark(fig, chart)
    return fig


def _load_axis(chart: Chart) -> tuple[str, Callable[[ResultPoint], float | None]]:
    """Concurrency on the x axis, unless the sweep is by request rate alone."""
    points = [cp.point for series in chart.series for cp in series.points]
    if points and all(p.conc is None and p.request_rate is not None for p in points):
        return "request rate (req/s)", lambda p: p.request_rate
    return "concurrency", lambda p: float(p.conc) if p.conc is not None else None


def watermark(fig: Any, chart: Chart) -> None:
    if not chart.any_simulated:
        return
    fig.add_annotation(
        text=chart.watermark,
        xref="paper",
        yref="paper",
        x=0.5,
        y=0.5,
        showarrow=False,
        textangle=-25,
        font={"size": 80, "color": "rgba(128,128,128,0.13)"},
    )
