"""The recipe's own benchmark client, run in the bench role: its exit status decides the run.

Its points carry no times disagg could trust, so a role that stopped serving at any
moment while it ran makes every point invalid; nothing is measured again, since the
command is the recipe's own.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from disagg.launch.executor import Task
from disagg.launch.health import LivenessWatch
from disagg.launch.run_context import RunContext
from disagg.launch.state import PointState, PointStatus
from disagg.plan.model import RoleKind
from disagg.plan.templates import substitute

OWN_LOG = ["bash", "-c", 'exec </dev/null >>"$0" 2>&1; exec "$@"']  # then the log, the command


def own_log_argv(argv: Sequence[str], log: str) -> list[str]:
    """`argv` with its stdio on `log` and /dev/null: what it leaves in the background then
    holds no srun I/O open, so its step ends with it (slurmstepd waits 60 s otherwise)."""
    return [*OWN_LOG, log, *argv]


def run_bench_command(run: RunContext, watch: LivenessWatch) -> None:
    from disagg.workloads.collect import collect

    command = run.plan.bench.command
    assert command is not None
    role = next(r for r in run.plan.roles if r.kind is RoleKind.BENCH)
    task = run.state.role(role.name).tasks[0]
    # `${run.dir}` is where the task sees the run directory (in a container too).
    log = f"${{run.dir}}/{Path(task.log).relative_to(run.run_dir)}"
    rank = role.node_ranks[0]
    argv, env = run.render(role.model_copy(update={"argv": own_log_argv(role.argv, log)}), rank)
    results = Path(substitute(command.results_dir, run.bindings, self_name=role.name))
    results.mkdir(parents=True, exist_ok=True)
    run.log.info("start %s: %s", role.name, " ".join(argv[len(OWN_LOG) + 1 :]))
    since = time.monotonic()
    process = run.launcher.launch(
        Task(role.name, rank, argv, env, Path(task.log), role.container_image)
    )
    with run.lock:
        task.pid = process.pid
    run.publish()
    code: int | None = None
    try:
        while (code := process.poll()) is None:
            if run.stop.wait(0.2):
                break
    finally:
        # What the command left in the background (`cmd &`, `setsid cmd &`) ends with it.
        stopped, stop_code = code is None, process.stop(run.options.stop_grace_s)
        code = stop_code if stopped else code
        run.record_exit(role.name, process.node_rank, code, stopped=stopped)
        run.note_swept(role.name, process)
    gaps = watch.gaps_since(since)
    blamed = gaps[0].role if gaps else None
    not_serving = gaps[0].describe(time.monotonic(), "the benchmark command") if gaps else None
    if not_serving:
        run.log.info("every point of the benchmark command is invalid: %s", not_serving)
    if command.accuracy is not None:  # one judged score file, not load points
        from disagg.workloads.accuracy import collect_accuracy

        found = collect_accuracy(results, run.plan, run.run_dir, not_serving=not_serving)
    else:
        found = collect(results, run.plan, run.results_dir, not_serving=not_serving)
    with run.lock:
        for point in found.points:
            run.state.points.append(
                PointState(
                    key=point.key,
                    status=PointStatus.MEASURED if point.valid else PointStatus.INVALID,
                    result=str(point.result),
                    reason=point.reason,
                    headline=point.headline,
                )
            )
    run.publish()
    for point in found.points:
        state = "valid" if point.valid else f"INVALID ({point.reason})"
        run.log.info("result %s from %s: %s", point.key, point.source, state)
    for other in found.other_files:
        run.log.info("kept %s", other)
    if code != 0 or any(not p.valid for p in found.points):
        run.name_dead_roles()  # a dead server fails the command's requests: name it first
    run.check_stop()
    if code != 0:
        run.fail(f"benchmark command exited with code {code}", role=role.name)
        return
    if not found.points and command.expects_results:
        what = (
            f"no {command.accuracy} score file (the harness's /tmp/{command.accuracy}_*.json)"
            if command.accuracy is not None
            else "no point result"
        )
        run.fail(
            f"the benchmark command exited 0 but wrote {what} into {results} "
            "(the directory it was given as $DISAGG_RESULTS_DIR)",
            role=role.name,
        )
        return
    invalid = [p for p in found.points if not p.valid]
    if invalid:
        run.fail_invalid_points([p.key for p in invalid], invalid[0].reason, role=blamed)
