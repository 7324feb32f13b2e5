"""`summary.csv` (one row per valid point) and `compare.csv` (runs that share a variant).

Column names reuse the result JSON's names where one exists, so a spreadsheet and
the raw files speak the same language.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from pathlib import Path

from disagg.atomic import write_text
from disagg.bench.identity import SETUP_FIELDS
from disagg.report.axes import YMetric
from disagg.report.chart import ChartSet, View
from disagg.report.compare import Change
from disagg.report.model import ResultPoint, RunResults

LATENCY_FIELDS = tuple(
    f"{stat}_{metric}_ms"
    for metric in ("ttft", "tpot", "itl", "e2el")
    for stat in ("mean", "median", "p90", "p99")
)
# The result's setup fields a row shows: what was run, then each side's layout.
SETUP_COLUMNS = (
    *("hw", "framework", "engine", "precision", "spec_decoding", "image"),
    *(name for name in SETUP_FIELDS if name.startswith(("prefill_", "decode_", "router"))),
    "recipe_fingerprint",
)
SUMMARY_COLUMNS = (
    *("run", "series", "variant", "selector", "simulated", "model"),
    *SETUP_COLUMNS,
    *("conc", "request_rate", "isl", "osl", "prefill_gpus", "decode_gpus", "total_gpus"),
    *("completed", "failed", "duration"),
    *("request_throughput", "output_throughput", "total_token_throughput"),
    *("output_tokens_per_s_per_gpu", "tput_per_gpu", "output_tput_per_gpu", "input_tput_per_gpu"),
    "tokens_per_s_per_user",
    *LATENCY_FIELDS,
    "on_frontier",
    "result_file",
)
COMPARE_COLUMNS = (
    *("variant", "point", "metric"),
    *("baseline_run", "baseline", "run", "value", "change_pct"),
)


def summary_rows(runs: Sequence[RunResults], chart: View) -> list[dict[str, object]]:
    return [_summary_row(run, point, chart) for run in runs for point in run.points]


def _summary_row(run: RunResults, point: ResultPoint, chart: View) -> dict[str, object]:
    series = chart.series_label(run, point) if isinstance(chart, ChartSet) else ""
    row: dict[str, object] = {
        "run": run.label or run.name,
        "series": series,
        "model": point.model,
        **{name: run.setup.get(name) for name in SETUP_COLUMNS},
        "variant": run.short_variant,
        "selector": run.selector or "",
        "simulated": point.simulated or run.simulated,
        "conc": point.conc,
        "request_rate": point.request_rate,
        "isl": point.isl,
        "osl": point.osl,
        "prefill_gpus": point.prefill_gpus,
        "decode_gpus": point.decode_gpus,
        "total_gpus": point.total_gpus,
        "output_tokens_per_s_per_gpu": YMetric.OUTPUT.of(point),
        "tokens_per_s_per_user": point.interactivity,
        "on_frontier": chart.on_frontier(point),
        "result_file": str(point.path),
    }
    for column in SUMMARY_COLUMNS:
        if column not in row:
            row[column] = point.metric(column)
    return row


def render(columns: Sequence[str], rows: Iterable[dict[str, object]]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(columns), lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({key: _cell(row.get(key)) for key in columns})
    return buffer.getvalue()


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.6g}" if abs(value) < 1e6 else f"{value:.1f}"
    return str(value)


def write_summary(runs: Sequence[RunResults], chart: View, path: Path) -> Path:
    write_text(path, render(SUMMARY_COLUMNS, summary_rows(runs, chart)))
    return path


def compare_rows(changes: Iterable[Change]) -> list[dict[str, object]]:
    """Each change as a row: every compare column is a `Change` field of the same name."""
    return [{name: getattr(change, name) for name in COMPARE_COLUMNS} for change in changes]


def write_compare(changes: Sequence[Change], path: Path) -> Path:
    write_text(path, render(COMPARE_COLUMNS, compare_rows(changes)))
    return path
