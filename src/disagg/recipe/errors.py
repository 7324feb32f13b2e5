"""Turn pydantic validation errors into one positioned, readable DisaggError: the part of
`loc` that exists in the data (not union member names), and the closest key for typos."""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from disagg.errors import DisaggError, SourceLocation
from disagg.recipe.source_map import Key, KeyPath

Locator = Callable[[KeyPath, bool], SourceLocation]
MAX_LISTED = 5


def did_you_mean(word: str, choices: Iterable[str]) -> str | None:
    """The closest choice to a probable typo, or None."""
    matches = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return matches[0] if matches else None


def dotted(path: Sequence[Key]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "<top level>"


def undotted(name: str) -> KeyPath:
    """The path `dotted` wrote: `services[0].name` -> ("services", 0, "name")."""
    path: list[Key] = []
    for part in name.split("."):
        head, *indexes = part.split("[")
        if head:
            path.append(head)
        for index in indexes:
            text = index.removesuffix("]")
            path.append(int(text) if text.isdigit() else text)
    return tuple(path)


def _real_path(data: Any, loc: Sequence[Any]) -> KeyPath:
    """The prefix of `loc` that names real keys/indexes in `data` (drops union tags)."""
    path: list[Key] = []
    node = data
    for index, part in enumerate(loc):
        if not _has(node, part):
            if any(_has(node, later) for later in loc[index + 1 : index + 3]):
                continue  # a union member's tag (`tagged-union[...]`, `vllm`) before a real key
            break
        node = node[part]
        path.append(part)
    return tuple(path)


def _has(node: Any, part: Any) -> bool:
    if isinstance(node, Mapping):
        return part in node
    return isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)


def _unwrap_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        for arg in typing.get_args(annotation):
            found = _unwrap_model(arg)
            if found is not None:
                return found
    return None


def model_at(root: type[BaseModel], path: Sequence[Key]) -> type[BaseModel] | None:
    """The section model that validates the map at `path`, if that map is a section."""
    model: type[BaseModel] | None = root
    for part in path:
        if model is None or not isinstance(part, str) or part not in model.model_fields:
            return None
        model = _unwrap_model(model.model_fields[part].annotation)
    return model


def _describe(value: Any) -> str:
    kind = {dict: "a map", list: "a list", str: "text", bool: "a boolean", type(None): "null"}
    name = kind.get(
        type(value), f"a{'n' if type(value).__name__[0] in 'aeiou' else ''} {type(value).__name__}"
    )
    if isinstance(value, dict | list):
        return name
    text = repr(value)
    return f"{name} ({text[:40] + '...' if len(text) > 40 else text})"


def _one(
    error: ErrorDetails,
    data: Any,
    root: type[BaseModel],
    locate: Locator,
    prefix: str,
    named: Callable[[KeyPath], str],
) -> tuple[SourceLocation, str, str | None]:
    loc = tuple(error["loc"])
    kind = error["type"]
    if kind == "extra_forbidden":
        path = _real_path(data, loc)
        key = path[-1] if path else loc[-1]
        parent = path[:-1]
        model = model_at(root, parent)
        allowed = sorted(model.model_fields) if model else []
        guess = did_you_mean(str(key), allowed)
        hint = f"did you mean `{guess}`?" if guess else None
        if allowed:
            listing = "allowed here: " + ", ".join(allowed)
            hint = f"{hint} ({listing})" if hint else listing
        return locate(path, True), f"unknown key `{prefix}{named(path)}`", hint
    if kind == "missing":
        parent = _real_path(data, loc[:-1])
        return (
            locate(parent, True),
            f"missing required field `{prefix}{named((*parent, loc[-1]))}`",
            f"add `{loc[-1]}:` under `{named(parent)}`" if parent else f"add `{loc[-1]}:`",
        )
    path = _real_path(data, loc)
    value = error.get("input")
    message = error["msg"]
    hint = None
    if kind == "literal_error" and isinstance(value, str):
        expected = (error.get("ctx") or {}).get("expected", "")
        options = [part.strip(" '") for part in str(expected).replace(" or ", ",").split(",")]
        guess = did_you_mean(value, [option for option in options if option])
        hint = f"did you mean {guess!r}?" if guess else None
    elif kind in ("int_type", "float_type", "bool_type") and isinstance(value, str):
        hint = "write the value without quotes"
    elif kind == "string_type" and not isinstance(value, dict | list):
        hint = "quote the value to make it text"
    return (
        locate(path, False),
        f"`{prefix}{named(path)}`: {message[0].lower() + message[1:]}, got {_describe(value)}",
        hint,
    )


def validation_error(
    exc: ValidationError,
    *,
    data: Any,
    root: type[BaseModel],
    locate: Locator,
    prefix: str = "",
    context: str | None = None,
    written_path: Callable[[KeyPath], KeyPath] | None = None,
) -> DisaggError:
    """One DisaggError for all problems: the first located, up to MAX_LISTED more listed;
    `written_path` maps a path of `data` to the one the file wrote (schema 2), which
    `locate` takes and messages name."""

    def named(path: KeyPath) -> str:
        return dotted(written_path(path) if written_path else path)

    def at(path: KeyPath, key: bool) -> SourceLocation:
        return locate(written_path(path) if written_path else path, key)

    seen: dict[str, tuple[SourceLocation, str, str | None]] = {}
    # An unknown key first: a typo often explains a "missing" field reported beside it.
    errors = sorted(exc.errors(include_url=False), key=lambda e: e["type"] != "extra_forbidden")
    # A map that one member of a union (`sglang | {type: sglang, ...}`) refused as a whole
    # while another looked inside: only the deeper complaint says what is wrong.
    paths = [_real_path(data, error["loc"]) for error in errors]
    errors = [
        error
        for error, path in zip(errors, paths, strict=True)
        if not isinstance(error.get("input"), Mapping)
        or not any(len(other) > len(path) and other[: len(path)] == path for other in paths)
    ]
    for error in errors:
        where, message, hint = _one(error, data, root, at, prefix, named)
        subject, _, detail = message.partition(": ")
        previous = seen.get(subject)
        if previous is None:
            seen[subject] = (where, message, hint)
        elif detail and detail not in previous[1]:
            # A union: each member failed; say what any of them would have accepted.
            wanted = detail.split(", got ")[0].removeprefix("input should be ")
            merged = previous[1].replace("input should be ", "expected ", 1)
            merged = merged.replace(", got ", f" or {wanted}, got ", 1)
            seen[subject] = (previous[0], merged, previous[2] or hint)
    problems = list(seen.values())
    where, message, hint = problems[0]
    if context:
        message = f"{message} (in {context})"
    for loc, text, extra_hint in problems[1 : 1 + MAX_LISTED]:
        suggestion = f" ({extra_hint.split(' (')[0]})" if extra_hint else ""
        message += f"\n  also {loc}: {text}{suggestion if 'did you mean' in suggestion else ''}"
    if len(problems) > 1 + MAX_LISTED:
        message += f"\n  ... and {len(problems) - 1 - MAX_LISTED} more"
    return DisaggError(message, location=where, hint=hint)
