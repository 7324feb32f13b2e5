"""YAML 1.1 scalar resolution, as srt-slurm's loader (PyYAML `safe_load`) applies it, for the
loader and the linter alike; timestamps stay strings, because plans are JSON."""

from __future__ import annotations

import math
import re
from typing import Any

TAG = "tag:yaml.org,2002:"
# YAML 1.1, the rules of PyYAML's resolver (what srt-slurm's `yaml.safe_load` applies).
_INT = re.compile(r"[-+]?(?:0b[01_]+|0[0-7_]+|(?:0|[1-9][0-9_]*)|0x[0-9a-fA-F_]+)")
_INT60 = re.compile(r"[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+")
FLOAT = re.compile(
    r"[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?"
    r"|\.[0-9_]+(?:[eE][-+][0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)"
    r"|\.(?:nan|NaN|NAN)"
)
_FLOAT60 = re.compile(r"[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*")
_NULLS = frozenset({"", "~", "null", "Null", "NULL"})
BOOLS = {
    spelling: value
    for words, value in (("true yes on", True), ("false no off", False))
    for word in words.split()
    for spelling in (word, word.capitalize(), word.upper())
}
_NUMERIC_START = frozenset("-+0123456789.")
_plain_cache: dict[str, Any] = {}


def resolve_plain(value: str) -> Any:
    """YAML 1.1 resolution of an untagged plain scalar, as PyYAML does (dates, times as text)."""
    cached = _plain_cache.get(value, _plain_cache)
    if cached is not _plain_cache:
        return cached
    result: Any = value
    if value in _NULLS:
        result = None
    elif value in BOOLS:
        result = BOOLS[value]
    elif value[0] in _NUMERIC_START:
        if FLOAT.fullmatch(value):
            result = to_float(value)
        elif _INT.fullmatch(value):
            result = to_int(value, value)
        elif _INT60.fullmatch(value) or _FLOAT60.fullmatch(value):
            result = _base_60(value)
    if len(_plain_cache) > 200_000:
        _plain_cache.clear()
    _plain_cache[value] = result
    return result


def to_int(text: str, fallback: Any) -> Any:
    """A YAML 1.1 integer: `0b1010`, `0x1f`, `017` (octal, as PyYAML reads it), `1_000`."""
    digits = text.replace("_", "")
    sign = -1 if digits.startswith("-") else 1
    digits = digits.lstrip("+-")
    try:
        if digits[:2] in ("0b", "0x"):
            return sign * int(digits[2:], 2 if digits[1] == "b" else 16)
        if len(digits) > 1 and digits[0] == "0":
            return sign * int(digits[1:], 8)
        return sign * int(digits)
    except (ValueError, IndexError):
        return fallback


def _base_60(text: str) -> int | float:
    """`1:30` -> 90, `-1:00:00.5` -> -3600.5 (YAML 1.1 sexagesimal numbers)."""
    sign = -1 if text.startswith("-") else 1
    parts = text.replace("_", "").lstrip("+-").split(":")
    total: int | float = 0
    for part in parts[:-1]:
        total = total * 60 + int(part)
    last = float(parts[-1]) if "." in parts[-1] else int(parts[-1])
    return sign * (total * 60 + last)


def to_float(text: str) -> float:
    lowered = text.replace("_", "").lower()
    sign = -1.0 if lowered.startswith("-") else 1.0
    body = lowered.lstrip("+-")
    if body == ".inf":
        return sign * math.inf
    if body == ".nan":
        return math.nan
    return sign * float(body)
