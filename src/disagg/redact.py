"""Secret-looking values (tokens, API keys, passwords) never appear in what disagg prints.

One rule for printed plans, report.html's configs and lint's DA009: a value is secret
when its key (variable, field, `--flag`) looks like a credential, or when it is shaped
like a known token under any key (cut out of a longer text, the rest stays readable).
A reference to the submitting environment (`$HF_TOKEN`) is shown as written.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from functools import lru_cache
from typing import Any

REDACTED = "<redacted>"

_SECRET_WORDS = frozenset(
    {
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "PASS",
        "PAT",
        "KEY",
        "CREDENTIAL",
        "CREDENTIALS",
        "APIKEY",
    }
)
_SECRET_PAIRS = frozenset(
    {("API", "KEY"), ("ACCESS", "KEY"), ("PRIVATE", "KEY"), ("AUTH", "KEY"), ("SECRET", "KEY")}
)
_PLACEHOLDERS = frozenset({"EMPTY", "NONE", "NULL", "DUMMY", "-"})
_REFERENCE = re.compile(r"\$(?:[A-Za-z_][A-Za-z0-9_]*|\{[A-Za-z_][A-Za-z0-9_]*\})")
# Token shapes that are credentials whatever key holds them (prefixes the issuers document).
_TOKEN = re.compile(
    r"(?<![A-Za-z0-9])(?:"
    r"hf_[A-Za-z0-9]{16,}"  # Hugging Face
    r"|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"  # GitHub
    r"|glpat-[A-Za-z0-9_-]{20,}"  # GitLab
    r"|sk-[A-Za-z0-9_-]{16,}"  # OpenAI-style API keys (also sk-proj-, sk-ant-)
    r"|(?:AKIA|ASIA)[A-Z0-9]{16}"  # AWS access key ids
    r"|xox[abprs]-[A-Za-z0-9-]{10,}"  # Slack
    r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"  # JWT
    r")"
)


def has_token(text: str) -> bool:
    """Whether `text` holds something shaped like a known credential token."""
    return _TOKEN.search(text) is not None


def scrub(text: str) -> str:
    """`text` with every token-shaped part replaced by `<redacted>`."""
    return _TOKEN.sub(REDACTED, text)


@lru_cache(maxsize=4096)  # lint asks of every key of every file; the names repeat
def is_secret_name(name: str) -> bool:
    """Names ending like a credential: `HF_TOKEN`, `WANDB_API_KEY`, `api-key`,
    `AWS_SECRET_ACCESS_KEY`. A word inside a longer name (`SGLANG_PER_TOKEN_GROUP_X`,
    `HF_TOKEN_PATH`) is not a credential."""
    words = [w for w in re.split(r"[^A-Za-z0-9]+", name.upper()) if w]
    if not words:
        return False
    return words[-1] in _SECRET_WORDS or tuple(words[-2:]) in _SECRET_PAIRS


def is_literal_secret(name: str, value: Any) -> bool:
    """A secret-looking key holding a written-out value (not empty, not `$NAME`), or a
    value holding a token-shaped credential under any key."""
    if isinstance(value, str) and has_token(value):
        return True
    return _is_literal(value) and is_secret_name(name)


def _is_literal(value: Any) -> bool:
    """Written-out text that is neither empty, a `$NAME` reference, nor a placeholder such as
    `EMPTY` (what local OpenAI-compatible servers are given when they check no key)."""
    if not isinstance(value, str):
        return False
    text = value.strip()
    if not text or text.upper() in _PLACEHOLDERS:
        return False
    return _REFERENCE.fullmatch(text) is None


def redact(data: Any) -> Any:
    """A copy of `data` with every literal secret replaced by `<redacted>`: in maps by key,
    in argv lists after a secret-looking `--flag` (or `--flag=value`), in any text each
    token-shaped part."""
    if isinstance(data, Mapping):
        return {
            key: REDACTED if _is_literal(value) and is_secret_name(str(key)) else redact(value)
            for key, value in data.items()
        }
    if isinstance(data, list):
        return (
            _redact_argv(data)
            if all(isinstance(x, str) for x in data)
            else [redact(item) for item in data]
        )
    if isinstance(data, str):
        return scrub(data)
    return data


def _redact_argv(argv: list[str]) -> list[str]:
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            out.append(REDACTED if _is_literal(arg) else scrub(arg))
            hide_next = False
            continue
        flag, sep, value = arg.partition("=")
        if flag.startswith("-") and is_secret_name(flag.lstrip("-")):
            if sep:
                out.append(f"{flag}={REDACTED}" if is_literal_secret(flag, value) else arg)
                continue
            hide_next = True
        out.append(scrub(arg))
    return out


def literal_secrets(data: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Key paths of every literal secret in `data` (maps by key, argv by flag)."""
    if isinstance(data, Mapping):
        for key, value in data.items():
            here = (*path, key)
            if is_literal_secret(str(key), value):
                yield here
            else:
                yield from literal_secrets(value, here)
    elif isinstance(data, list):
        if all(isinstance(x, str) for x in data):
            for index, (before, after) in enumerate(zip(data, _redact_argv(data), strict=True)):
                if before != after:
                    yield (*path, index)
        else:
            for index, item in enumerate(data):
                yield from literal_secrets(item, (*path, index))
