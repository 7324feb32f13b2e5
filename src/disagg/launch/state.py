"""What a run is doing (`state.json`) and how it ended (`summary.json`).

Both are written atomically, so that `disagg status`, `disagg logs` and a live view can
read them at any moment; they never hold the environment (it may carry secrets).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Sequence
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, ClassVar, Self

from pydantic import BaseModel, BeforeValidator, Field, ValidationError

from disagg.atomic import write_text
from disagg.launch.procs import ProcessIdentity
from disagg.model_defaults import empty_dict, empty_list
from disagg.probe import MAX_RECORD_BYTES, UnreadableFile, probe, read_limited

STATE_FILE = "state.json"
SUMMARY_FILE = "summary.json"


class Phase(StrEnum):
    STARTING = "starting"
    HOST_SETUP = "host_setup"  # the recipe's host_setup commands, before anything else
    STAGING = "staging"
    PORTS = "ports"
    LAUNCH = "launch"
    HEALTH = "health"
    CANARY = "canary"
    MEASURE = "measure"
    TEARDOWN = "teardown"
    DONE = "done"


class RunStatus(StrEnum):
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    TIMEOUT = "timeout"  # a time limit ended it: the run's own, or Slurm's warning signal


class PointStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    MEASURED = "measured"
    SKIPPED = "skipped"  # a valid result already existed (resume)
    INVALID = "invalid"
    ABORTED = "aborted"  # stopped because the run failed or was cancelled


class TaskState(BaseModel):
    node_rank: int
    node: str
    pid: int | None = None
    started: int | None = None  # start time of `pid` (ticks since boot): PID + this = identity
    log: str
    exit_code: int | None = None
    stopped: bool = False  # ended by the orchestrator's teardown, not on its own


class RoleState(BaseModel):
    name: str
    kind: str
    host: str | None = None
    ports: dict[str, int] = Field(default_factory=empty_dict)
    tasks: list[TaskState] = Field(default_factory=empty_list)
    healthy: bool = False
    healthy_after_s: float | None = None


def _numbers_only(value: object) -> object:
    """A headline keeps its finite numbers only: an older state.json holds null for NaN."""
    if isinstance(value, dict):
        return {
            k: v
            for k, v in value.items()
            if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
        }
    return value


class PointState(BaseModel):
    key: str
    status: PointStatus = PointStatus.PENDING
    result: str | None = None
    reason: str | None = None
    headline: Annotated[dict[str, float], BeforeValidator(_numbers_only)] = Field(
        default_factory=empty_dict
    )
    started_at: float | None = None
    finished_at: float | None = None
    seconds: float | None = None
    attempts: int = 0  # measurements started (a point a role paused in is measured again)
    discarded: list[str] = Field(default_factory=empty_list)  # why earlier attempts do not count
    requests: int = 0  # planned requests, warm-up included (0: unknown), for the sweep's ETA
    # a fixed-concurrency point's streams (None: a rate point, or unknown), for the ETA
    streams: int | None = None


def points_done(points: Iterable[PointState]) -> int:
    """Points that have a valid result: measured in this run or kept from an earlier one."""
    return sum(1 for p in points if p.status in (PointStatus.MEASURED, PointStatus.SKIPPED))


def seconds_per_request(points: Sequence[PointState]) -> float | None:
    """Measured seconds per planned request so far (None before the first point ends)."""
    done = _finished(points)
    return sum(p.seconds or 0.0 for p in done) / sum(p.requests for p in done) if done else None


def _finished(points: Sequence[PointState]) -> list[PointState]:
    """Points that ended with a time to learn from (zero or negative numbers teach nothing)."""
    return [
        p
        for p in points
        if p.status in (PointStatus.MEASURED, PointStatus.INVALID)
        and (p.seconds or 0.0) > 0
        and p.requests > 0
    ]


def _latency_fit(points: Sequence[PointState]) -> tuple[float, float] | None:
    """(a, b) of `seconds per request on one stream = a * streams ** b` over the finished
    fixed-concurrency points (log-log least squares, b within [0, 1]): b = 0, the server
    has room; b = 1, it is saturated and throughput is flat. One concurrency gives b = 0.
    """
    samples = [
        (
            math.log(p.streams),
            math.log((p.seconds or 0.0) * min(p.streams, p.requests) / p.requests),
        )
        for p in _finished(points)
        if p.streams is not None and p.streams > 0
    ]
    if not samples:
        return None
    mean_x = sum(x for x, _ in samples) / len(samples)
    mean_y = sum(y for _, y in samples) / len(samples)
    spread = sum((x - mean_x) ** 2 for x, _ in samples)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in samples) / spread if spread else 0.0
    b = min(1.0, max(0.0, slope))
    return math.exp(mean_y - b * mean_x), b


def expected_seconds(point: PointState, points: Sequence[PointState]) -> float | None:
    """How long `point` should take, from the points finished so far: by the latency fit
    for a fixed-concurrency point, by the per-request pace otherwise."""
    fit = _latency_fit(points)
    if point.streams is not None and point.streams > 0 and fit is not None:
        a, b = fit
        per_request: float = a * point.streams**b
        return per_request * point.requests / min(point.streams, point.requests)
    pace = seconds_per_request(points)
    return None if pace is None else pace * point.requests


def sweep_eta(points: Sequence[PointState], now: float) -> float | None:
    """Seconds until the last point ends, at the pace of the points measured so far."""
    if not _finished(points):
        return None
    left = 0.0
    for point in points:
        expected = expected_seconds(point, points) or 0.0
        if point.status is PointStatus.PENDING:
            left += expected
        elif point.status is PointStatus.RUNNING:
            elapsed = now - point.started_at if point.started_at else 0.0
            left += max(0.0, expected - elapsed)
    return left


def duration_text(seconds: float) -> str:
    """`45 s`, `3m05s`, `1h02m`."""
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


class Failure(BaseModel):
    reason: str
    role: str | None = None
    log: str | None = None
    log_tail: list[str] = Field(default_factory=empty_list)
    nodes_lost: list[str] = Field(default_factory=empty_list)  # Slurm nodes that left the job


class StoredRecord(BaseModel):
    """A run record in its own file of the run directory (`FILE`), written atomically."""

    FILE: ClassVar[str]

    def write(self, run_dir: Path) -> None:
        write_text(run_dir / self.FILE, self.model_dump_json(indent=2) + "\n")

    @classmethod
    def read(cls, run_dir: Path) -> Self | None:
        """None when there is no record; an `UnreadableFile` naming the first problem when
        it is damaged."""
        path = run_dir / cls.FILE
        if not probe(path).exists:
            return None
        data = read_limited(path, what="run record", limit=MAX_RECORD_BYTES)
        try:
            return cls.model_validate_json(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            if first["type"] == "json_invalid":
                problem = f"not valid JSON ({first['msg']})"
            else:
                where = ".".join(str(part) for part in first["loc"]) or "top level"
                problem = f"not a {path.name} this version writes ({where}: {first['msg']})"
            raise UnreadableFile(
                f"{path}: {problem}",
                hint=f"{path.name} is written by disagg; a damaged one can be removed "
                "(results and logs stay)",
            ) from None


class RunRecord(StoredRecord):
    """What both records say first: which run this is."""

    name: str
    selector: str
    run_dir: str
    simulated: bool
    executor: str


class RunState(RunRecord):
    """`state.json`: rewritten at each phase change and point."""

    FILE = STATE_FILE

    orchestrator_pid: int
    # where and when the orchestrator started: `status` tells a dead one from a live one
    orchestrator_host: str | None = None
    orchestrator_started: int | None = None
    status: RunStatus = RunStatus.RUNNING
    phase: Phase = Phase.STARTING
    started_at: float = Field(default_factory=time.time)
    updated_at: float = Field(default_factory=time.time)
    current_point: str | None = None
    points: list[PointState] = Field(default_factory=empty_list)
    roles: list[RoleState] = Field(default_factory=empty_list)
    failure: Failure | None = None
    # The recipe's profiling: every start/stop POST to a worker and its answer
    profile_posts: list[dict[str, Any]] = Field(default_factory=empty_list)

    @property
    def points_done(self) -> int:
        return points_done(self.points)

    def orchestrator(self) -> ProcessIdentity | None:
        """The orchestrator that wrote this state (None for states written before it was kept)."""
        if self.orchestrator_host is None:
            return None
        return ProcessIdentity(
            self.orchestrator_host, self.orchestrator_pid, self.orchestrator_started
        )

    def orchestrator_dead(self) -> bool:
        """The run says it is running, but its orchestrator (on this host) is gone."""
        if self.status is not RunStatus.RUNNING:
            return False
        identity = self.orchestrator()
        return identity is not None and identity.alive() is False

    def role(self, name: str) -> RoleState:
        for role in self.roles:
            if role.name == name:
                return role
        raise KeyError(name)

    def write(self, run_dir: Path) -> None:
        self.updated_at = time.time()
        super().write(run_dir)


class RunSummary(RunRecord):
    """`summary.json`: how the run ended; written once at the end, atomically."""

    FILE = SUMMARY_FILE

    status: RunStatus
    exit_code: int
    reason: str | None = None
    failure: Failure | None = None
    started_at: float
    finished_at: float
    phase_seconds: dict[str, float] = Field(default_factory=empty_dict)
    # Seconds since start of each milestone (`workers_launched`, `workers_healthy`, ...).
    timeline: dict[str, float] = Field(default_factory=empty_dict)
    role_exit_codes: dict[str, list[int | None]] = Field(default_factory=empty_dict)
    role_pids: dict[str, list[int]] = Field(default_factory=empty_dict)
    points: list[PointState] = Field(default_factory=empty_list)
    points_measured: int = 0
    points_skipped: int = 0
    points_invalid: int = 0
    profile_posts: list[dict[str, Any]] = Field(default_factory=empty_list)
