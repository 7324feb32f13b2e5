"""Server-sent-event parsing on the hot path: raw bytes in, token timestamps out.

Every event is timestamped with the time of the read that delivered it, so events
are never merged into one (ITL is a gap between events, not between reads). Every
`data:` payload is checked as JSON: one that does not decode is an error for its
request, never a counted token; events of a learnt shape are checked without
building their objects (`disagg.bench.sse_shape`). Parsing is linear in the bytes
received: a read is searched once for event ends, and an event still arriving is kept
as pieces joined once. An event over `max_event_bytes` fails the request.
"""

from __future__ import annotations

import json
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any

from disagg.bench.sse_shape import Shape, decode, is_content, payload

_DONE = b"[DONE]"
MAX_EVENT_BYTES = 4 * 1024 * 1024  # a streamed chunk is well under a kilobyte
RAW_KEEP_LIMIT = 256 * 1024  # raw bytes kept per stream for the no-usage fallback
_SNIPPET = 80  # bytes of a bad event quoted in the error
_CR = 13  # b"\r": a byte value is looked for by memchr, a bytes needle by a search
_SHAPE_TRIES = 3  # shapes learnt per stream at most (a server whose events all differ)


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
        "_shape_tries",
        "abandoned",
        "chunks",
        "done",
        "error",
        "first",
        "itls",
        "last",
        "prompt_tokens",
        "shape",
        "usage_tokens",
    )

    def __init__(
        self,
        chat: bool,
        *,
        keep_text: bool = False,
        max_event_bytes: int = MAX_EVENT_BYTES,
        shape: Shape | None = None,
    ) -> None:
        self._chat = chat
        self._max_event = max_event_bytes
        self._pending: list[bytes] = []  # the start of an event still arriving
        self._pending_len = 0
        self._cr = False  # the previous read ended in `\r` (half of a `\r\n`)
        self._raw: list[bytes] | None = [] if keep_text else None
        self._raw_len = 0
        # of this stream's content events, once learnt; or, to begin with, the shape an
        # earlier stream from the same server learnt (any event it matches is valid)
        self.shape = shape
        self.abandoned = False  # an event outgrew the cap: the rest is not worth reading
        self._shape_tries = 0
        self.chunks = 0  # content events seen
        self.first = 0.0  # time of the first content event
        self.last = 0.0  # time of the latest content event
        self.itls: list[float] = []
        self.usage_tokens: int | None = None
        self.prompt_tokens: int | None = None
        self.done = False
        self.error: str | None = None

    def feed(self, data: bytes, now: float) -> None:
        if self.abandoned:
            return  # an over-size event: the rest of the stream is not read
        if self._raw is not None:
            self._keep_raw(data)
        if self._cr or _CR in data:
            data = self._lf(data)
        start = self._finish_pending(data, now) if self._pending else 0
        if start < 0:
            return
        find = data.find
        limit = self._max_event
        size = len(data)
        last = -1  # where the read's whole events end, once a run of them is looked for
        while (end := find(b"\n\n", start)) >= 0:
            if end - start > limit:
                self._fits(end - start)
                return
            shape = self.shape
            if shape is not None:
                if (
                    last < 0
                    and end + 2 < size
                    and data.startswith(shape.prefix, end + 2)
                    and data.startswith(shape.prefix, start)
                ):  # this event and the next may be the start of a run of the shape
                    last = data.rfind(b"\n\n") + 2
                    tokens, after = shape.run(data, start, last, limit)
                    if after > start:
                        if tokens:
                            self._token(now)
                            self.itls += [0.0] * (tokens - 1)  # same read, same time
                            self.chunks += tokens - 1
                        start = after
                        continue
                # `shape.tokens`, inline: the one event of most reads
                if (
                    end - start >= shape.least
                    and data.startswith(shape.prefix, start)
                    and data.endswith(shape.suffix, start, end)
                ):
                    try:
                        rest = data[start + shape.prefix_len : end - shape.suffix_len].decode()
                        whole = scanstring(rest, 0)[1] == len(rest)
                    except ValueError:
                        whole = False
                    if whole:
                        if shape.nonempty if len(rest) > 1 else shape.empty:
                            if self.chunks:
                                self.itls.append(now - self.last)
                            else:
                                self.first = now
                            self.last = now
                            self.chunks += 1
                        start = end + 2
                        continue
            self._event(data[start:end], now)
            start = end + 2
        if start < size:
            self._keep(data[start:] if start else data)

    def _keep_raw(self, data: bytes) -> None:
        self._raw_len += len(data)
        if self._raw_len > RAW_KEEP_LIMIT:
            self._raw = None
        elif self._raw is not None:
            self._raw.append(data)

    def _lf(self, data: bytes) -> bytes:
        """`data` with `\r\n` as `\n`, a `\r` that ends it held back for the next read."""
        if self._cr:
            data = b"\r" + data
            self._cr = False
        if data.endswith(b"\r"):
            data = data[:-1]
            self._cr = True
        return data.replace(b"\r\n", b"\n") if _CR in data else data

    def _finish_pending(self, data: bytes, now: float) -> int:
        """End the event begun in earlier reads if `data` ends it; where the rest of
        `data` starts, or -1 when nothing of it is left to read."""
        if not data:
            return -1
        if self._pending[-1].endswith(b"\n") and data.startswith(b"\n"):
            end, start = -1, 1  # the event ended exactly between two reads
        else:
            end = data.find(b"\n\n")
            if end < 0:
                self._keep(data)
                return -1
            start = end + 2
        self._pending.append(data[:end] if end >= 0 else b"")
        event = b"".join(self._pending)
        if end < 0:
            event = event[:-1]
        self._pending, self._pending_len = [], 0
        if not self._fits(len(event)):
            return -1
        shape = self.shape
        tokens = shape.tokens(event, 0, len(event)) if shape is not None else -1
        if tokens < 0:
            self._event(event, now)
        elif tokens:
            self._token(now)
        return start

    def _keep(self, piece: bytes) -> None:
        self._pending.append(piece)
        self._pending_len += len(piece)
        self._fits(self._pending_len)

    def _fits(self, size: int) -> bool:
        if size <= self._max_event:
            return True
        self.error = self.error or f"server sent an SSE event over {self._max_event:,} bytes"
        self.abandoned = True  # the rest of the stream is ignored
        self._pending, self._pending_len = [], 0
        return False

    def _token(self, now: float) -> None:
        if self.chunks:
            self.itls.append(now - self.last)
        else:
            self.first = now
        self.last = now
        self.chunks += 1

    def _event(self, event: bytes, now: float) -> None:
        """Decode one event (not of the learnt shape) and take what it says."""
        data = payload(event)
        if not data:
            return  # comment, `event:` or `id:` lines only
        if data == _DONE:
            self.done = True
            return
        obj = decode(data)
        if obj.__class__ is not dict:
            if self.error is None:
                shown = data[:_SNIPPET]
                self.error = f"server sent an SSE event that is not a JSON object: {shown!r}"
            return
        choices = obj.get("choices")
        if choices and choices.__class__ is list and is_content(choices[0], self._chat):
            self._token(now)
            if self._shape_tries < _SHAPE_TRIES:  # learn (or learn anew) the stream's shape
                self._shape_tries += 1
                self.shape = Shape.learn(event, self._chat) or self.shape
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
        """The generated text from the kept raw bytes; None when not kept or over the limit."""
        if self._raw is None:
            return None
        out: list[str] = []
        for block in b"".join(self._raw).replace(b"\r\n", b"\n").split(b"\n\n"):
            data = payload(block)
            if not data or data == _DONE:
                continue
            try:
                obj: Any = json.loads(data)
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
