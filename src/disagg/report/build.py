"""One report from loaded runs: summary.csv, pareto.png, report.html and, when runs share a
variant, compare.csv. The renderers (matplotlib, plotly) are imported here, on demand.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from disagg.report.chart import Chart, build_chart
from disagg.report.compare import Change, compare
from disagg.report.model import RunResults, YMetric

SUMMARY_CSV = "summary.csv"
COMPARE_CSV = "compare.csv"
PARETO_PNG = "pareto.png"
REPORT_HTML = "report.html"


@dataclass
class Report:
    runs: list[RunResults]
    chart: Chart
    changes: list[Change]
    files: dict[str, Path] = field(default_factory=dict)

    @property
    def point_count(self) -> int:
        return sum(len(run.points) for run in self.runs)


def analyse(runs: Sequence[RunResults], y_metric: YMetric = YMetric.OUTPUT) -> Report:
    """Chart data and comparisons, without writing anything."""
    runs = list(runs)
    return Report(runs, build_chart(runs, y_metric), compare(runs, y_metric))


def write_report(report: Report, out_dir: Path) -> dict[str, Path]:
    """Write every report file into `out_dir` (each atomically); returns them by kind."""
    from disagg.report import csv, html, png

    out_dir.mkdir(parents=True, exist_ok=True)
    files = {
        "summary_csv": csv.write_summary(report.runs, report.chart, out_dir / SUMMARY_CSV),
        "pareto_png": png.write_png(report.chart, out_dir / PARETO_PNG),
        "report_html": html.write_html(
            report.runs, report.chart, report.changes, out_dir / REPORT_HTML
        ),
    }
    if report.changes:
        files["compare_csv"] = csv.write_compare(report.changes, out_dir / COMPARE_CSV)
    else:
        (out_dir / COMPARE_CSV).unlink(missing_ok=True)  # stale from an earlier comparison
    report.files = files
    return files
