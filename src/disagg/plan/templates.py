"""`${role.field}` placeholders in role argv/env, filled in inside the allocation
(`host`, `url`, port names, `node_rank`, `nnodes`, `addr`; `self` names the role launched).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from disagg.errors import DisaggError

PLACEHOLDER = re.compile(r"\$\{([A-Za-z0-9_-]+)\.([A-Za-z0-9_]+)\}")


def substitute(text: str, bindings: Mapping[str, Mapping[str, str]], *, self_name: str) -> str:
    """Replace every placeholder; an unknown one is an error naming it (never left in argv)."""

    def replace(match: re.Match[str]) -> str:
        scope, field = match.group(1), match.group(2)
        if scope == "self":
            scope = self_name
        try:
            return bindings[scope][field]
        except KeyError:
            raise DisaggError(
                f"placeholder ${{{match.group(1)}.{field}}} in role {self_name} has no value",
                hint=f"known scopes: {', '.join(sorted(bindings))}",
            ) from None

    return PLACEHOLDER.sub(replace, text)


def substitute_all(
    argv: list[str], bindings: Mapping[str, Mapping[str, str]], *, self_name: str
) -> list[str]:
    return [substitute(arg, bindings, self_name=self_name) for arg in argv]
