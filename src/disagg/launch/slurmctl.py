"""Typed calls of the Slurm client commands (scontrol, squeue, sacct, scancel, sinfo).

One place runs them, with a timeout and an error naming the command, so that the
executor, the submit pre-flight and `disagg status` ask Slurm alike; parsing uses the
machine formats (`--json`, `scontrol -o`, `-P`).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

from disagg.errors import DisaggError

DEFAULT_TIMEOUT_S = 30.0


class SlurmCommandError(DisaggError):
    """A Slurm command failed; `stderr` keeps its message for callers that fall back."""

    def __init__(self, message: str, *, stderr: str = "", hint: str | None = None) -> None:
        super().__init__(message, hint=hint, exit_code=1)
        self.stderr = stderr


def run(argv: Sequence[str], *, timeout_s: float = DEFAULT_TIMEOUT_S) -> str:
    """A Slurm client command's stdout (it inherits this environment, as sbatch passes it to
    the job); failures raise SlurmCommandError."""
    if shutil.which(argv[0]) is None:
        raise SlurmCommandError(
            f"{argv[0]} not found",
            hint="run it on a Slurm login node, or start the local test cluster: scripts/slurm-up",
        )
    try:
        done = subprocess.run(
            list(argv),
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise SlurmCommandError(
            f"{' '.join(argv[:3])} did not answer within {timeout_s:g} s",
            hint="is slurmctld up? try `scontrol ping`",
        ) from exc
    if done.returncode != 0:
        message = done.stderr.strip() or done.stdout.strip() or f"exit code {done.returncode}"
        raise SlurmCommandError(f"{argv[0]} failed: {message}", stderr=done.stderr)
    return done.stdout


def parse_one_liner(line: str) -> dict[str, str]:
    """`Key=Value Key2=Value2` (scontrol -o) into a dict; values never contain `=`-led words."""
    fields: dict[str, str] = {}
    key: str | None = None
    for word in line.split(" "):
        name, sep, value = word.partition("=")
        if sep and name and name.replace("_", "").replace(":", "").isalnum():
            key = name
            fields[key] = value
        elif key is not None and word:
            fields[key] += " " + word  # a value with spaces (Reason=..., Comment=...)
    return fields


def hostnames(nodelist: str) -> list[str]:
    """Expand a Slurm host list (`node[1-3]`) in Slurm's own order."""
    return run(["scontrol", "show", "hostnames", nodelist]).split()


@dataclass(frozen=True)
class NodeInfo:
    name: str
    address: str
    hostname: str
    state: str  # e.g. IDLE, ALLOCATED, IDLE+DRAIN, DOWN*
    reason: str | None
    partitions: tuple[str, ...]
    gpus: int


def nodes(names: Sequence[str] | None = None) -> list[NodeInfo]:
    """Node records from `scontrol -o show node` (all nodes, or the named ones)."""
    argv = ["scontrol", "-o", "show", "node"]
    if names:
        argv.append(",".join(names))
    found: list[NodeInfo] = []
    for line in run(argv).splitlines():
        rec = parse_one_liner(line.strip())
        if "NodeName" not in rec:
            continue
        reason = rec.get("Reason")
        found.append(
            NodeInfo(
                name=rec["NodeName"],
                address=rec.get("NodeAddr", rec["NodeName"]),
                hostname=rec.get("NodeHostName", rec["NodeName"]),
                state=rec.get("State", "UNKNOWN"),
                reason=reason.split(" [", 1)[0] if reason and reason != "(null)" else None,
                partitions=tuple(p for p in rec.get("Partitions", "").split(",") if p),
                gpus=gres_gpus(rec.get("Gres", "")),
            )
        )
    return found


UNAVAILABLE_STATES = ("DRAIN", "DOWN", "FAIL", "MAINT", "NOT_RESPONDING", "REBOOT")


def unavailable_nodes(partition: str | None) -> list[NodeInfo]:
    """Nodes of a partition (all nodes when None) that cannot take a job now."""
    return [
        node
        for node in nodes()
        if (partition is None or partition in node.partitions)
        and (node.state.endswith("*") or any(s in node.state for s in UNAVAILABLE_STATES))
    ]


def gres_gpus(gres: str) -> int:
    """GPU count in a node's `Gres=` value (`gpu:8`, `gpu:h100:8(S:0-1)`, `(null)` -> 0)."""
    total = 0
    for item in gres.split(","):
        parts = item.split("(", 1)[0].split(":")
        if parts[0] == "gpu" and len(parts) >= 2:
            total += _int(parts[-1])
    return total


@dataclass(frozen=True)
class PartitionInfo:
    name: str
    state: str
    nodes: tuple[str, ...]
    max_nodes: int | None  # None = unlimited
    default: bool


def partitions() -> dict[str, PartitionInfo]:
    """Partitions from `scontrol -o show partition`, by name."""
    found: dict[str, PartitionInfo] = {}
    for line in run(["scontrol", "-o", "show", "partition"]).splitlines():
        rec = parse_one_liner(line.strip())
        if "PartitionName" not in rec:
            continue
        nodelist = rec.get("Nodes", "")
        max_nodes = rec.get("MaxNodes", "UNLIMITED")
        found[rec["PartitionName"]] = PartitionInfo(
            name=rec["PartitionName"],
            state=rec.get("State", "UP"),
            nodes=tuple(hostnames(nodelist)) if nodelist and nodelist != "(null)" else (),
            max_nodes=None if max_nodes == "UNLIMITED" else _int(max_nodes),
            default=rec.get("Default", "NO") == "YES",
        )
    return found


@dataclass(frozen=True)
class StepInfo:
    step_id: str  # `JOB.STEP`
    name: str
    nodes: str


def steps(job_id: str) -> list[StepInfo]:
    """The job's running steps (`squeue --steps`); the batch and extern steps included."""
    out = run(["squeue", "-h", "-s", "-j", job_id, "-o", "%i|%j|%N"])
    rows = [line.strip().split("|") for line in out.splitlines()]
    return [StepInfo(*row) for row in rows if len(row) == 3]


def cancel(target: str, *, signal: str | None = None, batch_only: bool = False) -> None:
    """`scancel` a job or a step (`JOB.STEP`); with `signal`, only signal it."""
    argv = ["scancel"]
    if signal:
        argv.append(f"--signal={signal}")
    if batch_only:
        argv.append("--batch")
    argv.append(target)
    run(argv)


@dataclass
class JobInfo:
    """A job's state as the first available source reports it."""

    job_id: str
    state: str  # PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, TIMEOUT, ...
    reason: str | None = None
    nodes: str | None = None
    exit_code: str | None = None  # `code:signal`
    source: str = "squeue"
    partition: str | None = None

    @property
    def finished(self) -> bool:
        return self.state not in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED")


def job(job_id: str) -> JobInfo | None:
    """Ask `squeue --json`, then `sacct`, then `scontrol show job`; None if nobody knows it.
    squeue forgets ended jobs, sacct needs accounting, scontrol forgets after MinJobAge."""
    for source in (_job_from_squeue, _job_from_sacct, _job_from_scontrol):
        try:
            info = source(job_id)
        except SlurmCommandError:
            continue
        if info is not None:
            return info
    return None


def end_time(job_id: str) -> float | None:
    """When Slurm ends a running job at its time limit (epoch seconds); None if unknown."""
    from datetime import datetime

    text = run(["squeue", "-h", "-j", job_id, "-o", "%e"]).strip()
    try:
        return datetime.fromisoformat(text).timestamp()  # the cluster's local time
    except ValueError:  # `N/A`, `Unknown`, or a job squeue no longer lists
        return None


def _job_from_squeue(job_id: str) -> JobInfo | None:
    data = json.loads(run(["squeue", "--json", "--states=all", "--jobs", job_id]))
    for rec in data.get("jobs", []):
        if str(rec.get("job_id")) != job_id:
            continue
        reason = rec.get("state_reason")
        return JobInfo(
            job_id=job_id,
            state=_json_state(rec.get("job_state")),
            reason=None if reason in (None, "None") else str(reason),
            nodes=str(rec.get("nodes") or "") or None,
            exit_code=_json_exit_code(rec.get("exit_code")),
            source="squeue",
            partition=str(rec.get("partition") or "") or None,
        )
    return None


def _json_state(value: object) -> str:
    """squeue --json gives the state as text in 22.05 and as a list in later versions (data
    parser 0.0.40 on): the base state, then its flags (`["PENDING", "REQUEUED"]`)."""
    if isinstance(value, list):
        value = value[0] if value else None
    return "UNKNOWN" if value is None else str(value)


def _json_number(value: object) -> int:
    """An integer, or the `{"set", "infinite", "number"}` object later versions give."""
    if isinstance(value, dict):
        value = value.get("number", 0) if value.get("set", True) else 0
    return value if isinstance(value, int) else 0


def _json_exit_code(value: object) -> str | None:
    """squeue --json gives a wait status (int) in 22.05 and an object in later versions."""
    if isinstance(value, int):
        return f"{(value >> 8) & 0xFF}:{value & 0x7F}"
    if isinstance(value, dict):
        signal = value.get("signal", {})
        number = signal.get("id", 0) if isinstance(signal, dict) else 0
        return f"{_json_number(value.get('return_code', 0))}:{_json_number(number)}"
    return None


def _job_from_sacct(job_id: str) -> JobInfo | None:
    fields = "JobID,State,Reason,NodeList,ExitCode,Partition"
    out = run(["sacct", "-X", "-n", "-P", "-j", job_id, "-o", fields])
    for line in out.splitlines():
        parts = line.strip().split("|")
        if len(parts) == 6 and parts[0] == job_id:
            state = parts[1].split(" ", 1)[0]  # `CANCELLED by 0`
            return JobInfo(
                job_id=job_id,
                state=state,
                reason=None if parts[2] in ("", "None") else parts[2],
                nodes=parts[3] or None,
                exit_code=parts[4] or None,
                source="sacct",
                partition=parts[5] or None,
            )
    return None


def _job_from_scontrol(job_id: str) -> JobInfo | None:
    try:
        out = run(["scontrol", "-o", "show", "job", job_id])
    except SlurmCommandError as exc:
        if "Invalid job id" in exc.stderr:
            return None
        raise
    rec = parse_one_liner(out.strip().splitlines()[0]) if out.strip() else {}
    if "JobState" not in rec:
        return None
    reason = rec.get("Reason")
    nodelist = rec.get("NodeList")
    return JobInfo(
        job_id=job_id,
        state=rec["JobState"],
        reason=None if reason in (None, "None") else reason,
        nodes=None if nodelist in (None, "(null)") else nodelist,
        exit_code=rec.get("ExitCode"),
        source="scontrol",
        partition=rec.get("Partition"),
    )


def _int(text: str | None) -> int:
    try:
        return int(text or 0)
    except ValueError:
        return 0
