"""`disagg check-model` and `disagg stage`: is a model complete, and make it so."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from disagg.commands.options import CLUSTER_HELP
from disagg.console import LazyConsole
from disagg.errors import EXIT_USAGE, DisaggError
from disagg.probe import probe

if TYPE_CHECKING:  # imported when a command runs, so `disagg --help` stays fast
    from disagg.plan.model import Plan, StagingPlan
    from disagg.staging import checkpoint as ck

console = LazyConsole(soft_wrap=True)
err_console = LazyConsole(stderr=True, soft_wrap=True)


def check_model(
    target: Annotated[
        str, typer.Argument(help="checkpoint directory, cache entry, or repo id org/name")
    ],
    revision: Annotated[
        str | None, typer.Option("--revision", help="branch, tag or commit (default main)")
    ] = None,
    cache: Annotated[
        Path | None,
        typer.Option("--cache", help="HF_HOME-style cache root (default: HF_HUB_CACHE / HF_HOME)"),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print a JSON report")] = False,
) -> None:
    """Check that a model checkpoint is complete. Exit 0 complete, 1 incomplete, 2 bad input."""
    from disagg.staging import checkpoint as ck

    try:
        report = ck.check(target, revision=revision, cache=str(cache) if cache else None)
    except ck.UnusableInput as exc:
        if as_json:
            print(json.dumps({"target": target, "complete": False, "error": str(exc)}))
            raise typer.Exit(EXIT_USAGE) from None
        raise DisaggError(str(exc), hint="pass a checkpoint directory or a repo id") from None
    if as_json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print_report(report)
    raise typer.Exit(report.exit_code)


def print_report(report: ck.Report) -> None:
    from disagg.staging.progress import human_bytes

    where = report.directory or report.target
    if report.complete:
        console.print(
            f"[bold green]complete[/] {where}\n"
            f"  {report.safetensors_files} safetensors files, {human_bytes(report.weight_bytes)}"
            f" (read {human_bytes(report.bytes_read)} of headers)",
            highlight=False,
        )
        return
    console.print(
        f"[bold red]incomplete[/] {where}: {len(report.problems)} problem(s)", highlight=False
    )
    for problem in report.problems:
        label = f"{problem.path}: " if problem.path else ""
        console.print(
            f"  [red]-[/] {label}{problem.detail} [dim]({problem.kind})[/]", highlight=False
        )
    for hint in report.hints():
        console.print(f"[bold]hint:[/] {hint}", highlight=False)


def load_plans(target: str, cluster: str | None) -> list[Plan]:
    """Plans for `RECIPE[:SELECTOR]`, or the plan of a run directory / plan.json."""
    from disagg.plan.model import Plan

    path = Path(target)
    if probe(path).is_dir and (path / "plan.json").is_file():
        path = path / "plan.json"
    if path.suffix == ".json" and probe(path).is_file:
        return [Plan.read_file(path)]
    from disagg.plan.from_recipe import plans_for

    return plans_for([target], cluster)


def _group(plans: list[Plan]) -> list[tuple[StagingPlan, list[str]]]:
    """Merge the variants' staging sections that share a cache, so each repo is staged once."""
    groups: dict[str, tuple[StagingPlan, list[str]]] = {}
    for plan in plans:
        staging = plan.staging
        if staging.skip:
            continue
        key = json.dumps([staging.hf_cache, staging.legacy_roots, staging.allow_download])
        if staging.models or staging.containers:
            if key not in groups:
                empty: dict[str, Any] = {"models": [], "local_path": None, "containers": []}
                groups[key] = (staging.model_copy(update=empty), [])
            merged, selectors = groups[key]
            merged.models.extend(staging.models)
            known = {c.squashfs for c in merged.containers}
            merged.containers.extend(c for c in staging.containers if c.squashfs not in known)
            selectors.append(plan.selector)
        if staging.local_path:
            local = staging.model_copy(update={"models": [], "containers": []})
            groups[f"local:{staging.local_path}"] = (local, [plan.selector])
    return list(groups.values())


def _dry_run_rows(plans: list[Plan]) -> list[dict[str, Any]]:
    """Per variant, the repos it needs and what staging would do, from local state only."""
    from disagg.staging import hfcache
    from disagg.staging.container import is_squashfs
    from disagg.staging.stage import cache_settings

    rows: list[dict[str, Any]] = []
    for plan in plans:
        staging = plan.staging
        settings = cache_settings(staging)
        models = []
        for model in staging.models:
            is_checkpoint = model.purpose != "extra"
            if staging.skip:
                action = "skip (simulated engine)"
            elif hfcache.check_canonical(
                settings.hub, model.repo_id, model.revision, model_files=is_checkpoint
            ).complete:
                action = "present"
            elif hfcache.find_complete_legacy(
                settings.root,
                settings.legacy_roots,
                model.repo_id,
                model.revision,
                model_files=is_checkpoint,
            ):
                action = "link legacy copy"
            elif staging.allow_download:
                action = "download"
            else:
                action = "missing (downloads off)"
            models.append({**model.model_dump(), "action": action})
        containers = [
            {
                "squashfs": c.squashfs,
                "image": c.image,
                "action": "present" if is_squashfs(Path(c.squashfs)) else "import",
            }
            for c in staging.containers
        ]
        rows.append(
            {
                "selector": plan.selector,
                "cache": str(settings.hub),
                "local_path": staging.local_path,
                "models": models,
                "containers": containers,
            }
        )
    return rows


def stage(
    target: Annotated[
        str, typer.Argument(help="RECIPE[:SELECTOR], a run directory or a plan.json")
    ],
    cluster: Annotated[str | None, typer.Option("--cluster", "-c", help=CLUSTER_HELP)] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="list the repos each variant needs; no network")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """Stage (lock, link or download, validate) every model the selected variants need."""
    plans = load_plans(target, cluster)
    if dry_run:
        rows = _dry_run_rows(plans)
        if as_json:
            print(json.dumps({"variants": rows}, indent=2))
        else:
            _print_dry_run(rows)
        return
    from dataclasses import asdict

    from disagg.staging.stage import stage_plan

    log_console = err_console if as_json else console
    staged: list[dict[str, Any]] = []
    for staging, selectors in _group(plans):
        names = ", ".join(selectors[:3]) + (
            f" (+{len(selectors) - 3})" if len(selectors) > 3 else ""
        )
        log_console.print(f"[bold]staging[/] for {names}", highlight=False)
        result = stage_plan(staging, log=lambda line: log_console.print(line, highlight=False))
        staged += [{**asdict(o), "seconds": round(o.seconds, 3)} for o in result.outcomes]
        if staging.local_path and result.main_path:
            staged.append({"local_path": result.main_path, "action": "present"})
        staged += [{"container": path, "action": "present"} for path in result.containers]
    if as_json:
        print(json.dumps({"staged": staged}, indent=2))
    elif not staged:
        console.print("nothing to stage (the selected variants need no model weights)")


def _print_dry_run(rows: list[dict[str, Any]]) -> None:
    """One block per variant: purpose, repo@revision, what staging would do."""
    for row in rows:
        console.print(f"[bold]{row['selector']}[/]  [dim]cache {row['cache']}[/]", highlight=False)
        if row["local_path"]:
            console.print(f"  main   {row['local_path']}  check directory", highlight=False)
        for model in row["models"]:
            repo = f"{model['repo_id']}@{model['revision']}"
            console.print(f"  {model['purpose']:<6} {repo}  {model['action']}", highlight=False)
        for image in row["containers"]:
            line = f"  image  {image['squashfs']}  {image['action']}"
            if image["action"] == "import":
                line += f" from {image['image']}"
            console.print(line, highlight=False)
        if not row["models"] and not row["local_path"] and not row["containers"]:
            console.print("  nothing to stage", highlight=False)


def register(app: typer.Typer) -> None:
    """Add this area's commands to the app."""
    app.command("check-model")(check_model)
    app.command("stage")(stage)
