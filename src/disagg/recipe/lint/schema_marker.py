"""DA014: a recipe in the schema-2 layout (`engine`, `roles`) that does not say `schema: 2`.

disagg infers the dialect from those keys, but srt-slurm 2.x refuses a recipe without
the marker and v1 refuses the keys, so the file runs here and nowhere else.
"""

from __future__ import annotations

from disagg.recipe.lint.context import FileContext
from disagg.recipe.lint.model import Finding, Rule, Severity
from disagg.recipe.lint.nodes import Node

RULE = Rule("DA014", "undeclared-schema")


def _marked(block: Node | None) -> bool:
    return block is not None and block.kind == "map" and block.get("schema") is not None


def check(ctx: FileContext) -> list[Finding]:
    if ctx.dialect != "schema2" or _marked(ctx.root) or _marked(ctx.block("base")):
        return []
    keys = (
        key
        for block in (ctx.root, ctx.block("base"), *(v for _, v in ctx.root.pairs))
        if block is not None and block.kind == "map"
        for key, _ in block.pairs
        if key.kind == "scalar" and key.value in ("engine", "roles")
    )
    where = next(keys, ctx.root)
    return [
        RULE.finding(
            Severity.WARNING,
            message=(
                f"`{where.value}` is a schema-2 key but the file does not declare `schema: 2`; "
                "disagg reads it as schema 2, srt-slurm 2.x refuses it"
            ),
            locations=(ctx.loc(where, "schema-2 key"),),
            hint="add `schema: 2` as the first line",
        )
    ]
