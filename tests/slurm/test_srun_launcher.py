"""SrunLauncher inside a real 3-node job: node names and addresses from Slurm, the task
environment whole (no comma splitting), GPU pinning, port probes, and a teardown that
leaves no step and no process behind."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from .conftest import REPO, job_steps, wait_job_end

pytestmark = pytest.mark.slurm


def test_launcher_in_a_three_node_job(slurm_cluster: list[str], tmp_path: Path) -> None:
    token = f"disagg-test-{uuid.uuid4().hex}"
    out = tmp_path / "result.json"
    driver = Path(__file__).with_name("srun_driver.py")
    script = tmp_path / "job.sbatch"
    script.write_text(
        "#!/bin/bash\n"
        f"#SBATCH --nodes=3 --gres=gpu:8 --exclusive --output={tmp_path}/slurm-%j.out\n"
        f"exec {shlex.quote(sys.executable)} {shlex.quote(str(driver))} {out} {token}\n"
    )
    secret = f"hf_{uuid.uuid4().hex}"
    job_id = subprocess.run(
        ["sbatch", "--parsable", str(script)],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
        env={**os.environ, "HF_TOKEN": secret},  # reaches the task through the environment
    ).stdout.strip()
    state = wait_job_end(job_id, timeout_s=90)
    log = (tmp_path / f"slurm-{job_id}.out").read_text()
    assert state == "COMPLETED", log
    result = json.loads(out.read_text())

    assert result["names"] == slurm_cluster
    assert result["addresses"] == ["127.0.0.1"] * 3  # NodeAddr from scontrol, not hostnames
    show_log = (tmp_path / "logs" / "show.log").read_text()
    shown = json.loads(show_log.split("RESULT ", 1)[1].splitlines()[0])
    assert result["show_exit"] == 0
    assert shown == {
        "SLURMD_NODENAME": slurm_cluster[1],
        "CUDA_VISIBLE_DEVICES": "2,3",  # Slurm's own value for the step is overridden
        "MODEL_REPOS": "a/x,b/y",  # arrives whole: nothing was split on commas
        "HF_TOKEN_LENGTH": len(secret),  # the submitter's secret, inherited, never written
    }
    # the port held in the job is busy on the node, and the probe is no blanket "busy":
    # of the seven ports after it some are free (other processes of a shared machine may
    # hold a few of them for a moment, so which ones is not asserted)
    assert result["probe_port"] in result["probe_busy"]
    assert len(result["probe_busy"]) < 8
    assert result["local_probe_free"] is False
    assert result["tree_running"] is True
    assert result["tree_exit"] is not None
    assert job_steps(job_id) == []
    left = subprocess.run(["pgrep", "-f", token], capture_output=True, text=True).stdout
    assert left == "", f"processes left running: {left}"
    written = [p for p in tmp_path.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]
    assert written == []
