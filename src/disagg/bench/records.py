"""A request as sent (`RequestSpec`) and as it came back (`RequestRecord`: what the
metrics are computed from and what the JSONL keeps).

Times are `time.monotonic()` seconds (CLOCK_MONOTONIC, shared by every process on
the host, so worker processes' records merge on one time axis).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

TokenSource = Literal["usage", "tokenizer", "chunks", "none"]


@dataclass(frozen=True, slots=True)
class RequestSpec:
    """One prepared request: the exact bytes to send and the lengths they stand for."""

    index: int
    body: bytes
    input_len: int
    output_len: int


@dataclass(slots=True)
class RequestRecord:
    """The outcome of one request."""

    index: int
    input_len: int
    requested_output_len: int
    ready: float = 0.0  # when the schedule (and the concurrency cap) allowed the send
    send: float = 0.0  # just before the request was handed to the HTTP client
    headers_at: float = 0.0  # when the response status line and headers arrived
    finished: float = 0.0  # when the response ended (or failed)
    ttft: float = 0.0  # seconds, first content event - send
    e2el: float = 0.0  # seconds, last content event - send
    itls: list[float] = field(default_factory=list)
    output_len: int = 0
    output_source: TokenSource = "none"
    server_prompt_tokens: int | None = None
    chunks: int = 0
    success: bool = False
    error: str | None = None
    status: int | None = None

    @property
    def queue_time(self) -> float:
        """Client-side lag: actual send minus the moment the send was due."""
        return max(0.0, self.send - self.ready)

    def to_json(self, origin: float) -> dict[str, Any]:
        """A JSONL row; times relative to `origin` (the measured window's start), in ms."""
        return {
            "index": self.index,
            "success": self.success,
            "error": self.error,
            "status": self.status,
            "input_len": self.input_len,
            "requested_output_len": self.requested_output_len,
            "output_len": self.output_len,
            "output_len_source": self.output_source,
            "server_prompt_tokens": self.server_prompt_tokens,
            "chunks": self.chunks,
            "ready_ms": round((self.ready - origin) * 1000, 3),
            "send_ms": round((self.send - origin) * 1000, 3),
            "headers_ms": round((self.headers_at - origin) * 1000, 3) if self.headers_at else None,
            "finished_ms": round((self.finished - origin) * 1000, 3),
            "queue_ms": round(self.queue_time * 1000, 3),
            "ttft_ms": round(self.ttft * 1000, 3) if self.success else None,
            "e2el_ms": round(self.e2el * 1000, 3) if self.success else None,
            "itls_ms": [round(x * 1000, 3) for x in self.itls],
        }
