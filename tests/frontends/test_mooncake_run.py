"""A real `mooncake_master` started by a simulated run, as srt-slurm starts one for a
recipe's Mooncake KV store.

What a user relies on: the master comes up before any worker and answers its health
check, the workers are told where it is, its store config lies in the run directory, a
master that dies fails the run naming it, and nothing outlives the run; a standalone
store (`type: mooncake-store`) joins the master before the workers and fails the run
naming it when it dies. Needs the
`services` dependency group (the `mooncake-transfer-engine-non-cuda` wheel) and
libibverbs (scripts/services-up); skipped without them unless DISAGG_REQUIRE_SERVICES=1.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from disagg.launch.state import RunSummary
from disagg.plan.model import Plan
from run.conftest import SIM_RECIPE, disagg, wait_gone

from .role_kill import run_killing

pytestmark = pytest.mark.slow

V1_STORE = "  mooncake_kv_store:\n    env:\n      MOONCAKE_PROTOCOL: tcp\n"


@pytest.fixture(autouse=True)
def _mooncake_installed() -> None:
    problem = _why_not_runnable()
    if problem:
        if os.environ.get("DISAGG_REQUIRE_SERVICES") == "1":
            pytest.fail(problem)
        pytest.skip(problem)


def _why_not_runnable() -> str | None:
    """Why this environment cannot start `mooncake_master`, or None when it can."""
    if importlib.util.find_spec("mooncake") is None:
        return "mooncake missing: the `services` dependency group installs it (scripts/bootstrap)"
    done = subprocess.run(
        [sys.executable, "-m", "mooncake.cli", "--help"], capture_output=True, text=True
    )
    if "error while loading shared libraries" in done.stderr:
        return f"mooncake_master cannot start: {done.stderr.strip()} (scripts/services-up)"
    return None


def v1_recipe(tmp_path: Path) -> Path:
    path = tmp_path / "mooncake.yaml"
    text = SIM_RECIPE.read_text().replace("  engine: sim\n", "  engine: sim\n" + V1_STORE)
    for mode in ("prefill", "decode"):  # the workers' KV transfer is Mooncake's
        setting = f'      disaggregation-mode: "{mode}"\n'
        text = text.replace(setting, setting + "      disaggregation-transfer-backend: mooncake\n")
    path.write_text(text.replace('"1x2x4x8x16x32"', '"1x2x4"'))
    return path


def test_the_master_runs_before_the_workers_and_they_are_told_where_it_is(
    tmp_path: Path,
) -> None:
    done = disagg("run", v1_recipe(tmp_path), "--local", "--out", tmp_path / "runs", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    run_dir = Path(json.loads(done.stdout)["run_dir"])
    plan = Plan.read(run_dir)
    assert plan.stages[0] == ["mooncake-master"]
    assert plan.stages[1] == ["prefill-0", "decode-0"]
    master = plan.role("mooncake-master")
    assert master.argv[1:3] == ["-m", "mooncake.cli"]
    assert "--enable_http_metadata_server=true" in master.argv
    state = json.loads((run_dir / "state.json").read_text())
    roles = {role["name"]: role for role in state["roles"]}
    assert roles["mooncake-master"]["healthy"] is True
    port = roles["mooncake-master"]["ports"]
    for name in ("prefill-0", "decode-0"):
        env = plan.role(name).env
        assert env["MOONCAKE_PROTOCOL"] == "tcp"
        assert env["MOONCAKE_MASTER"] == "${mooncake-master.host}:${mooncake-master.rpc_port}"
    log = (run_dir / "logs" / "mooncake-master.log").read_text()
    assert f"Master service started on port {port['rpc_port']}" in log
    assert f"metrics_port={port['http_port']}" in log
    summary = RunSummary.model_validate_json((run_dir / "summary.json").read_text())
    assert "mooncake-master" in summary.role_pids
    assert wait_gone([pid for pids in summary.role_pids.values() for pid in pids]) == []


def test_a_dying_master_fails_the_run_naming_it(tmp_path: Path) -> None:
    run_killing(v1_recipe(tmp_path), tmp_path / "run", "mooncake-master")
    status = disagg("status", tmp_path / "run", "--json")
    assert status.returncode == 1
    assert json.loads(status.stdout)["failure"]["role"] == "mooncake-master"


STORE = '  - name: store\n    type: mooncake-store\n    args: ["--global_segment_size=64 MB"]\n'


def store_recipe(tmp_path: Path) -> Path:
    """The master's recipe with a standalone store (a small segment: the test's memory)."""
    path = v1_recipe(tmp_path)
    path.write_text(path.read_text() + "services:\n" + STORE)
    return path


def test_a_standalone_store_joins_the_master_before_the_workers(tmp_path: Path) -> None:
    done = disagg("run", store_recipe(tmp_path), "--local", "--out", tmp_path / "runs", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    run_dir = Path(json.loads(done.stdout)["run_dir"])
    plan = Plan.read(run_dir)
    assert plan.stages[:3] == [["mooncake-master"], ["service_store"], ["prefill-0", "decode-0"]]
    state = json.loads((run_dir / "state.json").read_text())
    roles = {role["name"]: role for role in state["roles"]}
    assert roles["service_store"]["healthy"] is True
    ports = roles["service_store"]["ports"]
    log = (run_dir / "logs" / "service_store.log").read_text()
    # It mounted its segment with the master and serves on its own ports.
    assert "Mounting segment: 67108864 bytes" in log
    assert f"Client HTTP server started on port {ports['http_port']}" in log
    assert f"Starting real client service on 127.0.0.1:{ports['rpc_port']}" in log
    orchestrator = (run_dir / "logs" / "orchestrator.log").read_text()
    assert orchestrator.index("service_store ready after") < orchestrator.index("start prefill-0")
    summary = RunSummary.model_validate_json((run_dir / "summary.json").read_text())
    assert wait_gone([pid for pids in summary.role_pids.values() for pid in pids]) == []


def test_a_dying_store_fails_the_run_naming_it(tmp_path: Path) -> None:
    run_killing(store_recipe(tmp_path), tmp_path / "run", "service_store")
