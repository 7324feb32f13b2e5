"""`host_setup` in a real Slurm job on the local 3-node rig: once on each node's bare host
before any role, teardown after; a node whose commands fail ends the job before the
workers start, naming that node."""

from __future__ import annotations

from pathlib import Path

import pytest

from .cli_support import RECIPE, assert_nothing_left, read_json, submit
from .conftest import wait_job_end

pytestmark = [pytest.mark.slurm, pytest.mark.slow]


def with_setup(tmp_path: Path, block: str) -> Path:
    text = RECIPE.read_text()
    base_end = text.index("# Slower decoding")
    path = tmp_path / "setup.yaml"
    path.write_text(text[:base_end] + "  host_setup:\n" + block + "\n" + text[base_end:])
    return path


def test_commands_run_once_on_every_node_before_the_workers(
    slurm_cluster: list[str], tmp_path: Path
) -> None:
    seen = tmp_path / "nodes"
    block = (
        f"    commands: ['echo setup $SLURMD_NODENAME >> {seen}']\n"
        f"    teardown: ['echo teardown $SLURMD_NODENAME >> {seen}']\n"
    )
    run_dir = tmp_path / "run"
    job_id = submit("base", run_dir, recipe=with_setup(tmp_path, block))
    assert wait_job_end(job_id) == "COMPLETED", (run_dir / f"slurm-{job_id}.out").read_text()
    lines = seen.read_text().splitlines()
    assert sorted(lines[:3]) == sorted(f"setup {node}" for node in slurm_cluster)
    assert sorted(lines[3:]) == sorted(f"teardown {node}" for node in slurm_cluster)
    for rank in range(3):
        assert (run_dir / "logs" / f"host-setup.{rank}.log").is_file()
    assert_nothing_left(run_dir, job_id)


def test_a_node_whose_setup_fails_ends_the_job_before_any_worker(
    slurm_cluster: list[str], tmp_path: Path
) -> None:
    bad = slurm_cluster[1]
    block = f"    commands: ['test \"$SLURMD_NODENAME\" != {bad} || exit 4']\n"
    run_dir = tmp_path / "run"
    job_id = submit("base", run_dir, recipe=with_setup(tmp_path, block))
    assert wait_job_end(job_id) == "FAILED"
    summary = read_json(run_dir / "summary.json")
    assert summary["reason"] == f"host setup failed on node {bad}: exit code 4"
    assert summary["role_pids"] == {}
    assert not (run_dir / "logs" / "prefill-0.log").exists()
    assert_nothing_left(run_dir, job_id)
