"""The Pareto chart as plain data, shared by the PNG and the HTML renderers.

One series per run (each run is one variant), one frontier across all series (over
measured points only when real and simulated runs share a chart), and a stable style
per series so both files look alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from disagg.report.model import ResultPoint, RunResults, YMetric
from disagg.report.pareto import frontier

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
    def simulated(self) -> bool:
        return self.run.simulated

    @property
    def mpl_marker(self) -> str:
        return MPL_MARKERS[(self.index // len(PALETTE)) % len(MPL_MARKERS)]

    @property
    def plotly_marker(self) -> str:
        symbol = PLOTLY_MARKERS[(self.index // len(PALETTE)) % len(PLOTLY_MARKERS)]
        return f"{symbol}-open" if self.simulated else symbol


@dataclass(frozen=True)
class Chart:
    series: list[Series]
    frontier: list[ChartPoint]
    y_metric: YMetric

    @property
    def any_simulated(self) -> bool:
        return any(series.simulated for series in self.series)

    @property
    def all_simulated(self) -> bool:
        return bool(self.series) and all(series.simulated for series in self.series)

    @property
    def point_count(self) -> int:
        return sum(len(series.points) for series in self.series)

    @property
    def title(self) -> str:
        title = "Throughput per GPU vs interactivity"
        return f"{title} (simulated)" if self.all_simulated else title

    def legend_label(self, series: Series) -> str:
        """The series' label, `(simulated)` added when real and simulated runs share the chart."""
        if series.simulated and not self.all_simulated:
            return f"{series.label} (simulated)"
        return series.label

    @cached_property
    def _frontier_points(self) -> frozenset[int]:
        return frozenset(id(cp.point) for cp in self.frontier)

    def on_frontier(self, point: ResultPoint) -> bool:
        """Whether this loaded point is on the Pareto frontier."""
        return id(point) in self._frontier_points

    def annotate(self, point: ChartPoint) -> bool:
        """Whether to print the concurrency next to this point (all when few, else the frontier)."""
        return self.point_count <= ANNOTATE_ALL_UP_TO or self.on_frontier(point.point)

    @property
    def subtitle(self) -> str:
        """`ISL 1024 / OSL 1024` when every point shares them: the chart says what it measured."""
        isls = {cp.point.isl for s in self.series for cp in s.points}
        osls = {cp.point.osl for s in self.series for cp in s.points}
        parts = []
        if len(isls) == 1 and None not in isls:
            parts.append(f"ISL {isls.pop()}")
        if len(osls) == 1 and None not in osls:
            parts.append(f"OSL {osls.pop()}")
        return " / ".join(parts)


def build_chart(runs: list[RunResults], y_metric: YMetric) -> Chart:
    series: list[Series] = []
    for index, run in enumerate(runs):
        points = []
        for point in run.points:
            x, y = point.interactivity, y_metric.of(point)
            if x is not None and y is not None:
                points.append(ChartPoint(x, y, point))
        points.sort(key=lambda cp: cp.point.sort_key)
        series.append(
            Series(run.label or run.name, run, points, PALETTE[index % len(PALETTE)], index)
        )
    # Simulated points never set the frontier of measured hardware; alone, they have their own.
    real = [cp for s in series if not s.simulated for cp in s.points]
    basis = real or [cp for s in series for cp in s.points]
    return Chart(series, frontier(basis, lambda cp: cp.x, lambda cp: cp.y), y_metric)
