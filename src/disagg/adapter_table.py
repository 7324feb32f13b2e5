"""Adapters registered by name, each imported and made when a recipe first names it."""

from __future__ import annotations

from collections.abc import Mapping
from importlib import import_module
from typing import Generic, TypeVar

T = TypeVar("T")


class AdapterTable(Generic[T]):
    """`name -> (module, class)` of the adapters of one kind (frontends, benchmarks).

    A class is imported and made once, the first time its name is asked for, so a plan
    loads the modules of its own frontend and benchmark only. Adding an adapter: its
    module, and its line in the table it is registered in.
    """

    # `base` is a plain `type`: the adapters' bases are abstract, which `type[T]` refuses.
    def __init__(self, base: type, where: Mapping[str, tuple[str, str]]) -> None:
        self.base = base
        self.where = where
        self._made: dict[tuple[str, str], T] = {}

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
            made: T = getattr(import_module(module), attribute)()
            if not isinstance(made, self.base):
                raise TypeError(f"{module}.{attribute} is not a {self.base.__name__}")
            self._made[where] = made
        return self._made[where]
