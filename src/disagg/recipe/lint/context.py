"""One file as the rules see it: its node tree, its blocks, and its variants with positions."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from disagg.errors import DisaggError
from disagg.recipe.lint.model import Location
from disagg.recipe.lint.nodes import Node, ScannedFile, to_python
from disagg.recipe.overrides import (
    BASE,
    IGNORED_PREFIX,
    OVERRIDE_PREFIX,
    ZIP_PREFIX,
    expand_variants,
)


def is_variant_block(name: str | None) -> bool:
    return name is not None and name.startswith((OVERRIDE_PREFIX, ZIP_PREFIX))


def is_shared_block(name: str | None) -> bool:
    """`base` and `x-` blocks are where shared anchors belong."""
    return name == BASE or (name is not None and name.startswith(IGNORED_PREFIX))


class _Positions:
    """Quacks like ruamel's `.lc` (0-based) so override errors can name `file:line:col`."""

    def __init__(self, where: dict[Any, tuple[int, int]]) -> None:
        self._where = where

    def value(self, key: Any) -> tuple[int, int]:
        return self._where[key]

    def item(self, index: Any) -> tuple[int, int]:
        return self._where[index]


class _PosDict(dict[Any, Any]):
    lc: _Positions


class _PosList(list[Any]):
    lc: _Positions


def positioned(node: Node) -> Any:
    """Like `to_python`, but containers carry `.lc` positions (used only to explain errors)."""
    if node.kind == "scalar":
        return node.value
    if node.kind == "seq":
        seq = _PosList(positioned(item) for item in node.items)
        seq.lc = _Positions({i: (n.line - 1, n.col - 1) for i, n in enumerate(node.items)})
        return seq
    out = _PosDict()
    where: dict[Any, tuple[int, int]] = {}
    for key, value in node.pairs:
        out[key.value] = positioned(value)
        where[key.value] = (value.line - 1, value.col - 1)
    out.lc = _Positions(where)
    return out


@dataclass(slots=True)
class Variants:
    configs: dict[str, dict[str, Any]] = field(default_factory=dict)
    error: DisaggError | None = None


@dataclass
class FileContext:
    """A scanned, syntactically valid file whose root is a map."""

    path: str
    scanned: ScannedFile
    root: Node

    def loc(self, node: Node, role: str = "") -> Location:
        return Location(self.path, node.line, node.col, role, node.block)

    def block(self, name: str) -> Node | None:
        return self.root.get(name)

    @cached_property
    def is_override_file(self) -> bool:
        return any(
            k.kind == "scalar" and (k.value == BASE or is_variant_block(str(k.value)))
            for k, _ in self.root.pairs
        )

    @cached_property
    def data(self) -> Any:
        return to_python(self.root)

    @cached_property
    def variants(self) -> Variants:
        try:
            return Variants(expand_variants(self.data, file=self.path))
        except DisaggError:
            pass
        try:  # again with positions, only to say where
            return Variants(expand_variants(positioned(self.root), file=self.path))
        except DisaggError as exc:
            return Variants(error=exc)

    def locate(self, variant: str, path: tuple[str, ...]) -> Node | None:
        """The node that sets `path` in `variant`: its own block first, then `base`."""
        name, _, rest = variant.partition("[")
        index = int(rest.rstrip("]")) if rest else None
        scopes = [self.root] if name == BASE and not self.is_override_file else []
        if name != BASE or self.is_override_file:
            scopes = [b for b in (self.block(name), self.block(BASE)) if b is not None]
        for scope in scopes:
            node: Node | None = scope
            for key in path:
                node = node.get(key) if node is not None and node.kind == "map" else None
            if node is None:
                continue
            zipped = index is not None and scope is not self.block(BASE) and node.kind == "seq"
            if zipped and index is not None and 1 < len(node.items) > index:
                return node.items[index]
            return node
        return None
