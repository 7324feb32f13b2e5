"""`sweep:`: one variant per combination of some values, as srtctl expands it
(`srtctl/core/sweep.py`): the cartesian product in key order, `{parameter}` replaced in
strings, named `<name>_<param><value>...`. A string that is only the placeholder takes
the value itself, which is what srtctl's schema makes of its text (`"8"` -> 8).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from disagg.errors import DisaggError, SourceLocation

SWEEP = "sweep"


def is_list(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str | bytes)


def _text(value: Any) -> str:
    """The text srtctl puts in place of a placeholder embedded in a longer string
    (Python's spelling, `True` / `0.85`; a list joined with commas)."""
    if is_list(value):
        return ",".join(str(item) for item in value)
    return str(value)


def fill(template: Any, values: Mapping[str, Any]) -> Any:
    """`template` with every `{parameter}` of `values` replaced (see the module doc)."""
    if isinstance(template, Mapping):
        return {key: fill(item, values) for key, item in template.items()}
    if is_list(template):
        return [fill(item, values) for item in template]
    if not isinstance(template, str):
        return template
    for key, value in values.items():
        if template == f"{{{key}}}":
            return value
    out = template
    for key, value in values.items():
        out = out.replace(f"{{{key}}}", _text(value))
    return out


def parameters(
    sweep: Any, *, where: SourceLocation, locate: Any, context: str
) -> list[tuple[str, list[Any]]]:
    """The (parameter, values) pairs of a `sweep` map, or an error at `locate(key)`: srtctl
    iterates every key's value, so a non-list or schema 2's `mode` / `parameters` would not
    sweep what it says."""
    if not isinstance(sweep, Mapping) or not sweep:
        raise DisaggError(
            f"`sweep` ({context}) must be a map of parameters to lists of values",
            location=where,
            hint="e.g. sweep: {tp: [4, 8]} and `{tp}` where the value goes",
        )
    found = []
    for key, values in sweep.items():
        if key in ("mode", "parameters"):
            raise DisaggError(
                f"`sweep.{key}` ({context}): srtctl expands every key of `sweep` as a "
                "parameter of a grid",
                location=locate(key),
                hint="list the parameters directly under `sweep:`, e.g. sweep: {tp: [4, 8]}",
            )
        if not is_list(values) or not values:
            raise DisaggError(
                f"`sweep.{key}` ({context}) must be a non-empty list of values",
                location=locate(key),
                hint=f"e.g. {key}: [4, 8]",
            )
        found.append((str(key), list(values)))
    return found


def combinations(params: list[tuple[str, list[Any]]]) -> Iterator[dict[str, Any]]:
    """Every combination of the parameters' values, the last parameter varying fastest."""
    names = [name for name, _ in params]
    for values in itertools.product(*(values for _, values in params)):
        yield dict(zip(names, values, strict=True))


def job_name(name: Any, values: Mapping[str, Any]) -> str:
    """srtctl's name of one sweep job: `<name>_<param><value>_...`."""
    suffix = "_".join(f"{key}{value}" for key, value in values.items())
    return f"{name}_{suffix}"
