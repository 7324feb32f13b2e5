"""The load generator as a library: what the orchestrator and `disagg bench` call.

Contract (kept stable for the orchestrator):
- `measure_point` runs warm-up then the measured window for one point against an
  OpenAI-compatible base URL, writes the point's result JSON atomically into
  `out_dir` (plus a `.jsonl` of per-request records next to it) and returns a
  `PointOutcome`. It never raises for a bad server: failures make the point invalid.
- `existing_valid_result` lets a re-run skip points that already have a valid result.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from disagg.plan.limits import LimitsPlan
from disagg.plan.model import BenchPlan, PointPlan

if TYPE_CHECKING:
    from disagg.bench.client import Load
    from disagg.bench.runner import ClientOptions


@dataclass(frozen=True)
class GpuCounts:
    """GPUs behind the endpoint, for the per-GPU throughput fields."""

    prefill: int
    decode: int


@dataclass
class PointOutcome:
    path: Path
    valid: bool
    reason: str | None = None  # why it is invalid
    summary: dict[str, float] = field(default_factory=dict)  # headline metrics for progress output


def measure_point(
    *,
    base_url: str,
    bench: BenchPlan,
    point: PointPlan,
    out_dir: Path,
    gpus: GpuCounts,
    run_name: str,
    simulated: bool,
    disaggregated: bool,
    quiet: bool = False,
    stop: threading.Event | None = None,
    setup: Mapping[str, Any] | None = None,
    limits: LimitsPlan | None = None,
    make_load: Callable[[ClientOptions], Load] | None = None,
    serving: Callable[[], str | None] | None = None,
) -> PointOutcome:
    """Measure one point. `stop` set (a role died) ends it within a second, marked invalid.

    `make_load` builds the requests instead of `bench`'s synthetic ones (trace replay).
    `serving`, asked before the result is written, says why the roles behind the
    endpoint did not serve throughout (a role that paused): the point is then invalid.
    """
    from disagg.bench.results import PointContext
    from disagg.bench.runner import ClientOptions, headline, run_point

    ctx = PointContext(
        run_name=run_name,
        point=point,
        prefill_gpus=gpus.prefill,
        decode_gpus=gpus.decode,
        disaggregated=disaggregated,
        simulated=simulated,
        setup=dict(setup or {}),
    )
    limits = limits or LimitsPlan()
    options = ClientOptions(
        request_timeout_s=limits.request_timeout_s,
        stall_timeout_s=limits.stall_timeout_s,
        point_timeout_s=limits.point_timeout_s,
    )
    run = run_point(
        base_url=base_url,
        bench=bench,
        ctx=ctx,
        out_dir=out_dir,
        options=options,
        quiet=quiet,
        stop=stop,
        make_load=make_load,
        serving=serving,
    )
    return PointOutcome(
        path=run.path, valid=run.valid, reason=run.reason, summary=headline(run.result)
    )


def existing_valid_result(out_dir: Path, point: PointPlan) -> Path | None:
    """A valid result already written for this point (same key and prompt count), if any."""
    from disagg.bench.results import find_valid

    return find_valid(out_dir, point)


def reusable_result(
    out_dir: Path, point: PointPlan, expected: Mapping[str, Any]
) -> tuple[Path | None, list[str]]:
    """A valid result measured under `expected` (see `disagg.bench.fingerprint`), else
    None and why an existing valid result of this point does not count."""
    from disagg.bench.results import find_reusable

    return find_reusable(out_dir, point, expected)
