"""One report from loaded runs: summary.csv, pareto.png, report.html and, when runs share a
variant, compare.csv. The renderers (matplotlib, plotly) are imported here, on demand.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from disagg.atomic import files_created_with
from disagg.errors import EXIT_FINDINGS, DisaggError
from disagg.report.chart import Chart, ChartSet, build_charts
from disagg.report.compare import Change, compare
from disagg.report.model import RunResults, XMetric, YMetric

SUMMARY_CSV = "summary.csv"
COMPARE_CSV = "compare.csv"
PARETO_PNG = "pareto.png"
REPORT_HTML = "report.html"
FILTER_FIELDS = ("hw", "framework", "precision")
OWNER_ONLY = 0o600


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


class ReportNotWritten(DisaggError):
    """A report file could not be written (full disk, read-only directory): one line naming
    the file and the cause. The runs' results are untouched; exit status 1."""

    exit_code = EXIT_FINDINGS


def write_report(report: Report, out_dir: Path, *, shared: bool = False) -> dict[str, Path]:
    """Write every report file into `out_dir` (each atomically); returns them by kind.

    The files are the owner's alone (a report quotes each run's resolved configuration)
    unless `shared`, which gives them the usual mode for the team to read.
    """
    from disagg.report import csv, html, png

    def written(name: str, write: Callable[[Path], Path]) -> Path:
        path = out_dir / name
        try:
            return write(path)
        except OSError as exc:
            raise ReportNotWritten(f"cannot write {path}: {exc.strerror or exc}") from None

    written("", _make_dir)
    with files_created_with(None if shared else OWNER_ONLY):
        files = {
            "summary_csv": written(
                SUMMARY_CSV, lambda p: csv.write_summary(report.runs, report.charts, p)
            ),
            "pareto_png": written(PARETO_PNG, lambda p: png.write_png(report.charts.charts, p)),
            "report_html": written(REPORT_HTML, lambda p: html.write_html(report, p)),
        }
        if report.changes:
            files["compare_csv"] = written(
                COMPARE_CSV, lambda p: csv.write_compare(report.changes, p)
            )
        else:  # stale from an earlier comparison
            written(COMPARE_CSV, _remove)
    report.files = files
    return files


def _make_dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def _remove(path: Path) -> Path:
    path.unlink(missing_ok=True)
    return path
