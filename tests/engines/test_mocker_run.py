"""`backend.type: mocker` recipes run for real: `dynamo.mocker` workers behind the real
`dynamo.frontend`, on this machine's CPU. What a user relies on: every point measured with
the tokens asked for, results that say engine mocker and are not marked simulated, a
report, a killed mocker failing the run by name, and nothing left running."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from disagg.launch.orchestrator import OrchestratorOptions
from disagg.launch.state import RunStatus, RunSummary
from disagg.plan.model import Plan
from frontends.role_kill import run_killing
from frontends.shipped_examples import EXAMPLES, one_aggregated, pointed_at
from run.conftest import disagg, wait_gone
from tiny_model import TinyModel

pytestmark = pytest.mark.slow

OPTIONS = OrchestratorOptions(echo=False, quiet_bench=True, handle_signals=False)
EXAMPLE = EXAMPLES / "mocker" / "1p1d-mocker.yaml"
AGGREGATED = """\
resources:
  gpu_type: "cpu"
  gpus_per_node: 8
  agg_nodes: 1
  agg_workers: 1
  gpus_per_agg: 2

"""


def recipe(tmp_path: Path, model: TinyModel, *, aggregated: bool = False) -> Path:
    """The shipped example, pointed at the test's tiny model (aggregated when asked)."""
    path = pointed_at(EXAMPLE, model, tmp_path / "mocker.yaml")
    if aggregated:
        served = f"model-name: {json.dumps(model.served_name)}"
        one_aggregated(path, AGGREGATED, "mocker_config", served)
    return path


@pytest.mark.parametrize("aggregated", [False, True], ids=["1p1d", "aggregated"])
def test_a_mocker_sweep_runs_behind_the_real_dynamo_frontend(
    tmp_path: Path, tiny_model: TinyModel, aggregated: bool
) -> None:
    path = recipe(tmp_path, tiny_model, aggregated=aggregated)
    done = disagg("run", path, "--local", "--out", tmp_path / "runs", "--json", timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    run_dir = Path(json.loads(done.stdout)["run_dir"])
    plan = Plan.read(run_dir)
    assert plan.engine == "mocker" and not plan.simulated and plan.simulator is None
    workers = [r for r in plan.roles if r.kind.value in ("prefill", "decode", "aggregated")]
    expected = ["aggregated-0"] if aggregated else ["prefill-0", "decode-0"]
    assert [w.name for w in workers] == expected
    assert all(w.argv[1:3] == ["-m", "dynamo.mocker"] for w in workers)
    results = [json.loads(p.read_text()) for p in sorted((run_dir / "results").glob("*.json"))]
    assert len(results) == 3
    for result in results:
        assert result["valid"] is True and result["simulated"] is False
        assert result["engine"] == "mocker" and result["router"] == "dynamo"
        assert result["failed"] == 0
        assert result["total_output_tokens"] == result["completed"] * plan.bench.osl
    log = (run_dir / "logs" / "frontend.log").read_text()
    # the frontend found the prefill mocker and routes prefill -> decode itself
    assert ("Prefill router target activated" in log) is not aggregated
    report = run_dir / "report"
    assert (report / "report.html").is_file() and (report / "summary.csv").is_file()
    rows = (report / "summary.csv").read_text().splitlines()
    assert len(rows) == 4 and all(",mocker," in row for row in rows[1:])
    summary = RunSummary.model_validate_json((run_dir / "summary.json").read_text())
    assert summary.status is RunStatus.COMPLETED
    assert wait_gone([pid for pids in summary.role_pids.values() for pid in pids]) == []


@pytest.mark.parametrize("victim", ["prefill-0", "decode-0"])
def test_a_killed_mocker_fails_the_run_naming_its_role(
    tmp_path: Path, tiny_model: TinyModel, victim: str
) -> None:
    run_killing(recipe(tmp_path, tiny_model), tmp_path / "run", victim)
