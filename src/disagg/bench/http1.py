"""A minimal HTTP/1.1 keep-alive client protocol for the measurement hot path.

Why not only aiohttp: on Python 3.11 aiohttp writes a request body one loop iteration
after the send, and wakes a coroutine for every read; when a few hundred streams finish
together, a request's bytes leave milliseconds after its send timestamp (it shows as
TTFT), and each token costs ~20 us of CPU. Here a request is one `transport.write` at
send time, and each `data_received` feeds the SSE parser directly with one timestamp.

Scope: POST with a known body, `Content-Length`, chunked or close-delimited responses,
keep-alive reuse, TLS. A request without progress (no token) for longer than the
timeout fails (one watchdog per pool, not a timer per read).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
from time import monotonic
from typing import Protocol, cast
from urllib.parse import urlsplit

from disagg.bench.chunks import MALFORMED, chunk_size, whole_chunks

MAX_ERROR_BODY = 64 * 1024
MAX_HEAD = 64 * 1024  # response head, or one chunk-size line: a server past it is broken
_MANY_CHUNKS = 1024  # a read this long is de-chunked in a few calls first (`whole_chunks`)


class Sink(Protocol):
    """Receives the response body (de-chunked) with the time it arrived.

    `last` is when the body last made progress (a generated token; 0.0 before the
    first): the pool's timeout counts from there, so bytes without a token, such as
    keep-alive comments, cannot hold a request forever. `abandoned`: the body is past
    saving (an over-size event), stop reading it; `error`: why the body failed.
    """

    last: float
    abandoned: bool
    error: str | None

    def feed(self, data: bytes, now: float) -> None: ...


class HttpError(Exception):
    """The exchange failed; the message is what the request record shows."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class _Exchange:
    """Response parsing state of one request on one connection."""

    __slots__ = (
        "body_left",
        "buf",
        "chunk_left",
        "crlf_left",
        "error_body",
        "got_bytes",
        "head_done",
        "headers_at",
        "keep_alive",
        "mode",
        "sink",
        "started",
        "status",
        "waiter",
    )

    def __init__(self, sink: Sink, waiter: asyncio.Future[None]) -> None:
        self.sink = sink
        self.waiter = waiter
        self.buf = b""
        self.head_done = False
        self.status = 0
        self.headers_at = 0.0
        self.mode = 0  # 1 chunked, 2 content-length, 3 until close
        self.chunk_left = 0
        self.crlf_left = 0
        self.body_left = 0
        self.keep_alive = True
        self.error_body: list[bytes] | None = None
        self.got_bytes = False
        self.started = monotonic()

    def feed(self, data: bytes, now: float) -> bool:
        """Consume bytes; True when the response is complete."""
        self.got_bytes = True
        if self.buf:
            data = self.buf + data
            self.buf = b""
        if not self.head_done:
            end = data.find(b"\r\n\r\n")
            if end < 0:
                if len(data) > MAX_HEAD:
                    raise HttpError(f"response head over {MAX_HEAD:,} bytes")
                self.buf = data
                return False
            self._head(data[:end], now)
            data = data[end + 4 :]
        if self.mode == 1:
            return self._chunked(data, now)
        if self.mode == 2:
            take = data[: self.body_left]
            self.body_left -= len(take)
            if take:
                self._deliver(take, now)
            return self.body_left <= 0
        if data:
            self._deliver(data, now)
        return False

    def _head(self, head: bytes, now: float) -> None:
        self.head_done = True
        self.headers_at = now
        lines = head.split(b"\r\n")
        parts = lines[0].split(b" ", 2)
        try:
            self.status = int(parts[1])
        except (IndexError, ValueError) as exc:
            raise HttpError(f"bad HTTP status line {lines[0][:80]!r}") from exc
        self.mode = 3
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            key = name.strip().lower()
            if key == b"transfer-encoding" and b"chunked" in value.lower():
                self.mode = 1
            elif key == b"content-length" and self.mode != 1:
                self.mode = 2
                self.body_left = int(value)
            elif key == b"connection" and b"close" in value.lower():
                self.keep_alive = False
        if self.mode == 3:
            self.keep_alive = False
        if self.status != 200:
            self.error_body = []

    def _deliver(self, data: bytes, now: float) -> None:
        if self.error_body is None:
            self.sink.feed(data, now)
        elif sum(map(len, self.error_body)) < MAX_ERROR_BODY:
            self.error_body.append(data)

    def _chunked(self, data: bytes, now: float) -> bool:
        if not self.chunk_left and not self.crlf_left:  # exactly one whole chunk: one step
            eol = data.find(b"\r\n")
            if eol > 0:
                try:
                    end = eol + 2 + int(data[:eol], 16)
                except ValueError:
                    end = -1
                if eol + 2 < end == len(data) - 2:
                    self._deliver(data[eol + 2 : end], now)
                    return False
        out: list[bytes] = []
        pos = done = 0
        if len(data) >= _MANY_CHUNKS and not self.chunk_left and not self.crlf_left:
            pos, done = whole_chunks(data, out)
        if not done:
            done = self._chunk_by_chunk(data, pos, out)
        if out:
            self._deliver(out[0] if len(out) == 1 else b"".join(out), now)
        return bool(done)

    def _chunk_by_chunk(self, data: bytes, pos: int, out: list[bytes]) -> bool:
        """De-chunk `data[pos:]` one step at a time, with a chunk begun in an earlier read
        and chunks that go on in the next; True when the last chunk came."""
        size = len(data)
        while pos < size:
            if self.chunk_left:
                take = min(self.chunk_left, size - pos)
                out.append(data[pos : pos + take])
                pos += take
                self.chunk_left -= take
                if not self.chunk_left:
                    self.crlf_left = 2
            elif self.crlf_left:
                skip = min(self.crlf_left, size - pos)
                pos += skip
                self.crlf_left -= skip
            else:
                eol = data.find(b"\r\n", pos)
                if eol < 0:
                    self.buf = data[pos:]
                    if len(self.buf) > MAX_HEAD:
                        raise HttpError(MALFORMED)
                    break
                try:
                    length = chunk_size(data[pos:eol])
                except ValueError as exc:
                    raise HttpError(str(exc)) from exc
                pos = eol + 2
                if length == 0:
                    return True  # trailers, if any, are ignored
                end = pos + length
                if end + 2 <= size:  # the whole chunk and its CRLF: one step
                    out.append(data[pos:end])
                    pos = end + 2
                else:
                    self.chunk_left = length
        return False

    def error_text(self) -> str:
        body = b"".join(self.error_body or [])
        return f"HTTP {self.status}: {body[:300].decode('utf-8', 'replace').strip()}"


class _Conn(asyncio.Protocol):
    """One keep-alive connection; runs one exchange at a time."""

    def __init__(self, pool: Pool) -> None:
        self.pool = pool
        self.transport: asyncio.Transport | None = None
        self.exchange: _Exchange | None = None
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        ex = self.exchange
        if ex is None:
            self.close()  # bytes nobody asked for: the connection is unusable
            return
        try:
            done = ex.feed(data, monotonic())
        except (HttpError, ValueError) as exc:
            self.fail(ex, HttpError(str(exc)))
            return
        if ex.sink.abandoned:  # the parser gave up on the body: do not read the rest
            self.fail(ex, HttpError(ex.sink.error or "stopped reading the response"))
            return
        if done:
            self._finish(ex, None)
            if ex.keep_alive and not ex.buf:
                self.pool.release(self)
            else:
                self.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.transport = None
        ex = self.exchange
        if ex is not None:
            if ex.head_done and ex.mode == 3:
                self._finish(ex, None)  # close-delimited body: the close is the end
            else:
                why = "before sending anything" if not ex.got_bytes else "mid-response"
                self._finish(ex, HttpError(f"connection closed by the server {why}"))
        self.pool.forget(self)

    def _finish(self, ex: _Exchange, error: Exception | None) -> None:
        self.exchange = None
        if not ex.waiter.done():
            if error is None:
                ex.waiter.set_result(None)
            else:
                ex.waiter.set_exception(error)

    def start(self, ex: _Exchange, request: bytes) -> None:
        self.exchange = ex
        assert self.transport is not None
        self.transport.write(request)

    def fail(self, ex: _Exchange, error: Exception) -> None:
        self._finish(ex, error)
        self.close()

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()


class Pool:
    """Connections to one origin, unlimited in number, reused while idle."""

    def __init__(self, url: str, timeout_s: float) -> None:
        parts = urlsplit(url)
        self.host = parts.hostname or "127.0.0.1"
        tls = parts.scheme == "https"
        self.port = parts.port or (443 if tls else 80)
        self.ssl: ssl.SSLContext | None = ssl.create_default_context() if tls else None
        self.path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        host_header = self.host if parts.port is None else f"{self.host}:{self.port}"
        self.head = (
            f"POST {self.path} HTTP/1.1\r\nHost: {host_header}\r\n"
            "Content-Type: application/json\r\nAccept: text/event-stream\r\n"
            "User-Agent: disagg-bench\r\nContent-Length: "
        ).encode()
        self.timeout_s = timeout_s
        self.idle: list[_Conn] = []
        self.all: set[_Conn] = set()
        self._watchdog: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Pool:
        self._watchdog = asyncio.ensure_future(self._watch())
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watchdog
        for conn in list(self.all):
            conn.close()
        self.all.clear()
        self.idle.clear()

    async def _watch(self) -> None:
        """Fail exchanges without progress for longer than the timeout (checked 4 times per
        timeout): nothing since the request was sent, or since its latest token."""
        period = min(1.0, max(0.01, self.timeout_s / 4))
        while True:
            await asyncio.sleep(period)
            limit = monotonic() - self.timeout_s
            for conn in list(self.all):
                ex = conn.exchange
                if ex is not None and max(ex.started, ex.sink.last) < limit:
                    conn.fail(ex, HttpError(f"timeout: no progress for {self.timeout_s:g} s"))

    def release(self, conn: _Conn) -> None:
        if not conn.closed:
            self.idle.append(conn)

    def forget(self, conn: _Conn) -> None:
        self.all.discard(conn)
        with contextlib.suppress(ValueError):
            self.idle.remove(conn)

    async def _connect(self) -> _Conn:
        loop = asyncio.get_running_loop()
        _, proto = await asyncio.wait_for(
            loop.create_connection(lambda: _Conn(self), self.host, self.port, ssl=self.ssl),
            timeout=self.timeout_s,
        )
        self.all.add(proto)
        return proto

    async def request(self, body: bytes, sink: Sink) -> float:
        """POST `body`; the response body goes to `sink`. Returns when the headers came."""
        request = self.head + b"%d\r\n\r\n" % len(body) + body
        for attempt in (0, 1):
            conn = None
            while self.idle:
                candidate = self.idle.pop()
                if not candidate.closed:
                    conn = candidate
                    break
            reused = conn is not None
            if conn is None:
                try:
                    conn = await self._connect()
                except TimeoutError as exc:
                    raise HttpError(f"timeout: no connection in {self.timeout_s:g} s") from exc
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            ex = _Exchange(sink, waiter)
            conn.start(ex, request)
            try:
                await waiter
            except HttpError:
                # a kept-alive connection the server had just closed: retry once, fresh
                if reused and attempt == 0 and not ex.got_bytes:
                    continue
                raise
            except asyncio.CancelledError:
                conn.close()
                raise
            if ex.error_body is not None:
                raise HttpError(ex.error_text(), ex.status)
            return ex.headers_at
        raise HttpError("unreachable")  # pragma: no cover


def describe(exc: BaseException) -> str:
    """The record's error text for a connection's exception (an `HttpError` says its own)."""
    return f"{type(exc).__name__}: {exc}".strip().rstrip(":")
