"""Runs on Slurm: write a run directory's job files, submit it, watch it, cancel it.

`disagg status` joins what Slurm says about the job (state, pending reason) with what
the orchestrator wrote (`state.json`).
"""

from __future__ import annotations

import time
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import Field

from disagg.atomic import write_text
from disagg.errors import DisaggError
from disagg.launch import slurmctl
from disagg.launch.sbatch import SBATCH_FILE, render
from disagg.launch.state import RunState, RunStatus, RunSummary, StoredRecord, points_done
from disagg.model_defaults import empty_list
from disagg.plan.model import Plan
from disagg.probe import probe

SLURM_RECORD = "slurm.json"
ORCHESTRATOR_DEAD = "dead"  # `status` of a run whose orchestrator died without a summary
TIMEOUT = RunStatus.TIMEOUT.value  # the job reached its time limit
CANCEL_GRACE_S = 20.0


class JobRecord(StoredRecord):
    """`slurm.json`: which Slurm jobs ran this run directory (ids only, never environment)."""

    FILE = SLURM_RECORD

    job_ids: list[str] = Field(default_factory=empty_list)
    submitted_at: list[float] = Field(default_factory=empty_list)
    cancelled_at: float | None = None

    @property
    def job_id(self) -> str | None:
        return self.job_ids[-1] if self.job_ids else None

    @classmethod
    def read(cls, run_dir: Path) -> JobRecord:
        return super().read(run_dir) or cls()


def write_job_script(plan: Plan, run_dir: Path) -> Path:
    """Render `job.sbatch` into the run directory (atomically) and return its path."""
    path = run_dir / SBATCH_FILE
    write_text(path, render(plan, run_dir))
    path.chmod(0o755)
    return path


def submit(run_dir: Path) -> str:
    """`sbatch --parsable RUN_DIR/job.sbatch`, recorded in `slurm.json`; the submitter's
    environment goes to the job: secrets reach the roles written nowhere."""
    out = slurmctl.run(["sbatch", "--parsable", str(run_dir / SBATCH_FILE)])
    job_id = out.strip().split(";", 1)[0]
    if not job_id.isdigit():
        raise DisaggError(f"sbatch answered {out.strip()!r}, not a job id", exit_code=1)
    record = JobRecord.read(run_dir)
    record.job_ids.append(job_id)
    record.submitted_at.append(time.time())
    record.cancelled_at = None
    record.write(run_dir)
    return job_id


@dataclass
class RunView:
    """One row of `disagg status`: a job, its run directory, or both."""

    target: str
    run_dir: Path | None
    job_id: str | None
    job: slurmctl.JobInfo | None
    state: RunState | None
    summary: RunSummary | None
    cancelled: bool = False
    unavailable: list[str] = field(default_factory=list)  # why a pending job may wait

    @property
    def run_status(self) -> str:
        """What happened to the run, in one word a script can compare."""
        if self.job is not None and self.job.state == "TIMEOUT":
            # Slurm's SIGTERM at the time limit reads as a cancel to the orchestrator.
            return TIMEOUT
        if self.summary is not None:
            return self.summary.status.value
        if self.job is not None and self.job.finished:
            # Slurm ended the job before the orchestrator wrote a summary (a plain scancel
            # kills it KillWait after its SIGTERM): Slurm's verdict explains the death.
            return "cancelled" if self.job.state.startswith("CANCELLED") else "failed"
        if self.state is not None and self.state.orchestrator_dead():
            return ORCHESTRATOR_DEAD  # killed without a teardown: nothing runs it any more
        if self.cancelled:
            return RunStatus.CANCELLED.value
        if self.job is not None and self.job.state == "PENDING":
            return "pending"
        if self.job is None and self.job_id is None:
            # a local run: its orchestrator, alive (checked above), is what runs it
            return self.state.status.value if self.state is not None else "not submitted"
        return RunStatus.RUNNING.value if self.job is not None else "unknown"

    @property
    def finished(self) -> bool:
        """The run ended and Slurm no longer runs its job (what `--watch` waits for)."""
        job_done = self.job is None or self.job.finished
        return job_done and self.run_status not in ("pending", "running", "unknown")

    def to_json(self) -> dict[str, Any]:
        state, summary, job = self.state, self.summary, self.job
        failure = (summary.failure if summary else None) or (state.failure if state else None)
        points = (summary.points if summary else None) or (state.points if state else [])
        return {
            "target": self.target,
            "run_dir": str(self.run_dir) if self.run_dir else None,
            "job_id": self.job_id,
            "job_state": job.state if job else None,
            "reason": job.reason if job else None,
            "unavailable_nodes": self.unavailable,
            "nodes": job.nodes if job else None,
            "exit_code": job.exit_code if job else None,
            "source": job.source if job else None,
            "status": self.run_status,
            "phase": state.phase.value if state else None,
            "orchestrator_pid": state.orchestrator_pid if state else None,
            "points_done": points_done(points),
            "points_total": len(points),
            "points": [p.model_dump(mode="json") for p in points],
            "failure": failure.model_dump(mode="json") if failure else None,
        }


def resolve(target: str) -> tuple[Path | None, str | None]:
    """RUN_DIR or JOB_ID -> (run directory, newest job id); either may be unknown."""
    path = Path(target)
    if probe(path).is_dir:
        if not (path / "plan.json").is_file():
            raise DisaggError(f"{target}: not a run directory (no plan.json)")
        return path.resolve(), JobRecord.read(path).job_id
    if target.isdigit():
        return None, target
    raise DisaggError(
        f"{target}: neither a run directory nor a Slurm job id",
        hint="pass the run directory `disagg submit` printed, or a numeric job id",
    )


def view(target: str) -> RunView:
    """Everything known about a run or job, asking Slurm once."""
    run_dir, job_id = resolve(target)
    job = slurmctl.job(job_id) if job_id else None
    if run_dir is None and job is not None:
        run_dir = _run_dir_of(job_id or "")
    record = JobRecord.read(run_dir) if run_dir else JobRecord()
    # Only what the newest submission wrote counts; older files are an earlier job's.
    since = record.submitted_at[-1] if record.submitted_at else 0.0
    state = RunState.read(run_dir) if run_dir else None
    if state is not None and state.started_at < since:
        state = None
    summary = RunSummary.read(run_dir) if run_dir else None
    if summary is not None and summary.started_at < since:
        summary = None
    unavailable: list[str] = []
    if job is not None and job.state == "PENDING":
        # Slurm's reason (`Resources`) does not say which nodes are missing; the nodes do.
        with suppress(DisaggError):
            unavailable = [
                f"{n.name} {n.state.lower()}" + (f": {n.reason}" if n.reason else "")
                for n in slurmctl.unavailable_nodes(job.partition)
            ]
    return RunView(
        target=target,
        run_dir=run_dir,
        job_id=job_id,
        job=job,
        state=state,
        summary=summary,
        cancelled=record.cancelled_at is not None and summary is None,
        unavailable=unavailable,
    )


def _run_dir_of(job_id: str) -> Path | None:
    """The run directory of a job: its working directory when that holds a plan."""
    try:
        out = slurmctl.run(["scontrol", "-o", "show", "job", job_id])
    except DisaggError:
        return None
    workdir = slurmctl.parse_one_liner(out.strip()).get("WorkDir")
    if workdir and (Path(workdir) / "plan.json").is_file():
        return Path(workdir)
    return None


def _ended_since(run_dir: Path | None, moment: float) -> bool:
    """The orchestrator of this run wrote its summary after `moment` (teardown is done)."""
    if run_dir is None:
        return False
    with suppress(ValueError, OSError):
        summary = RunSummary.read(run_dir)
        return summary is not None and summary.finished_at >= moment
    return False


def cancel(target: str) -> RunView:
    """Stop a run: the orchestrator first (it tears roles down and keeps results), then the job."""
    run_dir, job_id = resolve(target)
    if job_id is None:
        raise DisaggError(f"{target}: this run was never submitted", hint="nothing to cancel")
    job = slurmctl.job(job_id)
    if job is None:
        raise DisaggError(
            f"job {job_id} is not known to Slurm",
            hint="it may have ended long ago; `disagg status` shows what the run directory says",
            exit_code=1,
        )
    if job.state == "RUNNING":
        # The batch shell alone: the orchestrator tears the roles down and keeps the results;
        # waiting for it lets the scancel below end the job as CANCELLED rather than FAILED.
        asked_at = time.time()
        slurmctl.cancel(job_id, signal="TERM", batch_only=True)
        deadline = time.monotonic() + CANCEL_GRACE_S
        while time.monotonic() < deadline:
            info = slurmctl.job(job_id)
            if info is None or info.finished or _ended_since(run_dir, asked_at):
                break
            time.sleep(0.2)
    job = slurmctl.job(job_id)
    if job is not None and not job.finished:
        try:
            slurmctl.cancel(job_id)
        except slurmctl.SlurmCommandError as exc:
            if "already complet" not in exc.stderr:  # it ended meanwhile: nothing to do
                raise
    if run_dir is not None:
        record = JobRecord.read(run_dir)
        record.cancelled_at = time.time()
        record.write(run_dir)
    return view(target if run_dir is None else str(run_dir))
