"""DA001: an alias whose anchor lives in a different variant block.

Such an alias works only while its sibling block exists, keeps that anchor and stays
above it; deleting or reordering the sibling breaks this variant, and the parser then
points at the alias, not at the cause. `--fix` moves the value into an `x-` block.
"""

from __future__ import annotations

from disagg.recipe.lint.context import FileContext, is_variant_block
from disagg.recipe.lint.model import Finding, Rule, Severity
from disagg.recipe.lint.nodes import Alias, Anchor

RULE = Rule("DA001", "cross-variant-anchor")


def cross_variant_aliases(ctx: FileContext) -> dict[int, tuple[Anchor, list[Alias]]]:
    """Anchors defined in a variant block and aliased from any other block, keyed by id(anchor)."""
    found: dict[int, tuple[Anchor, list[Alias]]] = {}
    for alias in ctx.scanned.aliases:
        anchor = alias.target
        if anchor is None or not is_variant_block(anchor.block) or alias.block == anchor.block:
            continue
        found.setdefault(id(anchor), (anchor, []))[1].append(alias)
    return found


def check(ctx: FileContext) -> list[Finding]:
    findings: list[Finding] = []
    for anchor, aliases in cross_variant_aliases(ctx).values():
        groups: dict[str | None, list[Alias]] = {}
        for alias in aliases:
            groups.setdefault(alias.block, []).append(alias)
        defined = ctx.loc(anchor, "anchor")
        described = "; ".join(
            f"{block} ({', '.join(str(ctx.loc(a, 'alias')) for a in group)})"
            for block, group in groups.items()
        )
        findings.append(
            RULE.finding(
                Severity.ERROR,
                message=(
                    f"anchor &{anchor.name} is defined inside variant block {anchor.block} at "
                    f"{defined} but aliased from {len(groups)} other block(s): {described}; "
                    f"deleting, renaming or reordering {anchor.block} breaks them"
                ),
                locations=(defined, *(ctx.loc(a, "alias") for a in aliases)),
                hint=(
                    f"move the value into a top-level `x-shared:` block (or `base:`) and alias "
                    f"*{anchor.name} everywhere; `disagg lint --fix` does this"
                ),
                fixable=True,
            )
        )
    return findings
