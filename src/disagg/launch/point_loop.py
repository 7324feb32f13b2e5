"""Measuring each point of the sweep through the load generator.

A point measured under this same plan is skipped; one that ends invalid fails the run
once the sweep is over. A role that stopped serving during a point (a gap longer than
`limits.serving_gap`, back before `limits.liveness_timeout`) makes the point invalid,
and it is measured once more, not forever, when every role answers again.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from disagg.launch.canary import serving_url
from disagg.launch.health import Gap, LivenessWatch
from disagg.launch.run_context import RunContext, Stop
from disagg.launch.state import PointState, PointStatus, duration_text, sweep_eta
from disagg.plan.model import BenchPlan, PointPlan
from disagg.plan.templates import substitute
from disagg.workloads import profiling, slow_down

if TYPE_CHECKING:
    from disagg.bench.runner import PointDriver as MeasureFn
    from disagg.bench.runner import PointOutcome

MEASURE_STOP_GRACE_S = 10.0  # the load generator promises to end within ~1 s of `stop`
MAX_ATTEMPTS = 2  # a point a role stopped serving in is measured once more, not forever


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
