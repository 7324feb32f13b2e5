"""The checks the orchestrator gates on (a role's health endpoint, a service's readiness),
and the watch that keeps probing started roles during the canary and every point.

Standard library only, with short timeouts, so that a probe never delays noticing that
a role died. A role that stops serving without exiting (SIGSTOPped, deadlocked, a GPU
hang) is invisible to the exit monitor, so each watched role gets its own prober thread:
a probe stuck on one role delays neither the monitor nor the others. A role silent for
`timeout` seconds fails the run (judged in plan order, workers before the router that
depends on them); a gap longer than `gap` that ended makes the points it overlapped
invalid (`gaps_since`) and leaves the run going.
"""

from __future__ import annotations

import http.client
import re
import socket
import threading
import time
import urllib.error
import urllib.request
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from disagg.plan.model import ReadinessPlan


def probe(
    url: str, *, timeout_s: float = 1.0, expect: str | None = None, any_status: bool = False
) -> tuple[bool, str]:
    """GET `url`: (True, "") on HTTP 200 (whose body holds `expect`, when given), else
    (False, what happened). With `any_status`, a body holding `expect` counts whatever
    the status (an answer that reports its parts' states, ready or not)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            status, body = response.status, response.read(64 * 1024)
    except urllib.error.HTTPError as exc:
        if not any_status:
            return False, f"HTTP {exc.code}"
        status, body = exc.code, exc.read(64 * 1024)
    except (OSError, http.client.HTTPException) as exc:
        return False, str(getattr(exc, "reason", exc))
    if expect is not None and expect.encode() not in body:
        return False, f"HTTP {status} without {expect!r} yet"
    if any_status and expect is not None:
        return True, f"HTTP {status}"
    return status == 200, f"HTTP {status}"


LOG_READ_LIMIT = 16 * 1024 * 1024  # a log is searched up to here (a pattern is a start-up line)


@dataclass
class NodeTarget:
    """One node of a service: its address, its log, and its own ports by name. `scanned`
    is how far its log has been searched: each poll reads only what was written since."""

    host: str
    log: Path
    ports: dict[str, int]
    scanned: int = 0
    logged: bool = False  # the pattern's line was seen: it stays seen


def port_of(value: int | str, ports: dict[str, int]) -> int | None:
    """A readiness port: a number, or the name of one of the role's ports (`http`)."""
    if isinstance(value, int):
        return value
    return ports.get(f"{value}_port", ports.get(value))


def tcp_ready(host: str, port: int, timeout_s: float) -> tuple[bool, str]:
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True, ""
    except OSError as exc:
        return False, f"TCP {host}:{port}: {exc.strerror or exc}"


def http_ready(host: str, port: int, path: str, status: int, timeout_s: float) -> tuple[bool, str]:
    connection = http.client.HTTPConnection(host, port, timeout=timeout_s)
    try:
        connection.request("GET", path)
        answer = connection.getresponse().status
    except (OSError, http.client.HTTPException) as exc:
        return False, f"GET http://{host}:{port}{path}: {exc}"
    finally:
        connection.close()
    if answer != status:
        return False, f"GET http://{host}:{port}{path}: HTTP {answer}, waiting for {status}"
    return True, ""


def log_ready(node: NodeTarget, pattern: str) -> tuple[bool, str]:
    """Whether a line of the node's log matches, reading only what came since the last poll."""
    if node.logged:
        return True, ""
    try:
        with node.log.open("rb") as handle:
            handle.seek(node.scanned)
            chunk = handle.read(max(0, LOG_READ_LIMIT - node.scanned))
    except OSError:
        return False, f"no log {node.log.name} yet"
    node.scanned += chunk.rfind(b"\n") + 1  # a line still being written is read again
    compiled = re.compile(pattern)
    lines = chunk.decode("utf-8", errors="replace").splitlines()
    if any(compiled.search(line) for line in lines):
        node.logged = True
        return True, ""
    return False, f"no line of {node.log.name} matches {pattern!r} yet"


def node_ready(plan: ReadinessPlan, node: NodeTarget, timeout_s: float) -> tuple[bool, str]:
    """(True, "") when every probe of `plan` passes on `node`, else (False, the first miss)."""
    if plan.tcp_port is not None:
        port = port_of(plan.tcp_port, node.ports)
        if port is None:
            return False, f"no port named {plan.tcp_port}"
        ok, detail = tcp_ready(node.host, port, timeout_s)
        if not ok:
            return ok, detail
    if plan.http_port is not None:
        port = port_of(plan.http_port, node.ports)
        if port is None:
            return False, f"no port named {plan.http_port}"
        ok, detail = http_ready(node.host, port, plan.http_path, plan.http_status, timeout_s)
        if not ok:
            return ok, detail
    if plan.log_pattern is not None:
        return log_ready(node, plan.log_pattern)
    return True, ""


PROBE_TIMEOUT_CAP_S = 5.0
KEPT_GAPS = 64  # per role; older ones lie before any point still being judged


@dataclass(frozen=True)
class Watched:
    role: str
    url: str
    # As the role's start gate reads an answer (`HealthPlan.expect` / `any_status`): a
    # server that reports its parts' states answers 503 while alive.
    expect: str | None = None
    any_status: bool = False


@dataclass(frozen=True)
class Gap:
    """A span without a healthy answer: from the last answer before it to the next one."""

    role: str
    url: str
    start: float  # time.monotonic()
    end: float | None  # None: still unanswered
    detail: str  # what the failed probes got

    def seconds(self, now: float) -> float:
        return (self.end if self.end is not None else now) - self.start

    def describe(self, now: float, during: str = "the point") -> str:
        state = "" if self.end is not None else ", still not answering"
        return (
            f"role {self.role} stopped serving for {self.seconds(now):.1f} s during {during} "
            f"(no healthy answer to GET {self.url}: {self.detail}{state})"
        )


@dataclass
class _Track:
    target: Watched
    last_ok: float
    detail: str = "no answer yet"
    gaps: deque[Gap] = field(default_factory=lambda: deque(maxlen=KEPT_GAPS))


class LivenessWatch:
    """Prober threads for `targets` plus one judge thread, until `close()` or `stop` is set."""

    def __init__(
        self,
        targets: list[Watched],
        *,
        interval_s: float,
        timeout_s: float,
        stop: threading.Event,
        on_dead: Callable[[str, str], None],
        gap_s: float | None = None,
    ) -> None:
        self.targets = targets
        self.interval_s = interval_s
        self.timeout_s = timeout_s
        self.gap_s = timeout_s if gap_s is None else gap_s
        self.stop = stop
        self.on_dead = on_dead  # (role, reason)
        self._closed = threading.Event()
        self._lock = threading.Lock()
        started = time.monotonic()
        self._tracks = {t.role: _Track(t, last_ok=started) for t in targets}
        self._threads = [
            threading.Thread(target=self._probe_loop, args=(t,), name="liveness", daemon=True)
            for t in targets
        ]
        self._judge = threading.Thread(target=self._judge_loop, name="liveness", daemon=True)

    def start(self) -> LivenessWatch:
        if self.targets:
            for thread in self._threads:
                thread.start()
            self._judge.start()
        return self

    def close(self) -> None:
        self._closed.set()

    def _done(self) -> bool:
        return self._closed.is_set() or self.stop.is_set()

    def _probe_loop(self, target: Watched) -> None:
        probe_timeout = min(PROBE_TIMEOUT_CAP_S, max(0.5, self.timeout_s / 2))
        track = self._tracks[target.role]
        while not self._done():
            ok, detail = probe(
                target.url,
                timeout_s=probe_timeout,
                expect=target.expect,
                any_status=target.any_status,
            )
            now = time.monotonic()
            with self._lock:
                if not ok:
                    track.detail = detail
                else:
                    if now - track.last_ok > self.gap_s:
                        gap = Gap(target.role, target.url, track.last_ok, now, track.detail)
                        track.gaps.append(gap)
                    track.last_ok = now
            self._closed.wait(self.interval_s)

    def _judge_loop(self) -> None:
        while not self._done():
            now = time.monotonic()
            with self._lock:
                dead = next(
                    (t for t in self._tracks.values() if now - t.last_ok > self.timeout_s), None
                )
                detail = dead.detail if dead is not None else ""
            if dead is not None:
                role, url = dead.target.role, dead.target.url
                self.on_dead(
                    role,
                    f"role {role} stopped serving: no healthy answer for "
                    f"{self.timeout_s:g} s (GET {url}: {detail})",
                )
                return
            self._closed.wait(min(self.interval_s, 0.5))

    # ---- what the point loop asks ---------------------------------------------------

    def gaps_since(self, since: float) -> list[Gap]:
        """Every gap longer than `gap_s` that overlapped [since, now], the one that began
        first (the likely cause) first; a role not answering right now counts too."""
        now = time.monotonic()
        found: list[Gap] = []
        with self._lock:
            for track in self._tracks.values():
                found += [g for g in track.gaps if g.end is not None and g.end >= since]
                if now - track.last_ok > self.gap_s:
                    t = track.target
                    found.append(Gap(t.role, t.url, track.last_ok, None, track.detail))
        order = {target.role: number for number, target in enumerate(self.targets)}
        return sorted(found, key=lambda g: (g.start, order[g.role]))

    def wait_answered(self, after: float) -> bool:
        """Wait until every role gave a healthy answer after `after`; False once the run
        stops (a role that never answers again ends it at its liveness limit)."""
        while not self._done():
            with self._lock:
                if all(t.last_ok > after for t in self._tracks.values()):
                    return True
            self._closed.wait(min(self.interval_s, 0.1))
        return False
