"""Where each key and value of a loaded YAML file was written, by key path: kept beside
the plain data, so any later stage reports `file:line:col` without a second parse."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from disagg.errors import SourceLocation
from disagg.recipe.limits import MAX_DEPTH

Key = str | int | float | bool | None
KeyPath = tuple[Key, ...]
Pos = tuple[int, int]  # 1-based line, column


@dataclass
class SourceMap:
    """Where each key and value of one file starts, by key path (`("base", "resources", 0)`).

    An alias has its own position (where it is used); paths below an alias are found
    under the anchored node's path, which `aliases` records.
    """

    file: str
    keys: dict[KeyPath, Pos] = field(default_factory=dict)
    values: dict[KeyPath, Pos] = field(default_factory=dict)
    aliases: dict[KeyPath, KeyPath] = field(default_factory=dict)

    def find(self, path: Sequence[Key], *, key: bool = False) -> Pos | None:
        """The exact position recorded for `path` (followed through aliases), or None."""
        current: KeyPath = tuple(path)
        table = self.keys if key else self.values
        for _ in range(MAX_DEPTH):
            if current in table:
                return table[current]
            through = rewritten(current, self.aliases)
            if through is None:
                return None
            current = through
        return None

    def locate(self, path: Sequence[Key], *, key: bool = False) -> SourceLocation:
        """`file:line:col` of `path`, else of its nearest recorded ancestor, else just the file."""
        current: KeyPath = tuple(path)
        while True:
            pos = self.find(current, key=key) or (self.find(current) if key else None)
            if pos is not None:
                return SourceLocation(self.file, pos[0], pos[1])
            if not current:
                return SourceLocation(self.file)
            current = current[:-1]


def rewritten(path: KeyPath, table: Mapping[KeyPath, KeyPath]) -> KeyPath | None:
    """`path` with its longest prefix that `table` holds replaced by what it maps to; None
    when `table` holds no prefix of it."""
    for cut in range(len(path), 0, -1):
        target = table.get(path[:cut])
        if target is not None:
            return (*target, *path[cut:])
    return None


@dataclass(slots=True)
class LineCol:
    """ruamel's `.lc.value(key)` (0-based) for the plain maps this loader builds, so code
    written for ruamel's round-trip containers finds positions in either."""

    source: SourceMap
    path: KeyPath

    def value(self, key: Key) -> tuple[int, int]:
        pos = self.source.find((*self.path, key))
        if pos is None:
            raise KeyError(key)
        return pos[0] - 1, pos[1] - 1


class PosDict(dict[Any, Any]):
    """A plain dict that also answers `.lc` (see LineCol)."""

    __slots__ = ("lc",)
    lc: LineCol
