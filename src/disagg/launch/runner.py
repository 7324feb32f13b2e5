"""`disagg run` as a library: recipe -> plans -> run directories -> local runs -> report.

The orchestrator runs in this process, so that a person sees a live view; without a
terminal, plain log lines that a CI log can keep. The live panel and the results table
after it are built from `RunState`/`RunSummary` only, so the same rendering serves an
in-process run (fed by the orchestrator's update hook) and a finished run directory.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from rich import box
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from disagg.errors import DisaggError
from disagg.launch.state import (
    PointState,
    PointStatus,
    RoleState,
    RunState,
    RunStatus,
    RunSummary,
    duration_text,
    expected_seconds,
    sweep_eta,
)
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


# Headline metrics (display order, short header) when the load generator reports them.
# Kept narrow enough for an 80-column terminal; every number is in the report.
HEADLINES = {
    "request_throughput": "req/s",
    "output_throughput": "tok/s",
    "output_tput_per_gpu": "tok/s/gpu",
    "median_ttft_ms": "TTFT ms",
    "median_tpot_ms": "TPOT ms",
    "failed": "failed",
}
_POINT_STYLE = {
    PointStatus.MEASURED: "green",
    PointStatus.SKIPPED: "cyan",
    PointStatus.RUNNING: "yellow",
    PointStatus.INVALID: "red",
    PointStatus.ABORTED: "red",
    PointStatus.PENDING: "dim",
}


def _role_status(role: RoleState) -> Text:
    died = [t.exit_code for t in role.tasks if t.exit_code is not None and not t.stopped]
    if died:
        return Text(f"exited {died[0]}", style="red")
    if any(t.stopped for t in role.tasks):
        return Text("stopped", style="dim")
    if role.healthy:
        after = f" ({role.healthy_after_s:.1f} s)" if role.healthy_after_s is not None else ""
        return Text("healthy" + after, style="green")
    if any(t.pid for t in role.tasks):
        return Text("starting", style="yellow")
    return Text("waiting", style="dim")


def roles_table(state: RunState) -> Table:
    table = Table(title=None, expand=False, box=None, padding=(0, 1))
    for column in ("role", "nodes", "ports", "pid", "status"):
        table.add_column(column)
    for role in state.roles:
        if not role.tasks or role.kind == "bench":  # the load generator runs in-process
            continue
        nodes = ",".join(t.node for t in role.tasks)
        ports = " ".join(f"{k.removesuffix('_port')}={v}" for k, v in role.ports.items())
        pids = ",".join(str(t.pid) for t in role.tasks if t.pid) or "-"
        table.add_row(role.name, nodes, ports, pids, _role_status(role))
    return table


def _metric_columns(points: Iterable[PointState]) -> list[str]:
    present = {key for point in points for key in point.headline}
    ordered = [key for key in HEADLINES if key in present]
    return ordered or sorted(present)[:8]


def _fmt(value: float) -> str:
    """Three significant figures, no exponent: 0.653, 45.3, 731, 13816."""
    size = abs(value)
    if size >= 100 or value == int(value):
        return f"{value:.0f}"
    return f"{value:.1f}" if size >= 10 else f"{value:.2f}"


def points_table(points: Sequence[PointState], *, title: str | None = None) -> Table:
    columns = _metric_columns(points)
    table = Table(
        title=Text(title) if title else None,
        title_justify="left",
        padding=(0, 1),
        box=box.SIMPLE_HEAD,
    )
    table.add_column("point", no_wrap=True)
    table.add_column("status", no_wrap=True)
    for column in columns:
        table.add_column(HEADLINES.get(column, column), justify="right", no_wrap=True)
    if columns:
        table.caption = "tok/s: output tokens per second; TTFT, TPOT: medians"
    for point in points:
        style = _POINT_STYLE.get(point.status, "")
        cells = [_fmt(point.headline[c]) if c in point.headline else "" for c in columns]
        shown = point.status.value
        if point.attempts > 1:  # measured again after a role stopped serving
            shown += f" ({point.attempts} tries)"
        table.add_row(point.key, Text(shown, style=style), *cells)
    return table


def status_line(state: RunState, now: float | None = None) -> Text:
    now = now or time.time()
    elapsed = now - state.started_at
    text = Text()
    text.append(f"{state.name} ", style="bold")
    text.append(f"[{state.selector}] ", style="dim")
    if state.simulated:
        text.append("SIMULATED ", style="magenta")
    points = f"points {state.points_done}/{len(state.points)}"
    text.append(f"phase {state.phase.value}  {points}  {elapsed:5.1f} s")
    if state.current_point:
        running = next((p for p in state.points if p.key == state.current_point), None)
        since = now - running.started_at if running and running.started_at else 0
        expected = expected_seconds(running, state.points) if running else None
        of = f" of ~{duration_text(expected)}" if expected else ""
        text.append(f"  measuring {state.current_point} ({since:.1f} s{of})", style="yellow")
        eta = sweep_eta(state.points, now)
        if eta is not None:
            text.append(f"  ETA {duration_text(eta)}", style="bold")
    if state.failure is not None and state.status is not RunStatus.CANCELLED:
        text.append(f"\n{state.failure.reason}", style="red")
    return text


class LiveView:
    """Feeds orchestrator updates into a rich `Live`; refreshes itself for the clock."""

    def __init__(self, console: Console) -> None:
        self._state: RunState | None = None
        self._lock = threading.Lock()
        self._live = Live(
            Text("starting..."),
            console=console,
            refresh_per_second=4,
            transient=True,  # the results table printed afterwards replaces it
            get_renderable=self._render,
        )

    def _render(self) -> RenderableType:
        with self._lock:
            state = self._state
        if state is None:
            return Text("starting...")
        return Group(status_line(state), roles_table(state), points_table(state.points))

    def update(self, state: RunState) -> None:
        with self._lock:
            self._state = state

    def __enter__(self) -> LiveView:
        self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._live.refresh()
        self._live.__exit__(None, None, None)
