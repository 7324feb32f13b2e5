"""`disagg run RECIPE --local`: plan, run, table, report; and clear errors for bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import disagg, wait_gone

RECIPE = """\
name: "tiny-1p1d"
model: {path: "sim/tiny-model", container: "none", precision: "bf16"}
resources:
  gpu_type: "sim"
  gpus_per_node: 8
  prefill_nodes: 1
  prefill_workers: 1
  decode_nodes: 0
  decode_workers: 1
  gpus_per_prefill: 1
  gpus_per_decode: 1
backend:
  engine: sim
  sglang_config:
    prefill: {served-model-name: "sim/tiny-model", disaggregation-mode: "prefill"}
    decode: {served-model-name: "sim/tiny-model", disaggregation-mode: "decode"}
benchmark:
  type: "sa-bench"
  isl: 32
  osl: 8
  concurrencies: "1x2"
  num_prompts: 4
  num_warmup_mult: 0
"""


def test_unknown_selector_is_a_usage_error(tmp_path: Path) -> None:
    recipe = tmp_path / "tiny.yaml"
    recipe.write_text(RECIPE)
    result = disagg("run", f"{recipe}:override_nope", "--local", "--out", tmp_path / "run")
    assert result.returncode == 2
    assert "override_nope" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_run_writes_the_run_dir_prints_json_and_renders_the_report(tmp_path: Path) -> None:
    recipe = tmp_path / "tiny.yaml"
    recipe.write_text(RECIPE)
    out = tmp_path / "run"
    result = disagg("run", recipe, "--local", "--out", out, "--json")

    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["status"] == "completed"
    assert data["run_dir"] == str(out)
    assert data["selector"].endswith("tiny.yaml:base")
    assert [p["key"] for p in data["points"]] == ["conc1", "conc2"]
    assert {p["status"] for p in data["points"]} == {"measured"}
    assert (out / "plan.json").is_file() and (out / "summary.json").is_file()
    assert (out / "report" / "report.html").is_file()
    summary = json.loads((out / "summary.json").read_text())
    assert wait_gone([pid for pids in summary["role_pids"].values() for pid in pids]) == []

    again = disagg("run", recipe, "--local", "--out", out, "--json")
    assert again.returncode == 0, again.stderr
    assert {p["status"] for p in json.loads(again.stdout)["points"]} == {"skipped"}
    # a resumed run still shows the numbers of the points it kept
    state = json.loads((out / "state.json").read_text())
    for before, kept in zip(data["points"], state["points"], strict=True):
        assert kept["headline"]["output_throughput"] > 0
        assert kept["result"] == before["result"]
