"""Server-sent-event parsing on the hot path: raw bytes in, token timestamps out.

Every event is timestamped with the time of the read that delivered it, so events
are never merged into one (ITL is a gap between events, not between reads). Every
`data:` payload is decoded as JSON: an event that does not decode (a truncated
object, stray bytes) is an error for its request, never a counted token. A content
event is one with a non-empty `text` (completions) or `content`/`reasoning_content`
(chat) in its first choice; `usage` and `error` are read from any event.

Parsing is linear in the bytes received: a read is searched once for event ends, and
the part of an event still arriving is kept as a list of pieces joined once, when the
event ends. An event may be at most `max_event_bytes` long; a longer one is an error
for the request and the rest of the stream is ignored. The raw bytes are kept (for
re-tokenising the text) only when asked for.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

_DONE = b"[DONE]"
# The C scanner behind `json.loads`, called directly: `loads` on bytes first guesses the
# encoding and wraps the scan in checks, which costs as much again as the scan itself.
_SCAN: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]
MAX_EVENT_BYTES = 4 * 1024 * 1024  # a streamed chunk is well under a kilobyte
RAW_KEEP_LIMIT = 256 * 1024  # raw bytes kept per stream for the no-usage fallback
_SNIPPET = 80  # bytes of a bad event quoted in the error


def _payload(event: bytes) -> bytes | None:
    """The event's data (its `data:` lines joined by newlines), or None when it has none."""
    if b"\n" not in event:  # the usual one-line event
        return event[5:].strip() if event.startswith(b"data:") else None
    lines = [line[5:].strip() for line in event.split(b"\n") if line.startswith(b"data:")]
    return b"\n".join(lines) if lines else None


def _content(choice: object, chat: bool) -> bool:
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


class StreamParser:
    """Incremental SSE parser for one response; `feed` each read with its timestamp."""

    __slots__ = (
        "_chat",
        "_cr",
        "_max_event",
        "_pending",
        "_pending_len",
        "_raw",
        "_raw_len",
        "chunks",
        "done",
        "error",
        "first",
        "itls",
        "last",
        "prompt_tokens",
        "usage_tokens",
    )

    def __init__(
        self, chat: bool, *, keep_text: bool = False, max_event_bytes: int = MAX_EVENT_BYTES
    ) -> None:
        self._chat = chat
        self._max_event = max_event_bytes
        self._pending: list[bytes] = []  # the start of an event still arriving
        self._pending_len = 0
        self._cr = False  # the previous read ended in `\r` (half of a `\r\n`)
        self._raw: list[bytes] | None = [] if keep_text else None
        self._raw_len = 0
        self.chunks = 0  # content events seen
        self.first = 0.0  # time of the first content event
        self.last = 0.0  # time of the latest content event
        self.itls: list[float] = []
        self.usage_tokens: int | None = None
        self.prompt_tokens: int | None = None
        self.done = False
        self.error: str | None = None

    def feed(self, data: bytes, now: float) -> None:
        if self.error is not None and self._max_event < 0:
            return  # an over-size event: the rest of the stream is not read
        raw = self._raw
        if raw is not None:
            self._raw_len += len(data)
            if self._raw_len > RAW_KEEP_LIMIT:
                self._raw = None
            else:
                raw.append(data)
        if self._cr:
            data = b"\r" + data
            self._cr = False
        if data.endswith(b"\r"):
            data = data[:-1]
            self._cr = True
        if b"\r" in data:
            data = data.replace(b"\r\n", b"\n")
        if not data:
            return
        start = 0
        if self._pending:
            last = self._pending[-1]
            if last.endswith(b"\n") and data.startswith(b"\n"):
                end, start = -1, 1  # the event ended exactly between two reads
            else:
                end = data.find(b"\n\n")
                if end < 0:
                    self._keep(data)
                    return
                start = end + 2
            self._pending.append(data[:end] if end >= 0 else b"")
            event = b"".join(self._pending)
            if end < 0:
                event = event[:-1]
            self._pending, self._pending_len = [], 0
            if not self._fits(len(event)):
                return
            self._event(event, now)
        find = data.find
        while True:
            end = find(b"\n\n", start)
            if end < 0:
                break
            if not self._fits(end - start):
                return
            self._event(data[start:end], now)
            start = end + 2
        if start < len(data):
            self._keep(data[start:] if start else data)

    @property
    def abandoned(self) -> bool:
        """An event outgrew the cap: the rest of the stream is not worth reading."""
        return self._max_event < 0

    def _keep(self, piece: bytes) -> None:
        self._pending.append(piece)
        self._pending_len += len(piece)
        self._fits(self._pending_len)

    def _fits(self, size: int) -> bool:
        if size <= self._max_event:
            return True
        self.error = self.error or f"server sent an SSE event over {self._max_event:,} bytes"
        self._max_event = -1  # ignore the rest of the stream
        self._pending, self._pending_len = [], 0
        return False

    def _event(self, event: bytes, now: float) -> None:
        if event[:6] == b"data: " and b"\n" not in event:  # the usual one-line event
            payload: bytes | None = event[6:].strip()
        else:
            payload = _payload(event)
        if not payload:
            return  # comment, `event:` or `id:` lines only
        if payload == _DONE:
            self.done = True
            return
        obj: Any = None
        try:
            text = payload.decode()
            obj, stop = _SCAN(text, 0)
            if stop != len(text):
                obj = None  # a whole value followed by more bytes
        except (ValueError, StopIteration, RecursionError):
            obj = None
        if obj.__class__ is not dict:
            if self.error is None:
                shown = payload[:_SNIPPET]
                self.error = f"server sent an SSE event that is not a JSON object: {shown!r}"
            return
        choices = obj.get("choices")
        if choices and choices.__class__ is list and _content(choices[0], self._chat):
            if self.chunks:
                self.itls.append(now - self.last)
            else:
                self.first = now
            self.last = now
            self.chunks += 1
        usage = obj.get("usage")
        if isinstance(usage, dict):
            self._read_usage(usage)
        err = obj.get("error")
        if err is not None and self.error is None:
            message = err.get("message") if isinstance(err, dict) else err
            self.error = f"server error event: {str(message)[:200]}"

    def _read_usage(self, usage: dict[str, Any]) -> None:
        completion, prompt = usage.get("completion_tokens"), usage.get("prompt_tokens")
        if isinstance(completion, int) and not isinstance(completion, bool) and completion >= 0:
            self.usage_tokens = completion
        if isinstance(prompt, int) and not isinstance(prompt, bool) and prompt >= 0:
            self.prompt_tokens = prompt

    def text(self) -> str | None:
        """The generated text, decoded from the kept raw bytes (fallback path only).

        None when the parser was made without `keep_text` or the stream outgrew the limit.
        """
        if self._raw is None:
            return None
        out: list[str] = []
        for block in b"".join(self._raw).replace(b"\r\n", b"\n").split(b"\n\n"):
            payload = _payload(block)
            if not payload or payload == _DONE:
                continue
            try:
                obj: Any = json.loads(payload)
                choice = obj["choices"][0]
            except (ValueError, KeyError, IndexError, TypeError):
                continue
            if "text" in choice:
                out.append(choice.get("text") or "")
            else:
                delta = choice.get("delta") or {}
                out.append((delta.get("reasoning_content") or "") + (delta.get("content") or ""))
        return "".join(out)

    def release(self) -> None:
        """Drop the raw bytes once they are no longer needed."""
        self._raw = None
