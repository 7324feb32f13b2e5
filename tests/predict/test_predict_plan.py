"""`backend.engine: predict` and `backend.predict` in a recipe; the command line's settings win."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("aiconfigurator_core", reason="the `predict` group is not installed")

from disagg.plan.from_recipe import plans_for
from disagg.plan.model import Plan
from disagg.predict.check import role_target
from disagg.predict.mapping import PredictOptions

RECIPE = """\
name: "dsr1-mtp"
model: {path: "dsr1", container: "none", precision: "fp8"}
resources:
  gpu_type: "h200"
  gpus_per_node: 8
  prefill_nodes: 1
  prefill_workers: 1
  decode_nodes: 1
  decode_workers: 1
backend:
  type: sglang
  engine: predict
  predict: {accept_rate: 0.5, time_scale: 8, model: "deepseek-ai/DeepSeek-R1"}
  sglang_config:
    prefill: {tp-size: 8, disaggregation-mode: "prefill"}
    decode:
      tp-size: 8
      disaggregation-mode: "decode"
      speculative-algorithm: "EAGLE"
      speculative-num-steps: 3
frontend: {type: "dynamo"}
benchmark: {type: "sa-bench", isl: 1024, osl: 128, concurrencies: "4"}
"""


def _plan(tmp_path: Path, text: str, options: PredictOptions | None = None) -> Plan:
    recipe = tmp_path / "r.yaml"
    recipe.write_text(text)
    [plan] = plans_for([str(recipe)], None, options)
    return plan


def test_a_recipe_asks_for_prediction_and_states_its_assumptions(tmp_path: Path) -> None:
    plan = _plan(tmp_path, RECIPE)
    assert plan.simulated and plan.predicted is not None
    assert plan.predicted is not None and plan.predicted["accept_rate"] == 0.5
    assert plan.bench.time_scale == 8.0
    decode = next(r for r in plan.roles if r.name == "decode-0")
    target = role_target(decode.argv)
    assert target is not None and target.nextn == 3 and target.accept_rate == 0.5
    # Dynamo's frontend would run its mocker; predicted workers are fronted by the PD router
    assert plan.frontend != "dynamo"
    assert "predict-frontend" in [row["id"] for row in plan.differs]


def test_the_command_line_wins_over_the_recipe(tmp_path: Path) -> None:
    plan = _plan(tmp_path, RECIPE, PredictOptions(accept_rate=0.75, time_scale=2.0))
    assert plan.predicted is not None and plan.predicted["accept_rate"] == 0.75
    assert plan.bench.time_scale == 2.0


def test_predict_settings_of_a_recipe_that_is_not_predicted_are_listed_as_ignored(
    tmp_path: Path,
) -> None:
    # a simulated run behind smg (a simulated Dynamo plan needs a local tokenizer directory)
    simulated = RECIPE.replace("engine: predict", "engine: sim")
    plan = _plan(tmp_path, simulated.replace('type: "dynamo"', 'type: "smg"'))
    assert plan.predicted is None
    assert any(i["field"] == "backend.predict" for i in plan.ignored)


def test_a_model_directory_named_like_a_repo_still_finds_its_performance_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`model.path: org/name` is a directory as srtctl reads it; a predicted plan reads no
    weights, stages nothing, and finds AIConfigurator's model from the name as written."""
    monkeypatch.chdir(tmp_path)  # no such directory here
    text = RECIPE.replace('path: "dsr1"', 'path: "deepseek-ai/DeepSeek-R1"')
    plan = _plan(tmp_path, text.replace(', model: "deepseek-ai/DeepSeek-R1"', ""))
    assert plan.staging.skip and plan.staging.models == []
    assert plan.staging.local_path == "deepseek-ai/DeepSeek-R1"  # kept as written
    target = role_target(plan.role("decode-0").argv)
    assert target is not None and target.model == "deepseek-ai/DeepSeek-R1"
