"""Simulated Dynamo recipes through the REAL `dynamo.frontend`, with `dynamo.mocker` workers.

What a user of `disagg run` relies on for a `frontend.type: dynamo` recipe: the frontend
it names is the one that runs (and routes prefill -> decode itself), every point is
measured with exactly the requested tokens, the result says what simulated the
workers, and a worker or frontend that dies fails the run, leaving nothing running.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from disagg.launch.state import RunSummary
from disagg.plan.model import Plan
from run.conftest import disagg, wait_gone
from tiny_model import TinyModel

from .role_kill import run_killing
from .shipped_examples import EXAMPLES, one_aggregated, pointed_at

pytestmark = pytest.mark.slow

EXAMPLE = EXAMPLES / "dynamo" / "sim-1p1d-dynamo.yaml"


def recipe(tmp_path: Path, model: TinyModel, *, aggregated: bool = False) -> Path:
    """The shipped example, pointed at the test's tiny model (aggregated when asked)."""
    path = pointed_at(EXAMPLE, model, tmp_path / "dynamo.yaml")
    if aggregated:
        served = f"served-model-name: {json.dumps(model.served_name)}"
        one_aggregated(
            path, "resources:\n  gpu_type: sim\n  gpus_per_node: 8\n\n", "sglang_config", served
        )
    return path


def results(run_dir: Path) -> list[dict[str, object]]:
    return [json.loads(p.read_text()) for p in sorted((run_dir / "results").glob("*.json"))]


@pytest.mark.parametrize("aggregated", [False, True], ids=["1p1d", "aggregated"])
def test_sweep_runs_through_the_real_dynamo_frontend(
    tmp_path: Path, tiny_model: TinyModel, aggregated: bool
) -> None:
    path = recipe(tmp_path, tiny_model, aggregated=aggregated)
    out = tmp_path / "runs"
    done = disagg("run", path, "--local", "--out", out, "--json", timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    run_dir = Path(json.loads(done.stdout)["run_dir"])
    plan = Plan.read(run_dir)
    assert plan.frontend == "dynamo" and plan.simulator == "dynamo.mocker"
    assert plan.bench.prompt_format == "token_ids"
    frontend = plan.role("frontend")
    assert frontend.argv[1:3] == ["-m", "dynamo.frontend"]
    workers = [
        role for role in plan.roles if role.kind.value in ("prefill", "decode", "aggregated")
    ]
    assert [w.argv[2] for w in workers] == ["dynamo.mocker"] * len(workers)
    assert plan.stages == [[w.name for w in workers], ["frontend"]]
    measured = results(run_dir)
    assert len(measured) == 3
    for result in measured:
        assert result["valid"] is True and result["simulated"] is True
        assert result["failed"] == 0
        assert result["total_output_tokens"] == result["completed"] * plan.bench.osl  # type: ignore[operator]
    log = (run_dir / "logs" / "frontend.log").read_text()
    if aggregated:
        assert "Prefill router target activated" not in log
    else:  # the frontend found the prefill mocker and routes prefill -> decode itself
        assert "Prefill router target activated" in log
    summary = RunSummary.model_validate_json((run_dir / "summary.json").read_text())
    assert wait_gone([pid for pids in summary.role_pids.values() for pid in pids]) == []


@pytest.mark.parametrize("victim", ["decode-0", "frontend"])
def test_a_dying_worker_or_frontend_fails_the_run(
    tmp_path: Path, tiny_model: TinyModel, victim: str
) -> None:
    run_killing(recipe(tmp_path, tiny_model), tmp_path / "run", victim)
