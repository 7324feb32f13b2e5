"""Adapters registered by name, each imported and made when a recipe first names it."""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import cached_property
from importlib import import_module
from typing import Generic, TypeVar

T = TypeVar("T")

# An adapter module's own lines, read from its text: `ADAPTER = ...` marks it; `TYPES =
# ("a", "b")`, when present, lists the names it answers to instead of its module's name.
_ADAPTER = b"\nADAPTER = "
_MAX_SOURCE = 1 << 20  # an adapter module is far smaller


def scan(package: str) -> dict[str, tuple[str, str]]:
    """`name -> (module, "ADAPTER")` of every adapter module of `package`, by module name,
    read from the modules' text: finding them imports none."""
    found: dict[str, tuple[str, str]] = {}
    (folder,) = import_module(package).__path__
    for name in sorted(os.listdir(folder)):
        stem, dot, suffix = name.partition(".")
        if suffix == "py" and dot and not stem.startswith("_"):
            for kind in _registered(os.path.join(folder, name), stem):
                found[kind] = (f"{package}.{stem}", "ADAPTER")
    return found


def _registered(path: str, stem: str) -> list[str]:
    """The names the module at `path` registers an adapter under (none for a helper)."""
    try:
        fd = os.open(path, os.O_RDONLY)  # the cheapest read there is
    except FileNotFoundError:
        return []
    try:
        text = os.read(fd, _MAX_SOURCE)
    finally:
        os.close(fd)
    return (_types(text) or [stem]) if _ADAPTER in text else []


def _types(text: bytes) -> list[str]:
    """The names of a module's `TYPES = ("a", "b")` line (plain strings, one line), if any;
    read without a regular expression, which would cost more to compile than the scan."""
    at = text.find(b"\nTYPES = (")
    if at < 0:
        return []
    line = text[at + 1 : text.index(b")", at)]
    return [name.decode() for name in line.split(b'"')[1::2]]


class AdapterTable(Generic[T]):
    """The adapters of one kind (engines, frontends, services, benchmarks) by name.

    Given as `name -> (module, attribute)`, or found in `package` (`scan`), so adding an
    adapter is adding its module. Each is imported once, when its name is first asked
    for, so a plan loads the modules of its own adapters only.
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
        self._found: dict[str, tuple[str, str] | None] = {}  # name -> where, once looked up

    @cached_property
    def where(self) -> Mapping[str, tuple[str, str]]:
        if self._where is not None:
            return self._where
        assert self._package is not None, "an AdapterTable needs `where` or `package`"
        return scan(self._package)

    def names(self) -> tuple[str, ...]:
        return tuple(self.where)

    def _find(self, name: str) -> tuple[str, str] | None:
        """Where `name`'s adapter is: the module named after it when that one registers it
        (one file read, the common case), else whatever the whole scan finds; remembered."""
        if name in self._found:
            return self._found[name]
        found = None
        direct = name.isidentifier() and not name.startswith("_")
        if self._package is not None and "where" not in self.__dict__ and direct:
            (folder,) = import_module(self._package).__path__
            if name in _registered(os.path.join(folder, f"{name}.py"), name):
                found = (f"{self._package}.{name}", "ADAPTER")
        self._found[name] = found or self.where.get(name)
        return self._found[name]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._find(name) is not None

    def get(self, name: str) -> T | None:
        """The adapter registered as `name`, or None when none is."""
        where = self._find(name)
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
