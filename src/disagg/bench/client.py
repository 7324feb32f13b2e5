"""The streaming HTTP client: how one request is sent and its stream read into its record,
over one connection pool shared by the point (`bench.phase` schedules the requests).

Hot path per request: one pre-built JSON body, then raw reads fed to `StreamParser`
with a `time.monotonic()` stamp per read.
"""

from __future__ import annotations

import asyncio
import contextlib
import resource
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from time import monotonic
from typing import Literal

import aiohttp

from disagg.bench.http1 import HttpError, Pool, describe
from disagg.bench.records import RequestRecord, RequestSpec
from disagg.bench.sse import StreamParser
from disagg.bench.sse_shape import Shape


@dataclass
class Load:
    """Everything one event loop needs to run a point (picklable, sent to worker processes)."""

    url: str  # full endpoint URL, e.g. http://host:port/v1/completions
    chat: bool
    requests: Sequence[RequestSpec]  # a list, or `disagg.bench.prompts.LazySpecs`
    warmup: Sequence[RequestSpec] = field(default_factory=list)
    concurrency: int | None = None  # streams (or the cap in rate mode)
    offsets: list[float] | None = None  # rate mode: send times after t0, one per request
    # Longest one request may go without progress (its first or next generated token);
    # bytes that carry no token, such as SSE keep-alive comments, do not count.
    request_timeout_s: float = 900.0
    tokenizer: str | None = None  # re-tokenises output when the server sends no usage
    http: Literal["fast", "aiohttp"] = "fast"
    # Longest the whole point may go with requests in flight and none of them progressing
    # (no token, no new request sent): the point ends there, invalid.
    stall_timeout_s: float | None = None
    deadline: float | None = None  # monotonic time by which the point (warm-up too) ends


@dataclass
class Counters:
    """Progress counters updated on the hot path (plain ints, read by a progress poller)."""

    done: int = 0
    failed: int = 0
    cut: str | None = None  # why the phase was ended early by a limit (stall, deadline)


class TokenCounter:
    """Counts tokens of generated text with a local tokenizer, loaded on first use."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self._encode: Callable[[str], int] | None = None

    def __call__(self, text: str) -> int | None:
        if self.path is None:
            return None
        if self._encode is None:
            from disagg.bench.prompts import load_tokenizer

            tok = load_tokenizer(self.path)
            self._encode = lambda s: len(tok.encode(s, add_special_tokens=False).ids)
        return self._encode(text)


def make_session(timeout_s: float) -> aiohttp.ClientSession:
    """One pool for every stream: unlimited connections, keep-alive, no extras."""
    connector = aiohttp.TCPConnector(limit=0, limit_per_host=0, keepalive_timeout=120)
    return aiohttp.ClientSession(
        connector=connector,
        timeout=aiohttp.ClientTimeout(total=None, sock_connect=timeout_s, sock_read=timeout_s),
        auto_decompress=False,
        read_bufsize=256 * 1024,
        cookie_jar=aiohttp.DummyCookieJar(),
        headers={"Content-Type": "application/json", "Accept": "text/event-stream"},
    )


def raise_fd_limit() -> None:
    """Thousands of streams need thousands of sockets: lift the soft limit to the hard one."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def _finish(
    rec: RequestRecord, parser: StreamParser, count: TokenCounter, counters: Counters
) -> None:
    rec.finished = monotonic()
    parser_error = parser.error
    if rec.error is None and parser_error is not None:
        rec.error = parser_error
    rec.chunks = parser.chunks
    rec.server_prompt_tokens = parser.prompt_tokens
    if rec.error is None:
        if parser.chunks == 0:
            rec.error = "stream ended without any generated text"
        elif not parser.done and parser.usage_tokens is None:
            rec.error = "stream ended before [DONE]"
    if rec.error is not None:
        counters.done += 1
        counters.failed += 1
        parser.release()
        return
    rec.success = True
    rec.ttft = parser.first - rec.send
    rec.e2el = parser.last - rec.send
    rec.itls = parser.itls
    if parser.usage_tokens is not None:
        rec.output_len = parser.usage_tokens
        rec.output_source = "usage"
    else:
        text = parser.text()
        counted = count(text) if text is not None else None
        if counted is not None:
            rec.output_len = counted
            rec.output_source = "tokenizer"
        else:
            rec.output_len = parser.chunks
            rec.output_source = "chunks"
    parser.release()
    counters.done += 1


class Client:
    """Sends one request and fills its record; never raises except for cancellation."""

    def __init__(self, load: Load) -> None:
        self.load = load
        self.count = TokenCounter(load.tokenizer)
        self.inflight: set[StreamParser] = set()
        self.last_progress = 0.0  # latest send or token of a finished request (monotonic)
        self.shape: Shape | None = None  # of the content events of the latest response

    def progress_at(self) -> float:
        """When any request last progressed: sent, or a token arrived (read by the poller)."""
        latest = max((p.last for p in self.inflight), default=0.0)
        return max(latest, self.last_progress)

    async def send(self, spec: RequestSpec, rec: RequestRecord, counters: Counters) -> None:
        """The parser starts with the previous response's shape: a server that sends every
        response's events in the same shape has them checked without decoding. It keeps the
        raw bytes only if a tokenizer can use them."""
        parser = StreamParser(
            self.load.chat, keep_text=self.count.path is not None, shape=self.shape
        )
        rec.send = monotonic()
        self.inflight.add(parser)
        self.last_progress = rec.send  # a request sent is progress for the stall clock
        try:
            await self._exchange(spec, rec, parser)
        except asyncio.CancelledError:
            rec.error = "stopped before the response ended"
            raise
        finally:
            self.inflight.discard(parser)
            if parser.shape is not None:
                self.shape = parser.shape
            self.last_progress = max(self.last_progress, parser.last)
            _finish(rec, parser, self.count, counters)

    async def _exchange(self, spec: RequestSpec, rec: RequestRecord, parser: StreamParser) -> None:
        """Send `spec`, feed the response to `parser`; a failure goes into `rec.error`."""
        raise NotImplementedError


class FastClient(Client):
    """The default: disagg's own HTTP/1.1 protocol (see `disagg.bench.http1`)."""

    def __init__(self, load: Load, pool: Pool) -> None:
        super().__init__(load)
        self.pool = pool

    async def _exchange(self, spec: RequestSpec, rec: RequestRecord, parser: StreamParser) -> None:
        try:
            rec.headers_at = await self.pool.request(spec.body, parser)
            rec.status = 200
        except HttpError as exc:
            rec.error = str(exc)
            rec.status = exc.status
        except (OSError, ValueError) as exc:
            rec.error = describe(exc)


class AiohttpClient(Client):
    """The same measurement through aiohttp (a cross-check and a comparison baseline)."""

    def __init__(self, load: Load, session: aiohttp.ClientSession) -> None:
        super().__init__(load)
        self.session = session

    async def _exchange(self, spec: RequestSpec, rec: RequestRecord, parser: StreamParser) -> None:
        timeout = self.load.request_timeout_s
        try:
            async with self.session.post(self.load.url, data=spec.body) as resp:
                rec.headers_at = monotonic()
                rec.status = resp.status
                if resp.status != 200:
                    body = await resp.read()
                    text = body[:300].decode("utf-8", "replace").strip()
                    rec.error = f"HTTP {resp.status}: {text}"
                else:
                    read = resp.content.readany
                    feed = parser.feed
                    while True:
                        data = await read()
                        if not data:
                            break
                        now = monotonic()
                        feed(data, now)
                        if parser.abandoned:
                            break  # an over-size event: the parser's error says so
                        if now - max(rec.send, parser.last) > timeout:  # keep-alives only
                            rec.error = _no_progress(timeout)
                            break
        except TimeoutError:
            rec.error = _no_progress(timeout)
        except aiohttp.ClientResponseError as exc:
            rec.error = f"HTTP {exc.status}: {exc.message}"
        except (aiohttp.ClientError, OSError, ValueError) as exc:
            rec.error = describe(exc)


def _no_progress(timeout_s: float) -> str:
    return f"timeout: no progress for {timeout_s:g} s"


@contextlib.asynccontextmanager
async def open_client(load: Load) -> AsyncIterator[Client]:
    """The client for `load.http`, with its connection pool open for the whole point."""
    if load.http == "aiohttp":
        async with make_session(load.request_timeout_s) as session:
            yield AiohttpClient(load, session)
    else:
        async with Pool(load.url, load.request_timeout_s) as pool:
            yield FastClient(load, pool)
