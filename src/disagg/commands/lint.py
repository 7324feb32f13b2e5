"""`disagg lint PATH... [--fix] [--json]`: fragile YAML and recipes that cannot run as written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from disagg.commands.options import CLUSTER_HELP
from disagg.console import styled

if TYPE_CHECKING:
    from disagg.recipe.lint import Finding, LintReport

# Plain lines with typer's colour, so that lint does not load rich (a tenth of its start).
_STYLE: dict[str, dict[str, Any]] = {
    "error": {"fg": "red", "bold": True},
    "warning": {"fg": "yellow"},
    "info": {"fg": "cyan"},
}


def _print_human(report: LintReport, show_info: bool) -> None:
    from disagg.recipe.lint import Severity

    shown = [f for f in report.findings if show_info or f.severity is not Severity.INFO]
    current = None
    for finding in shown:
        if finding.file != current:
            current = finding.file
            typer.echo("\n" + styled(current, bold=True))
        _print_finding(finding)
    errors, warnings = report.count(Severity.ERROR), report.count(Severity.WARNING)
    info = report.count(Severity.INFO)
    rules = ", ".join(f"{rule}: {n}" for rule, n in report.by_rule().items()) or "none"
    hidden = "" if show_info or not info else " (--info shows them)"
    typer.echo(
        f"\n{len(report.files)} file(s): {errors} error(s), {warnings} warning(s), "
        f"{info} info{hidden}; by rule: {rules}"
    )


def _print_finding(finding: Finding) -> None:
    severity = styled(str(finding.severity), **_STYLE[str(finding.severity)])
    typer.echo(f"{finding.where}: {styled(finding.rule, bold=True)} {severity}: {finding.message}")
    for loc in finding.locations[1:]:
        block = f" in {loc.block}" if loc.block else ""
        typer.echo(f"    {loc}: {loc.role}{block}")
    if finding.hint:
        typer.echo("    " + styled(f"hint: {finding.hint}", dim=True))


def _fix(paths: list[Path], err: bool) -> None:
    from disagg.recipe.lint.fix import fix_file
    from disagg.recipe.lint.runner import expand_paths

    files, _ = expand_paths(paths)
    for path in files:
        try:
            result = fix_file(path)
        except (OSError, UnicodeDecodeError):
            continue  # reported as DA000 by the lint pass that follows
        if result.changed:
            moved = ", ".join("&" + m for m in result.moved)
            typer.echo(
                f"fixed {path}: moved {moved} into x-shared; every variant expands as before",
                err=err,
            )
        elif result.reason:
            typer.echo(f"not fixed {path}: {result.reason}", err=err)


def register(app: typer.Typer) -> None:
    """Add `lint` to the app."""

    @app.command()
    def lint(
        paths: list[Path] = typer.Argument(..., help="Recipe files or directories (*.yaml)."),
        fix: bool = typer.Option(
            False, "--fix", help="Hoist cross-variant anchors (DA001) into x-shared, verified."
        ),
        as_json: bool = typer.Option(False, "--json", help="Print findings as a JSON list."),
        show_info: bool = typer.Option(False, "--info", help="Also print info notes."),
        cluster: Path | None = typer.Option(
            None,
            "--cluster",
            "-c",
            help=CLUSTER_HELP + "; as for `disagg plan`, an srtslurm.yaml is found if not given",
        ),
    ) -> None:
        """Find fragile YAML and inconsistent settings. Exit 0 clean, 1 findings, 2 unreadable.

        Rules: anchors shared across variant blocks, undefined aliases, long copies,
        --export commas, GPU/parallelism/concurrency consistency, and what `disagg plan`
        would refuse, planned on the cluster profile plan would use.
        """
        from disagg.plan.from_recipe import load_cluster
        from disagg.recipe.lint import lint_paths

        if fix:
            _fix(paths, err=as_json)
        report = lint_paths(paths, load_cluster(cluster))
        if as_json:
            print(json.dumps([f.to_json() for f in report.findings], indent=2))
        else:
            _print_human(report, show_info)
        raise typer.Exit(report.exit_code)
