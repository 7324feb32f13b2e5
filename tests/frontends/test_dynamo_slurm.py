"""Dynamo recipes submitted to the local Slurm: the real `dynamo.frontend` on the job's
first node, a prefill and a decode `dynamo.mocker` on two nodes, discovered through the run
directory on the shared filesystem. The shipped Dynamo example (SGLang, simulated by the
mocker) and the shipped mocker example (the mocker is the engine, nothing simulated) run the
same way; etcd and NATS, when the recipe names them, run as job steps."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest

from engines import test_mocker_run
from slurm.cli_support import submit_and_complete
from slurm.conftest import job_steps
from tiny_model import TinyModel

from . import test_dynamo_run
from .test_dynamo_run import recipe

pytestmark = [pytest.mark.slurm, pytest.mark.slow]


@pytest.mark.parametrize(
    ("example", "engine", "simulated"),
    [(test_dynamo_run, "sim", True), (test_mocker_run, "mocker", False)],
    ids=["sglang-simulated", "mocker-engine"],
)
def test_1p1d_dynamo_sweep_on_two_slurm_nodes(
    slurm_cluster: list[str],
    tmp_path: Path,
    tiny_model: TinyModel,
    example: ModuleType,
    engine: str,
    simulated: bool,
) -> None:
    path = example.recipe(tmp_path, tiny_model)
    path.write_text(path.read_text().replace("decode_nodes: 0", "decode_nodes: 1"))
    run_dir = tmp_path / "run"
    job_id = submit_and_complete(path, run_dir)

    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["executor"] == "slurm"
    assert [p["status"] for p in summary["points"]] == ["measured"] * 3
    for point in summary["points"]:
        result = json.loads(Path(point["result"]).read_text())
        assert result["valid"] is True and result["router"] == "dynamo"
        assert result["engine"] == engine and result["simulated"] is simulated
    state = json.loads((run_dir / "state.json").read_text())
    nodes = {role["name"]: [t["node"] for t in role["tasks"]] for role in state["roles"]}
    assert nodes["prefill-0"] == nodes["frontend"]
    assert_first_and_second_node(slurm_cluster, nodes["frontend"], nodes["decode-0"])
    log = (run_dir / "logs" / "frontend.log").read_text()
    assert "Prefill router target activated" in log
    assert job_steps(job_id) == []


def test_etcd_and_nats_run_as_job_steps_on_the_first_node(
    slurm_cluster: list[str], tmp_path: Path, tiny_model: TinyModel
) -> None:
    """The recipe's etcd and NATS as `srun` steps beside the frontend; the decode worker on
    the second node registers in that etcd and takes requests over that NATS."""
    from .test_services_run import SERVICES, require_services

    require_services()
    path = recipe(tmp_path, tiny_model)
    text = path.read_text().replace("decode_nodes: 0", "decode_nodes: 1")
    path.write_text(text + SERVICES + "dynamo:\n  request_plane: nats\n")
    run_dir = tmp_path / "run"
    job_id = submit_and_complete(path, run_dir)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert [p["status"] for p in summary["points"]] == ["measured"] * 3
    state = json.loads((run_dir / "state.json").read_text())
    nodes = {role["name"]: [t["node"] for t in role["tasks"]] for role in state["roles"]}
    assert nodes["etcd"] == nodes["nats"] == nodes["frontend"]
    assert_first_and_second_node(slurm_cluster, nodes["frontend"], nodes["decode-0"])
    assert (run_dir / "etcd" / "member").is_dir()
    assert "Starting NATS push endpoint listener" in (run_dir / "logs" / "decode-0.log").read_text()
    assert job_steps(job_id) == []


def assert_first_and_second_node(cluster: list[str], first: list[str], second: list[str]) -> None:
    """The job's first and second node, whichever two the rig gave it (another job may hold
    the rig's first node): one task each, on different nodes, in the job's node order."""
    assert len(first) == len(second) == 1 and first[0] in cluster and second[0] in cluster
    assert cluster.index(first[0]) < cluster.index(second[0])
