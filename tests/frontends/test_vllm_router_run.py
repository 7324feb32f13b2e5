"""The vLLM Router and the direct vllm frontend for real, over simulated workers, with
`disagg run --local`.

What a user relies on: the router named by the recipe runs (the pinned `vllm-router`
binary), fronts every worker, is health-gated before the load starts, is recorded in the
results; a killed router fails the run naming it; a direct `vllm` frontend sends the load
to the one worker with no router; nothing outlives the run.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from disagg.launch.state import RunStatus
from run.conftest import disagg, wait_gone

from .role_kill import run_killing

pytestmark = pytest.mark.slow

ROUTER = """\
schema: 2
name: sim-vllm-router
model: {path: "sim/tiny-model", container: "none", precision: "bf16"}
resources: {gpu_type: sim, gpus_per_node: 8}
frontend: {type: FRONTEND, enable_multiple_frontends: false}
engine: {type: vllm, engine: sim}
roles:
  agg:
    nodes: 1
    workers: WORKERS
    gpus: 1
    args: {served-model-name: "sim/tiny-model"}
benchmark:
  type: sa-bench
  isl: 32
  osl: 8
  concurrencies: "CONCURRENCIES"
  num_prompts: 8
  num_warmup_mult: 0
"""


@pytest.fixture(autouse=True)
def _router_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pinned vllm-router comes with the project's environment, as in an image."""
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")


def _recipe(tmp_path: Path, frontend: str, workers: int, concurrencies: str = "1x4") -> Path:
    path = tmp_path / f"{frontend}.yaml"
    text = ROUTER.replace("FRONTEND", frontend).replace("WORKERS", str(workers))
    path.write_text(text.replace("CONCURRENCIES", concurrencies))
    return path


def _completed(out: Path) -> dict[str, Any]:
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "completed", summary.get("reason")
    assert [p["status"] for p in summary["points"]] == ["measured", "measured"]
    assert wait_gone(pid for pids in summary["role_pids"].values() for pid in pids) == []
    return summary


def test_the_vllm_router_fronts_every_worker_and_is_recorded(tmp_path: Path) -> None:
    out = tmp_path / "run"
    done = disagg("run", _recipe(tmp_path, "vllm-router", 2), "--local", "--out", out, "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    summary = _completed(out)
    assert set(summary["role_pids"]) == {"aggregated-0", "aggregated-1", "router"}
    timeline = summary["timeline"]
    assert timeline["router_healthy"] >= timeline["workers_healthy"]
    plan = json.loads((out / "plan.json").read_text())
    [router] = [role for role in plan["roles"] if role["name"] == "router"]
    assert router["argv"][0] == "vllm-router"
    # the router itself said which workers it fronts: both, by the ports the plan bound
    ready = [
        line
        for line in (out / "logs" / "router.log").read_text().splitlines()
        if "Router ready" in line
    ]
    assert len(ready) == 1 and ready[0].count("http://") == 2
    point = summary["points"][0]
    result = json.loads(Path(point["result"]).read_text())
    assert result["completed"] == 8 and result["failed"] == 0
    assert (result["router"], result["router_version"]) == ("vllm-router", "0.1.17")


def test_a_killed_vllm_router_fails_the_run_by_name(tmp_path: Path) -> None:
    recipe = _recipe(tmp_path, "vllm-router", 1, concurrencies="1x2x4")
    summary = run_killing(recipe, tmp_path / "run", "router")
    assert summary.status is RunStatus.FAILED


def test_a_direct_vllm_frontend_sends_the_load_to_the_one_worker(tmp_path: Path) -> None:
    out = tmp_path / "run"
    done = disagg("run", _recipe(tmp_path, "vllm", 1), "--local", "--out", out, "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    summary = _completed(out)
    assert set(summary["role_pids"]) == {"aggregated-0"}
    plan = json.loads((out / "plan.json").read_text())
    assert plan["frontend"] == "vllm (direct)" and plan["serving_role"] == "aggregated-0"
    result = json.loads(Path(summary["points"][0]["result"]).read_text())
    assert result["completed"] == 8 and result["router"] is None
