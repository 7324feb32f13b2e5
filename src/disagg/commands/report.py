"""`disagg report RUN_DIR... [--out DIR] [--json]`: tables, charts and comparisons from runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from disagg.commands.options import out_dir as checked_out
from disagg.commands.options import writable_dir
from disagg.console import make_console
from disagg.errors import EXIT_FINDINGS
from disagg.report.axes import XMetric, YMetric

if TYPE_CHECKING:
    from rich.console import Console

    from disagg.report.build import Report
    from disagg.report.compare import Change
    from disagg.report.model import RunResults


def register(app: typer.Typer) -> None:
    """Add `report` to the app."""
    app.command("report")(report)


def report(
    run_dirs: list[Path] = typer.Argument(
        ...,
        metavar="RUN_DIR",
        help="Run directories (plan.json + results/), or directories holding runs.",
        show_default=False,
    ),
    out: str | None = typer.Option(
        None,
        "--out",
        "-o",
        metavar="DIR",
        help="Where to write the report files (default: RUN_DIR/report for one run, "
        "./report for several).",
        show_default=False,
    ),
    y: YMetric = typer.Option(
        YMetric.OUTPUT,
        "--y",
        help="Throughput axis: output tok/s over all GPUs, over decode GPUs "
        "(InferenceX output_tput_per_gpu), total tok/s per GPU (tput_per_gpu), or input "
        "tok/s per prefill GPU (input_tput_per_gpu).",
        case_sensitive=False,
    ),
    x: XMetric = typer.Option(
        XMetric.INTERACTIVITY,
        "--x",
        help="Per-user axis: interactivity (tok/s per user), median end-to-end latency, "
        "or median TTFT.",
        case_sensitive=False,
    ),
    goodput: list[str] = typer.Option(
        [],
        "--goodput",
        "--slo",
        metavar="KEY:MS",
        help="Goodput limit, as vLLM's --goodput: ttft:500, tpot:50, e2el:20000 (ms); "
        "repeat or separate by commas. A request is good when it meets every limit.",
        show_default=False,
    ),
    hw: list[str] = typer.Option(
        [], "--hw", help="Only runs on this hardware (gpu_type); repeatable.", show_default=False
    ),
    framework: list[str] = typer.Option(
        [], "--framework", help="Only runs of this framework; repeatable.", show_default=False
    ),
    precision: list[str] = typer.Option(
        [], "--precision", help="Only runs of this precision; repeatable.", show_default=False
    ),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON summary for scripts."),
    shared: bool = typer.Option(
        False,
        "--shared",
        help="Let the team read the report files (the usual file mode); by default they are "
        "the owner's alone, since they quote each run's configuration.",
    ),
) -> None:
    """Summary table, summary.csv, pareto.png and an offline report.html from run directories.

    One chart per workload (model, ISL, OSL). Invalid points (failed requests above
    the threshold, no output tokens) are left out and listed. Runs sharing a variant
    are compared against the first one given.
    Exit status: 0 report written, 1 no valid point at all or a file not written,
    2 bad input.
    """

    from disagg.bench.metrics import parse_slo
    from disagg.report.aggregate import load_runs
    from disagg.report.build import analyse
    from disagg.report.write import write_report

    console = make_console()
    err = make_console(stderr=True)
    target = checked_out(out)
    slo = parse_slo(goodput)
    runs = load_runs(run_dirs)
    if target is None:
        writable_dir(_default_out(run_dirs), what="report directory")
    filters = {"hw": hw, "framework": framework, "precision": precision}
    result = analyse(runs, y, x, filters=filters, slo=slo)
    if result.point_count == 0:
        if as_json:
            print(json.dumps(_json(result, None), indent=2))
        else:
            _print_skipped(err, runs)
            left = (
                f" ({len(result.filtered_out)} left out by the filters)" if result.filters else ""
            )
            err.print(
                f"[bold red]error:[/] no valid points in {len(runs)} run(s){left}; nothing written",
                highlight=False,
            )
        raise typer.Exit(EXIT_FINDINGS)
    out_dir = target if target is not None else _default_out(run_dirs)
    write_report(result, out_dir, shared=shared)
    if as_json:
        print(json.dumps(_json(result, out_dir), indent=2))
        return
    _print_summary(console, result)
    _print_changes(console, result)
    _print_skipped(err, runs)
    console.print()
    for path in result.files.values():
        console.print(f"  wrote [bold]{path}[/]", highlight=False)


def _default_out(run_dirs: list[Path]) -> Path:
    """Beside the data for one argument; in the working directory for several."""
    return run_dirs[0] / "report" if len(run_dirs) == 1 else Path("report")


def _print_summary(console: Console, result: Report) -> None:
    """One table per run: the run's identity in the title, one row per valid point."""
    from rich import box
    from rich.table import Table

    from disagg.report import table

    cols = table.columns(result.charts, with_run=False, terse=True)
    console.print(
        f"[bold]{result.point_count} valid point(s) from {len(result.runs)} run(s)[/]  "
        "[dim]latencies in ms · ★ on the Pareto frontier[/]",
        highlight=False,
    )
    for run in result.runs:
        if not run.points:
            continue
        sim = " [yellow](simulated)[/]" if run.simulated else ""
        if run.predicted:
            from rich.markup import escape

            sim = f" [yellow]{escape(run.predicted)}[/]"
        grid = Table(
            title=f"[bold]{run.label}[/]{sim}  [dim]{run.run_dir}[/]",
            title_justify="left",
            box=box.SIMPLE_HEAD,
            show_edge=False,
            padding=(0, 0),
        )
        for col in cols:
            grid.add_column(col.header, justify="right" if col.numeric else "left", no_wrap=True)
        grid.add_column("", no_wrap=True)
        for row in table.rows([run], result.charts, with_run=False, terse=True):
            grid.add_row(*row.cells, "★" if row.frontier else "")
        console.print()
        console.print(grid)


SIDE_BY_SIDE = ("tokens_per_s_per_user", "median_ttft_ms", "median_tpot_ms")


def _print_changes(console: Console, result: Report) -> None:
    """Per shared variant: each point's baseline row, then each other run with its change."""
    if not result.changes:
        return
    from rich import box
    from rich.table import Table

    y_name = f"y:{result.charts.y_metric.value}"
    shown = (y_name, *SIDE_BY_SIDE)
    headers = {y_name: result.charts.y_metric.header, "tokens_per_s_per_user": "tok/s/user"}
    headers |= {"median_ttft_ms": "TTFT p50", "median_tpot_ms": "TPOT p50"}
    by_variant: dict[str, list[Change]] = {}
    for change in result.changes:
        if change.metric in shown:
            by_variant.setdefault(change.variant, []).append(change)
    for variant, changes in by_variant.items():
        title = f"[bold]{variant}[/]: against {changes[0].baseline_name} (latencies in ms)"
        if any(change.run_predicted for change in changes):
            title = (
                f"[bold]{variant}[/]: prediction error against the measured "
                f"{changes[0].baseline_name} (predicted - measured, %; latencies in ms)"
            )
        grid = Table(
            title=title,
            title_justify="left",
            box=box.SIMPLE_HEAD,
            show_edge=False,
            padding=(0, 0, 0, 1),
        )
        grid.add_column("point", no_wrap=True)
        grid.add_column("run", no_wrap=True)
        for name in shown:
            grid.add_column(headers[name], justify="right", no_wrap=True)
        cells: dict[tuple[str, str], dict[str, Change]] = {}
        for change in changes:
            cells.setdefault((change.point, change.run_name), {})[change.metric] = change
        last_point = None
        for (point, run), row in cells.items():
            if point != last_point:
                base = row[shown[0]]
                grid.add_row(point, base.baseline_name, *(_num(row[m].baseline) for m in shown))
                last_point = point
            grid.add_row("", run, *(_with_change(row[m]) for m in shown))
        console.print()
        console.print(grid)


def _with_change(change: Change) -> str:
    pct = change.change_pct
    if pct is None:
        return _num(change.value)
    color = {True: "green", False: "red", None: "dim"}[change.improved]
    return f"{_num(change.value)} [{color}]{pct:+.1f}%[/]"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:,.2f}"


def _print_skipped(err: Console, runs: list[RunResults]) -> None:
    for run in runs:
        for item in run.skipped:
            err.print(
                f"[yellow]skipped[/] {item.path}: {item.reason}", highlight=False, soft_wrap=True
            )


def _json(result: Report, out_dir: Path | None) -> dict[str, Any]:
    from disagg.report.csv import compare_rows, summary_rows

    return {
        "out_dir": str(out_dir) if out_dir else None,
        "files": {kind: str(path) for kind, path in result.files.items()},
        "y_metric": result.charts.y_metric.value,
        "x_metric": result.charts.x_metric.value,
        "workloads": [
            {
                "model": chart.workload.model if chart.workload else None,
                "isl": chart.workload.isl if chart.workload else None,
                "osl": chart.workload.osl if chart.workload else None,
                "series": [chart.legend_label(series) for series in chart.series],
            }
            for chart in result.charts.charts
        ],
        "filters": result.filters,
        "filtered_out": [str(run.run_dir) for run in result.filtered_out],
        "valid_points": result.point_count,
        "runs": [
            {
                "run_dir": str(run.run_dir),
                "label": run.label,
                "selector": run.selector,
                "simulated": run.simulated,
                "setup": run.setup,
                "points": len(run.points),
                "skipped": [
                    {"file": str(item.path), "reason": item.reason} for item in run.skipped
                ],
            }
            for run in result.runs
        ],
        "points": summary_rows(result.runs, result.charts),
        "changes": [
            {**row, "improved": change.improved}
            for row, change in zip(compare_rows(result.changes), result.changes, strict=True)
        ],
    }
