"""`benchmark.type: custom` on the local Slurm: the recipe's client loop runs as the bench
role's own `srun --overlap` step inside the job, and its point files become the results."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from disagg.launch import slurmctl

from .cli_support import submit
from .conftest import REPO, job_steps, wait_job_end

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

RECIPE = REPO / "tests" / "workloads" / "data" / "sim-custom.yaml"


def read_json(path: Path) -> Any:
    return json.loads(path.read_text())


def job_first_node(job_id: str) -> str:
    info = slurmctl.job(job_id)
    assert info is not None and info.nodes, f"Slurm does not say where job {job_id} ran"
    return slurmctl.hostnames(info.nodes)[0]


def test_custom_sweep_runs_in_the_bench_role_on_slurm(
    slurm_cluster: list[str], tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    job_id = submit("base", run_dir, recipe=RECIPE)
    assert wait_job_end(job_id) == "COMPLETED", (run_dir / f"slurm-{job_id}.out").read_text()

    summary = read_json(run_dir / "summary.json")
    assert summary["status"] == "completed" and summary["executor"] == "slurm"
    assert sorted(p["key"] for p in summary["points"]) == ["conc1", "conc2", "conc4"]
    for point in summary["points"]:
        assert read_json(Path(point["result"]))["valid"] is True
    state = read_json(run_dir / "state.json")
    bench = next(role for role in state["roles"] if role["name"] == "bench")
    # on the job's first node, wherever Slurm placed the job on a busy cluster
    first = job_first_node(job_id)
    assert [(task["node_rank"], task["node"]) for task in bench["tasks"]] == [(0, first)]
    # The job id the script saw is the Slurm job's.
    topology = (run_dir / "bench-results" / "topology.txt").read_text().split()
    assert topology == ["1x2", "1x2", job_id]
    assert job_steps(job_id) == []


def test_custom_command_failing_on_slurm_fails_the_job(
    slurm_cluster: list[str], tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    job_id = submit("override_fails", run_dir, recipe=RECIPE)
    assert wait_job_end(job_id) == "FAILED"

    summary = read_json(run_dir / "summary.json")
    assert summary["status"] == "failed"
    assert summary["reason"] == "benchmark command exited with code 3"
    assert "cannot reach the dataset" in (run_dir / "logs" / "bench.log").read_text()
    assert job_steps(job_id) == []
