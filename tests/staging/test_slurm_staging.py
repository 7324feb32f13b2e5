"""Staging on the real local Slurm cluster: repos travel in plan.json, never in `--export`."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from disagg.plan.model import ModelToStage, StagingPlan
from disagg.staging import checkpoint as ck

from .conftest import DRAFT, MAIN
from .hub_server import HubServer

pytestmark = pytest.mark.slurm
REPO_ROOT = Path(__file__).resolve().parents[2]


def sbatch(script: Path, env: dict[str, str]) -> str:
    return subprocess.run(
        ["sbatch", "--parsable", str(script)],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO_ROOT,
        env={**os.environ, **env},
    ).stdout.strip()


def wait_for(job_id: str, timeout_s: float = 120.0) -> str:
    deadline = time.monotonic() + timeout_s
    while True:
        out = subprocess.run(
            ["scontrol", "-o", "show", "job", job_id], capture_output=True, text=True, check=False
        ).stdout
        state = next((w.split("=", 1)[1] for w in out.split() if w.startswith("JobState=")), "?")
        if state not in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING"):
            return state
        if time.monotonic() > deadline:
            subprocess.run(["scancel", job_id], check=False)
            raise AssertionError(f"job {job_id} still {state} after {timeout_s}s")
        time.sleep(0.2)


def test_job_stages_main_and_draft_from_two_nodes_at_once(
    slurm_nodes: list[str], tmp_path: Path, hub: HubServer, hf_env: dict[str, str]
) -> None:
    cache = tmp_path / "cache"
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    staging = StagingPlan(
        models=[ModelToStage(repo_id=MAIN), ModelToStage(repo_id=DRAFT, purpose="draft")],
        hf_cache=str(cache),
    )
    (run_dir / "plan.json").write_text(staging.model_dump_json())
    hub.state.delay_s = 0.1  # the two steps overlap, so the lock decides who downloads
    script = tmp_path / "job.sbatch"
    stager = f"{shlex.quote(sys.executable)} -m disagg.staging {shlex.quote(str(run_dir))}"
    script.write_text(
        "#!/bin/bash\n"
        f"#SBATCH --nodes=2 --ntasks-per-node=1 --output={tmp_path}/slurm-%j.out\n"
        "set -e\n"
        f"srun --nodes=2 --ntasks=2 --label {stager}\n"
    )
    job_id = sbatch(script, hf_env)
    state = wait_for(job_id)
    log = (tmp_path / f"slurm-{job_id}.out").read_text()
    assert state == "COMPLETED", log

    for repo_id in (MAIN, DRAFT):
        assert hub.per_file(repo_id) == {name: 1 for name in hub.state.repos[repo_id].files}, log
        assert ck.check_repo(repo_id, cache=str(cache)).complete
        # both tasks (node 0 and node 1) report the same snapshot
        assert log.count(f"staged {repo_id} -> ") == 2, log
    assert "0: " in log and "1: " in log


def test_export_list_splits_on_commas_and_plan_json_does_not(
    slurm_nodes: list[str], tmp_path: Path
) -> None:
    """The hazard: `--export=ALL,MODEL_REPOS=a/x,b/y` delivers only `a/x`."""
    exported = subprocess.run(
        [
            "srun",
            "--nodes=1",
            "--ntasks=1",
            "--export=ALL,MODEL_REPOS=a/x,b/y",
            "printenv",
            "MODEL_REPOS",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert exported.stdout.strip() == "a/x"

    staging = StagingPlan(models=[ModelToStage(repo_id="a/x"), ModelToStage(repo_id="b/y")])
    (tmp_path / "plan.json").write_text(staging.model_dump_json())
    reader = (
        "import sys, pathlib; from disagg.staging.__main__ import load_staging; "
        "staging = load_staging(pathlib.Path(sys.argv[1])); "
        "print(','.join(m.repo_id for m in staging.models))"
    )
    from_plan = subprocess.run(
        ["srun", "--nodes=1", "--ntasks=1", sys.executable, "-c", reader, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        cwd=REPO_ROOT,
    )
    assert from_plan.stdout.strip() == "a/x,b/y"
