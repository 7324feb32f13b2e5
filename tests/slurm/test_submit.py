"""`disagg submit`, `status`, `cancel` on the local 3-node Slurm with the simulated engine.

Each test submits a real job with the CLI, as a user would, and checks what the
user relies on: the job state Slurm reports, the run directory's results, the
status command's output, and that nothing is left running afterwards.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from .cli_support import (
    DATA,
    PROFILE,
    RECIPE,
    assert_nothing_left,
    disagg,
    read_json,
    role_processes,
    status,
    submit,
    wait_for,
    wait_point,
)
from .conftest import job_state, wait_job_end

pytestmark = [pytest.mark.slurm, pytest.mark.slow]


def test_1p2d_runs_on_three_nodes_to_completed(slurm_cluster: list[str], tmp_path: Path) -> None:
    token = f"hf_{uuid.uuid4().hex}"
    run_dir = tmp_path / "run"
    job_id = submit("base", run_dir, env={"HF_TOKEN": token})
    assert wait_job_end(job_id) == "COMPLETED", (run_dir / f"slurm-{job_id}.out").read_text()

    summary = read_json(run_dir / "summary.json")
    assert summary["status"] == "completed"
    assert summary["executor"] == "slurm"
    assert [p["status"] for p in summary["points"]] == ["measured"] * 3
    for point in summary["points"]:
        assert read_json(Path(point["result"]))["valid"] is True

    state = read_json(run_dir / "state.json")
    nodes = {role["name"]: [t["node"] for t in role["tasks"]] for role in state["roles"]}
    assert nodes["prefill-0"] == [slurm_cluster[0]]
    assert sorted(nodes["decode-0"] + nodes["decode-1"]) == slurm_cluster[1:]
    # srtctl's topology: nginx on the head node, one frontend on each other node
    assert nodes["nginx"] == [slurm_cluster[0]]
    assert nodes["router-0"] + nodes["router-1"] == slurm_cluster[1:]

    code, shown = status(str(run_dir))
    assert code == 0
    assert shown["job_state"] == "COMPLETED"
    assert shown["status"] == "completed"
    assert (shown["points_done"], shown["points_total"]) == (3, 3)
    watched = disagg("status", job_id, "--watch", "--json")  # an ended job: returns at once
    assert watched.returncode == 0
    assert json.loads(watched.stdout)["run_dir"] == str(run_dir.resolve())
    assert_nothing_left(run_dir, job_id)

    into = tmp_path / "collected"
    collected = disagg("collect", str(run_dir), "--out", str(into), "--allow-simulated", "--json")
    assert collected.returncode == 0, collected.stderr
    names = sorted(path.name for path in into.iterdir() if not path.name.startswith("agg_"))
    assert names == sorted(Path(p["result"]).name for p in summary["points"])
    assert all(name.endswith("_gpus_24_ctx_8_gen_16.json") for name in names)
    rows = sorted(path.name for path in into.glob("agg_*.json"))
    assert rows == [f"agg_{name}" for name in names]

    # The token reached the job through the environment, never a file of the run.
    for path in run_dir.rglob("*"):
        if path.is_file():
            assert token.encode() not in path.read_bytes(), f"{path} holds the secret"


def test_killed_decode_worker_fails_fast_then_resume_measures_the_rest(
    slurm_cluster: list[str], tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    job_id = submit("override_slow", run_dir)

    def first_point_done() -> bool:
        points = read_json(run_dir / "state.json").get("points", [])
        if points and points[0]["status"] in ("invalid", "aborted"):
            raise AssertionError(f"the first point ended {points[0]['status']}: {points[0]}")
        return bool(points) and points[0]["status"] == "measured"

    wait_for(first_point_done, 90, "the first point to be measured")
    victims = wait_for(lambda: role_processes(run_dir).get("decode-1"), 10, "decode-1's process")
    for pid in victims:
        os.kill(pid, signal.SIGKILL)
    assert wait_job_end(job_id, timeout_s=60) == "FAILED"

    code, shown = status(str(run_dir))
    assert code == 1
    assert shown["status"] == "failed"
    assert shown["failure"]["role"] == "decode-1"
    assert shown["failure"]["log_tail"], "status shows the end of the failed role's log"
    human = disagg("status", str(run_dir))
    assert "decode-1" in human.stdout
    statuses = [p["status"] for p in shown["points"]]
    assert statuses[0] == "measured", statuses
    kept = [Path(p["result"]) for p in shown["points"] if p["status"] == "measured"]
    assert all(path.is_file() for path in kept)
    # Fail fast is an order, not a speed: the job stopped at the kill instead of sweeping
    # the remaining points on one decode worker (benchmarks/failure_latency.py times it).
    assert len(kept) < len(statuses), statuses
    assert_nothing_left(run_dir, job_id)

    resumed = disagg("submit", "--resume", str(run_dir), "--json")
    assert resumed.returncode == 0, resumed.stderr
    second = str(json.loads(resumed.stdout)[0]["job_id"])
    assert second != job_id
    assert wait_job_end(second) == "COMPLETED", (run_dir / f"slurm-{second}.out").read_text()
    summary = read_json(run_dir / "summary.json")
    assert summary["status"] == "completed"
    after = [p["status"] for p in summary["points"]]
    assert after[: len(kept)] == ["skipped"] * len(kept)
    assert after[len(kept) :] == ["measured"] * (len(after) - len(kept))
    assert_nothing_left(run_dir, second)


def test_hung_decode_worker_fails_the_job_naming_it(
    slurm_cluster: list[str], tmp_path: Path
) -> None:
    # SIGSTOP: the srun step and its process live on, holding the port, answering nothing
    run_dir = tmp_path / "run"
    job_id = submit("override_hung", run_dir)

    wait_point(run_dir, 0, "measured", 90, "the first point to be measured")
    victims = wait_for(lambda: role_processes(run_dir).get("decode-1"), 10, "decode-1's process")
    try:
        for pid in victims:
            os.kill(pid, signal.SIGSTOP)
        assert wait_job_end(job_id, timeout_s=120) == "FAILED"
    finally:
        for pid in victims:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)

    code, shown = status(str(run_dir))
    assert code == 1 and shown["status"] == "failed"
    assert shown["failure"]["role"] == "decode-1"
    assert shown["failure"]["reason"].startswith("role decode-1 stopped serving")
    statuses = [p["status"] for p in shown["points"]]
    assert statuses[0] == "measured" and statuses[-1] == "aborted", statuses
    assert_nothing_left(run_dir, job_id)


def test_pending_reason_on_a_drained_node_then_cancel(
    slurm_cluster: list[str], tmp_path: Path
) -> None:
    node = slurm_cluster[-1]
    run_dir = tmp_path / "run"
    drain = ["scontrol", "update", f"NodeName={node}", "State=DRAIN", "Reason=disagg test"]
    subprocess.run(drain, check=True)
    try:
        job_id = submit("override_slow", run_dir)

        def pending_with_reason() -> dict[str, Any] | None:
            _, shown = status(str(run_dir))
            ok = shown["job_state"] == "PENDING" and shown["reason"] not in (None, "None")
            return shown if ok else None

        shown = wait_for(pending_with_reason, 20, "a pending reason")
        assert shown["status"] == "pending"
        # one run per directory: a second submission into it is refused, naming the job
        again = disagg(
            "submit", f"{RECIPE}:override_slow", "--cluster", str(PROFILE), "--out", str(run_dir)
        )
        assert again.returncode == 2, again.stderr
        assert f"is in use by Slurm job {job_id} (pending)" in " ".join(again.stderr.split())
        assert [n for n in shown["unavailable_nodes"] if n.startswith(node) and "drain" in n]
        assert any(n.endswith(": disagg test") for n in shown["unavailable_nodes"])
        human = " ".join(disagg("status", job_id).stdout.split())
        # Slurm re-evaluates a pending job between two queries (ReqNodeNotAvail may become
        # Resources), so the human view is checked for the wait, not the same word.
        assert f"job {job_id} waits: " in human
        assert f"unavailable: {node}" in human and "disagg test" in human
        _, by_job = status(job_id)
        assert by_job["run_dir"] == str(run_dir.resolve())  # a job id finds its run directory
    finally:
        resume = ["scontrol", "update", f"NodeName={node}", "State=RESUME"]
        subprocess.run(resume, check=True)

    # Back in service, the job starts; cancelling it stops the run cleanly.
    wait_for(lambda: read_json(run_dir / "state.json").get("phase") == "measure", 60, "measure")
    local = disagg("run", f"{RECIPE}:override_slow", "--local", "--out", str(run_dir))
    assert local.returncode == 2, local.stderr
    assert f"is in use by Slurm job {job_id} (running)" in " ".join(local.stderr.split())
    cancelled = disagg("cancel", str(run_dir), "--json")
    assert cancelled.returncode == 0, cancelled.stderr
    assert json.loads(cancelled.stdout)["status"] == "cancelled"
    assert job_state(job_id) == "CANCELLED"  # not FAILED: the run was stopped on purpose
    assert read_json(run_dir / "summary.json")["status"] == "cancelled"
    assert_nothing_left(run_dir, job_id)


@pytest.mark.parametrize(
    ("recipe", "profile", "reason"),
    [
        (
            "sim-1p2d-3node.yaml:base",
            "unknown-partition.yaml",
            "partition 'nope' does not exist (known: debug)",
        ),
        ("sim-4node.yaml:base", "local-slurm.yaml", "needs 4 node(s); partition debug has 3"),
        ("bad-anchor.yaml:override_b", "local-slurm.yaml", "DA001"),
    ],
)
def test_bad_input_is_refused_before_sbatch(
    slurm_cluster: list[str], tmp_path: Path, recipe: str, profile: str, reason: str
) -> None:
    out = tmp_path / "run"
    done = disagg("submit", str(DATA / recipe), "--cluster", str(DATA / profile), "--out", str(out))
    assert done.returncode == 2
    assert "submission refused, nothing was submitted" in done.stderr
    assert reason in " ".join(done.stderr.split())
    assert "Traceback" not in done.stderr
    assert not out.exists()  # nothing written, nothing submitted
