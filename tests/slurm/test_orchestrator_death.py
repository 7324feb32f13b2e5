"""The in-job orchestrator is SIGKILLed mid-point: nothing of the run outlives it.

It cannot tear down, and the roles on the other nodes are not its children but
srun steps; Slurm ends the job once its batch step (the orchestrator itself, by
`exec`) is gone, and with it every step on every node. `status` then says the run
did not complete, and a resubmission resumes it.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from .cli_support import (
    assert_nothing_left,
    disagg,
    read_json,
    role_processes,
    status,
    submit,
    wait_for,
)
from .conftest import job_steps, wait_job_end

pytestmark = [pytest.mark.slurm, pytest.mark.slow]


def test_a_killed_orchestrator_takes_every_node_s_roles_with_it(
    slurm_cluster: list[str], tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    job_id = submit("override_slow", run_dir)

    def measuring() -> dict[str, object] | None:
        state = read_json(run_dir / "state.json")
        return state if state.get("current_point") is not None else None

    state = wait_for(measuring, 120, "the first point to start")
    workers = {"decode-0", "decode-1", "prefill-0"}  # one per node
    wait_for(lambda: workers <= set(role_processes(run_dir)), 10, "the workers' processes")
    assert len(job_steps(job_id)) >= 4, "a step per role task, on three nodes"
    os.kill(int(state["orchestrator_pid"]), signal.SIGKILL)

    assert wait_job_end(job_id, timeout_s=120) == "FAILED"
    assert_nothing_left(run_dir, job_id)
    code, shown = status(str(run_dir))
    assert code == 1
    assert shown["status"] == "failed"  # Slurm's verdict: the job's batch step was killed
    assert not (run_dir / "summary.json").exists()

    resumed = disagg("submit", "--resume", str(run_dir), "--json")
    assert resumed.returncode == 0, resumed.stderr
    second = str(json.loads(resumed.stdout)[0]["job_id"])
    assert wait_job_end(second, timeout_s=300) == "COMPLETED", (
        run_dir / f"slurm-{second}.out"
    ).read_text()
    summary = read_json(run_dir / "summary.json")
    assert summary["status"] == "completed"
    assert_nothing_left(run_dir, second)
