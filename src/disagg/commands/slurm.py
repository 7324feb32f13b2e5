"""`disagg submit`, `status` and `cancel`: runs as Slurm jobs, one job per variant."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from disagg.commands.options import CLUSTER_HELP, out_dir, writable_dir
from disagg.console import make_console
from disagg.errors import EXIT_FINDINGS, EXIT_USAGE, DisaggError

if TYPE_CHECKING:  # imported when a command runs, so `disagg --help` stays fast
    from rich.console import Group

    from disagg.plan.model import Plan

SUBMIT_HELP = """Pre-flight, render job.sbatch into each variant's run directory, and sbatch it.

Refused before anything is submitted when the recipe has lint errors, the model is
neither complete nor listed for staging, a container image file is missing, or the
partition cannot hold the job. --resume RUN_DIR submits an existing run again: points
that already have a valid result are not measured twice; after a TIMEOUT, give it more
time with --time-limit (the results already measured stay valid: a time limit changes
no number).
"""


def register(app: typer.Typer) -> None:
    """Add `submit`, `status` and `cancel`."""
    app.command("submit", help=SUBMIT_HELP)(submit_command)
    app.command("status")(status_command)
    app.command("cancel")(cancel_command)


def submit_command(
    recipe: Annotated[
        str | None, typer.Argument(help="RECIPE.yaml[:SELECTOR]; omit with --resume")
    ] = None,
    cluster: Annotated[str | None, typer.Option("--cluster", "-c", help=CLUSTER_HELP)] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="write plan.json and job.sbatch, submit nothing")
    ] = False,
    resume: Annotated[
        Path | None, typer.Option("--resume", help="submit this existing run directory again")
    ] = None,
    out: Annotated[
        str | None,
        typer.Option("--out", "-o", metavar="DIR", help="run directory (one subdir per variant)"),
    ] = None,
    time_limit: Annotated[
        str | None,
        typer.Option(
            "--time-limit",
            "-t",
            help="Slurm time limit (MM, HH:MM:SS, D-HH:MM:SS) instead of the plan's",
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="print selector, job_id, run_dir per variant")
    ] = False,
) -> None:
    from disagg.launch import slurm
    from disagg.launch.slurm_preflight import check_plans

    console = make_console(stderr=True)
    out_path = out_dir(out)
    if resume is not None:
        if recipe is not None:
            raise DisaggError("give either a recipe or --resume RUN_DIR, not both")
        run_dir = resume.resolve()
        from disagg.plan.model import Plan

        plans = [Plan.read(run_dir)]
        writable_dir(run_dir, what="--resume")
        _refuse_if_active(run_dir)
        run_dirs = [run_dir]
    elif recipe is None:
        raise DisaggError("missing RECIPE[:SELECTOR]", hint="or resume a run: --resume RUN_DIR")
    else:
        from disagg.commands.run import run_dirs_for
        from disagg.plan.from_recipe import plans_for, run_root

        plans = plans_for([recipe], cluster)
        run_dirs = [path.resolve() for path in run_dirs_for(plans, out_path, run_root(cluster))]
    if time_limit is not None:
        plans = [_with_time_limit(plan, time_limit) for plan in plans]

    reachable = _slurm_reachable()
    if not reachable and not dry_run:
        raise DisaggError(
            "Slurm is not reachable (sinfo failed)",
            hint="run on a login node, start the local test cluster (scripts/slurm-up), "
            "or use --dry-run to only write the job files",
        )
    from disagg.plan.from_recipe import load_cluster

    # lint's DA013 plans again, on the profile these plans were made on
    checked = check_plans(plans, cluster=reachable, profile=load_cluster(cluster))
    if not reachable:
        checked.warnings.append("Slurm is not reachable: partition and node checks skipped")
    for warning in checked.warnings:
        console.print(f"[yellow]warning:[/] {warning}", highlight=False)
    if checked.errors:
        raise DisaggError(
            "submission refused, nothing was submitted:\n  - " + "\n  - ".join(checked.errors),
            hint="fix the recipe or the cluster profile, then submit again",
            exit_code=EXIT_USAGE,
        )

    from disagg.launch.runlock import hold_run_dir
    from disagg.launch.runner import prepare_run_dir

    rows: list[dict[str, Any]] = []
    for plan, run_dir in zip(plans, run_dirs, strict=True):
        # held while the files are written and sbatch answers; then the job's to take
        lock = hold_run_dir(run_dir, log=lambda line: console.print(line, markup=False))
        try:
            if resume is None:
                prepare_run_dir(plan, run_dir)
            elif time_limit is not None:
                plan.write(run_dir)  # the job reads its limits from plan.json
            slurm.write_job_script(plan, run_dir)
            job_id = None if dry_run else slurm.submit(run_dir)
        finally:
            lock.release()
        rows.append({"selector": plan.selector, "job_id": job_id, "run_dir": str(run_dir)})
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    from rich.table import Table

    table = Table(title="dry run: nothing submitted" if dry_run else "submitted")
    for column in ("selector", "job", "run directory"):
        table.add_column(column)
    for row in rows:
        table.add_row(row["selector"], row["job_id"] or "-", row["run_dir"])
    make_console().print(table)


def _with_time_limit(plan: Plan, text: str) -> Plan:
    """The plan with another Slurm time limit, and the run limit derived from it."""
    from disagg.plan.limits import retimed_limits, slurm_seconds

    if slurm_seconds(text) is None:
        raise DisaggError(
            f"--time-limit {text!r} is not a Slurm time limit",
            hint="write minutes (90), HH:MM:SS (01:30:00) or D-HH:MM:SS (1-00:00:00)",
            exit_code=EXIT_USAGE,
        )
    slurm = plan.slurm.model_copy(update={"time_limit": text})
    limits = retimed_limits(plan.limits, plan.config.get("limits"), text)
    return plan.model_copy(update={"slurm": slurm, "limits": limits})


def _slurm_reachable() -> bool:
    from disagg.launch import slurmctl

    try:
        slurmctl.run(["sinfo", "-h", "-o", "%P"], timeout_s=15.0)
    except DisaggError:
        return False
    return True


def _refuse_if_active(run_dir: Path) -> None:
    """A run directory whose job still waits or runs must not get a second job."""
    from disagg.launch import slurm

    view = slurm.view(str(run_dir))
    if view.job is not None and not view.job.finished:
        raise DisaggError(
            f"{run_dir}: job {view.job_id} is still {view.job.state.lower()}",
            hint=f"wait for it, or stop it first: disagg cancel {run_dir}",
        )


def status_command(
    targets: Annotated[
        list[str] | None, typer.Argument(help="run directories or job ids (default: your jobs)")
    ] = None,
    watch: Annotated[bool, typer.Option("--watch", "-w", help="refresh until all end")] = False,
    interval: Annotated[float, typer.Option("--interval", help="seconds between refreshes")] = 2.0,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object per run")] = False,
) -> None:
    """Job state (with the pending reason), phase and points done; the failed role's log tail.

    A job that reached its time limit shows as TIMEOUT. Exit status: 0 nothing failed,
    1 a run failed, timed out or was cancelled.
    """
    from contextlib import nullcontext

    from rich.live import Live

    from disagg.launch import slurm

    names = targets or _own_runs()
    if not names:
        if as_json:
            print("[]")
        else:
            make_console(stderr=True).print("no disagg jobs in the queue")
        return
    live = Live(console=make_console(), auto_refresh=False) if watch and not as_json else None
    with live or nullcontext():
        while True:
            views = [slurm.view(name) for name in names]
            if live is not None:
                live.update(_render_views(views), refresh=True)
            if not watch or all(v.finished for v in views):
                break
            time.sleep(interval)
    if as_json:
        rows = [v.to_json() for v in views]
        single = targets is not None and len(targets) == 1
        print(json.dumps(rows[0] if single else rows, indent=2))
    elif live is None:
        make_console().print(_render_views(views))
    if any(
        v.run_status in ("failed", "cancelled", slurm.TIMEOUT, slurm.ORCHESTRATOR_DEAD)
        for v in views
    ):
        raise typer.Exit(EXIT_FINDINGS)


def _own_runs() -> list[str]:
    """Run directories of queued or recent jobs that were submitted by disagg."""
    from disagg.launch import slurmctl

    data = json.loads(slurmctl.run(["squeue", "--json"]))
    workdirs = (job.get("current_working_directory") for job in data.get("jobs", []))
    return [str(w) for w in workdirs if w and (Path(w) / "plan.json").is_file()]


_STATUS_STYLE = {
    "completed": "green",
    "failed": "red",
    "dead": "red",
    "cancelled": "yellow",
    "timeout": "red",
    "pending": "cyan",
    "running": "blue",
}


def _render_views(views: list[Any]) -> Group:
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    table = Table()
    for column in ("run", "job", "slurm state", "status", "phase", "points"):
        table.add_column(column, overflow="fold")
    details: list[Any] = []
    for view in views:
        row = view.to_json()
        state = row["job_state"] or "-"
        if row["reason"]:
            state += f" ({row['reason']})"
        shown = "TIMEOUT (time limit reached)" if row["status"] == "timeout" else row["status"]
        status = Text(shown, style=_STATUS_STYLE.get(row["status"], ""))
        points = f"{row['points_done']}/{row['points_total']}" if row["points_total"] else "-"
        run = row["run_dir"] or row["target"]
        table.add_row(run, row["job_id"] or "-", state, status, row["phase"] or "-", points)
        if row["status"] == "pending" and (row["reason"] or row["unavailable_nodes"]):
            why = row["reason"] or "waiting"
            if row["unavailable_nodes"]:
                why += "; unavailable: " + ", ".join(row["unavailable_nodes"])
            details.append(Text(f"job {row['job_id']} waits: {why}", style="cyan"))
        if row["status"] == "dead":
            details.append(
                Text(
                    f"{run}: its orchestrator (pid {row['orchestrator_pid']}) died without "
                    "stopping the run; run it again to resume (leftover roles are stopped)",
                    style="red",
                )
            )
        failure = row["failure"]
        if failure and row["status"] in ("failed", "cancelled", "timeout"):
            reason, role = failure["reason"], failure.get("role")
            named = f" (role {role})" if role and role not in reason else ""
            details.append(Text(f"{run}: {reason}{named}", style="red"))
            if failure.get("log_tail"):
                details.append(Text(f"last lines of {failure['log']}:", style="dim"))
                details += [Text(f"  | {line}") for line in failure["log_tail"]]
    return Group(table, *details)


def cancel_command(
    target: Annotated[str, typer.Argument(help="run directory or job id")],
    as_json: Annotated[bool, typer.Option("--json", help="print the run's status as JSON")] = False,
) -> None:
    """Cancel a run's job: the orchestrator stops the roles and keeps measured points."""
    from disagg.launch import slurm

    view = slurm.cancel(target)
    if as_json:
        print(json.dumps(view.to_json(), indent=2))
        return
    where = f" ({view.run_dir})" if view.run_dir else ""
    make_console().print(f"cancelled job {view.job_id}{where}")
