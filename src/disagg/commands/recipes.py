"""`disagg plan` (recipe -> placed variants) and `disagg schema` (the recipe JSON Schema)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from disagg.console import make_console

if TYPE_CHECKING:
    pass


def register(app: typer.Typer) -> None:
    """Add `plan` and `schema` to the app."""

    @app.command("plan")
    def plan(
        recipes: Annotated[
            list[str],
            typer.Argument(
                metavar="RECIPE[:SELECTOR]...",
                help="recipe file, optionally `:base`, `:override_x`, `:zip_override_x[2]`, "
                "`:*glob*`",
                show_default=False,
            ),
        ],
        cluster: Annotated[
            Path | None,
            typer.Option("--cluster", "-c", help="cluster profile YAML (aliases, partition...)"),
        ] = None,
        as_json: Annotated[
            bool, typer.Option("--json", help='print {"variants": [plan, ...]} for scripts')
        ] = False,
    ) -> None:
        """Place each variant on nodes: roles, GPUs, ports, load points, models, commands."""
        from disagg.plan.from_recipe import plans_for

        plans = plans_for(recipes, cluster)
        if as_json:
            payload = {"variants": [p.model_dump(mode="json") for p in plans]}
            typer.echo(json.dumps(payload, indent=2))
            return

        from disagg.plan.show import print_plans

        print_plans(plans, make_console())

    @app.command("schema")
    def schema(
        out: Annotated[
            Path | None, typer.Option("--out", "-o", help="write to this file instead of stdout")
        ] = None,
    ) -> None:
        """Print the recipe JSON Schema (for editor completion and checking)."""
        from disagg.recipe.schema import recipe_file_json_schema

        text = json.dumps(recipe_file_json_schema(), indent=2) + "\n"
        if out is None:
            typer.echo(text, nl=False)
            return
        from disagg.atomic import write_text

        write_text(out, text)
