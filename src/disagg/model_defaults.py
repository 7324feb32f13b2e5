"""Empty defaults for pydantic fields: `Field(default_factory=empty_list)`.

Not `default_factory=list`: pydantic parses a builtin's text signature when it builds a
validator, about a tenth of `disagg lint FILE`'s start. Not `default=[]`: pydantic
deep-copies a mutable default for every instance, five times the cost of a call.
"""

from __future__ import annotations

from typing import Any


def empty_list() -> list[Any]:
    return []


def empty_dict() -> dict[Any, Any]:
    return {}
