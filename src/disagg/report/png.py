"""`pareto.png`: the Pareto charts as one static image (matplotlib, Agg), one panel per
workload stacked top to bottom, for pasting into a document or a chat.

`matplotlib.figure.Figure` rather than pyplot: no global state, no GUI backend.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from pathlib import Path

from matplotlib.artist import Artist
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
LEGEND_INSIDE_MAX = 6  # up to this many series, the legend sits inside the axes
LEGEND_BESIDE_MAX = 12  # up to this many, beside the plot; past it, below in columns
LEGEND_FONT_PT = 8
LEGEND_ROW_IN = 0.19  # one legend row at LEGEND_FONT_PT, with its spacing
LEGEND_CHAR_IN = 0.072  # one character at LEGEND_FONT_PT (a little over the average)
LEGEND_HANDLE_IN = 0.55  # marker, line sample and padding of one entry
FRONTIER_LABEL = "Pareto frontier"
_SEP = " · "


def figure_size(chart: Chart, panels: int = 1) -> tuple[float, float]:
    """Inches; wider when the legend needs columns beside the plot, taller when it goes
    below it."""
    width, height = BASE_SIZE[0], BASE_SIZE[1] * panels
    if len(chart.series) > LEGEND_BESIDE_MAX:
        rows = math.ceil((len(chart.series) + 1) / legend_columns(chart))
        return width, height + rows * LEGEND_ROW_IN + 0.4
    columns = legend_columns(chart)
    return (width + (2.6 * columns if columns else 0.0), height)


def legend_columns(chart: Chart) -> int:
    """Legend columns: 0 inside the axes, else as many as fit beside or below the plot."""
    count = len(chart.series)
    if count <= LEGEND_INSIDE_MAX:
        return 0
    if count <= LEGEND_BESIDE_MAX:
        return math.ceil((count + 1) / LEGEND_ROWS_PER_COLUMN)
    labels = [*short_labels(chart)[1].values(), FRONTIER_LABEL]
    entry = LEGEND_HANDLE_IN + LEGEND_CHAR_IN * max(len(label) for label in labels)
    return max(1, min(len(labels), int((BASE_SIZE[0] - 0.4) // entry)))


def short_labels(chart: Chart) -> tuple[str, dict[int, str]]:
    """(what every series shares, each series' label without it): past a dozen series the
    shared setup is said once above the plot and the legend keeps what differs."""
    full = {series.index: chart.legend_label(series) for series in chart.series}
    if len(full) <= LEGEND_BESIDE_MAX:
        return "", full
    parts = [label.split(_SEP) for label in full.values()]
    shared = 0
    while all(len(p) > shared + 1 and p[shared] == parts[0][shared] for p in parts):
        shared += 1
    common = _SEP.join(parts[0][:shared])
    return common, {index: _SEP.join(label.split(_SEP)[shared:]) for index, label in full.items()}


def build_figure(charts: Chart | Sequence[Chart]) -> Figure:
    """One panel per chart (workload), the widest legend deciding the width."""
    panels = [charts] if isinstance(charts, Chart) else list(charts)
    widest = max(panels, key=lambda chart: (len(chart.series), legend_columns(chart)))
    fig = Figure(figsize=figure_size(widest, len(panels)), dpi=DPI, layout="constrained")
    for chart, ax in zip(panels, fig.subplots(len(panels), 1, squeeze=False)[:, 0], strict=True):
        _draw(ax, chart)
    columns = legend_columns(widest)
    if columns:
        below = len(widest.series) > LEGEND_BESIDE_MAX
        entries: dict[str, Artist] = {}  # every panel's series, each once
        for ax in fig.axes:
            for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
                entries.setdefault(label, handle)
        fig.legend(
            list(entries.values()),
            list(entries),
            loc="outside lower center" if below else "outside right upper",
            ncols=columns,
            fontsize=LEGEND_FONT_PT,
            frameon=False,
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
    common, labels = short_labels(chart)
    for series in chart.series:
        if not series.points:
            continue
        ax.plot(
            [cp.x for cp in series.points],
            [cp.y for cp in series.points],
            color=series.color,
            linestyle="--" if series.run.simulated else "-",
            linewidth=1.4,
            marker=series.mpl_marker,
            markersize=6.5,
            markerfacecolor="white" if series.run.simulated else series.color,
            markeredgecolor=series.color,
            markeredgewidth=1.4,
            zorder=3,
            label=labels[series.index],
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
    _style_axes(ax, chart, common)
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


def _style_axes(ax: Axes, chart: Chart, common: str = "") -> None:
    title = f"{chart.title}: {chart.subtitle}" if chart.workload else chart.title
    ax.set_title(title, fontsize=13, fontweight="bold", loc="left", pad=16)
    notes = [] if chart.workload else [chart.subtitle]
    notes += ["labels: concurrency", chart.better]
    if common:
        notes.append(f"every series: {common}")
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


def write_png(charts: Chart | Sequence[Chart], path: Path) -> Path:
    buffer = io.BytesIO()
    build_figure(charts).savefig(buffer, format="png", dpi=DPI, facecolor="white")
    write_bytes(path, buffer.getvalue())
    return path
