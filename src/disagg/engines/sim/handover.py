"""The PD hand-over: a prefill worker's bootstrap server gives a room's "KV" to a decode worker.

Like SGLang's bootstrap server, it listens on `--disaggregation-bootstrap-port`; the
decode worker learns `bootstrap_host`/`bootstrap_port`/`bootstrap_room` from the
router-added request fields and connects there. The exchange is a real TCP one,
one connection per (decode worker, prefill worker) pair, newline-delimited:

    decode -> prefill   WAIT <room>
    prefill -> decode   KV <room> <prompt_tokens>      (after the simulated transfer)
    decode -> prefill   CANCEL <room>                  (the decode side gave up waiting)

The decode request may arrive before or after the prefill finishes, so a room is
kept on whichever side comes first. Transfers from one prefill worker are
serialised at `--sim-kv-transfer-us-per-token` (one link per worker).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass, field

log = logging.getLogger("disagg.sim")


class HandoverError(Exception):
    """The decode side did not get the room's KV (timeout or lost connection)."""


@dataclass
class _Room:
    created: float
    prompt_tokens: int | None = None  # set when the prefill finished
    waiters: list[asyncio.StreamWriter] = field(default_factory=list)


class BootstrapServer:
    """Runs inside a prefill worker: holds finished rooms until a decode worker asks."""

    def __init__(self, *, us_per_token: float, ttl_s: float) -> None:
        self.us_per_token = us_per_token
        self.ttl_s = ttl_s
        self.rooms: dict[int, _Room] = {}
        self.published = 0
        self.served = 0
        self._link_free_at = 0.0
        self._server: asyncio.Server | None = None
        self._sweeper: asyncio.Task[None] | None = None

    async def start(self, host: str, port: int) -> None:
        self._server = await asyncio.start_server(self._serve, host, port)
        self._sweeper = asyncio.create_task(self._sweep())

    async def close(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
        if self._server is not None:
            self._server.close()

    def publish(self, room: int, prompt_tokens: int) -> None:
        """The prefill of `room` is done: hand it to whoever waits (or will wait) for it."""
        self.published += 1
        entry = self.rooms.get(room)
        if entry is None:
            self.rooms[room] = _Room(time.monotonic(), prompt_tokens)
            return
        entry.prompt_tokens = prompt_tokens
        self._deliver(room, entry)

    def _request(self, room: int, writer: asyncio.StreamWriter) -> None:
        entry = self.rooms.get(room)
        if entry is None:
            entry = self.rooms[room] = _Room(time.monotonic())
        entry.waiters.append(writer)
        if entry.prompt_tokens is not None:
            self._deliver(room, entry)

    def _cancel(self, room: int, writer: asyncio.StreamWriter) -> None:
        entry = self.rooms.get(room)
        if entry is None:
            return
        with contextlib.suppress(ValueError):
            entry.waiters.remove(writer)
        if not entry.waiters and entry.prompt_tokens is None:
            del self.rooms[room]

    def _deliver(self, room: int, entry: _Room) -> None:
        del self.rooms[room]
        tokens = entry.prompt_tokens or 0
        loop = asyncio.get_running_loop()
        now = loop.time()
        start = max(now, self._link_free_at)
        self._link_free_at = start + self.us_per_token * tokens * 1e-6
        line = f"KV {room} {tokens}\n".encode()
        for writer in entry.waiters:
            loop.call_at(self._link_free_at, self._send, writer, line)

    def _send(self, writer: asyncio.StreamWriter, line: bytes) -> None:
        if writer.is_closing():
            return
        writer.write(line)
        self.served += 1

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while line := await reader.readline():
                parts = line.split()
                if len(parts) == 2 and parts[0] == b"WAIT":
                    self._request(int(parts[1]), writer)
                elif len(parts) == 2 and parts[0] == b"CANCEL":
                    self._cancel(int(parts[1]), writer)
                else:
                    log.warning("bootstrap: ignoring malformed line %r", line[:80])
        except (ConnectionError, ValueError) as exc:
            log.debug("bootstrap connection ended: %s", exc)
        finally:
            writer.close()

    async def _sweep(self) -> None:
        """Forget rooms nobody collected (a decode worker died, a client gave up)."""
        while True:
            await asyncio.sleep(min(10.0, self.ttl_s))
            cutoff = time.monotonic() - self.ttl_s
            for room in [r for r, e in self.rooms.items() if e.created < cutoff]:
                del self.rooms[room]


class _Link:
    """One decode-side connection to one prefill worker's bootstrap server."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.writer = writer
        self.pending: dict[int, asyncio.Future[int]] = {}
        self.task = asyncio.create_task(self._read(reader))

    async def _read(self, reader: asyncio.StreamReader) -> None:
        error: BaseException = HandoverError("bootstrap connection closed")
        try:
            while line := await reader.readline():
                parts = line.split()
                if len(parts) == 3 and parts[0] == b"KV":
                    future = self.pending.pop(int(parts[1]), None)
                    if future is not None and not future.done():
                        future.set_result(int(parts[2]))
        except (ConnectionError, ValueError) as exc:
            error = HandoverError(f"bootstrap connection failed: {exc}")
        finally:
            self.writer.close()
            for future in self.pending.values():
                if not future.done():
                    future.set_exception(error)
            self.pending.clear()

    @property
    def alive(self) -> bool:
        return not self.task.done() and not self.writer.is_closing()


class HandoverClient:
    """Runs inside a decode worker: waits for rooms' KV from prefill workers."""

    def __init__(self, *, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self.received = 0
        self._links: dict[tuple[str, int], _Link] = {}
        self._lock = asyncio.Lock()

    async def _link(self, host: str, port: int) -> _Link:
        key = (host, port)
        link = self._links.get(key)
        if link is not None and link.alive:
            return link
        async with self._lock:
            link = self._links.get(key)
            if link is None or not link.alive:
                reader, writer = await asyncio.open_connection(host, port)
                link = self._links[key] = _Link(reader, writer)
            return link

    async def fetch(self, host: str, port: int, room: int) -> int:
        """Wait for `room`'s KV; return its prompt token count. Raises HandoverError."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_s
        link: _Link | None = None
        try:
            async with asyncio.timeout_at(deadline):
                link = await self._link(host, port)
                future: asyncio.Future[int] = loop.create_future()
                link.pending[room] = future
                link.writer.write(b"WAIT %d\n" % room)
                try:
                    tokens = await future
                finally:
                    link.pending.pop(room, None)
        except TimeoutError:
            if link is not None and link.alive:
                link.writer.write(b"CANCEL %d\n" % room)
            raise HandoverError(
                f"no KV for bootstrap room {room} from {host}:{port} within {self.timeout_s:g} s"
            ) from None
        except OSError as exc:
            raise HandoverError(f"cannot reach bootstrap server {host}:{port}: {exc}") from None
        self.received += 1
        return tokens

    async def close(self) -> None:
        for link in self._links.values():
            link.task.cancel()
            with contextlib.suppress(Exception):
                link.writer.close()
        self._links.clear()
