"""Started roles stay watched: health probes during the canary and every point.

A role that stops serving without exiting (SIGSTOPped, deadlocked, a GPU hang) is
invisible to the exit monitor, so each watched role gets its own prober thread: a probe
stuck on one role delays neither the monitor nor the others. A role silent for
`timeout` seconds fails the run (judged in plan order, workers before the router that
depends on them); a gap longer than `gap` that ended makes the points it overlapped
invalid (`gaps_since`) and leaves the run going.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from disagg.launch.health import probe

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
