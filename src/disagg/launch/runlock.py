"""One run per run directory: a second `disagg run`, job or `submit` is refused, naming the holder.

The lock is a staging `DirLock` (atomic `mkdir`, owner, heartbeat), so it holds across
nodes of a shared filesystem; a directory whose newest Slurm job still waits or runs is
busy too. A re-run stops what a SIGKILLed orchestrator left running, by PID and start time.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from disagg.errors import DisaggError
from disagg.launch.procs import ProcessIdentity, stop_group
from disagg.launch.state import RunState
from disagg.staging.locks import DirLock, LockTimeout

RUN_LOCK = "run.lock"
STALE_AFTER_S = 120.0


class RunDirBusy(DisaggError):
    """Another run holds this run directory."""


def hold_run_dir(
    run_dir: Path,
    *,
    wait_s: float = 0.0,
    own_job: str | None = None,
    log: Callable[[str], None] | None = None,
) -> DirLock:
    """Lock `run_dir` for this process or raise `RunDirBusy`. `own_job`'s entry in
    `slurm.json` is not busy; `wait_s` lets a job wait for the submit handing it over."""
    _refuse_if_job_active(run_dir, own_job)
    lock = DirLock(
        run_dir / RUN_LOCK,
        stale_after_s=STALE_AFTER_S,
        timeout_s=wait_s,
        poll_s=0.1,
        on_wait=log,
    )
    try:
        lock.acquire()
    except LockTimeout:
        raise RunDirBusy(
            f"{run_dir} is in use by another run: {lock.holder()}",
            hint="wait for it to end, or pick another --out directory; "
            "a lock left by a dead process is taken over by itself",
        ) from None
    return lock


def _refuse_if_job_active(run_dir: Path, own_job: str | None) -> None:
    if not (run_dir / "slurm.json").is_file():
        return
    from disagg.launch import slurm, slurmctl

    try:
        job_id = slurm.JobRecord.read(run_dir).job_id
    except ValueError:
        return
    if job_id is None or job_id == own_job:
        return
    try:
        job = slurmctl.job(job_id)
    except DisaggError:
        return  # Slurm unreachable: the lock alone decides
    if job is not None and not job.finished:
        raise RunDirBusy(
            f"{run_dir} is in use by Slurm job {job_id} ({job.state.lower()})",
            hint=f"wait for it, or stop it first: disagg cancel {run_dir}",
        )


def own_slurm_job() -> str | None:
    return os.environ.get("SLURM_JOB_ID") or None


def run_dir_held(run_dir: Path) -> bool:
    """Whether a live run holds `run_dir` (its orchestrator, a job, a submit handing over)."""
    return DirLock(run_dir / RUN_LOCK, stale_after_s=STALE_AFTER_S).held()


def stop_stale_roles(run_dir: Path, *, grace_s: float) -> list[str]:
    """Stop what a dead earlier orchestrator of `run_dir` left running; one line per task."""
    try:
        state = RunState.read(run_dir)
    except (OSError, ValueError):
        return []  # unreadable: nothing can be trusted to identify a process
    orchestrator = state.orchestrator() if state is not None else None
    if state is None or orchestrator is None or orchestrator.alive() is not False:
        return []  # none, live (the run lock refuses a second run) or on another host
    lines = []
    for role in state.roles:
        for task in role.tasks:
            if task.pid is None or task.started is None:
                continue
            if ProcessIdentity(orchestrator.host, task.pid, task.started).alive():
                stop_group(task.pid, grace_s)
                lines.append(
                    f"stopped {role.name} (pid {task.pid}), left running by the earlier run "
                    f"whose orchestrator (pid {state.orchestrator_pid}) died"
                )
    return lines
