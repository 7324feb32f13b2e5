"""`disagg run` as a library: recipe -> plans -> run directories -> local runs -> report.

The orchestrator runs in this process, so that a person sees a live view; without a
terminal, plain log lines that a CI log can keep.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.markup import escape

from disagg.errors import DisaggError
from disagg.launch.state import RunStatus, RunSummary
from disagg.plan.model import Plan


def prepare_run_dir(plan: Plan, run_dir: Path) -> None:
    """Write plan.json; a directory holding another recipe's plan is refused, not mixed."""
    existing = run_dir / "plan.json"
    if existing.is_file():
        try:
            old = Plan.read(run_dir)
        except DisaggError:
            old = None  # unreadable: overwritten by the new plan
        if old is not None and (old.name, old.variant) != (plan.name, plan.variant):
            raise DisaggError(
                f"{run_dir} already holds run {old.name} ({old.variant}), not {plan.variant}",
                hint="pick another --out directory; re-using one resumes the same variant only",
            )
    run_dir.mkdir(parents=True, exist_ok=True)
    plan.write(run_dir)


def run_locally(
    plan: Plan, run_dir: Path, *, console: Console, quiet: bool = False
) -> tuple[RunSummary, Path | None]:
    """Run one plan here, its directory locked; its summary and report directory."""
    from disagg.launch.orchestrator import Orchestrator, OrchestratorOptions, make_launcher
    from disagg.launch.runlock import hold_run_dir
    from disagg.launch.view import LiveView, points_table

    lock = hold_run_dir(run_dir, log=lambda line: console.print(line, markup=False))
    try:
        prepare_run_dir(plan, run_dir)
        live = console.is_terminal and not quiet
        options = OrchestratorOptions(executor="local", echo=not live, quiet_bench=True)
        orchestrator = Orchestrator(run_dir, plan, make_launcher("local", plan, run_dir), options)
        if live:
            view = LiveView(console)
            orchestrator.on_update = view.update
            with view:
                summary = orchestrator.run()
        else:
            summary = orchestrator.run()
        console.print(points_table(summary.points, title=f"{plan.name} ({plan.selector})"))
        predicted = str(plan.predicted["label"]) if plan.predicted else None
        _print_outcome(console, summary, run_dir, plan.simulator, predicted)
        has_points = summary.points_measured or summary.points_skipped
        report = render_report([run_dir], run_dir / "report", console) if has_points else None
        return summary, report
    finally:
        lock.release()


def _print_outcome(
    console: Console,
    summary: RunSummary,
    run_dir: Path,
    simulator: str | None = None,
    predicted: str | None = None,
) -> None:
    label = f" (simulated by {simulator or 'disagg sim-engine'})" if summary.simulated else ""
    if predicted:
        label = f" ({escape(predicted)})"
    for point in summary.points:
        for number, why in enumerate(point.discarded, start=1):
            console.print(
                f"{point.key}: attempt {number} discarded: {why}", style="yellow", markup=False
            )
    if summary.status is RunStatus.COMPLETED:
        console.print(f"[green]completed[/]{label}: {escape(str(run_dir))}")
        return
    colour = "yellow" if summary.status is RunStatus.CANCELLED else "red"
    reason = escape(summary.reason or "")
    console.print(f"[{colour}]{summary.status.value}[/]: {reason}", highlight=False)
    failure = summary.failure
    if failure and failure.log_tail:
        console.print(f"last lines of {failure.log}:", style="dim", markup=False)
        for line in failure.log_tail:
            console.print(f"  | {line}", highlight=False, markup=False)
    console.print(
        f"run directory: {run_dir}  (logs: disagg logs {run_dir} --role all)", markup=False
    )


def render_report(run_dirs: list[Path], out: Path, console: Console) -> Path | None:
    """Render the report (tables, pareto.png, report.html) of `run_dirs` into `out`."""
    try:
        from disagg.report.aggregate import load_runs
        from disagg.report.build import analyse
        from disagg.report.write import write_report
    except ImportError:
        return None
    try:
        report = analyse(load_runs(run_dirs))
        if report.point_count == 0:
            return None
        files = write_report(report, out)
    except DisaggError as exc:
        console.print(f"[yellow]report not rendered:[/] {escape(str(exc))}", highlight=False)
        return None
    page = files.get("report_html", out)
    console.print(f"report: {page}", highlight=False, markup=False)
    return out
