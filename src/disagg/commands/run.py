"""`disagg run` (plan + run locally, live view, results table) and `disagg logs`."""

from __future__ import annotations

import json
import os
import re
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from disagg.commands.options import CLUSTER_HELP, out_dir, writable_dir
from disagg.console import make_console
from disagg.errors import DisaggError
from disagg.probe import probe, shortened

RUN_HELP = """Plan a recipe's variants and run each on this machine with the local executor.

Each variant gets a run directory (plan.json, logs/, results/, state.json,
summary.json). Re-running with the same --out resumes: points that already have a
valid result are skipped. Exit status: 0 every point valid, 1 a run failed,
2 bad input, 3 cancelled.
"""


def register(app: typer.Typer) -> None:
    """Add `run` and `logs`."""
    app.command("run", help=RUN_HELP)(run_command)
    app.command("logs")(logs_command)


def _slug(text: str) -> str:
    """One path component made of the name's safe characters; never `.`, `..` or hidden
    (a recipe named `..` must not place its runs beside the results root)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.") or "variant"


def run_dirs_for(plans: list[Any], out: Path | None, root: Path) -> list[Path]:
    """`--out DIR` (one subdirectory per variant when several), else ROOT/<name>/<slug>-<UTC>.

    ROOT is the cluster profile's `results_root` (on the shared filesystem) or ./runs;
    whatever a recipe's name, its run directories stay below it.
    """
    if out is not None:
        dirs = [out] if len(plans) == 1 else [out / _slug(plan.variant) for plan in plans]
    else:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        dirs = [root / _slug(plan.name) / f"{_slug(plan.variant)}-{stamp}" for plan in plans]
        top = os.path.normpath(root)
        for path in dirs:
            if os.path.commonpath([top, os.path.normpath(path)]) != top:
                raise DisaggError(f"run directory {path} would not be below {root}")
    for path in dirs:  # before any variant runs: none is left half-started
        writable_dir(path, what="run directory")
    return dirs


def run_command(
    recipe: Annotated[str, typer.Argument(help="RECIPE.yaml[:SELECTOR], e.g. sweep.yaml:base")],
    local: Annotated[
        bool, typer.Option("--local", help="run here with the local executor")
    ] = False,
    out: Annotated[
        str | None,
        typer.Option("--out", "-o", metavar="DIR", help="run directory (one subdir per variant)"),
    ] = None,
    cluster: Annotated[str | None, typer.Option("--cluster", "-c", help=CLUSTER_HELP)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object per run")] = False,
    predict: Annotated[
        bool,
        typer.Option(
            "--predict",
            help="time every worker with AIConfigurator's performance model (docs/predict.md)",
        ),
    ] = False,
    accept_rate: Annotated[
        float | None,
        typer.Option(
            "--predict-accept-rate",
            min=0.0,
            max=1.0,
            help="chance each speculative draft token is accepted [the model's published rate]",
        ),
    ] = None,
    predict_model: Annotated[
        str | None,
        typer.Option(
            "--predict-model",
            help="the model's name (org/name) for the performance model, when the recipe "
            "names it by an alias",
        ),
    ] = None,
    time_scale: Annotated[
        float,
        typer.Option(
            "--predict-time-scale",
            min=0.01,
            help="run the predicted engines this many times faster (below 1: slower, for "
            "thousands of streams on a small machine); results are stretched back",
        ),
    ] = 1.0,
) -> None:
    from disagg.launch.runner import run_locally
    from disagg.plan.from_recipe import plans_for, run_root
    from disagg.predict.mapping import PredictOptions

    out_path = out_dir(out)
    options = None
    if predict:
        from disagg.predict import require

        require()
        options = PredictOptions(
            accept_rate=accept_rate, time_scale=time_scale, model=predict_model
        )
    elif accept_rate is not None or time_scale != 1.0 or predict_model is not None:
        raise DisaggError(
            "--predict-accept-rate, --predict-model and --predict-time-scale apply to "
            "predicted runs",
            hint="add --predict",
        )
    plans = plans_for([recipe], cluster, options)
    if any(plan.predicted for plan in plans):
        from disagg.predict.check import check_plans

        check_plans(plans)
    if not local and not all(plan.simulated for plan in plans):
        raise DisaggError(
            "this recipe runs a real engine; `disagg run` needs --local to run it on this machine",
            hint="submit it to a cluster with `disagg submit`, or pass --local",
        )
    _refuse_uninstalled_frontends(plans)
    console = make_console(stderr=as_json)
    results: list[dict[str, Any]] = []
    worst = 0
    for plan, run_dir in zip(plans, run_dirs_for(plans, out_path, run_root(cluster)), strict=True):
        summary, report = run_locally(plan, run_dir, console=console, quiet=as_json)
        worst = max(worst, summary.exit_code)
        results.append(
            {
                "selector": plan.selector,
                "run_dir": str(run_dir),
                "status": summary.status.value,
                "exit_code": summary.exit_code,
                "reason": summary.reason,
                "report": str(report) if report else None,
                "points": [p.model_dump(mode="json") for p in summary.points],
            }
        )
        if summary.status.value == "cancelled":
            break
    if as_json:
        print(json.dumps(results if len(results) != 1 else results[0], indent=2))
    raise typer.Exit(worst)


def _refuse_uninstalled_frontends(plans: list[Any]) -> None:
    """A real router that is not installed here (atomesh, tilert-router) is refused by name
    before any run directory is made, not started to fail."""
    from disagg.frontends import local_refusal

    for plan in plans:
        why = local_refusal(plan.frontend, plan.simulated)
        if why is not None:
            raise DisaggError(f"{plan.selector}: {why}")


def logs_command(
    run_dir: Annotated[Path, typer.Argument(help="run directory")],
    role: Annotated[
        str | None,
        typer.Option("--role", "-r", help="role (decode-0, router, ...), `orchestrator` or `all`"),
    ] = None,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="keep printing until the run ends")
    ] = False,
    lines: Annotated[int, typer.Option("--lines", "-n", help="lines from the end", min=0)] = 50,
) -> None:
    """Show a run's logs: the orchestrator's by default, or one role's (every node)."""
    from disagg.launch.logs import cursors_for, role_logs, tail
    from disagg.launch.logs import follow as follow_logs

    if not probe(run_dir).is_dir:
        raise DisaggError(f"{shortened(run_dir)}: no such run directory")
    available = role_logs(run_dir)
    if not available:
        raise DisaggError(
            f"{run_dir}: no logs yet", hint="logs appear in RUN_DIR/logs once the run starts"
        )
    wanted = role or "orchestrator"
    if wanted == "all":
        paths = [p for group in available.values() for p in group]
    elif wanted in available:
        paths = available[wanted]
    else:
        from difflib import get_close_matches

        close = get_close_matches(wanted, list(available), n=1)
        raise DisaggError(
            f"{run_dir}: no log for role {wanted!r}"
            + (f" (did you mean {close[0]!r}?)" if close else ""),
            hint=f"roles with logs: {', '.join(sorted(available))}",
        )
    prefixed = len(paths) > 1
    # Positions first: a line written while the tails print is followed, not lost.
    cursors = cursors_for(paths, prefixed=prefixed)
    out = sys.stdout
    for cursor in cursors:
        if prefixed:
            out.write(f"==> {cursor.path} <==\n")
        for line in tail(cursor.path, lines, end=cursor.offset):
            out.write(line + "\n")
    out.flush()
    if follow:

        def emit(line: str) -> None:
            out.write(line + "\n")
            out.flush()

        try:
            follow_logs(run_dir, cursors, emit)
        except KeyboardInterrupt:
            return
