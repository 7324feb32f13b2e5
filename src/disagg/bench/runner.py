"""The one benchmark driver: a point's requests -> warm-up + measured window -> metrics -> files.

Workloads differ only in what they send (`PointRequests`); limits, slow-down, the
serving check, the validity gate and the result files are the driver's. A bad server
never raises here: it makes the point invalid. `PointDriver` writes the point's result
JSON atomically into `out_dir` (and a `.jsonl` of its requests); a stop ends it within
a second, marked invalid.
"""

from __future__ import annotations

import contextlib
import random
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from time import monotonic
from typing import Any, Literal

from rich.console import Console
from rich.live import Live
from rich.text import Text

from disagg.bench import metrics as metric_calc
from disagg.bench.client import Load
from disagg.bench.gate import finite_numbers
from disagg.bench.prompts import PromptFactory, PromptSettings
from disagg.bench.records import RequestSpec
from disagg.bench.results import PointContext, build_result, judge, result_stem, write_point
from disagg.bench.workers import execute
from disagg.errors import DisaggError
from disagg.plan.limits import LimitsPlan
from disagg.plan.model import BenchPlan, PointPlan
from disagg.predict import timescale
from disagg.workloads.slow_down import SlowDown

# Asked once the point's last request ended, before its result is written: why the
# roles behind the endpoint did not serve throughout the point (a role that paused),
# or None. It comes before every other reason but a stop (it names the failures' cause).
ServingCheck = Callable[[], str | None]
Arrival = Literal["constant", "poisson", "gamma"]


@dataclass(frozen=True)
class ClientOptions:
    """Knobs of the generator itself, not of the workload."""

    workers: int = 0  # 0 = automatic (in-process up to 256 streams)
    request_timeout_s: float = 900.0  # longest one stream may go without a token before it fails
    stall_timeout_s: float | None = None  # longest the point may go without any progress
    point_timeout_s: float | None = None  # longest the point may take, warm-up included
    http: Literal["fast", "aiohttp"] = "fast"  # the HTTP implementation on the hot path
    save_detailed: bool = False  # keep per-request lists in the point JSON too (vLLM's flag)


@dataclass(frozen=True)
class GpuCounts:
    """GPUs behind the endpoint, for the per-GPU throughput fields."""

    prefill: int
    decode: int


@dataclass(frozen=True)
class PointRequests:
    """What a workload sends for one point; the driver does the rest."""

    requests: Sequence[RequestSpec]
    warmup: Sequence[RequestSpec] = field(default_factory=list)
    offsets: list[float] | None = None  # send times after the window's start; None: streams


Sends = Callable[[BenchPlan, PointPlan], PointRequests]


@dataclass
class PointOutcome:
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

    @property
    def summary(self) -> dict[str, float]:
        """The headline metrics progress output shows."""
        return headline(self.result)


def endpoint_url(base_url: str, endpoint: str) -> str:
    """`http://h:p` or `http://h:p/v1` -> the full completions or chat URL."""
    base = base_url.rstrip("/")
    if not base.endswith("/v1"):
        base += "/v1"
    return base + ("/chat/completions" if endpoint == "chat" else "/completions")


def arrival_offsets(
    count: int, rate: float, arrival: Arrival, *, burstiness: float = 1.0, seed: int = 0
) -> list[float]:
    """Send times in seconds after the window start (the first at 0), cumulative so that
    the offered rate does not drift when the client or server falls behind (the lag shows
    as client queue time). Gamma inter-arrival times of shape `burstiness`, mean `1/rate`
    (1 is Poisson, below 1 burstier), as in vLLM's benchmark."""
    if rate <= 0:
        raise DisaggError(
            f"request rate must be positive, got {rate:g}",
            hint="omit it to run at a fixed concurrency",
        )
    if arrival == "gamma" and burstiness <= 0:
        raise DisaggError(f"burstiness must be positive, got {burstiness:g}")
    rng = random.Random(seed)
    shape = 1.0 if arrival == "poisson" else burstiness
    offsets = [0.0] * count
    now = 0.0
    for i in range(1, count):
        if arrival == "constant":
            now = i / rate
        else:
            now += rng.gammavariate(shape, 1.0 / (rate * shape))
        offsets[i] = now
    return offsets


def synthetic_requests(bench: BenchPlan, point: PointPlan) -> PointRequests:
    """sa-bench's (and `disagg bench`'s) requests: random prompts of the planned lengths,
    on the point's arrival schedule when it has a request rate."""
    factory = PromptFactory(PromptSettings.of(bench))
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
    return PointRequests(
        requests=factory.build(point.num_prompts),
        warmup=factory.build(point.warmup_requests, seed_offset=1),
        offsets=offsets,
    )


@contextlib.contextmanager
def point_progress(
    label: str, total: int, *, quiet: bool = False
) -> Iterator[Callable[[int, int], None]]:
    """A one-line live status on a terminal (silent in a job or when quiet); yields
    `update(done, failed)`, callable from any thread: rich renders at most 4 times a
    second on its own thread, so the hot path only pays for two integer stores."""
    console = Console(stderr=True)
    if quiet or not console.is_terminal or not sys.stderr.isatty():
        yield lambda done, failed: None
        return
    start = monotonic()
    counts = [0, 0]  # done, failed
    lock = threading.Lock()

    def update(done: int, failed: int) -> None:
        with lock:
            counts[:] = done, failed

    def render() -> Text:
        elapsed = max(monotonic() - start, 1e-9)
        with lock:
            done, failed = counts
        return Text.assemble(
            (f"{label} ", "bold"),
            f"{done}/{total} requests  {done / elapsed:,.1f} req/s  ",
            (f"{failed} errors", "red" if failed else "green"),
        )

    with Live(console=console, refresh_per_second=4, transient=True, get_renderable=render):
        yield update


def run_point(
    *,
    base_url: str,
    bench: BenchPlan,
    ctx: PointContext,
    out_dir: Path,
    options: ClientOptions | None = None,
    quiet: bool = False,
    stop: threading.Event | None = None,
    requests: PointRequests | None = None,
    serving: ServingCheck | None = None,
) -> PointOutcome:
    """Measure one point and write its files; `requests` by default `synthetic_requests`."""
    options = options or ClientOptions()
    point = ctx.point
    sent = requests if requests is not None else synthetic_requests(bench, point)
    load = Load(
        url=endpoint_url(base_url, bench.endpoint),
        chat=bench.endpoint == "chat",
        requests=sent.requests,
        warmup=sent.warmup,
        concurrency=point.concurrency,
        offsets=sent.offsets,
        request_timeout_s=options.request_timeout_s,
        tokenizer=bench.tokenizer,
        http=options.http,
        stall_timeout_s=options.stall_timeout_s,
    )
    slowed = SlowDown(bench.slow_down) if bench.slow_down is not None else None
    try:
        with point_progress(point.key, point.num_prompts, quiet=quiet) as progress:
            run = execute(
                load,
                workers=options.workers,
                stop=stop,
                progress=progress,
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
    count = sum(1 for r in run.records if r.send)
    extra: dict[str, Any] = {
        "client_workers": run.workers,
        "client_cpu_s": run.cpu_s,
        "client_cpu_ms_per_request": 1000.0 * run.cpu_s / count if count else None,
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
    return PointOutcome(path=path, result=result)


@dataclass(frozen=True)
class PointDriver:
    """The orchestrator's measurement of one point, sending what `sends` makes for it."""

    sends: Sends = synthetic_requests

    def __call__(
        self,
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
        serving: ServingCheck | None = None,
    ) -> PointOutcome:
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
        return run_point(
            base_url=base_url,
            bench=bench,
            ctx=ctx,
            out_dir=out_dir,
            options=options,
            quiet=quiet,
            stop=stop,
            requests=self.sends(bench, point),
            serving=serving,
        )


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
    return finite_numbers({k: result[k] for k in keys if k in result})
