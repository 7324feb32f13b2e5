"""`pareto.png`: the Pareto charts as one static image (matplotlib, Agg), one panel per
workload stacked top to bottom, for pasting into a document or a chat.

Uses `matplotlib.figure.Figure` directly rather than pyplot: no global state, no GUI
backend, safe to call from any thread. `build_figure` is separate from `write_png` so
tests can inspect the series before anything is saved.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from pathlib import Path

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from disagg.atomic import write_bytes
from disagg.report.chart import WATERMARK as WATERMARK  # re-exported: the simulated mark
from disagg.report.chart import Chart
from disagg.report.labels import mpl_offset

DPI = 150
BASE_SIZE = (11.0, 7.0)  # inches
LEGEND_ROWS_PER_COLUMN = 28
FRONTIER_LABEL = "Pareto frontier"


def figure_size(chart: Chart, panels: int = 1) -> tuple[float, float]:
    """Inches; wider when the legend needs more than one column beside the plot."""
    columns = legend_columns(chart)
    width = BASE_SIZE[0] + (2.6 * columns if columns else 0.0)
    return (width, BASE_SIZE[1] * panels)


def legend_columns(chart: Chart) -> int:
    if len(chart.series) <= 6:
        return 0  # legend inside the axes
    return math.ceil((len(chart.series) + 1) / LEGEND_ROWS_PER_COLUMN)


def build_figure(charts: Chart | Sequence[Chart]) -> Figure:
    """One panel per chart (workload), the widest legend deciding the width."""
    panels = [charts] if isinstance(charts, Chart) else list(charts)
    widest = max(panels, key=legend_columns)
    fig = Figure(figsize=figure_size(widest, len(panels)), dpi=DPI, layout="constrained")
    for chart, ax in zip(panels, fig.subplots(len(panels), 1, squeeze=False)[:, 0], strict=True):
        _draw(ax, chart)
    if legend_columns(widest):
        fig.legend(
            loc="outside right upper", ncols=legend_columns(widest), fontsize=8, frameon=False
        )
    return fig


def _draw(ax: Axes, chart: Chart) -> None:
    if chart.show_frontier:
        ax.plot(
            [cp.x for cp in chart.frontier],
            [cp.y for cp in chart.frontier],
            color="#222222",
            linewidth=6,
            alpha=0.18,
            solid_capstyle="round",
            zorder=1,
            label=FRONTIER_LABEL,
        )
    for series in chart.series:
        if not series.points:
            continue
        ax.plot(
            [cp.x for cp in series.points],
            [cp.y for cp in series.points],
            color=series.color,
            linestyle="--" if series.simulated else "-",
            linewidth=1.4,
            marker=series.mpl_marker,
            markersize=6.5,
            markerfacecolor="white" if series.simulated else series.color,
            markeredgecolor=series.color,
            markeredgewidth=1.4,
            zorder=3,
            label=chart.legend_label(series),
        )
        for cp in series.points:
            spot = chart.label_spot(cp)
            if spot is None:
                continue
            offset, ha, va = mpl_offset(spot)
            ax.annotate(
                cp.conc_label,
                (cp.x, cp.y),
                xytext=offset,
                textcoords="offset points",
                ha=ha,
                va=va,
                fontsize=7,
                color=series.color,
                zorder=4,
            )
    _style_axes(ax, chart)
    if chart.any_simulated:
        ax.text(
            0.5,
            0.5,
            chart.watermark,
            transform=ax.transAxes,
            fontsize=72,
            fontweight="bold",
            color="#888888",
            alpha=0.13,
            rotation=25,
            ha="center",
            va="center",
            zorder=0,
        )
    if not legend_columns(chart) and chart.series:
        ax.legend(loc="best", fontsize=8.5, framealpha=0.9)


def _style_axes(ax: Axes, chart: Chart) -> None:
    title = f"{chart.title}: {chart.subtitle}" if chart.workload else chart.title
    ax.set_title(title, fontsize=13, fontweight="bold", loc="left", pad=16)
    notes = [] if chart.workload else [chart.subtitle]
    notes += ["labels: concurrency", chart.better]
    ax.text(  # under the title, so a long title never runs into it
        0.0,
        1.008,
        "  ·  ".join(note for note in notes if note),
        transform=ax.transAxes,
        ha="left",
        va="bottom",
        fontsize=8,
        color="#555555",
    )
    ax.set_xlabel(chart.x_metric.label, fontsize=10)
    ax.set_ylabel(chart.y_metric.label, fontsize=10)
    ax.set_xlim(*chart.x_range)
    ax.set_ylim(*chart.y_range)
    thousands = FuncFormatter(lambda value, _pos: f"{value:,.0f}" if value >= 10 else f"{value:g}")
    ax.yaxis.set_major_formatter(thousands)
    ax.xaxis.set_major_formatter(thousands)
    ax.grid(True, color="#DDDDDD", linewidth=0.7)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def png_bytes(fig: Figure) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI, facecolor="white")
    return buffer.getvalue()


def write_png(charts: Chart | Sequence[Chart], path: Path) -> Path:
    write_bytes(path, png_bytes(build_figure(charts)))
    return path
