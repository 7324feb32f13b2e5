"""`disagg plan` (recipe -> placed variants) and `disagg schema` (the recipe JSON Schema)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from disagg.commands.options import CLUSTER_HELP, out_file
from disagg.console import styled


def register(app: typer.Typer) -> None:
    """Add `plan` and `schema` to the app."""

    @app.command("plan")
    def plan(
        recipes: Annotated[
            list[str],
            typer.Argument(
                metavar="RECIPE[:SELECTOR]|DIR...",
                help="recipe file, optionally `:base`, `:override_x`, `:zip_override_x[2]`, "
                "`:*glob*`; or a directory of recipes",
                show_default=False,
            ),
        ],
        cluster: Annotated[
            Path | None,
            typer.Option("--cluster", "-c", help=CLUSTER_HELP),
        ] = None,
        as_json: Annotated[
            bool, typer.Option("--json", help='print {"variants": [plan, ...]} for scripts')
        ] = False,
        bound: Annotated[
            bool,
            typer.Option(
                "--bound",
                help="also every process as it will start: argv, env, node and GPUs "
                "(nodes node0..N-1, ports from the allocator); in JSON each variant's `bound`",
            ),
        ] = False,
    ) -> None:
        """Place each variant on nodes: roles, GPUs, ports, load points, models, commands.

        A directory plans every *.yaml below it; a bad file is reported and the rest go
        on, with a summary line of counts by outcome and engine. Exit 0 every variant
        planned; 1 some are unsupported (listed, the rest planned); 2 bad input in any
        file, or nothing could be planned.
        """
        from disagg.plan.from_recipe import plan_all
        from disagg.redact import redact

        planned = plan_all(recipes, cluster)
        skipped = [
            {"selector": selector, "reason": exc.message} for selector, exc in planned.unsupported
        ]
        errors = [{"selector": target, "error": str(exc)} for target, exc in planned.errors]
        if as_json:
            variants = []
            for p in planned.plans:
                variant = p.model_dump(mode="json")
                if bound:
                    from disagg.launch.bound import bind_plan

                    variant["bound"] = bind_plan(p).model_dump(mode="json")
                variants.append(redact(variant))
            payload = {
                "variants": variants,
                "unsupported": skipped,
                "errors": errors,
                "not_recipes": [{"file": f, "reason": why} for f, why in planned.skipped],
                "summary": planned.summary(),
            }
            typer.echo(json.dumps(payload, indent=2))
        else:
            from disagg.plan.show import print_plans

            print_plans(planned.plans)
            if bound:
                from disagg.launch.bound import bind_plan, bound_lines

                for p in planned.plans:
                    typer.echo("\n".join(bound_lines(p, bind_plan(p))))
            for selector, exc in planned.unsupported:
                where = f"{exc.location}: " if exc.location else f"{selector}: "
                typer.echo(f"{where}{exc.message}", err=True)
            error_label = styled("error:", fg="red", bold=True)
            for _, error in planned.errors:
                typer.echo(f"{error_label} {error}", err=True)
            for file, why in planned.skipped:
                typer.echo(f"{file}: skipped, {why}", err=True)
            several = planned.files > 1 or len(planned.plans) + len(skipped) > 1
            if several and (skipped or planned.errors or planned.skipped or planned.files > 1):
                typer.echo(planned.summary(), err=True)
        if planned.exit_code:
            raise typer.Exit(planned.exit_code)

    @app.command("schema")
    def schema(
        out: Annotated[
            Path | None, typer.Option("--out", "-o", help="write to this file instead of stdout")
        ] = None,
    ) -> None:
        """Print the recipe JSON Schema (for editor completion and checking)."""
        from disagg.recipe.file_schema import recipe_file_json_schema

        out_file(out)
        text = json.dumps(recipe_file_json_schema(), indent=2) + "\n"
        if out is None:
            typer.echo(text, nl=False)
            return
        from disagg.atomic import write_text

        write_text(out, text)
