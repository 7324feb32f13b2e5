"""How Slurm ends a run where a local one cannot: its time limit, and a node it loses.

Each test submits a real 2-node job to the local rig and checks what the user relies
on afterwards: the job state Slurm records, what the run directory and `disagg status`
say, which results stay valid, that a resubmission resumes, and that nothing is left
running. The time limit is shortened with `scontrol update` once a point is measured,
so that the cut falls mid-sweep whatever the machine's load. A lost node is a node set
DOWN by `scontrol` (the rig runs as SlurmUser); it is always put back in service, and
the test checks the rig is whole again.
"""

from __future__ import annotations

import json
import math
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from disagg.plan.limits import slurm_seconds

from .cli_support import (
    DATA,
    assert_nothing_left,
    disagg,
    read_json,
    status,
    submit,
    wait_for,
    wait_point,
    wait_started,
)
from .conftest import wait_job_end

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

TWO_NODES = DATA / "sim-1p1d-2node.yaml"
IN_SERVICE = ("idle", "alloc", "mix", "comp")


def valid_results(run_dir: Path) -> set[Path]:
    """Every result file of the run that says it is a valid measurement."""
    return {
        path.resolve()
        for path in (run_dir / "results").glob("*.json")
        if read_json(path).get("valid") is True
    }


def measured_results(points: list[dict[str, Any]]) -> set[Path]:
    return {Path(p["result"]).resolve() for p in points if p["status"] == "measured"}


def node_states() -> dict[str, str]:
    out = subprocess.run(
        ["sinfo", "-h", "-N", "-o", "%N %t"], capture_output=True, text=True, check=False
    ).stdout
    return dict(line.split() for line in out.splitlines() if len(line.split()) == 2)


def put_back(node: str) -> None:
    """RESUME the node (Slurm may already have returned it) and wait until it serves."""
    subprocess.run(
        ["scontrol", "update", f"NodeName={node}", "State=RESUME"],
        capture_output=True,
        check=False,
    )
    wait_for(lambda: node_states().get(node, "").rstrip("*") in IN_SERVICE, 60, f"{node} back")


def run_seconds(job_id: str) -> float:
    out = subprocess.run(
        ["scontrol", "-o", "show", "job", job_id], capture_output=True, text=True, check=True
    ).stdout
    used = next(w.split("=", 1)[1] for w in out.split() if w.startswith("RunTime="))
    return slurm_seconds(used) or 0.0


def test_time_limit_ends_the_job_as_timeout_and_a_resubmission_resumes(
    slurm_cluster: list[str], tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    job_id = submit("base", run_dir, recipe=TWO_NODES)  # 10 minutes: --signal=B:USR1@60
    wait_started(job_id)

    wait_point(run_dir, 0, "measured", 120, "the first point to be measured")
    # The job's limit shrinks as a user's own `scontrol update` may: whole minutes, at
    # least 45 s ahead, so that Slurm's warning (next limit check, ~30 s) comes first.
    minutes = math.ceil((run_seconds(job_id) + 45) / 60)
    subprocess.run(["scontrol", "update", f"JobId={job_id}", f"TimeLimit={minutes}"], check=True)
    out = run_dir / f"slurm-{job_id}.out"
    assert wait_job_end(job_id, timeout_s=300) == "TIMEOUT", out.read_text()

    summary = read_json(run_dir / "summary.json")
    assert (summary["status"], summary["exit_code"]) == ("timeout", 1), summary
    # Slurm's warning (`--signal=B:USR1@60`) reached the orchestrator, which stopped itself.
    assert summary["reason"].startswith("Slurm's time limit is near (SIGUSR1"), summary["reason"]
    state = read_json(run_dir / "state.json")
    assert (state["status"], state["phase"]) == ("timeout", "done")
    statuses = [p["status"] for p in summary["points"]]
    kept = statuses.count("measured")
    assert kept >= 1 and statuses[:kept] == ["measured"] * kept, statuses
    assert statuses[kept:] == ["aborted"] * (len(statuses) - kept), statuses
    assert len(statuses) > kept, "the sweep outlasts the limit"
    # The points measured before stay valid; the one cut by the limit is no result.
    assert valid_results(run_dir) == measured_results(summary["points"])
    assert_nothing_left(run_dir, job_id)

    code, shown = status(str(run_dir))
    assert code == 1
    assert (shown["job_state"], shown["status"]) == ("TIMEOUT", "timeout")
    assert (shown["points_done"], shown["points_total"]) == (kept, len(statuses))
    human = " ".join(disagg("status", str(run_dir), env={"COLUMNS": "250"}).stdout.split())
    assert "TIMEOUT (time limit reached)" in human

    # More time, same directory: the points kept are not measured again.
    resumed = disagg("submit", "--resume", str(run_dir), "--time-limit", "15", "--json")
    assert resumed.returncode == 0, resumed.stderr
    second = str(json.loads(resumed.stdout)[0]["job_id"])
    wait_started(second)
    assert "#SBATCH --time=15" in (run_dir / "job.sbatch").read_text().splitlines()
    assert wait_job_end(second, timeout_s=240) == "COMPLETED", (
        run_dir / f"slurm-{second}.out"
    ).read_text()
    after = read_json(run_dir / "summary.json")
    assert after["status"] == "completed"
    again = [p["status"] for p in after["points"]]
    assert again == ["skipped"] * kept + ["measured"] * (len(again) - kept), again
    assert valid_results(run_dir) == measured_results(after["points"]) | measured_results(
        summary["points"]
    )
    assert_nothing_left(run_dir, second)


def test_a_lost_node_fails_the_run_naming_it_and_its_roles(
    slurm_cluster: list[str], tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    job_id = submit("base", run_dir, recipe=TWO_NODES)
    wait_started(job_id)

    wait_point(run_dir, 0, "measured", 120, "the first point to be measured")
    roles = {r["name"]: r for r in read_json(run_dir / "state.json")["roles"]}
    node = roles["decode-0"]["tasks"][0]["node"]
    assert node != roles["router"]["tasks"][0]["node"]  # the orchestrator's node stays
    lost_at = time.time()
    try:
        subprocess.run(
            ["scontrol", "update", f"NodeName={node}", "State=DOWN", "Reason=disagg test lost"],
            check=True,
        )
        ended = wait_job_end(job_id, timeout_s=120)
    finally:
        put_back(node)
    assert ended == "FAILED", (run_dir / f"slurm-{job_id}.out").read_text()

    code, shown = status(str(run_dir))
    assert (code, shown["status"]) == (1, "failed")
    failure = shown["failure"]
    assert failure["nodes_lost"] == [node]
    assert failure["role"] == "decode-0"
    assert failure["reason"].startswith(f"lost node {node} ("), failure["reason"]
    assert "role(s) decode-0 ended with it" in failure["reason"]
    human = " ".join(disagg("status", str(run_dir), env={"COLUMNS": "250"}).stdout.split())
    assert f"lost node {node}" in human
    points = shown["points"]
    assert "aborted" in [p["status"] for p in points]
    for point in points:  # nothing measured after the loss counts
        if point["status"] == "measured":
            assert point["finished_at"] < lost_at, point
    assert valid_results(run_dir) == measured_results(points)
    assert_nothing_left(run_dir, job_id)
    states = node_states()
    assert sorted(states) == slurm_cluster
    assert all(state.rstrip("*") in IN_SERVICE for state in states.values()), states


def test_a_plain_scancel_during_a_point_keeps_only_what_was_measured(
    slurm_cluster: list[str], tmp_path: Path
) -> None:
    # `scancel JOB` (not `disagg cancel`): Slurm signals the orchestrator and every role
    # at once, and kills what is left after KillWait.
    run_dir = tmp_path / "run"
    job_id = submit("base", run_dir, recipe=TWO_NODES)
    wait_started(job_id)

    wait_point(run_dir, 1, "running", 120, "the second point to start")
    subprocess.run(["scancel", job_id], check=True)
    assert wait_job_end(job_id, timeout_s=60) == "CANCELLED"

    code, shown = status(str(run_dir))
    assert (code, shown["status"]) == (1, "cancelled"), shown
    points = shown["points"]
    assert points[0]["status"] == "measured"
    assert points[1]["status"] != "measured", points[1]  # the point cut is no result
    assert valid_results(run_dir) == measured_results(points)
    assert_nothing_left(run_dir, job_id)
