"""DA002: an alias with no anchor above it, explained instead of the parser's bare error.

The usual cause is an anchor that was deleted, renamed, or sits below its alias
(often in a variant block that was moved), or one that lives in another file
(anchors never cross files).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence

from disagg.recipe.lint.model import Finding, Location, Rule, Severity
from disagg.recipe.lint.nodes import Anchor, ScannedFile

RULE = Rule("DA002", "undefined-alias")


def check(
    path: str, scanned: ScannedFile, elsewhere: Mapping[str, Sequence[tuple[str, Anchor]]]
) -> list[Finding]:
    """`elsewhere`: anchor name -> (file, anchor) in the other files being linted."""
    findings: list[Finding] = []
    for alias in scanned.undefined:
        used = Location(path, alias.line, alias.col, "alias", alias.block)
        later = [a for a in scanned.anchors if a.name == alias.name]
        other = list(elsewhere.get(alias.name, ()))
        locations = [used]
        notes: list[str] = []
        if later:
            locations += [Location(path, a.line, a.col, "later-anchor", a.block) for a in later]
            places = ", ".join(str(loc) for loc in locations[1:])
            notes.append(f"an anchor &{alias.name} appears later in this file at {places}")
        if other:
            spots = [Location(f, a.line, a.col, "anchor-in-other-file", a.block) for f, a in other]
            locations += spots
            places = ", ".join(str(loc) for loc in spots)
            notes.append(f"&{alias.name} is defined in another file at {places}")
        if not notes:
            close = difflib.get_close_matches(alias.name, {a.name for a in scanned.anchors}, n=1)
            missing = f"no anchor &{alias.name} exists anywhere"
            notes.append(f"did you mean *{close[0]}?" if close else missing)
        hint = (
            "an alias must come after its anchor in the same file; define the value once "
            "in `base:` or a top-level `x-shared:` block above every use"
        )
        findings.append(
            RULE.finding(
                Severity.ERROR,
                message=(
                    f"alias *{alias.name} at {used} (in {alias.block or 'the document'}) has no "
                    f"anchor &{alias.name} before it, so the file does not load; "
                    + "; ".join(notes)
                ),
                locations=tuple(locations),
                hint=hint,
            )
        )
    return findings
