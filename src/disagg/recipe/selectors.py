"""`file.yaml[:SELECTOR]`: which variants of a recipe a command works on (srt-slurm forms).

A name, a zip block or sweep (all its variants), or a shell-style glob in which `[` is
literal (`*_lowlat[0]`). A glob never picks `base`, as srtctl's `_expand_wildcard` never does.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from pathlib import Path

from disagg.errors import DisaggError, SourceLocation
from disagg.probe import probe
from disagg.recipe.overrides import BASE, SWEEP_MARK


@dataclass(frozen=True)
class Selector:
    """A recipe path and an optional variant pattern."""

    path: Path
    pattern: str | None = None


def parse_selector(text: str) -> Selector:
    """Split `file.yaml:pattern`; a path that exists as written is never split."""
    if not text:
        raise DisaggError("empty recipe argument", hint="give a recipe file, e.g. recipe.yaml")
    head, _, pattern = text.rpartition(":")
    if not head or probe(text).exists:
        return Selector(Path(text))
    return Selector(Path(head), pattern or None)


def select(names: list[str], pattern: str | None, *, file: str) -> list[str]:
    """The variant names `pattern` picks, in document order; none is an error listing them."""
    if pattern is None:
        return [name for name in names if not _is_base(name)] or names
    if pattern in names:
        return [pattern]
    if "*" in pattern or "?" in pattern:
        regex = re.compile(fnmatch.translate(pattern.replace("[", "[[]")))  # `[` is literal
        # a flat recipe's one variant is called `base` too; only an override file has a
        # base to leave out
        pool = names if names == [BASE] else [name for name in names if not _is_base(name)]
        chosen = [name for name in pool if regex.fullmatch(name)]
    else:
        heads = (f"{pattern}[", f"{pattern}{SWEEP_MARK}")
        chosen = [name for name in names if name.startswith(heads)]
    if chosen:
        return chosen
    raise DisaggError(
        f"no variant matches selector {pattern!r}",
        location=SourceLocation(file),
        hint="available: " + ", ".join(names),
    )


def _is_base(name: str) -> bool:
    """An override file's `base` (or one of its sweep's combinations)."""
    return name == BASE or name.startswith(f"{BASE}{SWEEP_MARK}")
