"""The human summary table (terminal and HTML share it): one row per valid point, formatted."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from disagg.report.axes import XMetric
from disagg.report.chart import View
from disagg.report.model import ResultPoint, RunResults


@dataclass(frozen=True)
class Column:
    header: str
    value: Callable[[RunResults, ResultPoint], str]
    numeric: bool = True


def number(value: float | None, digits: int = 1) -> str:
    """`1,234.5`, or `-` when there is no value."""
    if value is None:
        return "-"
    return f"{value:,.{digits}f}"


def _load(_run: RunResults, point: ResultPoint) -> str:
    if point.request_rate is not None:
        rate = f"{point.request_rate:g}/s"
        return f"{rate} (c{point.conc})" if point.conc else rate
    return str(point.conc) if point.conc is not None else point.path.stem


def _metric(name: str, digits: int) -> Callable[[RunResults, ResultPoint], str]:
    return lambda _run, point: number(point.metric(name), digits)


def columns(chart: View, *, with_run: bool = True, terse: bool = False) -> tuple[Column, ...]:
    """The table's columns; `with_run=False` when each run gets its own table, `terse` for
    an 80-column terminal (no requests, failures or duration: the HTML and CSV have them)."""
    y, x = chart.y_metric, chart.x_metric
    run = Column("run", lambda run, _point: run.label or run.name, numeric=False)
    x_column = Column(x.short, lambda _run, point: number(x.of(point), 2))
    extra_x = () if x is XMetric.INTERACTIVITY else (x_column,)
    return (
        *((run,) if with_run else ()),
        Column("conc", _load),
        Column("GPUs", lambda _run, p: f"{p.prefill_gpus}+{p.decode_gpus}"),
        *(
            ()
            if terse
            else (
                Column("reqs", _metric("completed", 0)),
                Column("failed", _metric("failed", 0)),
                Column("dur s", _metric("duration", 1)),
            )
        ),
        Column("req/s", _metric("request_throughput", 2)),
        Column(y.header, lambda _run, point: number(y.of(point))),
        Column("tok/s/user", lambda _run, point: number(point.interactivity)),
        *extra_x,
        Column("TTFT p50", _metric("median_ttft_ms", 1)),
        Column("TTFT p99", _metric("p99_ttft_ms", 1)),
        Column("TPOT p50", _metric("median_tpot_ms", 2)),
        Column("TPOT p99", _metric("p99_tpot_ms", 2)),
    )


@dataclass(frozen=True)
class Row:
    cells: list[str]
    frontier: bool
    simulated: bool
    predicted: str | None = None  # the prediction's label, for a predicted point


def rows(
    runs: Sequence[RunResults], chart: View, *, with_run: bool = True, terse: bool = False
) -> list[Row]:
    cols = columns(chart, with_run=with_run, terse=terse)
    return [
        Row(
            cells=[column.value(run, point) for column in cols],
            frontier=chart.on_frontier(point),
            simulated=point.simulated or run.simulated,
            predicted=point.predicted or run.predicted,
        )
        for run in runs
        for point in run.points
    ]
