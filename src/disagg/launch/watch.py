"""Started roles stay watched: health probes during the canary and every point.

A role that stops serving without exiting (SIGSTOPped, deadlocked, a GPU hang) is
invisible to the exit monitor: its process is alive. The watcher probes each
healthy role's health URL every `interval` seconds, each probe with its own
timeout, and fails the run naming the role once a role has answered no probe for
`timeout` seconds. The point being measured then ends (invalid) with the run.
Probes run one role at a time in their own thread, so a probe stuck on a stopped
role never delays the exit monitor.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from disagg.launch.health import probe

PROBE_TIMEOUT_CAP_S = 5.0


@dataclass(frozen=True)
class Watched:
    role: str
    url: str


class LivenessWatch:
    """A daemon thread probing `targets` until `close()` or `stop` is set."""

    def __init__(
        self,
        targets: list[Watched],
        *,
        interval_s: float,
        timeout_s: float,
        stop: threading.Event,
        on_dead: Callable[[str, str], None],
    ) -> None:
        self.targets = targets
        self.interval_s = interval_s
        self.timeout_s = timeout_s
        self.stop = stop
        self.on_dead = on_dead  # (role, reason)
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._run, name="liveness", daemon=True)

    def start(self) -> LivenessWatch:
        if self.targets:
            self._thread.start()
        return self

    def close(self) -> None:
        self._closed.set()

    def _run(self) -> None:
        probe_timeout = min(PROBE_TIMEOUT_CAP_S, max(0.5, self.timeout_s / 2))
        answered = {target.role: time.monotonic() for target in self.targets}
        while not (self._closed.is_set() or self.stop.is_set()):
            details: dict[str, str] = {}
            for target in self.targets:
                ok, detail = probe(target.url, timeout_s=probe_timeout)
                if self._closed.is_set() or self.stop.is_set():
                    return
                if ok:
                    answered[target.role] = time.monotonic()
                else:
                    details[target.role] = detail
            now = time.monotonic()
            # Decided after a whole round, first in plan order (workers before the router):
            # a router whose readiness follows its workers' must not be blamed for them.
            for target in self.targets:
                if target.role in details and now - answered[target.role] > self.timeout_s:
                    self.on_dead(
                        target.role,
                        f"role {target.role} stopped serving: no healthy answer for "
                        f"{self.timeout_s:g} s (GET {target.url}: {details[target.role]})",
                    )
                    return
            self._closed.wait(self.interval_s)
