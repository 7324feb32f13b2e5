"""Roles an earlier run left behind: found in its `state.json`, stopped before a re-run.

An orchestrator killed with SIGKILL cannot tear down; its roles normally follow it
(`pdeath.py`), but a role that ignores SIGTERM, or its children, may not. A re-run
into the same directory reads the old `state.json` and stops each recorded task
whose PID still names the same process (same host and boot, same start time), with
its whole process group. A PID now used by something else is left alone.
"""

from __future__ import annotations

from pathlib import Path

from disagg.launch.procs import ProcessIdentity, stop_group
from disagg.launch.state import RunState


def stop_stale_roles(run_dir: Path, *, grace_s: float) -> list[str]:
    """Stop what a dead earlier orchestrator of `run_dir` left running; one line per task."""
    try:
        state = RunState.read(run_dir)
    except (OSError, ValueError):
        return []  # unreadable: nothing can be trusted to identify a process
    if state is None or state.orchestrator_host is None:
        return []
    orchestrator = state.orchestrator()
    if orchestrator is None or orchestrator.alive() is not False:
        return []  # live (the run lock refuses a second run) or on another host
    lines = []
    for role in state.roles:
        for task in role.tasks:
            if task.pid is None or task.started is None:
                continue
            if ProcessIdentity(state.orchestrator_host, task.pid, task.started).alive():
                stop_group(task.pid, grace_s)
                lines.append(
                    f"stopped {role.name} (pid {task.pid}), left running by the earlier run "
                    f"whose orchestrator (pid {state.orchestrator_pid}) died"
                )
    return lines
