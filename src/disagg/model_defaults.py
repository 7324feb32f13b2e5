"""Empty defaults for pydantic fields: `Field(default_factory=empty_list)`.

Why not `default_factory=list`: pydantic reads every factory's signature when it builds a
model's validator, and for a builtin that means parsing its text signature (tokenizing
it): about a tenth of `disagg lint FILE`'s start, over the recipe and plan models. Why
not `default=[]`: pydantic deep-copies a mutable default for every instance, five times
the cost of a call, which a corpus of recipes pays per section.
"""

from __future__ import annotations

from typing import Any


def empty_list() -> list[Any]:
    return []


def empty_dict() -> dict[Any, Any]:
    return {}
