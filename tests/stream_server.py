"""Local OpenAI-compatible streaming servers with known timing, for tests and benchmarks.

The server is a raw asyncio protocol (no framework) so that it costs little CPU and
leaves the machine to the client being measured. Each streamed token chunk is
written at an absolute time: `arrival + ttft + i * itl`, so the truth is known.
Modes cover what a real server does wrong: no `usage`, several tokens per chunk
(speculative decoding), a stream cut mid-way, HTTP errors, never answering, and
answering with keep-alive comments only (bytes without progress).

`GET /stats` returns how late the server itself emitted chunks against that
schedule, so a benchmark can tell the server's error from the client's.

It is test and benchmark support, not part of disagg: tests import it as `stream_server`
(like `tiny_model`), the scripts in benchmarks/ from this folder. Run it alone with
`python tests/stream_server.py --config '{"ttft_ms": 50, "itl_ms": 10}'`; it prints
`PORT <n>` once listening. `serve_in_subprocess` does that for tests.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, cast

__all__ = ["ServerConfig", "serve_in_subprocess"]


@dataclass(frozen=True)
class ServerConfig:
    """What the test server does for each completion request."""

    ttft_ms: float = 0.0  # first chunk this long after the request arrived
    itl_ms: float = 0.0  # then one chunk every itl_ms; 0 and 0 = write everything at once
    output_tokens: int = 0  # 0 = the request's max_tokens
    tokens_per_chunk: int = 1  # >1 imitates speculative decoding
    usage: bool = True  # send the final usage chunk when asked (stream_options.include_usage)
    fail_status: int = 0  # answer every `fail_every`-th request with this HTTP status
    fail_every: int = 1
    break_after_chunks: int = 0  # >0: drop the connection after this many chunks
    hang: bool = False  # read requests but never answer
    keepalive_ms: float = 0.0  # >0: answer with headers, then only SSE comments this often
    fail_first: int = 0  # answer the first N requests with `fail_status` (default 500)
    truncated_events: bool = False  # content events cut short, after their text
    event_bytes: int = 0  # >0: each content event carries a text this many bytes long


_TOKEN = " tok"
_HEALTH = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok"
_STREAM_HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
    b"Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n"
)


def _frame(payload: bytes) -> bytes:
    """One HTTP chunk holding one SSE event."""
    return b"%x\r\n%s\r\n" % (len(payload), payload)


def _event(obj: dict[str, Any] | str, *, truncated: bool = False) -> bytes:
    data = obj if isinstance(obj, str) else json.dumps(obj, separators=(",", ":"))
    if truncated:
        data = data[: len(data) * 4 // 5]  # past the text, short of the closing braces
    return _frame(b"data: " + data.encode() + b"\n\n")


class _Server:
    """Shared state: pre-built chunks so the per-token path only calls transport.write."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.requests = 0
        # lateness of emitted chunks against their schedule (seconds): the server's own error
        self.first_late_sum = 0.0
        self.first_count = 0
        self.late_sum = 0.0
        self.late_count = 0
        self.loop = asyncio.get_running_loop()
        text = "x" * config.event_bytes if config.event_bytes else _TOKEN * config.tokens_per_chunk
        self.chunk = {
            "completions": _event(
                {
                    "id": "cmpl-test",
                    "object": "text_completion",
                    "model": "test",
                    "choices": [{"index": 0, "text": text, "finish_reason": None}],
                    "usage": None,
                },
                truncated=config.truncated_events,
            ),
            "chat": _event(
                {
                    "id": "chat-test",
                    "object": "chat.completion.chunk",
                    "model": "test",
                    "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}],
                    "usage": None,
                },
                truncated=config.truncated_events,
            ),
        }
        self.role_chunk = _event(
            {
                "id": "chat-test",
                "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}],
                "usage": None,
            }
        )
        self.done = _event("[DONE]") + b"0\r\n\r\n"

    def usage(self, prompt_tokens: int, completion_tokens: int) -> bytes:
        return _event(
            {
                "id": "cmpl-test",
                "choices": [],
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion_tokens,
                    "total_tokens": prompt_tokens + completion_tokens,
                },
            }
        )


def _content_length(head: bytes) -> int:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return 0


def _read_request(body: bytes) -> tuple[int, int, bool]:
    """(max_tokens, prompt tokens, include_usage), without decoding token-id prompts."""
    at = body.find(b'"prompt":[')
    if at >= 0 and body.find(b'"max_tokens":') >= 0:
        end = body.find(b"]", at)
        prompt_tokens = body.count(b",", at, end) + 1
        key = body.find(b'"max_tokens":') + len(b'"max_tokens":')
        stop = key
        while stop < len(body) and body[stop : stop + 1] in b" 0123456789":
            stop += 1
        return int(body[key:stop]), prompt_tokens, b'"include_usage":true' in body
    request = json.loads(body)
    max_tokens = int(request.get("max_completion_tokens") or request.get("max_tokens") or 16)
    prompt = request.get("prompt") if "prompt" in request else request.get("messages")
    prompt_tokens = len(prompt) if isinstance(prompt, list) else len(str(prompt).split())
    usage = bool((request.get("stream_options") or {}).get("include_usage"))
    return max_tokens, prompt_tokens, usage


class _Stream:
    """One streamed response, emitted chunk by chunk at absolute times."""

    __slots__ = ("arrival", "chunk", "conn", "head", "n_chunks", "sent", "tail")

    def __init__(self, conn: _Conn, chunk: bytes, n_chunks: int, tail: bytes) -> None:
        self.conn = conn
        self.chunk = chunk
        self.n_chunks = n_chunks
        self.tail = tail
        self.sent = 0
        self.arrival = 0.0
        self.head = b""


class _Conn(asyncio.Protocol):
    def __init__(self, server: _Server) -> None:
        self.server = server
        self.buf = b""
        self.arrived = 0.0
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None

    def data_received(self, data: bytes) -> None:
        self.arrived = time.monotonic()  # the schedule counts from when the bytes came in
        self.buf += data
        while True:
            buf = self.buf
            head_end = buf.find(b"\r\n\r\n")
            if head_end < 0:
                return
            at = buf.find(b"\r\nContent-Length: ", 0, head_end)  # the common spelling first
            if at >= 0:
                line_end = buf.find(b"\r\n", at + 2)
                length = int(buf[at + 18 : line_end if line_end >= 0 else head_end])
            else:
                length = _content_length(buf[:head_end])
            end = head_end + 4 + length
            if len(buf) < end:
                return
            first = buf[: buf.find(b"\r\n")].split(b" ")
            body = buf[head_end + 4 : end]
            self.buf = buf[end:]
            path = first[1].decode("latin-1") if len(first) > 1 else "/"
            self.handle(first[0].decode("latin-1"), path, body)

    def write(self, data: bytes) -> None:
        if self.transport is not None:
            self.transport.write(data)

    def handle(self, method: str, path: str, body: bytes) -> None:
        server = self.server
        config = server.config
        if method == "GET":
            self.write(self._stats() if path == "/stats" else _HEALTH)
            return
        server.requests += 1
        if config.hang:
            return
        if config.keepalive_ms > 0:
            self.write(_STREAM_HEAD)
            self._keep_alive()
            return
        injected = config.fail_status and server.requests % config.fail_every == 0
        if injected or server.requests <= config.fail_first:
            message = json.dumps({"error": {"message": "injected failure", "code": 1}}).encode()
            self.write(
                b"HTTP/1.1 %d Error\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\n\r\n%s" % (config.fail_status or 500, len(message), message)
            )
            return
        kind = "chat" if path.endswith("/chat/completions") else "completions"
        max_tokens, prompt_tokens, want_usage = _read_request(body)
        out_tokens = config.output_tokens or max_tokens
        per = config.tokens_per_chunk
        n_chunks = -(-out_tokens // per)
        tail = server.usage(prompt_tokens, out_tokens) if (want_usage and config.usage) else b""
        tail += server.done
        # the status line and headers leave with the first chunk: one write fewer per
        # request while a burst of requests arrives (what the first token waits for)
        head = _STREAM_HEAD + (server.role_chunk if kind == "chat" else b"")
        stream = _Stream(self, server.chunk[kind], n_chunks, tail)
        stream.head = head
        if config.ttft_ms <= 0 and config.itl_ms <= 0 and not config.break_after_chunks:
            self.write(head + stream.chunk * n_chunks + tail)
            return
        stream.arrival = self.arrived
        self._schedule(stream)

    def _keep_alive(self) -> None:
        """An SSE comment (bytes, but no progress) every `keepalive_ms`, forever."""
        if self.transport is None:
            return
        self.write(_frame(b": keep-alive\n\n"))
        self.server.loop.call_later(self.server.config.keepalive_ms / 1000.0, self._keep_alive)

    def _stats(self) -> bytes:
        s = self.server
        body = json.dumps(
            {
                "requests": s.requests,
                "first_chunk_lateness_ms": 1000 * s.first_late_sum / max(1, s.first_count),
                "chunk_lateness_ms": 1000 * s.late_sum / max(1, s.late_count),
            }
        ).encode()
        head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
        return head % len(body) + body

    def _schedule(self, stream: _Stream) -> None:
        config = self.server.config
        due = stream.arrival + (config.ttft_ms + stream.sent * config.itl_ms) / 1000.0
        loop = self.server.loop
        loop.call_at(loop.time() + (due - time.monotonic()), self._emit, stream)

    def _emit(self, stream: _Stream) -> None:
        if self.transport is None:
            return
        config = self.server.config
        if config.break_after_chunks and stream.sent >= config.break_after_chunks:
            self.transport.abort()
            return
        server = self.server
        late = (
            time.monotonic() - stream.arrival - (config.ttft_ms + stream.sent * config.itl_ms) / 1e3
        )
        if late < 0:
            # The loop's clock is coarser than time.monotonic() (uvloop's is cached in whole
            # milliseconds per iteration), so a timer can fire just before its due time:
            # wait out the rest, since no chunk may leave before its scheduled time.
            server.loop.call_later(-late, self._emit, stream)
            return
        if stream.sent == 0:
            server.first_late_sum += late
            server.first_count += 1
        server.late_sum += late
        server.late_count += 1
        stream.sent += 1
        chunk = stream.chunk
        if stream.head:
            chunk = stream.head + chunk
            stream.head = b""
        if stream.sent >= stream.n_chunks:
            self.write(chunk + stream.tail)
            return
        self.write(chunk)
        self._schedule(stream)


async def _serve(config: ServerConfig, port: int) -> None:
    loop = asyncio.get_running_loop()
    state = _Server(config)
    server = await loop.create_server(lambda: _Conn(state), "127.0.0.1", port, backlog=4096)
    bound = server.sockets[0].getsockname()[1]
    print(f"PORT {bound}", flush=True)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        await stop.wait()


def _install_uvloop() -> None:
    with contextlib.suppress(ImportError):
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Streaming test server with known timing")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--config", default="{}", help="ServerConfig fields as JSON")
    args = parser.parse_args(argv)
    config = ServerConfig(**json.loads(args.config))
    _install_uvloop()
    asyncio.run(_serve(config, args.port))


@contextlib.contextmanager
def serve_in_subprocess(
    config: ServerConfig | None = None, *, cpu: int | None = None
) -> Iterator[str]:
    """Start the server in its own process on a free loopback port; yield its base URL.

    The process is stopped by PID on exit. `cpu` pins it to one core (benchmarks).
    """
    payload = json.dumps(asdict(config or ServerConfig()))
    argv = [sys.executable, str(Path(__file__).resolve()), "--config", payload]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    try:
        if cpu is not None and hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(proc.pid, {cpu})
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("PORT "):
            raise RuntimeError(f"test server did not start (exit {proc.poll()})")
        yield f"http://127.0.0.1:{int(line.split()[1])}"
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


if __name__ == "__main__":
    main()
