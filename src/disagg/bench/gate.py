"""The one validity gate for a point's numbers, applied by every reader of a result file.

A file's own `valid` is a claim, not a verdict (a custom client, an older disagg or a
hand edit can write it beside numbers no one may trust), so every reader judges it
through `verdict`: every number finite, measured ones not negative, counts whole and
adding up, duration positive, some request completed with tokens, and the failed share
within `max_failure_ratio`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, TypeGuard

COUNT_FIELDS = ("completed", "failed", "num_prompts", "total_input_tokens", "total_output_tokens")
MAX_WALK = 10_000_000  # numbers looked at in one file; a result file holds far fewer
MAX_NESTING = 32  # no point field nests deeper; a client's deeper value is dropped


def is_number(value: object) -> TypeGuard[int | float]:
    """A JSON number (a bool is not one, though Python counts it as an int)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def non_finite(data: object) -> str | None:
    """Where the first NaN or infinity in a decoded JSON value is, e.g. `itls[3][0] is NaN`."""
    stack: list[tuple[str, object]] = [("", data)]
    seen = 0
    while stack and seen < MAX_WALK:
        where, value = stack.pop()
        seen += 1
        if isinstance(value, float) and not math.isfinite(value):
            shown = "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
            return f"{where or 'the value'} is {shown}"
        if isinstance(value, Mapping):
            stack.extend((f"{where}.{k}" if where else str(k), v) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((f"{where}[{i}]", v) for i, v in enumerate(value))
    return None


def numbers_problem(data: Mapping[str, Any]) -> str | None:
    """Why the point's numbers cannot be right, or None: non-finite anywhere, a negative
    top-level number, a fractional or inconsistent count, a duration that is not positive."""
    problem = non_finite(data)
    if problem is not None:
        return f"{problem}, not a finite number"
    for key, value in data.items():
        if is_number(value) and value < 0:
            return f"{key} is {value:g}, a negative number"
    for key in COUNT_FIELDS:
        value = data.get(key)
        if value is not None and (not is_number(value) or value != int(value)):
            return f"{key} is {value!r}, not a whole count"
    duration = data.get("duration")
    if not is_number(duration) or duration <= 0:
        return f"duration is {duration!r}, not a positive number of seconds"
    total, output = data.get("total_token_throughput"), data.get("output_throughput")
    if is_number(total) and is_number(output) and total < output:
        return f"total_token_throughput ({total:g}) is below output_throughput ({output:g})"
    completed, failed, asked = (data.get(k) for k in ("completed", "failed", "num_prompts"))
    failed = failed if is_number(failed) else 0
    if is_number(asked) and is_number(completed) and completed + failed > asked:
        return f"completed ({completed:g}) + failed ({failed:g}) exceed the {asked:g} prompts asked"
    return None


def count_problem(
    *,
    total: int,
    completed: int,
    failed: int,
    output_tokens: int,
    max_failure_ratio: float,
    first_error: str | None = None,
) -> str | None:
    """The count checks of the gate: something completed, produced tokens, few failed."""
    error = f"; first error: {first_error}" if first_error else ""
    if total == 0:
        return "no requests were sent"
    if completed == 0:
        return f"no completed requests{error}"
    if failed / total > max_failure_ratio:
        return (
            f"{failed} of {total} requests failed ({100 * failed / total:.1f}% > "
            f"{100 * max_failure_ratio:g}% allowed){error}"
        )
    if output_tokens == 0:
        return "the server produced no output tokens"
    return None


def _count(data: Mapping[str, Any], key: str) -> int | None:
    value = data.get(key)
    return int(value) if is_number(value) and math.isfinite(value) else None


def verdict(data: Mapping[str, Any], max_failure_ratio: float) -> str | None:
    """Why a point result (disagg's or a vLLM-format client's) is invalid, or None.

    A file that says it is invalid stays invalid; one that says valid is judged again.
    Requests the file asked for but counts neither completed nor failed count as failed.
    """
    if data.get("valid") is False:
        return str(data.get("invalid_reason") or "marked invalid by the client")
    completed = _count(data, "completed")
    if completed is None:
        return "no `completed` count"
    if completed == 0:
        return "no completed requests"
    problem = numbers_problem(data)
    if problem is not None:
        return problem
    failed = _count(data, "failed") or 0
    asked = _count(data, "num_prompts")
    if asked is not None:
        failed = max(failed, asked - completed)
    throughput = data.get("output_throughput")
    if not is_number(throughput):
        return f"output_throughput is {throughput!r}, not a number"
    output = _count(data, "total_output_tokens")
    if throughput <= 0:
        output = 0  # tokens counted but none per second: nothing was produced in the window
    elif output is None:
        output = 1
    return count_problem(
        total=completed + failed,
        completed=completed,
        failed=failed,
        output_tokens=output,
        max_failure_ratio=max_failure_ratio,
    )


def finite_numbers(values: Mapping[str, Any]) -> dict[str, float]:
    """The finite numbers of a mapping as floats (what progress output and state.json keep)."""
    return {
        key: float(value)
        for key, value in values.items()
        if is_number(value) and math.isfinite(value)
    }


def strict_json_value(value: Any, depth: int = 0) -> Any:
    """`value` with every NaN or infinity replaced by None, so that it is written as strict
    JSON (what strict readers, and InferenceX's tools, accept); values nested past
    MAX_NESTING are dropped."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict | list) and depth >= MAX_NESTING:
        return None
    if isinstance(value, dict):
        return {k: strict_json_value(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [strict_json_value(v, depth + 1) for v in value]
    return value
