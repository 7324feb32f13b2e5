"""Shared test code: a bench plan builder and a point runner against the local test server."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from disagg.bench.results import PointContext
from disagg.bench.runner import ClientOptions, run_point
from disagg.bench.runner import PointOutcome as PointRun
from disagg.plan.model import BenchPlan, PointPlan


def plan(**kw: Any) -> BenchPlan:
    point = PointPlan(
        concurrency=kw.pop("concurrency", 4),
        request_rate=kw.pop("request_rate", None),
        num_prompts=kw.pop("num_prompts", 16),
        warmup_requests=kw.pop("warmup", 0),
    )
    defaults: dict[str, Any] = {"model_name": "test-model", "isl": 32, "osl": 16}
    defaults.update(kw)
    return BenchPlan(points=[point], **defaults)


def measure(
    url: str,
    bench: BenchPlan,
    out: Path,
    *,
    workers: int = 1,
    timeout_s: float = 30.0,
    stop: threading.Event | None = None,
    gpus: tuple[int, int] = (1, 2),
    http: str = "fast",
    detailed: bool = False,
    stall_timeout_s: float | None = None,
    point_timeout_s: float | None = None,
) -> PointRun:
    ctx = PointContext(
        run_name="t",
        point=bench.points[0],
        prefill_gpus=gpus[0],
        decode_gpus=gpus[1],
        disaggregated=gpus[0] > 0,
        simulated=True,
    )
    return run_point(
        base_url=url,
        bench=bench,
        ctx=ctx,
        out_dir=out,
        options=ClientOptions(
            workers=workers,
            request_timeout_s=timeout_s,
            http=http,  # type: ignore[arg-type]
            save_detailed=detailed,
            stall_timeout_s=stall_timeout_s,
            point_timeout_s=point_timeout_s,
        ),
        quiet=True,
        stop=stop,
    )
