"""Where each key and value of a loaded YAML file was written, by key path.

Kept beside the plain data the loader builds (`disagg.recipe.load`), so any later
stage (validation, variants, lint, plan) can report `file:line:col` of a field
without a second parse, following YAML aliases to where the value was written.
"""

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
    # A key written twice in one map: (path, first key position, the later one that wins).
    duplicates: list[tuple[KeyPath, Pos, Pos]] = field(default_factory=list)

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


class LineCol:
    """ruamel-compatible `.lc` of a loaded map or list (0-based, like ruamel's).

    Lets code written for ruamel's round-trip containers (`container.lc.value(key)`)
    find positions in the plain containers this module builds.
    """

    __slots__ = ("_path", "_source")

    def __init__(self, source: SourceMap, path: KeyPath) -> None:
        self._source = source
        self._path = path

    def _get(self, path: KeyPath, *, key: bool) -> tuple[int, int]:
        pos = self._source.find(path, key=key)
        if pos is None:
            raise KeyError(path[-1] if path else path)
        return pos[0] - 1, pos[1] - 1

    @property
    def line(self) -> int:
        return self._get(self._path, key=False)[0]

    @property
    def col(self) -> int:
        return self._get(self._path, key=False)[1]

    def key(self, key: Key) -> tuple[int, int]:
        return self._get((*self._path, key), key=True)

    def value(self, key: Key) -> tuple[int, int]:
        return self._get((*self._path, key), key=False)

    def item(self, index: int) -> tuple[int, int]:
        return self._get((*self._path, index), key=False)


class PosDict(dict[Any, Any]):
    """A plain dict that also answers `.lc` (see LineCol)."""

    __slots__ = ("lc",)
    lc: LineCol


class PosList(list[Any]):
    """A plain list that also answers `.lc` (see LineCol)."""

    __slots__ = ("lc",)
    lc: LineCol
