"""One report from loaded runs: summary.csv, pareto.png, report.html and, when runs share a
variant, compare.csv. The renderers (matplotlib, plotly) are imported here, on demand.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from disagg.report.chart import Chart, ChartSet, build_charts
from disagg.report.compare import Change, compare
from disagg.report.model import RunResults, XMetric, YMetric

SUMMARY_CSV = "summary.csv"
COMPARE_CSV = "compare.csv"
PARETO_PNG = "pareto.png"
REPORT_HTML = "report.html"
FILTER_FIELDS = ("hw", "framework", "precision")


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
    """Whether the run's setup has one of the wanted values for every filtered field."""
    for name, wanted in filters.items():
        if not wanted:
            continue
        value = run.setup.get(name)
        if value is None or str(value).lower() not in {w.lower() for w in wanted}:
            return False
    return True


def analyse(
    runs: Sequence[RunResults],
    y_metric: YMetric = YMetric.OUTPUT,
    x_metric: XMetric = XMetric.INTERACTIVITY,
    filters: Mapping[str, Sequence[str]] | None = None,
    slo: Mapping[str, float] | None = None,
) -> Report:
    """Charts (one per workload) and comparisons, without writing anything."""
    wanted = {name: list(values) for name, values in (filters or {}).items() if values}
    kept = [run for run in runs if matches(run, wanted)]
    dropped = [run for run in runs if not matches(run, wanted)]
    charts = ChartSet(build_charts(kept, y_metric, x_metric), y_metric, x_metric)
    return Report(
        kept,
        charts,
        compare(kept, y_metric),
        filters=wanted,
        filtered_out=dropped,
        slo=dict(slo or {}),
    )


def write_report(report: Report, out_dir: Path) -> dict[str, Path]:
    """Write every report file into `out_dir` (each atomically); returns them by kind."""
    from disagg.report import csv, html, png

    out_dir.mkdir(parents=True, exist_ok=True)
    files = {
        "summary_csv": csv.write_summary(report.runs, report.charts, out_dir / SUMMARY_CSV),
        "pareto_png": png.write_png(report.charts.charts, out_dir / PARETO_PNG),
        "report_html": html.write_html(report, out_dir / REPORT_HTML),
    }
    if report.changes:
        files["compare_csv"] = csv.write_compare(report.changes, out_dir / COMPARE_CSV)
    else:
        (out_dir / COMPARE_CSV).unlink(missing_ok=True)  # stale from an earlier comparison
    report.files = files
    return files
