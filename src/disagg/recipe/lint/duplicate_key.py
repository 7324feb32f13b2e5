"""DA012: a key written twice in one map.

srt-slurm's loader (and disagg's) keeps the last value without a word, so an edit
to the first copy silently does nothing. The finding names both lines.
"""

from __future__ import annotations

from disagg.recipe.lint.context import FileContext
from disagg.recipe.lint.model import Finding, Rule, Severity
from disagg.recipe.lint.nodes import Node

RULE = Rule("DA012", "duplicate-key")


def check(ctx: FileContext) -> list[Finding]:
    findings: list[Finding] = []
    for node in ctx.scanned.nodes:
        if node.kind != "map":
            continue
        first: dict[object, Node] = {}
        for key, _ in node.pairs:
            if key.kind != "scalar" or key.value == "<<":
                continue
            earlier = first.get(key.value)
            if earlier is None:
                first[key.value] = key
                continue
            name = ".".join((*node.path, str(key.value)))
            findings.append(
                RULE.finding(
                    Severity.WARNING,
                    message=(
                        f"key `{name}` is written twice, at line {earlier.line} and line "
                        f"{key.line}; the value at line {key.line} wins and the one at line "
                        f"{earlier.line} is ignored"
                    ),
                    locations=(ctx.loc(key, "duplicate"), ctx.loc(earlier, "first")),
                    hint="delete the copy that should not count",
                )
            )
            first[key.value] = key
    return findings
