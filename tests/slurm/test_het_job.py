"""A heterogeneous job (`resources.het_jobs`) submitted to the local Slurm, as srtctl
submits one: prefill in component 0, decode in component 1, every step on its node's
component. Needs the rig's backfill scheduler (scripts/slurm/slurm.conf.in): Slurm's
builtin scheduler refuses heterogeneous jobs at submission."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from .cli_support import (
    DATA,
    assert_nothing_left,
    read_json,
    role_processes,
    status,
    submit,
    wait_for,
    wait_point,
)
from .conftest import wait_job_end

pytestmark = [pytest.mark.slurm, pytest.mark.slow]
RECIPE = DATA / "sim-het-1p2d.yaml"


@pytest.fixture
def het_cluster(slurm_cluster: list[str]) -> list[str]:
    """The rig, once it is known to take heterogeneous jobs (a rig started before its
    config moved to sched/backfill refuses them at submission)."""
    shown = subprocess.run(
        ["scontrol", "show", "config"], capture_output=True, text=True, check=False
    ).stdout
    scheduler = next(
        (
            line.split("=", 1)[1].strip()
            for line in shown.splitlines()
            if line.startswith("SchedulerType")
        ),
        "unknown",
    )
    if scheduler != "sched/backfill":
        reason = (
            f"the local Slurm schedules with {scheduler}, which refuses heterogeneous jobs; "
            "restart the rig (scripts/slurm-down --force; scripts/slurm-up)"
        )
        if os.environ.get("DISAGG_REQUIRE_SLURM") == "1":
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    return slurm_cluster


def components(job_id: str) -> dict[int, list[str]]:
    """{het offset: node names} of the job, as Slurm holds it."""
    out = subprocess.run(
        ["scontrol", "-o", "show", "job", job_id], capture_output=True, text=True, check=True
    ).stdout
    found: dict[int, list[str]] = {}
    for line in out.splitlines():
        fields = dict(word.split("=", 1) for word in line.split() if "=" in word)
        names = subprocess.run(
            ["scontrol", "show", "hostnames", fields["NodeList"]],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        found[int(fields.get("HetJobOffset", "0"))] = names
    return found


def test_het_job_runs_prefill_and_decode_in_their_own_components(
    het_cluster: list[str], tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    job_id = submit("base", run_dir, recipe=RECIPE)
    script = (run_dir / "job.sbatch").read_text()
    assert script.count("#SBATCH hetjob") == 1
    assert wait_job_end(job_id, timeout_s=300) == "COMPLETED", (
        run_dir / f"slurm-{job_id}.out"
    ).read_text()[-3000:]
    held = components(job_id)
    assert sorted(held) == [0, 1] and len(held[0]) == 1 and len(held[1]) == 2

    summary = read_json(run_dir / "summary.json")
    assert summary["status"] == "completed"
    assert [p["status"] for p in summary["points"]] == ["measured"] * 2
    state = read_json(run_dir / "state.json")
    nodes = {role["name"]: [t["node"] for t in role["tasks"]] for role in state["roles"]}
    assert nodes["prefill-0"] == held[0]
    assert sorted(nodes["decode-0"] + nodes["decode-1"]) == sorted(held[1])
    # srtctl's topology: nginx on the head (component 0), a router on each other node
    assert nodes["nginx"] == held[0]
    assert sorted(nodes["router-0"] + nodes["router-1"]) == sorted(held[1])
    assert_nothing_left(run_dir, job_id)


def test_a_killed_decode_worker_in_the_second_component_fails_the_job_naming_it(
    het_cluster: list[str], tmp_path: Path
) -> None:
    """The steps of component 1 are Slurm's under its own job id: they are watched and
    ended all the same."""
    run_dir = tmp_path / "run"
    job_id = submit("override_slow", run_dir, recipe=RECIPE)
    wait_point(run_dir, 0, "measured", 120, "the first point to be measured")
    victims = wait_for(lambda: role_processes(run_dir).get("decode-1"), 10, "decode-1's process")
    for pid in victims:
        os.kill(pid, signal.SIGKILL)
    assert wait_job_end(job_id, timeout_s=90) == "FAILED"
    code, shown = status(str(run_dir))
    assert code == 1 and shown["status"] == "failed"
    assert shown["failure"]["role"] == "decode-1"
    assert_nothing_left(run_dir, job_id)
