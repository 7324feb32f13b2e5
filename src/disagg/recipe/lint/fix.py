"""`--fix` for DA001: hoist each cross-variant anchor into a top-level `x-shared` block.

ruamel's round trip keeps comments and key order. The fix is only written when every
variant expands exactly as before and no DA001 is left; otherwise the result says why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from io import StringIO
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap

from disagg import atomic
from disagg.errors import DisaggError
from disagg.recipe.lint.context import FileContext
from disagg.recipe.lint.cross_anchor import cross_variant_aliases
from disagg.recipe.lint.nodes import Anchor, scan
from disagg.recipe.overrides import BASE, expand_variants

SHARED = "x-shared"


@dataclass(slots=True)
class FixResult:
    """What `fix_file` did: `moved` anchors, or `reason` when it left the file alone."""

    path: str
    moved: list[str] = field(default_factory=list)
    reason: str | None = None

    @property
    def changed(self) -> bool:
        return bool(self.moved) and self.reason is None


def round_trip_yaml(text: str) -> YAML:
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 4096  # never re-wrap long flow lists
    mapping, sequence, offset = _indentation(text)
    yaml.indent(mapping=mapping, sequence=sequence, offset=offset)
    return yaml


def _indentation(text: str) -> tuple[int, int, int]:
    """The file's own indentation, so the rewrite does not reflow untouched blocks."""
    nested = re.search(r"^[^\s#][^\n]*:[ \t]*(?:#[^\n]*)?\n(?:[ \t]*\n)*( +)[^\s#-]", text, re.M)
    mapping = len(nested.group(1)) if nested else 2
    listed = re.search(r"^( *)[^\s#-][^\n]*:[ \t]*(?:#[^\n]*)?\n(?:[ \t]*\n)*( *)- ", text, re.M)
    offset = max(0, len(listed.group(2)) - len(listed.group(1))) if listed else 0
    return mapping, max(mapping, offset + 2), offset


def _left(result: FixResult, reason: str) -> tuple[None, FixResult]:
    """The file is left unchanged, for `reason`."""
    result.reason = reason
    return None, result


def _lookup(doc: Any, anchor: Anchor) -> Any:
    node = doc
    for key in (anchor.block or "", *anchor.path[1:]):
        node = node[int(key)] if isinstance(node, list) else node[key]
    return node


def fix_text(text: str, file: str) -> tuple[str | None, FixResult]:
    """The fixed text (None when unchanged) and what happened."""
    result = FixResult(file)
    scanned = scan(file, text)
    if scanned.syntax is not None or scanned.root is None or scanned.root.kind != "map":
        return _left(result, "the file does not parse as a recipe map; fix that first")
    if scanned.undefined:
        return _left(result, "the file has undefined aliases (DA002); fix those first")
    ctx = FileContext(file, scanned, scanned.root)
    targets = [anchor for anchor, _ in cross_variant_aliases(ctx).values()]
    if not targets:
        return None, result
    yaml = round_trip_yaml(text)
    try:
        before = expand_variants(yaml.load(text), file=file)
        doc = yaml.load(text)
    except (DisaggError, ValueError) as exc:
        return _left(result, f"the file does not expand into variants: {exc}")
    except Exception as exc:  # ruamel raises its own error types (duplicate keys...)
        return _left(result, f"the round-trip parser rejects the file: {exc}")
    shared = doc.get(SHARED)
    if shared is None:
        shared = CommentedMap()
        keys = list(doc)
        doc.insert(keys.index(BASE) + 1 if BASE in keys else 0, SHARED, shared)
    elif not isinstance(shared, CommentedMap):
        return _left(result, f"`{SHARED}` exists but is not a map")
    for anchor in targets:
        value = _lookup(doc, anchor)
        if not hasattr(value, "yaml_set_anchor"):
            return _left(
                result, f"&{anchor.name} anchors a value the round-trip writer cannot move"
            )
        key = anchor.name
        suffix = 2
        while key in shared and shared[key] is not value:
            key, suffix = f"{anchor.name}_{suffix}", suffix + 1
        shared[key] = value
        value.yaml_set_anchor(anchor.name, always_dump=True)
        result.moved.append(anchor.name)
    out = StringIO()
    yaml.dump(doc, out)
    fixed = out.getvalue()
    return _verify(fixed, before, file, result)


def _verify(
    fixed: str, before: dict[str, dict[str, Any]], file: str, result: FixResult
) -> tuple[str | None, FixResult]:
    rescanned = scan(file, fixed)
    if rescanned.syntax is not None or rescanned.undefined or rescanned.root is None:
        return _left(result, "the rewritten file would not parse; left unchanged")
    left = cross_variant_aliases(FileContext(file, rescanned, rescanned.root))
    if left:
        names = ", ".join(sorted(a.name for a, _ in left.values()))
        return _left(result, f"anchors still cross variant blocks after the move ({names})")
    try:
        after = expand_variants(round_trip_yaml(fixed).load(fixed), file=file)
    except Exception as exc:
        return _left(result, f"the rewritten file does not expand ({exc}); left unchanged")
    if list(after) != list(before):
        return _left(result, "the rewritten file has different variants; left unchanged")
    for name, config in before.items():
        if after[name] != config:
            return _left(result, f"variant {name} would expand differently; left unchanged")
    return fixed, result


def fix_file(path: Path) -> FixResult:
    """Fix one file in place (atomically) when the fix is proven safe."""
    text = path.read_text(encoding="utf-8")
    fixed, result = fix_text(text, str(path))
    if fixed is not None and result.changed:
        atomic.write_text(path, fixed)
    return result
