"""DA003: the same long list or map written out in several variant blocks.

Copies drift: a fix to one 512-entry batch-size list silently misses the others.
One anchored value in an `x-` block, aliased where needed, keeps them equal.
"""

from __future__ import annotations

import json

from disagg.recipe.lint.context import FileContext, is_variant_block
from disagg.recipe.lint.model import Finding, Rule, Severity
from disagg.recipe.lint.nodes import Node, to_python, walk

RULE = Rule("DA003", "repeated-literal")
MIN_ENTRIES = 8  # list items or map keys; below this a copy is cheap to keep in sync


def _size(node: Node) -> int:
    return len(node.items) if node.kind == "seq" else len(node.pairs)


def check(ctx: FileContext) -> list[Finding]:
    groups: dict[str, list[Node]] = {}
    for _, block in ctx.root.pairs:
        if not is_variant_block(block.block):
            continue
        for node in walk(block):
            if node.kind != "scalar" and _size(node) >= MIN_ENTRIES and node.block == block.block:
                key = json.dumps(to_python(node), sort_keys=True, default=str)
                groups.setdefault(key, []).append(node)
    findings: list[Finding] = []
    covered: list[Node] = []  # outer copies already reported; their insides are not repeated
    # largest first (a group's key is its JSON text), so the copies inside it are not repeated
    for _, nodes in sorted(groups.items(), key=lambda group: -len(group[0])):
        blocks = {node.block for node in nodes}
        if len(blocks) < 2:
            continue
        fresh = [n for n in nodes if not any(_inside(n, outer) for outer in covered)]
        if len({n.block for n in fresh}) < 2:
            continue
        covered.extend(fresh)
        first = fresh[0]
        kind = "list" if first.kind == "seq" else "map"
        what = f"{kind} of {_size(first)} entries ({'.'.join(first.path[-2:])})"
        locations = tuple(ctx.loc(n, "copy") for n in fresh)
        findings.append(
            RULE.finding(
                Severity.WARNING,
                message=(
                    f"the same {what} is written out {len(fresh)} times in "
                    f"{len({n.block for n in fresh})} variant blocks: "
                    + ", ".join(f"{loc} ({loc.block})" for loc in locations)
                ),
                locations=locations,
                hint=(
                    "write it once as an anchor in a top-level `x-shared:` block, e.g. "
                    "`x-shared: {name: &name [...]}`, and use `*name` in each variant"
                ),
            )
        )
    return findings


def _inside(node: Node, outer: Node) -> bool:
    return node.block == outer.block and node.path[: len(outer.path)] == outer.path
