"""The shipped mocker example submitted to the local Slurm: a `dynamo.mocker` prefill on the
job's first node beside the real `dynamo.frontend`, a decode mocker on its second, discovered
through the run directory on the shared filesystem. Not simulated: the mocker is the engine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from slurm.cli_support import submit_and_complete
from slurm.conftest import job_steps
from tiny_model import TinyModel

from .test_mocker_run import recipe

pytestmark = [pytest.mark.slurm, pytest.mark.slow]


def test_1p1d_mocker_sweep_on_two_slurm_nodes(
    slurm_cluster: list[str], tmp_path: Path, tiny_model: TinyModel
) -> None:
    path = recipe(tmp_path, tiny_model)
    path.write_text(path.read_text().replace("decode_nodes: 0", "decode_nodes: 1"))
    run_dir = tmp_path / "run"
    job_id = submit_and_complete(path, run_dir)

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
