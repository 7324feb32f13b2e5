"""The end of every run, however it ended: stop every task, then write summary.json.

Teardown never depends on a write succeeding: tasks are stopped first (in parallel,
newest first), and a summary that cannot be written turns a completed run into a
failed one but leaves nothing running.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from disagg.launch.executor import RoleProcess
from disagg.launch.host_setup import run_host_teardown
from disagg.launch.logs import close_log
from disagg.launch.run_context import (
    EXIT_CANCELLED,
    EXIT_COMPLETED,
    EXIT_FAILED,
    RunContext,
)
from disagg.launch.state import (
    SUMMARY_FILE,
    Failure,
    Phase,
    PointStatus,
    RunRecord,
    RunStatus,
    RunSummary,
)
from disagg.plan.model import RolePlan


def teardown(run: RunContext) -> None:
    with run.phase(Phase.TEARDOWN, checked=False):
        run.tearing_down = True
        with run.lock:
            tasks = list(reversed(run.tasks))
        if tasks:
            _stop_tasks(run, tasks)
        run_host_teardown(run)  # after every role has stopped, however the run ended
        if not tasks and run.plan.host_setup is None:
            return
        try:
            run.launcher.close()
        except Exception:
            run.log.exception("launcher close failed")


def _stop_tasks(run: RunContext, tasks: list[tuple[RolePlan, RoleProcess]]) -> None:
    run.log.info("stopping %d task(s)", len(tasks))
    grace = run.options.stop_grace_s
    with ThreadPoolExecutor(max_workers=min(32, len(tasks))) as pool:
        codes = list(pool.map(lambda t: t[1].stop(grace), tasks))
    for (role, process), code in zip(tasks, codes, strict=True):
        run.note_swept(role.name, process)
        key = (role.name, process.node_rank)
        if key not in run.ended:
            run.ended.add(key)
            run.record_exit(role.name, process.node_rank, code, stopped=True)


def finish(run: RunContext, error_code: int) -> RunSummary:
    """Decide the run's status and exit code, write summary.json, close the log."""
    with run.lock:
        failure = run.state.failure
        if run.cancelled:
            status, code = RunStatus.CANCELLED, EXIT_CANCELLED
        elif run.timed_out:
            status, code = RunStatus.TIMEOUT, EXIT_FAILED
        elif failure is not None:
            status, code = RunStatus.FAILED, error_code
        elif run.write_error is not None:  # results may be fine; the record is not
            failure = run.state.failure = Failure(reason=run.write_error)
            status, code = RunStatus.FAILED, EXIT_FAILED
        else:
            status, code = RunStatus.COMPLETED, EXIT_COMPLETED
        for point in run.state.points:
            if point.status in (PointStatus.PENDING, PointStatus.RUNNING) and failure:
                point.status = PointStatus.ABORTED
        run.state.status = status
        run.state.phase = Phase.DONE
        run.state.current_point = None
        points = [p.model_copy() for p in run.state.points]
        started = {r.name: r.tasks for r in run.state.roles if any(t.pid for t in r.tasks)}
        summary = RunSummary(
            **run.state.model_dump(include=set(RunRecord.model_fields)),
            status=status,
            exit_code=code,
            reason=failure.reason if failure else None,
            failure=failure if status in (RunStatus.FAILED, RunStatus.TIMEOUT) else None,
            started_at=run.started,
            finished_at=time.time(),
            phase_seconds=dict(run.phase_seconds),
            timeline=dict(run.timeline),
            role_exit_codes={name: [t.exit_code for t in tasks] for name, tasks in started.items()},
            role_pids={name: [t.pid for t in tasks if t.pid] for name, tasks in started.items()},
            points=points,
            points_measured=sum(p.status is PointStatus.MEASURED for p in points),
            points_skipped=sum(p.status is PointStatus.SKIPPED for p in points),
            points_invalid=sum(p.status is PointStatus.INVALID for p in points),
            profile_posts=list(run.state.profile_posts),
        )
    try:
        summary.write(run.run_dir)
    except OSError as exc:
        run.write_failed(SUMMARY_FILE, exc)
        if summary.exit_code == EXIT_COMPLETED:
            summary.status, summary.exit_code = RunStatus.FAILED, EXIT_FAILED
            summary.reason = run.write_error
    run.publish()
    run.log.info(
        "run %s: %d measured, %d skipped, %d invalid; %.1f s",
        status.value,
        summary.points_measured,
        summary.points_skipped,
        summary.points_invalid,
        summary.finished_at - run.started,
    )
    close_log(run.log)
    return summary
