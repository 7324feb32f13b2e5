"""Bounds on what a recipe file may make the loader, the linter and variant expansion build.

YAML aliases let a 1 KB file stand for a billion nodes, so readers count the nodes each
alias stands for as they parse. The largest corpus recipe expands to under 1,000 nodes
(7,000 over all its variants): the limits leave two orders of margin.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from disagg.errors import DisaggError, SourceLocation

MAX_DEPTH = 100  # recipes nest a few levels; this bounds recursion on hostile input
MAX_NODES = 100_000  # nodes of one document with every alias expanded
MAX_VARIANT_NODES = 500_000  # nodes of all variants of one file together

# Load past these no cluster serves (a mistyped `concurrencies: "100000000"` would build
# prompts for a billion requests before sending the first).
MAX_CONCURRENCY = 1_000_000  # requests in flight at once (the largest sweeps use ~16k)
MAX_SEQUENCE_TOKENS = 10_000_000  # input or output tokens of one request (10M-token contexts)
MAX_POINT_REQUESTS = 10_000_000  # requests of one point, warm-up included


def load_bound_problem(what: str, value: int, limit: int) -> str | None:
    """The refusal text when `value` is past `limit`, else None."""
    if value <= limit:
        return None
    return f"{what} ({value:,}) is above {limit:,}, more than any cluster could serve"


def too_deep(location: SourceLocation) -> DisaggError:
    """The error for a node nested deeper than MAX_DEPTH."""
    return DisaggError(
        f"YAML nested deeper than {MAX_DEPTH} levels",
        location=location,
        hint="recipes nest only a few levels; check for runaway brackets",
    )


@dataclass(slots=True)
class ExpansionBudget:
    """Counts a document's nodes as if every alias were written out; refuses past a limit.
    A reader calls `node()` per node, `anchored()` after an anchored one, `alias()` per alias."""

    total: int = 0
    sizes: dict[str, int] = field(default_factory=dict)

    def node(self) -> None:
        self.total += 1

    def anchored(self, name: str, start: int) -> None:
        self.sizes[name] = max(1, self.total - start)

    def alias(self, name: str, location: SourceLocation) -> None:
        size = self.sizes.get(name, 1)
        self.total += size
        if self.total > MAX_NODES:
            raise DisaggError(
                f"alias *{name} expands anchor &{name} to {size:,} nodes: the file would "
                f"expand to more than {MAX_NODES:,} nodes (nested aliases multiply)",
                location=location,
                hint="an alias repeats its anchor's whole value each time it is used; "
                "write the values out, or alias smaller pieces fewer times",
            )


def expanded_size(value: Any, limit: int) -> int:
    """Nodes of `value` with shared objects (alias targets) counted at every use, each walked
    once (memoised by identity); stops counting past `limit`."""
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
    """`spent` plus the nodes of one just-built variant; refuses past MAX_VARIANT_NODES, so
    the work on a hostile file stays within the limit plus one variant."""
    total = spent + expanded_size(variant, MAX_VARIANT_NODES)
    if total > MAX_VARIANT_NODES:
        raise DisaggError(
            f"variants expand to more than {MAX_VARIANT_NODES:,} nodes together "
            f"(reached at {name})",
            location=SourceLocation(file),
            hint="split the sweep into several files, or alias smaller pieces of `base`",
        )
    return total
