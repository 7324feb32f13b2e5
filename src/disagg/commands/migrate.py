"""`disagg migrate`: srt-slurm v1 recipes -> `schema: 2`, written only when every variant plans
identically before and after."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from disagg.commands.options import CLUSTER_HELP
from disagg.errors import EXIT_FINDINGS, EXIT_USAGE


def register(app: typer.Typer) -> None:
    """Add `migrate` to the app."""

    @app.command("migrate")
    def migrate(
        recipes: Annotated[
            list[Path], typer.Argument(help="v1 recipe files or directories", show_default=False)
        ],
        in_place: Annotated[
            bool, typer.Option("--in-place", "-i", help="rewrite each file (atomically)")
        ] = False,
        output: Annotated[
            Path | None,
            typer.Option("--out", "--output", "-o", help="write the one migrated file here"),
        ] = None,
        check: Annotated[
            bool, typer.Option("--check", help="write nothing; exit 1 if a file would change")
        ] = False,
        cluster: Annotated[Path | None, typer.Option("--cluster", "-c", help=CLUSTER_HELP)] = None,
    ) -> None:
        """Rewrite v1 recipes in the schema 2 layout, keeping comments, key order and anchors.

        Every variant is planned before and after in the same run; a file whose plans
        would differ is not written. Without --in-place or --out the new text is
        printed. Exit 0 done (or nothing to do); 1 with --check when a file would
        change; 2 bad input or a file that cannot be migrated faithfully.
        """
        from rich.markup import escape

        from disagg.atomic import write_text
        from disagg.commands.options import out_file
        from disagg.console import make_console
        from disagg.errors import DisaggError
        from disagg.plan.from_recipe import expand_targets, load_cluster
        from disagg.recipe.migrate import migrate_file, plan_outcomes

        err = make_console(stderr=True, soft_wrap=True)
        files = [Path(p) for p in expand_targets([str(p) for p in recipes])]
        if output is not None and (in_place or len(files) != 1):
            raise DisaggError(
                "--out takes exactly one recipe and no --in-place",
                hint="use --in-place for several files",
            )
        out_file(output)
        profile = load_cluster(cluster)
        failed = changed = 0
        for path in files:
            try:
                result = migrate_file(path, lambda t, f: plan_outcomes(t, f, profile))
            except DisaggError as exc:
                err.print(
                    f"[bold red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True
                )
                failed += 1
                continue
            if not result.changed or result.text is None:
                why = "an srt-slurm cluster config" if result.not_recipe else "schema 2 already"
                err.print(f"{escape(str(path))}: {why}, left alone", highlight=False)
                continue
            changed += 1
            if check:
                err.print(f"{escape(str(path))}: would migrate", highlight=False)
            elif in_place or output is not None:
                write_text(output or path, result.text)
                note = f"{result.variants} variant(s) plan identically"
                err.print(f"{escape(str(output or path))}: migrated, {note}", highlight=False)
            else:
                typer.echo(result.text, nl=False)
        err.print(f"{len(files)} file(s): {changed} to migrate, {failed} failed", highlight=False)
        if failed:
            raise typer.Exit(EXIT_USAGE)
        if check and changed:
            raise typer.Exit(EXIT_FINDINGS)
