"""Server-sent-event parsing on the hot path: raw bytes in, token timestamps out.

Every event is timestamped with the time of the read that delivered it, so events
are never merged into one (ITL is a gap between events, not between reads). The
payload is not JSON-decoded per event: a content event is recognised by a
non-empty `"text"` (completions) or `"content"`/`"reasoning_content"` (chat) string
found with `bytes.find`; only the rare non-content events (usage, errors) are
decoded. There is no line-length limit: events are cut from a growing buffer.
The raw bytes are kept (for re-tokenising the text) only when asked for.
"""

from __future__ import annotations

import json
from typing import Any

_QUOTE = 0x22
_SPACE = (0x20, 0x09)
_DONE = b"[DONE]"
_USAGE = b'"usage":'
_ERROR = b'"error"'
COMPLETIONS_KEYS = (b'"text":',)
CHAT_KEYS = (b'"content":', b'"reasoning_content":')
RAW_KEEP_LIMIT = 256 * 1024  # raw bytes kept per stream for the no-usage fallback


def _non_empty_string_at(buf: bytes, pos: int, end: int) -> bool:
    """True if a JSON string value that is not `""` starts at pos (after optional spaces)."""
    while pos < end and buf[pos] in _SPACE:
        pos += 1
    return pos + 1 < end and buf[pos] == _QUOTE and buf[pos + 1] != _QUOTE


class StreamParser:
    """Incremental SSE parser for one response; `feed` each read with its timestamp."""

    __slots__ = (
        "_keys",
        "_raw",
        "_raw_len",
        "_tail",
        "chunks",
        "done",
        "error",
        "first",
        "itls",
        "last",
        "prompt_tokens",
        "usage_tokens",
    )

    def __init__(self, chat: bool, *, keep_text: bool = False) -> None:
        self._keys = CHAT_KEYS if chat else COMPLETIONS_KEYS
        self._tail = b""
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
        raw = self._raw
        if raw is not None:
            self._raw_len += len(data)
            if self._raw_len > RAW_KEEP_LIMIT:
                self._raw = None
            else:
                raw.append(data)
        if self._tail:
            data = self._tail + data
        if b"\r" in data:
            data = data.replace(b"\r\n", b"\n")
        start = 0
        find = data.find
        while True:
            end = find(b"\n\n", start)
            if end < 0:
                break
            self._event(data, start, end, now)
            start = end + 2
        self._tail = data[start:] if start < len(data) else b""

    def _event(self, buf: bytes, start: int, end: int, now: float) -> None:
        find = buf.find
        for key in self._keys:
            at = find(key, start, end)
            if at >= 0 and _non_empty_string_at(buf, at + len(key), end):
                if self.chunks:
                    self.itls.append(now - self.last)
                else:
                    self.first = now
                self.last = now
                self.chunks += 1
                return
        data_at = find(b"data:", start, end)
        if data_at < 0:
            return  # comment, `event:` or `id:` lines only
        payload = buf[data_at + 5 : end].strip()
        if payload == _DONE:
            self.done = True
            return
        at = find(_USAGE, start, end)
        if at >= 0:
            pos = at + len(_USAGE)
            while pos < end and buf[pos] in _SPACE:
                pos += 1
            if buf[pos : pos + 4] != b"null":
                self._read_usage(payload)
                return
        if find(_ERROR, start, end) >= 0:
            self._read_error(payload)

    def _read_usage(self, payload: bytes) -> None:
        try:
            usage = json.loads(payload).get("usage") or {}
            self.usage_tokens = int(usage["completion_tokens"])
            prompt = usage.get("prompt_tokens")
            self.prompt_tokens = int(prompt) if prompt is not None else None
        except (ValueError, KeyError, TypeError, AttributeError):
            return

    def _read_error(self, payload: bytes) -> None:
        try:
            obj = json.loads(payload)
        except ValueError:
            self.error = "server sent an undecodable error event"
            return
        err = obj.get("error") if isinstance(obj, dict) else None
        if err is None:
            return
        message = err.get("message") if isinstance(err, dict) else err
        self.error = f"server error event: {str(message)[:200]}"

    def text(self) -> str | None:
        """The generated text, decoded from the kept raw bytes (fallback path only).

        None when the parser was made without `keep_text` or the stream outgrew the limit.
        """
        if self._raw is None:
            return None
        out: list[str] = []
        for block in b"".join(self._raw).replace(b"\r\n", b"\n").split(b"\n\n"):
            at = block.find(b"data:")
            if at < 0:
                continue
            payload = block[at + 5 :].strip()
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
