"""A plan's `host_setup`: its commands once on each node before any role, its teardown after.

As srt-slurm runs them: on the bare host, joined with `&&`, each node within
`timeout_s`; a failed node ends the job before anything starts (unless
`ignore_failure`). Teardown runs once every role has stopped, if the setup started.
"""

from __future__ import annotations

import time
from pathlib import Path

from disagg.errors import DisaggError
from disagg.launch.executor import RoleProcess, Task
from disagg.launch.logs import tail, task_log_path
from disagg.launch.run_context import LOG_TAIL_LINES, RunContext, Stop
from disagg.plan.model import HostSetupPlan

SETUP = "host-setup"
TEARDOWN = "host-teardown"
STARTED = "host_setup_start"  # the timeline mark that says teardown is owed
_POLL_S = 0.1


def run_host_setup(run: RunContext) -> None:
    """The setup commands on every node of the plan's host setup; raises Stop on failure."""
    setup = run.plan.host_setup
    if setup is None or not setup.commands:
        return
    run.mark(STARTED)
    names = run.launcher.node_names()
    run.log.info("host setup on %d node(s)", len(setup.node_ranks))
    failed = _on_nodes(run, SETUP, setup.commands, setup)
    for rank, why, log in failed:
        reason = f"host setup failed on node {names[rank]}: {why}"
        if setup.ignore_failure:
            run.log.warning("%s (ignore_failure: going on); see %s", reason, log)
            continue
        run.fail(reason)
        with run.lock:
            if run.state.failure is not None and run.state.failure.reason == reason:
                run.state.failure.log = str(log)
                run.state.failure.log_tail = tail(log, LOG_TAIL_LINES)
        run.publish()
        raise Stop
    run.check_stop()
    run.mark("host_setup_done")


def run_host_teardown(run: RunContext) -> None:
    """The teardown commands, when the setup was started; a failure is logged, not raised."""
    setup = run.plan.host_setup
    if setup is None or not setup.teardown:
        return
    if setup.commands and STARTED not in run.timeline:
        return
    names = run.launcher.node_names()
    try:
        failed = _on_nodes(run, TEARDOWN, setup.teardown, setup, stoppable=False)
    except DisaggError as exc:
        run.log.error("host teardown could not start: %s", exc)
        return
    for rank, why, log in failed:
        run.log.error("host teardown failed on node %s: %s; see %s", names[rank], why, log)


def _on_nodes(
    run: RunContext,
    name: str,
    commands: list[str],
    setup: HostSetupPlan,
    *,
    stoppable: bool = True,
) -> list[tuple[int, str, Path]]:
    """Run `commands` on every node of `setup` at once; (rank, why, log) of each that failed.

    `stoppable`: a stopped run (a cancel, a signal) stops them too and raises Stop."""
    ranks, timeout_s = setup.node_ranks, setup.timeout_s
    argv = ["bash", "-c", " && ".join(commands)]
    logs = {rank: task_log_path(run.run_dir, name, rank, 2) for rank in ranks}
    waiting: dict[int, RoleProcess] = {}
    failed: list[tuple[int, str, Path]] = []
    try:
        for rank in ranks:
            waiting[rank] = run.launcher.launch(Task(name, rank, argv, {}, logs[rank]))
        deadline = time.monotonic() + timeout_s
        while waiting:
            if stoppable:
                run.check_stop()
            for rank, process in list(waiting.items()):
                if (code := process.poll()) is not None:
                    del waiting[rank]
                    if code != 0:
                        failed.append((rank, f"exit code {code}", logs[rank]))
            if waiting and time.monotonic() > deadline:
                failed += [
                    (rank, f"not done within {timeout_s:g} s", logs[rank]) for rank in waiting
                ]
                break
            time.sleep(_POLL_S)
        return sorted(failed)
    finally:  # what is still running (timed out, or the run stopped) is stopped
        for process in waiting.values():
            if process.poll() is None:
                process.stop(run.options.stop_grace_s)
