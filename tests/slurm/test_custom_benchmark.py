"""`benchmark.type: custom` on the local Slurm: the recipe's client loop runs as the bench
role's own `srun --overlap` step inside the job, and its point files become the results."""

from __future__ import annotations

import json
import os
import signal
from contextlib import suppress
from pathlib import Path
from typing import Any

import pytest
import yaml

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


BACKGROUND = """\
pids="$DISAGG_RESULTS_DIR/background.pids"
sleep 1011 & echo "$!" > "$pids"
nohup sleep 1012 > /dev/null 2>&1 & echo "$!" >> "$pids"
setsid sleep 1013 > /dev/null 2>&1 & echo "$!" >> "$pids"
"""


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_background_children_of_the_command_end_with_it_on_slurm(
    slurm_cluster: list[str], tmp_path: Path
) -> None:
    # The local rig's nodes share this host, so the test can look for the PIDs itself.
    variants = yaml.safe_load(RECIPE.read_text())
    base = variants["base"]
    base["benchmark"]["command"] = BACKGROUND + base["benchmark"]["command"]
    recipe = tmp_path / "leftovers.yaml"
    recipe.write_text(yaml.safe_dump({"base": base}, sort_keys=False))
    run_dir = tmp_path / "run"
    pids: list[int] = []
    try:
        job_id = submit("base", run_dir, recipe=recipe)
        assert wait_job_end(job_id) == "COMPLETED", (run_dir / f"slurm-{job_id}.out").read_text()
        pids = [int(w) for w in (run_dir / "bench-results" / "background.pids").read_text().split()]
        assert len(pids) == 3
        assert [pid for pid in pids if _alive(pid)] == []
        log = (run_dir / "logs" / "orchestrator.log").read_text()
        assert f"sleep (pid {pids[2]}) on " in log
        assert job_steps(job_id) == []
    finally:
        for pid in pids:
            if _alive(pid):
                with suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
