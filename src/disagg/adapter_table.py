"""Adapters registered by name, each imported and made when a recipe first names it."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from functools import cached_property
from importlib import import_module
from typing import Generic, TypeVar

T = TypeVar("T")

# An adapter module's own lines, read from its text: `ADAPTER = ...` marks it; `TYPES =
# ("a", "b")`, when present, lists the names it answers to instead of its module's name.
_ADAPTER = b"\nADAPTER = "
_TYPES = re.compile(rb"\nTYPES\b[^=\n]*=\s*\(([^)]*)\)")


def scan(package: str) -> dict[str, tuple[str, str]]:
    """`name -> (module, "ADAPTER")` of every adapter module of `package`, by module name,
    read from the modules' text: finding them imports none."""
    found: dict[str, tuple[str, str]] = {}
    (folder,) = import_module(package).__path__
    for name in sorted(os.listdir(folder)):
        stem, dot, suffix = name.partition(".")
        if suffix != "py" or not dot or stem.startswith("_"):
            continue
        with open(os.path.join(folder, name), "rb") as source:
            text = source.read()
        if _ADAPTER not in text:
            continue
        at = text.find(b"\nTYPES")
        types = _TYPES.match(text, at) if at >= 0 else None
        kinds = re.findall(rb'"([^"]+)"', types.group(1)) if types else [stem.encode()]
        for kind in kinds:
            found[kind.decode()] = (f"{package}.{stem}", "ADAPTER")
    return found


class AdapterTable(Generic[T]):
    """The adapters of one kind (engines, frontends, services, benchmarks) by name.

    Either given as `name -> (module, attribute)`, or found in `package` (`scan`): there a
    module registers itself with a top-level `ADAPTER = ...` (and `TYPES = (...)` when it
    answers to other names than its module's), so adding an adapter is adding its module.
    An adapter is imported (and a class made) once, the first time its name is asked for,
    so a plan loads the modules of its own adapters only.
    """

    # `base` is a plain `type`: the adapters' bases are abstract, which `type[T]` refuses.
    def __init__(
        self,
        base: type,
        where: Mapping[str, tuple[str, str]] | None = None,
        *,
        package: str | None = None,
    ) -> None:
        self.base = base
        self._where = where
        self._package = package
        self._made: dict[tuple[str, str], T] = {}

    @cached_property
    def where(self) -> Mapping[str, tuple[str, str]]:
        if self._where is not None:
            return self._where
        assert self._package is not None, "an AdapterTable needs `where` or `package`"
        return scan(self._package)

    def names(self) -> tuple[str, ...]:
        return tuple(self.where)

    def __contains__(self, name: object) -> bool:
        return name in self.where

    def get(self, name: str) -> T | None:
        """The adapter registered as `name`, or None when none is."""
        where = self.where.get(name)
        if where is None:
            return None
        if where not in self._made:
            module, attribute = where
            found = getattr(import_module(module), attribute)
            made: T = found() if isinstance(found, type) else found
            if not isinstance(made, self.base):
                raise TypeError(f"{module}.{attribute} is not a {self.base.__name__}")
            self._made[where] = made
        return self._made[where]
