"""The shipped mocker example submitted to the local Slurm: a `dynamo.mocker` prefill on the
job's first node beside the real `dynamo.frontend`, a decode mocker on its second, discovered
through the run directory on the shared filesystem. Not simulated: the mocker is the engine."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from slurm.conftest import REPO, job_steps, wait_job_end
from tiny_model import TinyModel

from .test_mocker_run import recipe

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

PROFILE = REPO / "tests" / "slurm" / "data" / "local-slurm.yaml"


def test_1p1d_mocker_sweep_on_two_slurm_nodes(
    slurm_cluster: list[str], tmp_path: Path, tiny_model: TinyModel
) -> None:
    path = recipe(tmp_path, tiny_model)
    path.write_text(path.read_text().replace("decode_nodes: 0", "decode_nodes: 1"))
    run_dir = tmp_path / "run"
    command = [sys.executable, "-m", "disagg", "submit", str(path), "--cluster", str(PROFILE)]
    done = subprocess.run(
        [*command, "--out", str(run_dir), "--json"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    job_id = str(json.loads(done.stdout)[0]["job_id"])
    final = wait_job_end(job_id, timeout_s=300)
    assert final == "COMPLETED", (run_dir / f"slurm-{job_id}.out").read_text()[-3000:]

    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["executor"] == "slurm"
    assert [p["status"] for p in summary["points"]] == ["measured"] * 3
    for point in summary["points"]:
        result = json.loads(Path(point["result"]).read_text())
        assert result["valid"] is True and result["simulated"] is False
        assert result["engine"] == "mocker" and result["router"] == "dynamo"
    state = json.loads((run_dir / "state.json").read_text())
    nodes = {role["name"]: [t["node"] for t in role["tasks"]] for role in state["roles"]}
    # the job's first node (whichever the rig gave it), and another for decode
    assert nodes["prefill-0"] == nodes["frontend"] and nodes["prefill-0"][0] in slurm_cluster
    assert len(nodes["decode-0"]) == 1 and nodes["decode-0"] != nodes["prefill-0"]
    assert "Prefill router target activated" in (run_dir / "logs" / "frontend.log").read_text()
    assert job_steps(job_id) == []
