"""DA004: a value with a comma that would travel through Slurm's `--export` list.

Slurm splits `--export=ALL,K=V,...` on commas, so `UCX_TLS=rc,tcp` arrives as
`UCX_TLS=rc` and a stray variable `tcp`; `MODEL_REPOS=a/x,b/y` arrives as `a/x`.
"""

from __future__ import annotations

import re

from disagg.recipe.lint.context import FileContext
from disagg.recipe.lint.model import Finding, Rule, Severity
from disagg.recipe.lint.nodes import Node, is_env_map, scalars

RULE = Rule("DA004", "export-hazard")
_VAR = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_DIRECTIVE_BLOCKS = ("srun_options", "sbatch_directives")


def _split_export(value: str) -> list[str]:
    """Pieces of an `--export` list that are neither `K=V`, a variable name, nor ALL/NONE/NIL."""
    return [
        piece
        for piece in value.split(",")[1:]
        if "=" not in piece and not (_VAR.match(piece) and piece.upper() == piece)
    ]


def check(ctx: FileContext) -> list[Finding]:
    findings: list[Finding] = []
    for node in ctx.scanned.nodes:
        if node.kind != "map":
            continue
        if is_env_map(node.path):
            for key, value in node.pairs:
                for text in scalars(value):
                    if isinstance(text.value, str) and "," in text.value:
                        findings.append(_env_finding(ctx, node, str(key.value), text))
        elif node.path and node.path[-1] in _DIRECTIVE_BLOCKS:
            for key, value in node.pairs:
                if str(key.value).lstrip("-") != "export":
                    continue
                for text in scalars(value):
                    broken = isinstance(text.value, str) and _split_export(text.value)
                    if broken:
                        findings.append(_directive_finding(ctx, node, text, broken))
    return findings


def _env_finding(ctx: FileContext, env: Node, name: str, text: Node) -> Finding:
    where = ctx.loc(text, "value")
    head = str(text.value).split(",")[0]
    # disagg itself never forwards environment maps through --export (roles get their
    # environment from plan.json), so this is only a hazard for copies of the value that
    # end up in an --export list elsewhere: informational, not a failure.
    return RULE.finding(
        Severity.INFO,
        message=(
            f"{'.'.join(env.path)}.{name} = {text.value!r} at {where} contains a comma; "
            f"safe here, but passed through Slurm's comma-separated --export it would arrive "
            f"as {name}={head!r}"
        ),
        locations=(where,),
        hint=(
            "keep the value in the recipe's environment map (disagg sets it from plan.json, "
            "not via --export); never forward it in an srun/sbatch --export list"
        ),
    )


def _directive_finding(ctx: FileContext, owner: Node, text: Node, broken: list[str]) -> Finding:
    where = ctx.loc(text, "value")
    return RULE.finding(
        Severity.ERROR,
        message=(
            f"{'.'.join(owner.path)}.export = {text.value!r} at {where}: Slurm splits it on "
            f"commas, so {', '.join(repr(p) for p in broken)} become separate entries instead "
            "of part of the value before them"
        ),
        locations=(where,),
        hint="move these variables into the recipe's environment map instead of --export",
    )
