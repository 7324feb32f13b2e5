"""Bounds on what a recipe file may make the loader, the linter and variant expansion build.

Why: YAML aliases let a 1 KB file stand for a billion nodes ("billion laughs"), and
deep nesting drives recursion. Readers count, as they parse, the nodes each alias
stands for, so a hostile file is refused after reading its own text, never after
building its expansion. The largest recipe of the corpora expands to under 1,000
nodes (under 7,000 over all its variants); the limits leave two orders of margin.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from disagg.errors import DisaggError, SourceLocation

MAX_DEPTH = 100  # recipes nest a few levels; this bounds recursion on hostile input
MAX_NODES = 100_000  # nodes of one document with every alias expanded
MAX_VARIANT_NODES = 500_000  # nodes of all variants of one file together

# Load a recipe may ask for: past these no real cluster serves, and one client process
# could not even hold the requests (a mistyped `concurrencies: "100000000"` would
# otherwise build prompts for a billion requests before sending the first).
MAX_CONCURRENCY = 1_000_000  # requests in flight at once (the largest sweeps use ~16k)
MAX_SEQUENCE_TOKENS = 10_000_000  # input or output tokens of one request (10M-token contexts)
MAX_POINT_REQUESTS = 10_000_000  # requests of one point, warm-up included


def load_bound_problem(what: str, value: int, limit: int) -> str | None:
    """The refusal text when `value` is past `limit`, else None."""
    if value <= limit:
        return None
    return f"{what} ({value:,}) is above {limit:,}, more than any cluster could serve"


_ALIAS_HINT = (
    "an alias repeats its anchor's whole value each time it is used; "
    "write the values out, or alias smaller pieces fewer times"
)


def too_deep(location: SourceLocation) -> DisaggError:
    """The error for a node nested deeper than MAX_DEPTH."""
    return DisaggError(
        f"YAML nested deeper than {MAX_DEPTH} levels",
        location=location,
        hint="recipes nest only a few levels; check for runaway brackets",
    )


class ExpansionBudget:
    """Counts a document's nodes as if every alias were written out; refuses past a limit.

    A reader calls `node()` for each node it builds, `anchored(name, total_before)` after
    a node that carries an anchor (so the anchor's expanded size is known), and
    `alias()` for each alias, which costs the anchor's expanded size.
    """

    __slots__ = ("file", "limit", "sizes", "total")

    def __init__(self, file: str, limit: int = MAX_NODES) -> None:
        self.file = file
        self.limit = limit
        self.total = 0
        self.sizes: dict[str, int] = {}

    def node(self) -> None:
        """One written node: costs one (plain nodes are bounded by the text itself)."""
        self.total += 1

    def anchored(self, name: str, start: int) -> None:
        self.sizes[name] = max(1, self.total - start)

    def alias(self, name: str, location: SourceLocation) -> None:
        size = self.sizes.get(name, 1)
        self.total += size
        if self.total > self.limit:
            raise DisaggError(
                f"alias *{name} expands anchor &{name} to {size:,} nodes: the file would "
                f"expand to more than {self.limit:,} nodes (nested aliases multiply)",
                location=location,
                hint=_ALIAS_HINT,
            )


def expanded_size(value: Any, limit: int) -> int:
    """Nodes of `value` with shared objects counted at every use; stops counting past `limit`.

    Loaded data shares one object per alias target, so this walks each distinct object
    once and multiplies by its uses (memoised by identity).
    """
    memo: dict[int, int] = {}

    def count(item: Any) -> int:
        if isinstance(item, Mapping):
            children: Sequence[Any] | Any = item.values()
            base = 1 + len(item)
        elif isinstance(item, list | tuple):
            children, base = item, 1
        else:
            return 1
        key = id(item)
        known = memo.get(key)
        if known is not None:
            return known
        total = base
        for child in children:
            total += count(child)
            if total > limit:
                break
        memo[key] = total
        return total

    return count(value)


def charge_variant(spent: int, variant: Any, *, name: str, file: str) -> int:
    """`spent` plus the nodes of one just-built variant; refuses past MAX_VARIANT_NODES.

    Called after each variant is built, so the work done on a hostile file stays
    within the limit plus one variant (itself bounded by MAX_NODES of its sources).
    """
    total = spent + expanded_size(variant, MAX_VARIANT_NODES)
    if total > MAX_VARIANT_NODES:
        raise DisaggError(
            f"variants expand to more than {MAX_VARIANT_NODES:,} nodes together "
            f"(reached at {name})",
            location=SourceLocation(file),
            hint="split the sweep into several files, or alias smaller pieces of `base`",
        )
    return total
