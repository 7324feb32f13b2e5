"""SGLang's `/start_profile` and `/stop_profile` on the simulated worker: answered as SGLang
answers them (`TokenizerManager.start_profile`, the scheduler's profiler), counted, and
never profiling anything. A body SGLang would not take (an unknown field, a wrong type) is
a 400 here, so a client's mistake shows in a simulated run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

# SGLang's ProfileReqInput fields and the types a simulated run checks them against.
FIELDS: dict[str, tuple[type, ...]] = {
    "output_dir": (str,),
    "start_step": (int,),
    "num_steps": (int,),
    "activities": (list,),
    "with_stack": (bool,),
    "record_shapes": (bool,),
    "profile_by_stage": (bool,),
}
ACTIVITIES = ("CPU", "GPU", "MEM", "CUDA_PROFILER", "RPD")
STARTED = "Start profiling.\n"
STOPPED = "Stop profiling. This will take some time.\n"
RUNNING = "Profiling is already in progress. Call /stop_profile first.\n"
NOT_RUNNING = "Profiling is not in progress. Call /start_profile first.\n"


class Profiler:
    """The worker's profile state; `steps()` is its forward-step counter so far."""

    def __init__(self, steps: Callable[[], int]) -> None:
        self.steps = steps
        self.starts = 0  # start requests answered 200
        self.stops = 0  # stop requests answered 200
        self.requests: list[dict[str, Any]] = []  # every start body received, in order
        self._until: int | None = None  # the step it ends at; None: runs until stopped
        self._running = False

    def running(self) -> bool:
        """A profile started and not yet stopped nor past its steps."""
        return self._running and (self._until is None or self.steps() < self._until)

    def start(self, body: object) -> tuple[int, str]:
        """(HTTP status, body) of a start request."""
        problem = _invalid(body)
        if problem is not None:
            return 400, problem + "\n"
        assert isinstance(body, Mapping)
        self.requests.append(dict(body))
        if self.running():
            return 500, RUNNING
        now = self.steps()
        start = body.get("start_step")
        begin = max(int(start), now + 1) if start is not None else now
        count = body.get("num_steps")
        self._until = begin + int(count) if count is not None else None
        self._running = True
        self.starts += 1
        return 200, STARTED

    def stop(self) -> tuple[int, str]:
        """(HTTP status, body) of a stop request."""
        if not self.running():
            self._running = False
            return 500, NOT_RUNNING
        self._running = False
        self.stops += 1
        return 200, STOPPED

    def stats(self) -> dict[str, Any]:
        return {
            "profile_starts": self.starts,
            "profile_stops": self.stops,
            "profiling": self.running(),
            "profile_requests": list(self.requests),
        }


def _invalid(body: object) -> str | None:
    """Why a start body is not one SGLang takes, else None."""
    if not isinstance(body, Mapping):
        return "the body must be a JSON object"
    for key, value in body.items():
        kinds = FIELDS.get(key)
        if kinds is None:
            return f"unknown field {key!r} (known: {', '.join(FIELDS)})"
        if value is None:
            continue
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            return f"{key} must be {kinds[0].__name__}, not {value!r}"
        if isinstance(value, int) and value < 0:
            return f"{key} must not be negative"
    activities = body.get("activities") or []
    unknown = [a for a in activities if a not in ACTIVITIES]
    if unknown:
        return f"unknown activities {unknown} (known: {', '.join(ACTIVITIES)})"
    return None
