"""One report from loaded runs: its charts (one per workload), comparisons and filters.
`disagg.report.write` writes it out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from disagg.report.axes import XMetric, YMetric
from disagg.report.chart import Chart, ChartSet, build_charts
from disagg.report.compare import Change, compare
from disagg.report.model import RunResults


@dataclass
class Report:
    runs: list[RunResults]
    charts: ChartSet
    changes: list[Change]
    files: dict[str, Path] = field(default_factory=dict)
    filters: dict[str, list[str]] = field(default_factory=dict)
    filtered_out: list[RunResults] = field(default_factory=list)
    slo: dict[str, float] = field(default_factory=dict)  # goodput limits in ms, by key

    @property
    def chart(self) -> Chart:
        """The chart of a single-workload report (the usual case, and what tests look at)."""
        if len(self.charts.charts) != 1:
            raise ValueError(f"{len(self.charts.charts)} workloads: use Report.charts")
        return self.charts.charts[0]

    @property
    def point_count(self) -> int:
        return sum(len(run.points) for run in self.runs)


def matches(run: RunResults, filters: Mapping[str, Sequence[str]]) -> bool:
    """Whether the run's setup has one of the wanted values for every filtered field (a
    field with no wanted value filters nothing)."""
    return all(
        not wanted
        or (
            (value := run.setup.get(name)) is not None
            and str(value).lower() in {w.lower() for w in wanted}
        )
        for name, wanted in filters.items()
    )


def analyse(
    runs: Sequence[RunResults],
    y_metric: YMetric = YMetric.OUTPUT,
    x_metric: XMetric = XMetric.INTERACTIVITY,
    filters: Mapping[str, Sequence[str]] | None = None,
    slo: Mapping[str, float] | None = None,
) -> Report:
    """Charts (one per workload) and comparisons, without writing anything."""
    wanted = {name: list(values) for name, values in (filters or {}).items() if values}
    kept: list[RunResults] = []
    dropped: list[RunResults] = []
    for run in runs:
        (kept if matches(run, wanted) else dropped).append(run)
    charts = ChartSet(build_charts(kept, y_metric, x_metric), y_metric, x_metric)
    return Report(
        kept,
        charts,
        compare(kept, y_metric),
        filters=wanted,
        filtered_out=dropped,
        slo=dict(slo or {}),
    )
