"""`disagg run --predict` end to end: refused without the package, labelled everywhere with it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

RECIPE = """\
name: "dsr1-predicted"
model: {path: "deepseek-ai/DeepSeek-R1", container: "none", precision: "fp8"}
resources:
  gpu_type: "h200"
  gpus_per_node: 8
  prefill_nodes: 1
  prefill_workers: 1
  decode_nodes: 1
  decode_workers: 1
backend:
  type: sglang
  sglang_config:
    prefill:
      {served-model-name: "deepseek-ai/DeepSeek-R1", tp-size: 8, disaggregation-mode: "prefill"}
    decode:
      served-model-name: "deepseek-ai/DeepSeek-R1"
      tp-size: 8
      ep-size: 8
      disaggregation-mode: "decode"
frontend: {type: "sglang-router"}
benchmark:
  type: "sa-bench"
  isl: 256
  osl: 32
  concurrencies: "1x4"
  num_prompts: 8
  num_warmup_mult: 0
"""

# `disagg` in a fresh interpreter that cannot import the performance model.
WITHOUT = (
    "import sys; sys.modules['aiconfigurator_core'] = None; "
    "from disagg.cli import main; sys.argv = ['disagg', *sys.argv[1:]]; main()"
)


def _disagg(*args: str | Path, hide_package: bool = False) -> subprocess.CompletedProcess[str]:
    head = ["-c", WITHOUT] if hide_package else ["-m", "disagg"]
    return subprocess.run(
        [sys.executable, *head, *map(str, args)], capture_output=True, text=True, timeout=300
    )


def test_without_the_package_predict_is_refused_with_the_install_command(tmp_path: Path) -> None:
    recipe = tmp_path / "r.yaml"
    recipe.write_text(RECIPE)
    run = tmp_path / "run"
    result = _disagg("run", recipe, "--local", "--predict", "--out", run, hide_package=True)
    assert result.returncode == 2
    assert "aiconfigurator-core 0.12.0" in result.stderr
    assert "uv sync --group predict" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "run").exists()


def test_predict_settings_without_predict_are_a_usage_error(tmp_path: Path) -> None:
    recipe = tmp_path / "r.yaml"
    recipe.write_text(RECIPE)
    result = _disagg("run", recipe, "--local", "--predict-time-scale", "4")
    assert result.returncode == 2 and "add --predict" in result.stderr


# A worker's environment is worked out after its prediction (and once per kind of worker):
# an unfillable value must not hide the refusal the first worker always got.
@pytest.mark.parametrize("environment", ["", 'environment: {FOO: "{oops"}\n'])
def test_an_amd_recipe_is_refused_before_anything_starts(tmp_path: Path, environment: str) -> None:
    pytest.importorskip("aiconfigurator_core", reason="the `predict` group is not installed")
    recipe = tmp_path / "r.yaml"
    recipe.write_text(RECIPE.replace('gpu_type: "h200"', 'gpu_type: "mi355x"') + environment)
    result = _disagg("run", recipe, "--local", "--predict", "--out", tmp_path / "run")
    assert result.returncode == 2, result.stderr
    assert "unsupported: --predict: GPU type 'mi355x' is an AMD GPU" in result.stderr
    assert "r.yaml" in result.stderr  # the refusal points at the recipe
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_a_predicted_run_is_labelled_in_results_report_and_collect(tmp_path: Path) -> None:
    pytest.importorskip("aiconfigurator_core", reason="the `predict` group is not installed")
    recipe = tmp_path / "r.yaml"
    recipe.write_text(RECIPE)
    out = tmp_path / "run"
    result = _disagg(
        "run", recipe, "--local", "--predict", "--predict-time-scale", "4", "--out", out, "--json"
    )
    assert result.returncode == 0, result.stderr
    label = "predicted (aiconfigurator-core 0.12.0, h200_sxm, sglang "
    assert f"completed ({label}" in " ".join(result.stderr.split())
    plan = json.loads((out / "plan.json").read_text())
    assert plan["predicted"]["label"].startswith(label)
    assert plan["bench"]["time_scale"] == 4.0
    results = sorted((out / "results").glob("*.json"))
    assert len(results) == 2
    for path in results:
        data = json.loads(path.read_text())
        assert data["valid"], data["invalid_reason"]
        assert data["predicted"].startswith(label)
        # stretched back to the model's time: a DeepSeek-R1 TP8 decode step is >10 ms
        assert data["median_tpot_ms"] > 10.0
    html = (out / "report" / "report.html").read_text()
    assert "Contains PREDICTED results" in html and label in html
    assert list((out / "report").rglob("*.png"))

    refused = _disagg("collect", out, "--out", tmp_path / "rows")
    assert refused.returncode == 2 and label in refused.stderr
    collected = _disagg("collect", out, "--out", tmp_path / "rows", "--allow-simulated")
    assert collected.returncode == 0, collected.stderr
    rows = [json.loads(p.read_text()) for p in (tmp_path / "rows").rglob("agg_*.json")]
    assert rows and all(row["hw"] == "h200-predicted" for row in rows)
    assert all(row["predicted"].startswith(label) for row in rows)
