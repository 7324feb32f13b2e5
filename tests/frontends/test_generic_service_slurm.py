"""A generic service submitted to the local Slurm: one `srun` step per worker node
(`placement.node: workers`), each gated on its own log line before the workers start, and
no step left when the job ends."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from run.conftest import SIM_RECIPE
from slurm.cli_support import submit_and_complete
from slurm.conftest import job_steps

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

SIDECAR = (
    "import os, time\n"
    "print('sidecar up on', os.environ['SLURMD_NODENAME'], flush=True)\n"
    "time.sleep(3600)\n"
)


def test_a_service_on_every_worker_node_runs_as_job_steps(
    slurm_cluster: list[str], tmp_path: Path
) -> None:
    text = SIM_RECIPE.read_text().replace('"1x2x4x8x16x32"', '"1x2"')
    text = text.replace("decode_nodes: 0", "decode_nodes: 1") + (
        "services:\n"
        "  - name: probe\n"
        "    placement: {node: workers}\n"
        "    start: before_workers\n"
        f"    command: [{json.dumps(sys.executable)}, -c, {json.dumps(SIDECAR)}]\n"
        "    readiness: {log: {pattern: 'sidecar up on'}, timeout_seconds: 60}\n"
    )
    path = tmp_path / "service.yaml"
    path.write_text(text)
    run_dir = tmp_path / "run"
    job_id = submit_and_complete(path, run_dir)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["executor"] == "slurm"
    state = json.loads((run_dir / "state.json").read_text())
    roles = {role["name"]: role for role in state["roles"]}
    nodes = [task["node"] for task in roles["service_probe"]["tasks"]]
    assert len(set(nodes)) == 2 and set(nodes) <= set(slurm_cluster)
    assert roles["service_probe"]["healthy"] is True
    for task in roles["service_probe"]["tasks"]:
        assert f"sidecar up on {task['node']}" in Path(task["log"]).read_text()
    orchestrator = (run_dir / "logs" / "orchestrator.log").read_text()
    assert orchestrator.index("service_probe ready after") < orchestrator.index("start prefill-0")
    assert job_steps(job_id) == []
