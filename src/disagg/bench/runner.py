"""One point end to end: prompts -> schedule -> warm-up + measured window -> metrics -> files."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from disagg.bench import metrics as metric_calc
from disagg.bench.client import Load, RequestSpec
from disagg.bench.progress import PointProgress
from disagg.bench.prompts import PromptFactory, PromptSettings
from disagg.bench.results import PointContext, build_result, judge, result_stem, write_point
from disagg.bench.schedule import arrival_offsets
from disagg.bench.workers import execute
from disagg.plan.model import BenchPlan, PointPlan
from disagg.predict import timescale
from disagg.workloads.slow_down import SlowDown


@dataclass(frozen=True)
class ClientOptions:
    """Knobs of the generator itself, not of the workload."""

    workers: int = 0  # 0 = automatic (in-process up to 256 streams)
    request_timeout_s: float = 900.0  # longest one stream may go without a token before it fails
    stall_timeout_s: float | None = None  # longest the point may go without any progress
    point_timeout_s: float | None = None  # longest the point may take, warm-up included
    http: Literal["fast", "aiohttp"] = "fast"  # the HTTP implementation on the hot path
    save_detailed: bool = False  # keep per-request lists in the point JSON too (vLLM's flag)


@dataclass
class PointRun:
    """What a measured point produced."""

    path: Path
    result: dict[str, Any]

    @property
    def valid(self) -> bool:
        return bool(self.result["valid"])

    @property
    def reason(self) -> str | None:
        reason = self.result.get("invalid_reason")
        return str(reason) if reason is not None else None


def endpoint_url(base_url: str, endpoint: str) -> str:
    """`http://h:p` or `http://h:p/v1` -> the full completions or chat URL."""
    base = base_url.rstrip("/")
    if not base.endswith("/v1"):
        base += "/v1"
    return base + ("/chat/completions" if endpoint == "chat" else "/completions")


def build_load(base_url: str, bench: BenchPlan, point: PointPlan, options: ClientOptions) -> Load:
    factory = PromptFactory(
        PromptSettings(
            model=bench.model_name,
            isl=bench.isl,
            osl=bench.osl,
            range_ratio=bench.random_range_ratio,
            endpoint=bench.endpoint,
            tokenizer=bench.tokenizer,
            chat_template=bench.use_chat_template,
            ignore_eos=bench.ignore_eos,
            seed=bench.seed,
            prompt_format=bench.prompt_format,
        )
    )
    offsets = None
    if point.request_rate is not None:
        offsets = arrival_offsets(
            point.num_prompts,
            point.request_rate,
            bench.arrival,
            burstiness=bench.burstiness,
            seed=bench.seed,
        )
        if bench.time_scale != 1.0:
            offsets = timescale.compress(offsets, bench.time_scale)
    return point_load(
        base_url,
        bench,
        point,
        options,
        requests=factory.build(point.num_prompts),
        warmup=factory.build(point.warmup_requests, seed_offset=1),
        offsets=offsets,
    )


def point_load(
    base_url: str,
    bench: BenchPlan,
    point: PointPlan,
    options: ClientOptions,
    *,
    requests: Sequence[RequestSpec],
    warmup: Sequence[RequestSpec] | None = None,
    offsets: list[float] | None = None,
) -> Load:
    """The one place a point's requests become a Load, for sa-bench and trace replay alike."""
    return Load(
        url=endpoint_url(base_url, bench.endpoint),
        chat=bench.endpoint == "chat",
        requests=requests,
        warmup=warmup if warmup is not None else [],
        concurrency=point.concurrency,
        offsets=offsets,
        request_timeout_s=options.request_timeout_s,
        tokenizer=bench.tokenizer,
        http=options.http,
        stall_timeout_s=options.stall_timeout_s,
    )


def run_point(
    *,
    base_url: str,
    bench: BenchPlan,
    ctx: PointContext,
    out_dir: Path,
    options: ClientOptions | None = None,
    quiet: bool = False,
    stop: threading.Event | None = None,
    make_load: Callable[[ClientOptions], Load] | None = None,
    serving: Callable[[], str | None] | None = None,
) -> PointRun:
    """Measure one point and write its files; a bad server makes it invalid, never raises.

    `make_load` replaces the synthetic requests of `bench` (a replayed trace brings its own).
    `serving` says why a role behind the endpoint did not serve throughout, or None; it
    comes before every other reason but a stop (it names the cause of the failures).
    """
    options = options or ClientOptions()
    point = ctx.point
    make = make_load or (lambda opts: build_load(base_url, bench, point, opts))
    load = make(options)
    slowed = SlowDown(bench.slow_down) if bench.slow_down is not None else None
    try:
        with PointProgress(point.key, point.num_prompts, quiet=quiet) as progress:
            run = execute(
                load,
                workers=options.workers,
                stop=stop,
                progress=progress.update,
                point_timeout_s=options.point_timeout_s,
                before_window=slowed.start if slowed is not None else None,
            )
    finally:
        # the workers are never left slowed down, whatever ended the point
        slow_failure = slowed.finish() if slowed is not None else None
    timescale.stretch(run.records, run.t0, bench.time_scale)
    stopped = "stopped before the point finished (a role exited or the run was cancelled)"
    numbers = metric_calc.compute(run.records, run.t0, bench.slo or None)
    not_serving = serving() if serving is not None and not run.stopped else None
    cut = stopped if run.stopped else (not_serving or slow_failure or run.cut)
    reason = judge(numbers, run.records, bench, cut)
    sent = sum(1 for r in run.records if r.send)
    extra: dict[str, Any] = {
        "client_workers": run.workers,
        "client_cpu_s": run.cpu_s,
        "client_cpu_ms_per_request": 1000.0 * run.cpu_s / sent if sent else None,
    }
    if slowed is not None:
        extra["slow_down_posts"] = slowed.posts
    result = build_result(
        metrics=numbers,
        records=run.records,
        ctx=ctx,
        bench=bench,
        invalid_reason=reason,
        extra=extra,
    )
    path = write_point(
        out_dir, result_stem(ctx), result, run.records, run.t0, detailed=options.save_detailed
    )
    return PointRun(path=path, result=result)


def headline(result: dict[str, Any]) -> dict[str, float]:
    """The few numbers progress output shows for a finished point."""
    keys = (
        "request_throughput",
        "output_throughput",
        "median_ttft_ms",
        "median_tpot_ms",
        "p99_ttft_ms",
        "p99_tpot_ms",
        "completed",
        "failed",
    )
    from disagg.bench.gate import finite_numbers

    return finite_numbers({k: result[k] for k in keys if k in result})
