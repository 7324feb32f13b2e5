"""Write a report: summary.csv, pareto.png, report.html and, when runs share a variant,
compare.csv. The renderers (matplotlib, plotly) are imported here, on demand.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from disagg.atomic import files_created_with
from disagg.errors import EXIT_FINDINGS, DisaggError
from disagg.report.build import Report

SUMMARY_CSV = "summary.csv"
COMPARE_CSV = "compare.csv"
PARETO_PNG = "pareto.png"
REPORT_HTML = "report.html"
OWNER_ONLY = 0o600


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
