"""sa-bench's `benchmark.slow_down_sleep_time` / `slow_down_wait_time`, as srtctl runs them.

srtctl, behind its SGLang router only and with both fields positive, POSTs
`{"forward_sleep_time": sleep}` to `/slow_down` on every decode leader at each measured
run's start (not the warm-up), and `{"forward_sleep_time": null}` after `wait` seconds
or when the run ends, whichever is first; anywhere else it skips it with a warning (the
plan lists the fields as ignored with that reason). One field without the other is
"unset". A failed POST makes the point invalid (srtctl only warns; `slow-down-failure`).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping
from typing import Any

from disagg.plan.model import BenchPlan, Plan, RoleKind, SlowDownPlan
from disagg.plan.templates import substitute
from disagg.recipe.benchmark_section import BenchmarkSection
from disagg.workloads import profiling

FIELDS = ("slow_down_sleep_time", "slow_down_wait_time")
# frontend.type values (as read) that are srtctl's SGLang router.
FRONTENDS = ("sglang",)
COMPAT = "slow-down-failure"


def planned(section: BenchmarkSection, frontend: str) -> tuple[SlowDownPlan | None, str | None]:
    """The slow-down to run (targets filled in by `with_targets`), or why srtctl would
    skip it (None, None when the recipe did not ask for it)."""
    sleep, wait = section.slow_down_sleep_time, section.slow_down_wait_time
    if sleep is None and wait is None:
        return None, None
    if sleep is None or wait is None:
        return None, "srtctl turns /slow_down on only when both slow_down_* fields are set"
    if sleep <= 0 or wait <= 0:
        return None, "srtctl skips /slow_down unless both slow_down_* fields are positive"
    if frontend not in FRONTENDS:
        return None, (
            f"srtctl POSTs /slow_down only behind the sglang frontend (this one: {frontend})"
        )
    return SlowDownPlan(sleep_s=float(sleep), wait_s=float(wait)), None


def with_targets(bench: BenchPlan, plan: Plan) -> BenchPlan:
    """Point the slow-down at every decode worker's leader; with none (an aggregated job)
    srtctl skips it, and the fields are listed as ignored."""
    if bench.slow_down is None:
        return bench
    urls = [f"${{{role.name}.url}}/slow_down" for role in plan.roles_of(RoleKind.DECODE)]
    if urls:
        return bench.model_copy(
            update={"slow_down": bench.slow_down.model_copy(update={"urls": urls})}
        )
    why = "srtctl POSTs /slow_down only to decode workers, and this job has none"
    ignored = {**bench.ignored, **dict.fromkeys(FIELDS, why)}
    return bench.model_copy(update={"slow_down": None, "ignored": ignored})


def rendered(bench: BenchPlan, bindings: Mapping[str, Mapping[str, str]]) -> BenchPlan:
    """The bench plan with the slow-down's worker URLs bound to this run's addresses."""
    if bench.slow_down is None:
        return bench
    urls = [substitute(url, bindings, self_name="bench") for url in bench.slow_down.urls]
    return bench.model_copy(update={"slow_down": bench.slow_down.model_copy(update={"urls": urls})})


def post(url: str, forward_sleep_time: float | None) -> str | None:
    """POST SGLang's slow-down body to `url`; why it failed, or None."""
    body = {"forward_sleep_time": forward_sleep_time}
    record = profiling.post(url, body)
    if record["ok"]:
        return None
    sent = f"POST {url} {json.dumps(body)}"
    if record["status"] is None:
        return f"{sent} failed: {record['answer']}"
    return f"{sent} -> HTTP {record['status']}: {record['answer']}"


class SlowDown:
    """One measured window's slow-down: `start` before it, `finish` after it.

    The clearing POST runs on a timer thread after `wait_s`; `finish` cancels the timer
    and clears at once when the window ended first. `error` keeps the first failure;
    `posts` says what was sent where and when (seconds after `start`), for the result.
    """

    def __init__(self, plan: SlowDownPlan) -> None:
        self.plan = plan
        self.error: str | None = None
        self.posts: list[dict[str, Any]] = []
        self._t0 = time.monotonic()
        self._lock = threading.Lock()
        self._cleared = False  # the clearing POST went (or is going) out
        self._timer: threading.Timer | None = None

    def _post_all(self, value: float | None) -> None:
        for url in self.plan.urls:
            at = round(time.monotonic() - self._t0, 3)
            why = post(url, value)
            with self._lock:
                self.posts.append(
                    {"url": url, "forward_sleep_time": value, "at_s": at, "ok": why is None}
                )
                if why is not None:
                    self.error = self.error or f"slow_down: {why}"

    def _clear(self) -> None:
        with self._lock:
            if self._cleared:
                return
            self._cleared = True
        self._post_all(None)

    def start(self) -> str | None:
        """Slow the decode workers down and arm the clearing timer; why it failed, or None."""
        self._t0 = time.monotonic()
        self._post_all(self.plan.sleep_s)
        self._timer = threading.Timer(self.plan.wait_s, self._clear)
        self._timer.daemon = True
        self._timer.start()
        return self.error

    def finish(self) -> str | None:
        """Clear the slow-down if the timer has not yet; the first failure of the window."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer.join()
            self._clear()
        return self.error
