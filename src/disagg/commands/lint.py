"""`disagg lint PATH... [--fix] [--json]`: fragile YAML and recipes that cannot run as written.

Exit codes: 0 clean (info notes allowed), 1 errors or warnings, 2 unreadable input.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from disagg.commands.options import CLUSTER_HELP

if TYPE_CHECKING:  # imported when a command runs, so `disagg --help` stays fast
    from rich.console import Console

    from disagg.recipe.lint import Finding, LintReport
    from disagg.recipe.lint.fix import FixResult

_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def _print_human(report: LintReport, console: Console, show_info: bool) -> None:
    from rich.markup import escape

    from disagg.recipe.lint import Severity

    shown = [f for f in report.findings if show_info or f.severity is not Severity.INFO]
    current = None
    for finding in shown:
        if finding.file != current:
            current = finding.file
            console.print(f"\n[bold]{escape(current)}[/]")
        _print_finding(finding, console)
    errors, warnings = report.count(Severity.ERROR), report.count(Severity.WARNING)
    info = report.count(Severity.INFO)
    rules = ", ".join(f"{rule}: {n}" for rule, n in report.by_rule().items()) or "none"
    hidden = "" if show_info or not info else " (--info shows them)"
    console.print(
        f"\n{len(report.files)} file(s): {errors} error(s), {warnings} warning(s), "
        f"{info} info{hidden}; by rule: {rules}",
        highlight=False,
        soft_wrap=True,
    )


def _print_finding(finding: Finding, console: Console) -> None:
    from rich.markup import escape

    where = finding.where
    style = _STYLE[str(finding.severity)]
    console.print(
        f"{escape(str(where))}: [bold]{finding.rule}[/] [{style}]{finding.severity}[/]: "
        f"{escape(finding.message)}",
        highlight=False,
        soft_wrap=True,
    )
    for loc in finding.locations[1:]:
        block = f" in {loc.block}" if loc.block else ""
        console.print(
            f"    {escape(str(loc))}: {loc.role}{escape(block)}", highlight=False, soft_wrap=True
        )
    if finding.hint:
        console.print(f"    [dim]hint: {escape(finding.hint)}[/]", highlight=False, soft_wrap=True)


def _fix(paths: list[Path], console: Console) -> list[FixResult]:
    from rich.markup import escape

    from disagg.recipe.lint.fix import fix_file
    from disagg.recipe.lint.runner import expand_paths

    files, _ = expand_paths(paths)
    results = []
    for path in files:
        try:
            result = fix_file(path)
        except (OSError, UnicodeDecodeError):
            continue  # reported as DA000 by the lint pass that follows
        if result.changed:
            console.print(
                f"fixed {escape(str(path))}: moved {', '.join('&' + m for m in result.moved)} "
                "into x-shared; every variant expands as before",
                highlight=False,
                soft_wrap=True,
            )
        elif result.reason:
            console.print(f"not fixed {escape(str(path))}: {escape(result.reason)}", soft_wrap=True)
        results.append(result)
    return results


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
        from disagg.console import make_console
        from disagg.plan.from_recipe import load_cluster
        from disagg.recipe.lint import lint_paths

        stderr = make_console(stderr=True)
        if fix:
            _fix(paths, stderr if as_json else make_console())
        report = lint_paths(paths, load_cluster(cluster))
        if as_json:
            print(json.dumps([f.to_json() for f in report.findings], indent=2))
        else:
            _print_human(report, make_console(), show_info)
        raise typer.Exit(report.exit_code)
