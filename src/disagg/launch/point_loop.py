"""The canary, then each point of the sweep measured through the load generator.

The canary is one request through the serving endpoint before any point; a server error
or a dropped connection is tried again, since a cold disaggregated deployment can fail
its very first request once (vLLM's first NIXL handshake). A point measured under this
same plan is skipped; one that ends invalid fails the run once the sweep is over. A role
that stopped serving during a point (a gap longer than `limits.serving_gap`, back before
`limits.liveness_timeout`) makes the point invalid, and it is measured once more, not
forever, when every role answers again.
"""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from disagg.errors import DisaggError
from disagg.launch.health import Gap, LivenessWatch
from disagg.launch.logs import first_error_line, log_sizes, task_log_path
from disagg.launch.run_context import RunContext, Stop
from disagg.launch.state import PointState, PointStatus, duration_text, sweep_eta
from disagg.plan.model import BenchPlan, PointPlan, RoleKind
from disagg.plan.templates import substitute
from disagg.workloads import profiling, slow_down

if TYPE_CHECKING:
    from disagg.bench.runner import PointDriver as MeasureFn
    from disagg.bench.runner import PointOutcome

MEASURE_STOP_GRACE_S = 10.0  # the load generator promises to end within ~1 s of `stop`
MAX_ATTEMPTS = 2  # a point a role stopped serving in is measured once more, not forever
CANARY_ATTEMPTS = 3
CANARY_RETRY_WAIT_S = 2.0
# Server errors a cold deployment gives once (a first NIXL handshake timing out, a pooled
# connection closed); a 4xx, a timeout or a malformed answer is the same on every try.
TRANSIENT_HTTP = frozenset({500, 502, 503, 504})


@dataclass(frozen=True)
class CanaryResult:
    ok: bool
    detail: str  # the completion text, or the server's answer when it failed
    transient: bool = False  # a failure another try may not repeat


def canary(base_url: str, bench: BenchPlan, *, timeout_s: float = 60.0) -> CanaryResult:
    """One tiny non-streaming completion (max_tokens 4) through the serving endpoint."""
    if bench.endpoint == "chat":
        path = "/v1/chat/completions"
        body: dict[str, object] = {"messages": [{"role": "user", "content": "Hello"}]}
    else:
        path = "/v1/completions"
        body = {"prompt": "Hello"}
    body.update({"model": bench.model_name, "max_tokens": 4, "stream": False})
    request = urllib.request.Request(
        base_url.rstrip("/") + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            raw = response.read(64 * 1024)
    except urllib.error.HTTPError as exc:
        answer = exc.read(2048).decode("utf-8", errors="replace").strip()
        detail = f"HTTP {exc.code} from {base_url}{path}: {answer}"
        return CanaryResult(False, detail, transient=exc.code in TRANSIENT_HTTP)
    except (OSError, http.client.HTTPException) as exc:
        reason = getattr(exc, "reason", exc)
        dropped = isinstance(exc, ConnectionError) or isinstance(reason, ConnectionError)
        return CanaryResult(False, f"no answer from {base_url}{path}: {reason}", transient=dropped)
    try:
        first = json.loads(raw)["choices"][0]
        text = first.get("text") or (first.get("message") or {}).get("content") or ""
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        snippet = raw[:300].decode("utf-8", errors="replace")
        return CanaryResult(False, f"unexpected answer from {base_url}{path}: {snippet}")
    return CanaryResult(True, str(text))


def serving_url(run: RunContext) -> str:
    """Where load goes: the plan's serving role, else a router, aggregated or decode worker."""
    if run.plan.serving_role is not None:
        return run.bindings[run.plan.serving_role]["url"]
    for kind in (RoleKind.ROUTER, RoleKind.AGGREGATED, RoleKind.DECODE):
        for role in run.plan.roles_of(kind):
            url = run.bindings.get(role.name, {}).get("url")
            if url:
                return url
    raise DisaggError("the plan has no router or worker with an http port to send load to")


def run_canary(run: RunContext) -> None:
    """The canary, tried up to CANARY_ATTEMPTS times; a failure names the first role whose
    log recorded an error meanwhile, with that log's last lines."""
    url = serving_url(run)
    logs = _role_logs(run)
    sizes = log_sizes(list(logs))
    for attempt in range(1, CANARY_ATTEMPTS + 1):
        result = run.interruptible(lambda: canary(url, run.plan.bench))
        if result.ok:
            tries = f" (attempt {attempt} of {CANARY_ATTEMPTS})" if attempt > 1 else ""
            run.log.info("canary ok through %s%s: %r", url, tries, result.detail)
            return
        if not result.transient or attempt == CANARY_ATTEMPTS:
            break
        run.log.warning(
            "canary attempt %d of %d failed: %s; trying again in %.0f s",
            attempt,
            CANARY_ATTEMPTS,
            result.detail,
            CANARY_RETRY_WAIT_S,
        )
        if run.stop.wait(CANARY_RETRY_WAIT_S):
            raise Stop
    tries = f" ({attempt} attempts)" if attempt > 1 else ""
    reason = f"canary request failed{tries}: {result.detail}"
    for path, (role, rank) in logs.items():
        if line := first_error_line(path, sizes[path]):
            run.fail(f"{reason}; {role} logged: {line[:300]}", role=role, node_rank=rank)
            raise Stop
    run.fail(reason)
    raise Stop


def _role_logs(run: RunContext) -> dict[Path, tuple[str, int]]:
    """Every role's task log (one per node it spans) -> (role, node rank), in plan order."""
    found: dict[Path, tuple[str, int]] = {}
    for role in run.plan.roles:
        for rank in role.node_ranks or [0]:
            found[task_log_path(run.run_dir, role.name, rank, role.nnodes)] = (role.name, rank)
    return found


def mark_done_points(run: RunContext) -> bool:
    """Mark every point that already has a valid result measured under this plan as
    skipped (once, before staging); say why another plan's result is measured again."""
    from disagg.bench.fingerprint import fingerprint_fields
    from disagg.bench.results import reusable_result

    done = True
    for point, state in zip(run.plan.bench.points, run.state.points, strict=True):
        found, why = reusable_result(run.results_dir, point, fingerprint_fields(run.plan, point))
        if found is not None:
            _mark_skipped(state, found)
            continue
        done = False
        if why:
            shown = "; ".join(why[:5]) + (f"; {len(why) - 5} more" if len(why) > 5 else "")
            run.log.info(
                "point %s: the existing result was measured under another plan (%s); "
                "measuring it again",
                point.key,
                shown,
            )
    return done


class ServingGaps:
    """The point's serving check: the watch's gaps since the attempt began, the first kept."""

    def __init__(self, watch: LivenessWatch) -> None:
        self.watch = watch
        self.since = time.monotonic()
        self.gap: Gap | None = None

    def __call__(self) -> str | None:
        gaps = self.watch.gaps_since(self.since)
        if not gaps:
            return None
        self.gap = gaps[0]
        now = time.monotonic()
        others = sorted({g.role for g in gaps} - {self.gap.role})
        also = f"; also {', '.join(others)}" if others else ""
        return f"{self.gap.describe(now)}{also}"


def measure_points(run: RunContext, measure_point: MeasureFn, watch: LivenessWatch) -> None:
    """Measure every point not skipped, in order; the recipe's profiles run from before the
    first point to after the last. The invalid points fail the run once the sweep is over."""
    from disagg.bench.fingerprint import fingerprint_fields
    from disagg.bench.identity import setup_fields
    from disagg.bench.runner import GpuCounts
    from disagg.frontends.dynamo_install import with_installed_version

    setup = with_installed_version(setup_fields(run.plan), run.run_dir)
    bench = rendered_bench(run)
    plan = run.plan
    measure = partial(
        measure_point,
        base_url=serving_url(run),
        bench=bench,
        out_dir=run.results_dir,
        gpus=GpuCounts(prefill=plan.prefill_gpus, decode=plan.decode_gpus),
        run_name=plan.name,
        simulated=plan.simulated,
        disaggregated=plan.disaggregated,
        quiet=run.options.quiet_bench,
        stop=run.stop,
        limits=plan.limits,
    )
    profiles = profiling.Profiles(bench.profiling) if bench.profiling is not None else None
    invalid: list[tuple[str, str | None, str | None]] = []  # key, reason, role to blame
    try:
        profiled = start_profiles(run, profiles)
        for point, point_state in zip(plan.bench.points, run.state.points, strict=True):
            run.check_stop()
            if point_state.status is PointStatus.SKIPPED:  # found by `mark_done_points`
                run.log.info("point %s: valid result exists, skipped", point.key)
                continue
            fields = {**setup, **fingerprint_fields(plan, point), **profiled}
            point_measure = partial(measure, point=point, setup=fields)
            gap = _measure_point(run, point, point_state, point_measure, watch).gap
            if point_state.status is PointStatus.INVALID:
                invalid.append((point.key, point_state.reason, gap.role if gap else None))
    finally:
        stop_profiles(run, profiles)
    run.check_stop()
    if invalid:
        _, first_reason, blamed = invalid[0]
        run.fail_invalid_points([key for key, _, _ in invalid], first_reason, role=blamed)


def _measure_point(
    run: RunContext,
    point: PointPlan,
    point_state: PointState,
    measure: Callable[..., PointOutcome],
    watch: LivenessWatch,
) -> ServingGaps:
    """Measure `point`: once more when a role stopped serving during it and every role
    answers again, but not again after that; the last attempt's serving check."""
    while True:
        with run.lock:
            run.state.current_point = point.key
            point_state.status = PointStatus.RUNNING
            point_state.started_at = time.time()
            point_state.attempts += 1
        run.publish()
        eta = sweep_eta(run.state.points, time.time())
        again = f", attempt {point_state.attempts}" if point_state.attempts > 1 else ""
        run.log.info(
            "point %s (%d of %d%s): measuring %d request(s)%s",
            point.key,
            run.state.points.index(point_state) + 1,
            len(run.state.points),
            again,
            point.num_prompts,
            f"; sweep ETA ~{duration_text(eta)}" if eta is not None else "",
        )
        started = time.monotonic()
        check = ServingGaps(watch)
        outcome = run.interruptible(partial(measure, serving=check), grace_s=MEASURE_STOP_GRACE_S)
        if outcome.valid or check.gap is None or run.stop.is_set():
            break
        if point_state.attempts >= MAX_ATTEMPTS:
            break
        point_state.discarded.append(outcome.reason or "")
        run.log.info("point %s: %s; measuring it once more", point.key, outcome.reason)
        if not watch.wait_answered(after=time.monotonic()):
            break  # the role never came back: the liveness limit stopped the run
    if not outcome.valid:  # a role that died fails requests at once: name it first
        run.name_dead_roles()
    with run.lock:
        point_state.seconds = round(time.monotonic() - started, 3)
        point_state.finished_at = time.time()
        point_state.headline = dict(outcome.summary)
        run.state.current_point = None
        if run.stop.is_set() and not outcome.valid:
            point_state.status = PointStatus.ABORTED
            point_state.reason = outcome.reason
        elif outcome.valid:
            point_state.status, point_state.result = PointStatus.MEASURED, str(outcome.path)
        else:
            point_state.status, point_state.result = PointStatus.INVALID, str(outcome.path)
            point_state.reason = outcome.reason
    run.publish()
    run.log.info("point %s: %s %s", point.key, point_state.status.value, _brief(outcome))
    return check


def start_profiles(run: RunContext, profiles: profiling.Profiles | None) -> dict[str, Any]:
    """Start the recipe's profiles on the workers before the first point (srtctl's
    `start_all_profiling`); the result fields that record it. A start that fails fails
    the run, naming the worker."""
    from disagg.bench.results import PROFILE_POSTS

    if profiles is None:
        return {}
    plan = profiles.plan
    run.log.info(
        "profiling (%s): starting a profile on %s",
        plan.type,
        ", ".join(f"{t.role} (steps {t.start_step}+{t.num_steps})" for t in plan.targets),
    )
    failed = profiles.start()
    _record_posts(run, profiles)
    if failed is not None:
        target, why = failed
        run.fail(
            f"profiling: starting the profile on {target.role} failed: {why}", role=target.role
        )
        raise Stop
    return {PROFILE_POSTS: profiles.start_posts}


def stop_profiles(run: RunContext, profiles: profiling.Profiles | None) -> None:
    """Stop every profile started (srtctl's `stop_all_profiling`); a failed stop is a
    warning, or a note when the profile had ended itself after its steps."""
    if profiles is None or not profiles.started:
        return
    for problem in profiles.stop():
        if profiling.ENDED_ITSELF in problem:
            run.log.info("profiling: %s (the profile had ended after its steps)", problem)
        else:
            run.log.warning("profiling: stopping the profile failed on %s", problem)
    _record_posts(run, profiles)
    run.log.info("profiling: stopped")


def _record_posts(run: RunContext, profiles: profiling.Profiles) -> None:
    with run.lock:
        run.state.profile_posts = list(profiles.posts)
    run.publish()


def rendered_bench(run: RunContext) -> BenchPlan:
    """The bench plan with its placeholders (a tokenizer path, slow-down and profile
    URLs) bound."""
    bench = run.plan.bench
    name = "bench"
    bindings = {**run.bindings, name: {}}
    update: dict[str, object] = {}
    if bench.tokenizer:
        update["tokenizer"] = substitute(bench.tokenizer, bindings, self_name=name)
    if bench.slow_down is not None:
        update["slow_down"] = slow_down.rendered(bench, bindings).slow_down
    if bench.profiling is not None:
        update["profiling"] = profiling.rendered(bench, bindings).profiling
    return bench.model_copy(update=update) if update else bench


def _brief(outcome: PointOutcome) -> str:
    parts = [f"{k}={v:.4g}" for k, v in list(outcome.summary.items())[:4]]
    if outcome.reason:
        parts.append(f"({outcome.reason})")
    return " ".join(parts)


def _mark_skipped(state: PointState, result: Path) -> None:
    """A point measured by an earlier run: keep its file and show its numbers again."""
    from disagg.bench.results import read_result
    from disagg.bench.runner import headline

    state.status, state.result = PointStatus.SKIPPED, str(result)
    data = read_result(result)
    if data is not None:
        state.headline = headline(data)
