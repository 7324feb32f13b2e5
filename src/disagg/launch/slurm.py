"""Runs on Slurm: write a run directory's job files, submit it, watch it, cancel it.

`job.sbatch` holds the directives a plan asks for, then the in-job orchestrator; every
value is shell-quoted and no environment value is written: secrets reach the job
through the submitter's environment. `--signal=B:USR1@N` warns the orchestrator before
the time limit (it keeps its results, the run times out), and `--no-kill` keeps a
multi-node job alive when a node fails, so that the run names the roles it lost. A
heterogeneous job is one block of directives per component, as srtctl writes it.
`disagg status` joins what Slurm says about the job (state, pending reason) with what
the orchestrator wrote (`state.json`).
"""

from __future__ import annotations

import re
import shlex
import sys
import time
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import Field

from disagg.atomic import write_text
from disagg.errors import DisaggError
from disagg.launch import slurmctl
from disagg.launch.state import RunState, RunStatus, RunSummary, StoredRecord, points_done
from disagg.model_defaults import empty_list
from disagg.plan.limits import slurm_margin_s
from disagg.plan.model import Plan, SlurmPlan
from disagg.probe import probe

SLURM_RECORD = "slurm.json"
ORCHESTRATOR_DEAD = "dead"  # `status` of a run whose orchestrator died without a summary
TIMEOUT = RunStatus.TIMEOUT.value  # the job reached its time limit
CANCEL_GRACE_S = 20.0
SBATCH_FILE = "job.sbatch"
OUTPUT_PATTERN = "slurm-%j.out"
# The signal Slurm sends the orchestrator before the time limit (see disagg.job).
TIME_LIMIT_SIGNAL = "USR1"
WARNING_SIGNALS = ("USR1", "USR2")  # what a recipe's own `signal` directive may name
_SIGNAL_SPEC = re.compile(r"^(?:(?P<flags>[A-Za-z]+):)?(?:SIG)?(?P<name>[A-Za-z0-9]+)(?:@\d+)?$")
# Directives the run itself needs; a recipe or profile may not replace them.
RESERVED = frozenset({"job-name", "output", "error", "chdir", "nodes", "parsable", "wrap"})
_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9-]*$")


def directives(
    slurm: SlurmPlan, run_dir: Path, component: int | None = None
) -> list[tuple[str, str | None]]:
    """(key, value) pairs in file order; None is a bare flag (`--exclusive`). `component`:
    one component of a heterogeneous job, the job-wide ones only in the first, as srtctl."""
    first = not component
    nodes = slurm.nodes if component is None else slurm.het_nodes[component]
    pairs: dict[str, str | None] = {}
    if first:
        pairs["job-name"] = slurm.job_name
        pairs["output"] = str(run_dir / OUTPUT_PATTERN)
        pairs["chdir"] = str(run_dir)
    pairs["nodes"] = str(nodes)
    pairs["ntasks-per-node"] = "1"
    if slurm.partition:
        pairs["partition"] = slurm.partition
    if slurm.account:
        pairs["account"] = slurm.account
    if slurm.time_limit:
        pairs["time"] = slurm.time_limit
    if first:  # the batch shell, and so the orchestrator, runs in the first component
        # Slurm may send it up to a minute early; the run's own limit stops it near then too.
        margin = max(1, int(slurm_margin_s(slurm.time_limit)))
        pairs["signal"] = f"B:{TIME_LIMIT_SIGNAL}@{margin}"
    if slurm.nodes > 1:
        pairs["no-kill"] = None
    if slurm.gpus_per_node > 0:
        if slurm.gpu_directive == "gres":
            pairs["gres"] = f"gpu:{slurm.gpus_per_node}"
        elif slurm.gpu_directive == "gpus-per-node":
            pairs["gpus-per-node"] = str(slurm.gpus_per_node)
    if slurm.exclusive:
        pairs["exclusive"] = None
    if slurm.segment:
        pairs["segment"] = str(slurm.segment if component is None else nodes)
    for key, value in slurm.directives.items():
        name = key.removeprefix("--")
        if not _KEY.match(name):
            raise DisaggError(
                f"sbatch directive {key!r} is not an option name",
                hint="write directives as `option-name: value`, e.g. `constraint: h100`",
            )
        if name in RESERVED:
            raise DisaggError(
                f"sbatch directive {name!r} is set by disagg and cannot be overridden",
                hint=f"remove it from sbatch_directives (reserved: {', '.join(sorted(RESERVED))})",
            )
        pairs[name] = value if value != "" else None  # replaces a default of the same name
    check_signal_directive(slurm)
    for key, given in pairs.items():
        if given is not None and ("\n" in given or "\r" in given):
            raise DisaggError(f"sbatch directive {key!r} has a line break in its value")
    return list(pairs.items())


def warning_signal(slurm: SlurmPlan) -> str | None:
    """The signal that warns the orchestrator of the time limit: USR1, or what the recipe's
    own `signal` directive names; None when that directive cannot serve (see
    `check_signal_directive`)."""
    given = _signal_directive(slurm)
    if given is None:
        return TIME_LIMIT_SIGNAL
    match = _SIGNAL_SPEC.match(given.strip())
    if match is None or "B" not in (match["flags"] or "").upper():
        return None
    name = match["name"].upper()
    return name if name in WARNING_SIGNALS else None


def check_signal_directive(slurm: SlurmPlan) -> None:
    """Refuse a `signal` directive that would change what a time limit does to the run."""
    given = _signal_directive(slurm)
    if given is not None and warning_signal(slurm) is None:
        raise DisaggError(
            f"sbatch directive signal={given!r}: disagg needs Slurm's time-limit warning "
            "as B:USR1@N or B:USR2@N",
            hint="B: sends it to the orchestrator alone (a role would die of it), and "
            "SIGTERM would read as a cancel; or drop the directive (B:USR1@60 by default)",
        )


def _signal_directive(slurm: SlurmPlan) -> str | None:
    return next((v for k, v in slurm.directives.items() if k.removeprefix("--") == "signal"), None)


def render(plan: Plan, run_dir: Path, *, python: str | None = None) -> str:
    """The whole batch script as text (golden-tested)."""
    run_dir = run_dir.resolve()
    python = python or sys.executable
    lines = [
        "#!/bin/bash",
        f"# disagg run of {' '.join(plan.selector.split())}",
        "# Resubmit with `disagg submit --resume RUN_DIR`; results already measured are kept.",
    ]
    q = shlex.quote
    components: list[int | None] = list(range(len(plan.slurm.het_nodes))) or [None]
    for component in components:
        if component:
            lines.append("#SBATCH hetjob")
        for key, value in directives(plan.slurm, run_dir, component):
            lines.append(f"#SBATCH --{key}" if value is None else f"#SBATCH --{key}={q(value)}")
    lines += ["", "set -euo pipefail", f"cd {q(str(run_dir))}"]
    lines.append(f"exec {q(python)} -m disagg.job {q(str(run_dir))} --executor slurm")
    return "\n".join(lines) + "\n"


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
