"""The Pareto charts as plain data, shared by the PNG and the HTML renderers.

One chart per workload (model, ISL, OSL): workloads never share a chart or a frontier.
A chart has one series per run, named by what it ran (`disagg.report.legend`), and one
frontier, over measured points only where real and simulated runs share it; each run
keeps one style in every chart and both files.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import TypeVar

from disagg.report.axes import XMetric, YMetric
from disagg.report.labels import place
from disagg.report.legend import legend
from disagg.report.model import ResultPoint, RunResults, Workload

# Colour-blind-safe first (Okabe-Ito, then Tableau); markers change every lap of colours.
PALETTE = (
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00",
    "#56B4E9", "#8C564B", "#7F7F7F", "#BCBD22", "#17BECF",
    "#1F77B4", "#FF7F0E", "#2CA02C", "#D62728", "#9467BD",
)  # fmt: skip
MPL_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "h")
PLOTLY_MARKERS = (
    "circle", "square", "triangle-up", "diamond", "triangle-down",
    "cross", "x", "triangle-left", "triangle-right", "hexagon",
)  # fmt: skip
ANNOTATE_ALL_UP_TO = 80  # above this many points, only frontier points get a concurrency label
WATERMARK = "SIMULATED"  # across any chart that holds simulated points
PLOT_PX = (900.0, 480.0)  # the plot area both renderers draw, for placing labels
PAD = 0.06  # share of the data span added on each side of an axis
T = TypeVar("T")


@dataclass(frozen=True)
class ChartPoint:
    x: float
    y: float
    point: ResultPoint

    @property
    def conc_label(self) -> str:
        point = self.point
        if point.request_rate is not None:
            return f"{point.request_rate:g}/s"
        return str(point.conc) if point.conc is not None else ""


@dataclass(frozen=True)
class Series:
    label: str
    run: RunResults
    points: list[ChartPoint]
    color: str
    index: int

    @property
    def mpl_marker(self) -> str:
        return MPL_MARKERS[(self.index // len(PALETTE)) % len(MPL_MARKERS)]

    @property
    def plotly_marker(self) -> str:
        symbol = PLOTLY_MARKERS[(self.index // len(PALETTE)) % len(PLOTLY_MARKERS)]
        return f"{symbol}-open" if self.run.simulated else symbol


@dataclass(frozen=True)
class Chart:
    series: list[Series]
    frontier: list[ChartPoint]
    y_metric: YMetric
    x_metric: XMetric = XMetric.INTERACTIVITY
    workload: Workload | None = None

    @property
    def any_simulated(self) -> bool:
        return any(series.run.simulated for series in self.series)

    @property
    def all_simulated(self) -> bool:
        return bool(self.series) and all(series.run.simulated for series in self.series)

    @property
    def watermark(self) -> str:
        """`PREDICTED` when every simulated series is a prediction, else `SIMULATED`."""
        sims = [s.run for s in self.series if s.run.simulated]
        return "PREDICTED" if sims and all(run.predicted for run in sims) else WATERMARK

    @property
    def title(self) -> str:
        title = (
            "Throughput per GPU vs "
            + {
                XMetric.INTERACTIVITY: "interactivity",
                XMetric.E2EL: "end-to-end latency",
                XMetric.TTFT: "time to first token",
            }[self.x_metric]
        )
        if self.all_simulated and all(s.run.predicted for s in self.series):
            return f"{title} (predicted)"  # the legend names each prediction's model
        return f"{title} (simulated)" if self.all_simulated else title

    @property
    def better(self) -> str:
        return "upper right is better" if self.x_metric.higher_is_better else "upper left is better"

    @property
    def show_frontier(self) -> bool:
        """Only when it compares something: with one series it is that series' own line."""
        return bool(self.frontier) and sum(1 for s in self.series if s.points) >= 2

    def legend_label(self, series: Series) -> str:
        """The series' label, `(simulated)` added when real and simulated runs share the chart;
        a prediction's label always (the model, system and database it comes from)."""
        if series.run.predicted:
            return f"{series.label}, {series.run.predicted}"
        if series.run.simulated and not self.all_simulated:
            return f"{series.label} (simulated)"
        return series.label

    @cached_property
    def _frontier_points(self) -> frozenset[int]:
        return frozenset(id(cp.point) for cp in self.frontier)

    def on_frontier(self, point: ResultPoint) -> bool:
        """Whether this loaded point is on the Pareto frontier."""
        return id(point) in self._frontier_points

    @cached_property
    def x_range(self) -> tuple[float, float]:
        return _fitted([cp.x for s in self.series for cp in s.points])

    @cached_property
    def y_range(self) -> tuple[float, float]:
        return _fitted([cp.y for s in self.series for cp in s.points])

    @cached_property
    def _label_spots(self) -> dict[int, str | None]:
        """Frontier points first, then the rest in series order."""
        points = [cp for s in self.series for cp in s.points]
        if len(points) > ANNOTATE_ALL_UP_TO:
            points = [cp for cp in points if self.on_frontier(cp.point)]
        points.sort(key=lambda cp: not self.on_frontier(cp.point))
        (x0, x1), (y0, y1) = self.x_range, self.y_range
        spots = place(
            [((cp.x - x0) / (x1 - x0), (cp.y - y0) / (y1 - y0)) for cp in points],
            [cp.conc_label for cp in points],
            PLOT_PX,
        )
        return {id(cp): spot for cp, spot in zip(points, spots, strict=True)}

    def label_spot(self, point: ChartPoint) -> str | None:
        """Where the point's concurrency label goes (`top right`, ...), None: no label."""
        return self._label_spots.get(id(point))

    @property
    def subtitle(self) -> str:
        """`DeepSeek-R1 · ISL 1024 · OSL 1024`: the chart says what it measured."""
        if self.workload is not None:
            return self.workload.title
        isls = {cp.point.isl for s in self.series for cp in s.points}
        osls = {cp.point.osl for s in self.series for cp in s.points}
        parts = []
        if len(isls) == 1 and None not in isls:
            parts.append(f"ISL {isls.pop()}")
        if len(osls) == 1 and None not in osls:
            parts.append(f"OSL {osls.pop()}")
        return " / ".join(parts)


def _fitted(values: list[float]) -> tuple[float, float]:
    """The data's span plus a margin, never below 0 (every axis here is a rate or a time)."""
    if not values:
        return (0.0, 1.0)
    low, high = min(values), max(values)
    span = high - low or abs(high) or 1.0
    return (max(0.0, low - PAD * span), high + PAD * span)


def frontier(
    items: Sequence[T], x: Callable[[T], float | None], y: Callable[[T], float | None]
) -> list[T]:
    """The items no other item beats on both x and y (higher is better on both), in
    increasing x; items lacking x or y are ignored.

    O(n log n): sweep from the highest x down, keeping each item whose y beats every
    y seen so far. Ties in x keep only the highest y; exact duplicates keep the first.
    """
    scored = [
        (xv, yv, index)
        for index, item in enumerate(items)
        if (xv := x(item)) is not None and (yv := y(item)) is not None
    ]
    scored.sort(key=lambda entry: (-entry[0], -entry[1], entry[2]))
    kept: list[T] = []
    best_y = float("-inf")
    for _, yv, index in scored:
        if yv > best_y:
            kept.append(items[index])
            best_y = yv
    kept.reverse()
    return kept


def build_chart(
    runs: list[RunResults],
    y_metric: YMetric,
    x_metric: XMetric = XMetric.INTERACTIVITY,
    workload: Workload | None = None,
) -> Chart:
    """The chart of one workload (all points when `workload` is None); run i keeps colour i."""
    series: list[Series] = []
    for index, run in enumerate(runs):
        points = []
        for point in run.points:
            if workload is not None and point.workload != workload:
                continue
            x, y = x_metric.of(point), y_metric.of(point)
            if x is not None and y is not None:
                points.append(ChartPoint(x, y, point))
        if workload is not None and not points:
            continue
        points.sort(key=lambda cp: cp.point.sort_key)
        model = workload.model if workload else (run.points[0].model if run.points else None)
        label = legend(run, model)
        series.append(Series(label, run, points, PALETTE[index % len(PALETTE)], index))
    _disambiguate(series)
    # Simulated points never set the frontier of measured hardware; alone, they have their own.
    real = [cp for s in series if not s.run.simulated for cp in s.points]
    basis = real or [cp for s in series for cp in s.points]
    sign = 1.0 if x_metric.higher_is_better else -1.0
    line = frontier(basis, lambda cp: sign * cp.x, lambda cp: cp.y)
    if sign < 0:
        line.reverse()  # drawn in increasing x
    return Chart(series, line, y_metric, x_metric, workload)


def _disambiguate(series: list[Series]) -> None:
    """Series with the same name (same setup) get their run's label added."""
    counts = Counter(item.label for item in series)
    for position, item in enumerate(series):
        if counts[item.label] > 1 and item.run.label and item.run.label != item.label:
            series[position] = replace(item, label=f"{item.label} · {item.run.label}")


def build_charts(
    runs: list[RunResults], y_metric: YMetric, x_metric: XMetric = XMetric.INTERACTIVITY
) -> list[Chart]:
    """One chart per workload found in the runs, in (model, ISL, OSL) order."""
    workloads = sorted({w for run in runs for w in run.workloads}, key=Workload.order)
    return [build_chart(runs, y_metric, x_metric, workload) for workload in workloads]


@dataclass(frozen=True)
class ChartSet:
    """Every workload's chart: what tables and CSV ask about any point."""

    charts: list[Chart]
    y_metric: YMetric
    x_metric: XMetric = XMetric.INTERACTIVITY

    def on_frontier(self, point: ResultPoint) -> bool:
        return any(chart.on_frontier(point) for chart in self.charts)

    @property
    def any_simulated(self) -> bool:
        return any(chart.any_simulated for chart in self.charts)

    def series_label(self, run: RunResults, point: ResultPoint) -> str:
        """The legend name of the point's series in its workload's chart."""
        for chart in self.charts:
            if chart.workload in (None, point.workload):
                for series in chart.series:
                    if series.run is run:
                        return chart.legend_label(series)
        return run.label or run.name


View = Chart | ChartSet  # what tables and CSV read: one chart, or every workload's
