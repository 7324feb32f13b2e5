"""Parsing of Slurm's machine output and the status a run directory reports, without Slurm."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from disagg.errors import DisaggError
from disagg.launch import slurm, slurmctl
from disagg.launch.state import RunState, RunStatus

from .conftest import one_p_two_d_plan

NODE_LINE = (
    "NodeName=node3 Arch=x86_64 CoresPerSocket=16 CPUAlloc=0 CPUTot=16 Gres=gpu:h100:8(S:0-1) "
    "NodeAddr=10.1.2.3 NodeHostName=gpu-b17 Partitions=debug,long State=IDLE+DRAIN "
    "OS=Linux 6.1.0 #1 SMP Reason=bad dimm, replaced soon [root@2025-01-01T00:00:00]"
)


def test_scontrol_one_liner_keeps_values_with_spaces() -> None:
    fields = slurmctl.parse_one_liner(NODE_LINE)
    assert fields["NodeAddr"] == "10.1.2.3"
    assert fields["OS"] == "Linux 6.1.0 #1 SMP"
    assert fields["Reason"] == "bad dimm, replaced soon [root@2025-01-01T00:00:00]"


@pytest.mark.parametrize(
    ("gres", "gpus"),
    [("gpu:8", 8), ("gpu:h100:8(S:0-1)", 8), ("gpu:a:2,gpu:b:2", 4), ("(null)", 0), ("", 0)],
)
def test_gpu_count_from_gres(gres: str, gpus: int) -> None:
    assert slurmctl.gres_gpus(gres) == gpus


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0, "0:0"),
        (256, "1:0"),
        (9, "0:9"),
        ({"return_code": 3, "signal": {"id": 0}}, "3:0"),
        (
            {
                "status": ["SIGNALED"],
                "return_code": {"set": True, "infinite": False, "number": 0},
                "signal": {"id": {"set": True, "infinite": False, "number": 9}, "name": "KILL"},
            },
            "0:9",
        ),
        ({"return_code": {"set": False, "infinite": False, "number": 7}, "signal": {}}, "0:0"),
    ],
)
def test_exit_code_from_squeue_json(value: object, text: str) -> None:
    assert slurmctl._json_exit_code(value) == text


@pytest.mark.parametrize(
    ("job_state", "state"),
    [("RUNNING", "RUNNING"), (["RUNNING"], "RUNNING"), (["PENDING", "REQUEUED"], "PENDING")],
)
def test_job_state_from_squeue_json_of_every_slurm_version(
    monkeypatch: pytest.MonkeyPatch, job_state: object, state: str
) -> None:
    """Slurm 22.05 writes the state as text; later versions as the base state and its flags."""
    record = {"job_id": 42, "job_state": job_state, "state_reason": "None", "nodes": "n[1-2]"}
    answer = json.dumps({"jobs": [record]})
    monkeypatch.setattr(slurmctl, "run", lambda argv: answer)
    info = slurmctl.job("42")
    assert info is not None and info.source == "squeue"
    assert (info.state, info.reason, info.nodes) == (state, None, "n[1-2]")


def test_missing_command_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(DisaggError, match="sbatch not found") as info:
        slurmctl.run(["sbatch", "--parsable", "x"])
    assert "slurm-up" in str(info.value)


def test_status_of_a_dry_run_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(slurmctl, "job", lambda job_id: None)
    one_p_two_d_plan().write(tmp_path)
    view = slurm.view(str(tmp_path))
    assert view.run_status == "not submitted"
    assert view.to_json()["points_total"] == 0


def test_state_from_an_earlier_job_is_not_reported_as_current(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pending = slurmctl.JobInfo(job_id="2", state="PENDING", reason="Priority")
    monkeypatch.setattr(slurmctl, "job", lambda job_id: pending if job_id == "2" else None)
    plan = one_p_two_d_plan()
    plan.write(tmp_path)
    old = RunState(
        name=plan.name,
        selector=plan.selector,
        run_dir=str(tmp_path),
        simulated=True,
        executor="slurm",
        orchestrator_pid=1,
        status=RunStatus.FAILED,
        started_at=time.time() - 60,
    )
    old.write(tmp_path)
    record = slurm.JobRecord(job_ids=["1", "2"], submitted_at=[time.time() - 70, time.time()])
    record.write(tmp_path)
    view = slurm.view(str(tmp_path))
    assert view.job_id == "2"
    assert view.state is None  # the failed state.json belongs to job 1
    assert view.run_status == "pending"
    assert view.to_json()["reason"] == "Priority"


def test_target_that_is_neither_run_dir_nor_job_id(tmp_path: Path) -> None:
    with pytest.raises(DisaggError, match="neither a run directory nor a Slurm job id"):
        slurm.resolve("no-such-thing")
    with pytest.raises(DisaggError, match="not a run directory"):
        slurm.resolve(str(tmp_path))


def test_job_state_from_sacct_when_squeue_no_longer_knows_the_job(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def fake_run(argv: list[str], **_: object) -> str:
        if argv[0] == "squeue":
            return '{"jobs": []}'
        if argv[0] == "sacct":
            columns = argv[argv.index("-o") + 1].split(",")
            row = {"JobID": "7", "State": "CANCELLED by 0", "Reason": "None"}
            row |= {"NodeList": "node[1-3]", "ExitCode": "0:15", "Partition": "debug"}
            return "|".join(row.get(column, "") for column in columns) + "\n"
        raise AssertionError(f"unexpected command {argv}")

    monkeypatch.setattr(slurmctl, "run", fake_run)
    info = slurmctl.job("7")
    assert info is not None
    assert (info.source, info.state, info.reason) == ("sacct", "CANCELLED", None)
    assert (info.nodes, info.exit_code, info.partition) == ("node[1-3]", "0:15", "debug")


def test_a_job_ended_by_its_time_limit_is_named_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The orchestrator sees Slurm's SIGTERM at the limit as a cancel; status says TIMEOUT."""
    from disagg.launch.state import RunSummary

    ended = slurmctl.JobInfo(job_id="7", state="TIMEOUT", source="scontrol")
    monkeypatch.setattr(slurmctl, "job", lambda job_id: ended if job_id == "7" else None)
    plan = one_p_two_d_plan()
    plan.write(tmp_path)
    now = time.time()
    slurm.JobRecord(job_ids=["7"], submitted_at=[now - 100]).write(tmp_path)
    RunSummary(
        name=plan.name,
        selector=plan.selector,
        run_dir=str(tmp_path),
        simulated=True,
        executor="slurm",
        status=RunStatus.CANCELLED,
        exit_code=3,
        reason="received SIGTERM",
        started_at=now - 90,
        finished_at=now - 10,
    ).write(tmp_path)

    view = slurm.view(str(tmp_path))
    assert view.run_status == "timeout" and view.finished
    assert view.to_json()["job_state"] == "TIMEOUT"

    from typer.testing import CliRunner

    from disagg.cli import _register, app

    _register()
    shown = CliRunner().invoke(app, ["status", str(tmp_path)], env={"COLUMNS": "200"})
    assert shown.exit_code == 1
    assert "TIMEOUT (time limit reached)" in shown.output


@pytest.mark.parametrize(("job_state", "shown"), [("CANCELLED", "cancelled"), ("FAILED", "failed")])
def test_a_job_slurm_ended_before_its_summary_says_what_slurm_did(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, job_state: str, shown: str
) -> None:
    # `scancel JOB` SIGKILLs an orchestrator still tearing down after KillWait: on the
    # rig (one host) it reads as dead, yet Slurm knows why it died.
    import subprocess
    import sys

    from disagg.launch.procs import host_id

    ended = slurmctl.JobInfo(job_id="9", state=job_state, source="squeue")
    monkeypatch.setattr(slurmctl, "job", lambda job_id: ended if job_id == "9" else None)
    plan = one_p_two_d_plan()
    plan.write(tmp_path)
    code = "import os; print(os.getpid())"
    gone = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    now = time.time()
    slurm.JobRecord(job_ids=["9"], submitted_at=[now - 100]).write(tmp_path)
    state = RunState(
        name=plan.name,
        selector=plan.selector,
        run_dir=str(tmp_path),
        simulated=True,
        executor="slurm",
        orchestrator_pid=int(gone.stdout),
        orchestrator_host=host_id(),
        orchestrator_started=1,
        started_at=now - 90,
    )
    state.write(tmp_path)
    assert state.orchestrator_dead()

    view = slurm.view(str(tmp_path))
    assert view.run_status == shown and view.finished
