"""What one SSE event means, and the learnt shape that checks a server's events cheaply.

An event's `data:` payload must decode as one JSON object; it is a token event when
its first choice carries a non-empty `text` (completions) or `content` /
`reasoning_content` (chat).

Decoding every token event costs more than the rest of the client's work per token. A
server sends the same bytes around each token's text, so once a content event has been
decoded its bytes before and after the text are kept as its `Shape`. An event `prefix +
T + suffix`, where T is the rest of a valid JSON string, decodes to the learnt object
with only the text changed: `json.decoder.scanstring` (C) proves T valid without
building the object. Many events of the shape in one read are checked by one scan of
their texts joined by spaces (a space can neither end an escape nor be taken into one).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from itertools import repeat
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any

# The C scanner behind `json.loads`, called directly: `loads` on bytes first guesses the
# encoding and wraps the scan in checks, which costs as much again as the scan itself.
_SCAN: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]
_SEPARATOR = b" "  # between texts scanned together: it cannot end or continue an escape


def payload(event: bytes) -> bytes | None:
    """The event's data (its `data:` lines joined by newlines), or None when it has none."""
    if b"\n" not in event:  # the usual one-line event
        return event[5:].strip() if event.startswith(b"data:") else None
    lines = [line[5:].strip() for line in event.split(b"\n") if line.startswith(b"data:")]
    return b"\n".join(lines) if lines else None


def decode(data: bytes) -> Any:
    """The JSON value of one whole payload, or None when it is not exactly one value."""
    try:
        text = data.decode()
        obj, stop = _SCAN(text, 0)
    except (ValueError, StopIteration, RecursionError):
        return None
    return obj if stop == len(text) else None


def is_content(choice: object, chat: bool) -> bool:
    """True when a chunk's first choice carries generated text (a token event)."""
    if not isinstance(choice, dict):
        return False
    if chat:
        delta = choice.get("delta")
        if not isinstance(delta, dict):
            return False
        piece = delta.get("content") or delta.get("reasoning_content")
    else:
        piece = choice.get("text")
    return piece.__class__ is str and piece != ""


class Shape:
    """A content event's bytes before and after its text (see the module's docstring).

    `prefix` ends with the text's opening quote, `suffix` starts after its closing quote.
    `nonempty` / `empty`: whether an event of this shape with a non-empty / empty text is
    a token event. Learnt only from events without `usage` or `error`.
    """

    __slots__ = (
        "empty",
        "end",
        "least",
        "nonempty",
        "prefix",
        "prefix_len",
        "suffix",
        "suffix_len",
    )

    def __init__(self, prefix: bytes, suffix: bytes, empty: bool, nonempty: bool) -> None:
        self.prefix = prefix
        self.suffix = suffix
        self.prefix_len = len(prefix)
        self.suffix_len = len(suffix)
        self.least = self.prefix_len + self.suffix_len + 1  # the closing quote at least
        self.end = b'"' + suffix + b"\n\n"  # where an event of this shape ends
        self.empty = empty
        self.nonempty = nonempty

    def tokens(self, data: bytes, start: int, end: int) -> int:
        """For the event `data[start:end]`: 1 a token event of this shape, 0 an event of
        this shape that is no token, -1 not of this shape (decode it)."""
        if (
            end - start < self.least
            or not data.startswith(self.prefix, start)
            or not data.endswith(self.suffix, start, end)
        ):
            return -1
        try:
            rest = data[start + self.prefix_len : end - self.suffix_len].decode()
            if scanstring(rest, 0)[1] != len(rest):
                return -1
        except ValueError:  # bad UTF-8, a bad escape or control character, no closing quote
            return -1
        return int(self.nonempty if len(rest) > 1 else self.empty)

    def run(self, data: bytes, start: int, last: int, limit: int) -> tuple[int, int]:
        """(token events, where the next event starts) for the events of this shape from
        `start` on in `data[:last]`; (0, start) when none, or any is invalid or over
        `limit` (each event is then checked alone)."""
        if not data.startswith(self.prefix, start):
            return 0, start
        # every piece but the last ends where an event of this shape ends: the first is
        # the first text, each other one an event of this shape when it starts with prefix
        pieces = data[start + self.prefix_len : last].split(self.end)
        pieces.pop()
        if not pieces:
            return 0, start
        tail = pieces[1:]
        shaped = list(map(bytes.startswith, tail, repeat(self.prefix)))
        if not all(shaped):
            del tail[shaped.index(False) :]
        skip = self.prefix_len
        texts = [pieces[0], *[piece[skip:] for piece in tail]]
        events = len(texts)
        size = sum(map(len, texts))
        if size + events * self.least > limit and max(map(len, texts)) + self.least > limit:
            return 0, start
        texts.append(b'"')
        try:
            joined = _SEPARATOR.join(texts).decode()
            if scanstring(joined, 0)[1] != len(joined):
                return 0, start
        except ValueError:
            return 0, start
        empties = texts.count(b"")
        tokens = (events - empties) * self.nonempty + empties * self.empty
        return tokens, start + size + events * (self.least + 2)

    @staticmethod
    def learn(event: bytes, chat: bool) -> Shape | None:
        """The shape of a one-line content event without usage or error, if it has one."""
        if event[:6] != b"data: " or b"\n" in event:
            return None
        for key in (b'"content"', b'"reasoning_content"') if chat else (b'"text"',):
            at = event.find(key)
            while at >= 0:
                shape = _shape_at(event, at + len(key), key[1:-1].decode(), chat)
                if shape is not None:
                    return shape
                at = event.find(key, at + 1)
        return None


def _shape_at(event: bytes, at: int, key: str, chat: bool) -> Shape | None:
    """The shape whose text is the string value after the key ending at `at`, if that
    value is the key's field in the event's first choice (checked by decoding the event
    with two different texts in its place: only that field follows both)."""
    rest = event[at:].lstrip(b" \t")
    if rest[:1] != b":":
        return None
    rest = rest[1:].lstrip(b" \t")
    if rest[:1] != b'"':
        return None
    quote = len(event) - len(rest)
    try:
        tail = event[quote:].decode()
        stop = scanstring(tail, 1)[1]
    except ValueError:
        return None
    prefix, suffix = event[: quote + 1], event[quote + len(tail[:stop].encode()) :]
    if b"\n" in suffix:
        return None
    found: list[bool] = []
    for text in ("", "x"):
        data = payload(prefix + text.encode() + b'"' + suffix)
        obj = decode(data) if data else None
        if obj.__class__ is not dict or obj.get("error") is not None:
            return None
        if isinstance(obj.get("usage"), dict):
            return None
        choices = obj.get("choices")
        if not choices or choices.__class__ is not list or not isinstance(choices[0], dict):
            return None
        holder = choices[0].get("delta") if chat else choices[0]
        if not isinstance(holder, dict) or holder.get(key) != text:
            return None
        found.append(is_content(choices[0], chat))
    return Shape(prefix, suffix, found[0], found[1])
