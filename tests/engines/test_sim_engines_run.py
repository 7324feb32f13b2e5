"""A simulated vLLM or TRT-LLM recipe runs end to end (`disagg run --local`), as SGLang's do."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from run.conftest import disagg

RESOURCES = """\
resources:
  gpu_type: "sim"
  gpus_per_node: 8
  prefill_nodes: 1
  prefill_workers: 1
  decode_nodes: 0
  decode_workers: 1
  gpus_per_prefill: 2
  gpus_per_decode: 2
"""
BENCH = """\
benchmark:
  type: "sa-bench"
  isl: 32
  osl: 8
  concurrencies: "2"
  num_prompts: 4
  num_warmup_mult: 0
"""
ROLES = {
    "vllm": "    prefill: {tensor-parallel-size: 2, max-num-seqs: 8}\n"
    "    decode: {tensor-parallel-size: 2, max-num-seqs: 8}\n",
    "trtllm": "    prefill: {tensor_parallel_size: 2, max_batch_size: 8}\n"
    "    decode: {tensor_parallel_size: 2, enable_attention_dp: true, max_batch_size: 8}\n",
}


@pytest.mark.slow
@pytest.mark.parametrize("engine", sorted(ROLES))
def test_simulated_engine_recipe_runs_and_is_labelled_simulated(
    tmp_path: Path, engine: str
) -> None:
    recipe = tmp_path / f"{engine}.yaml"
    recipe.write_text(
        f'name: "sim-{engine}"\n'
        'model: {path: "sim/tiny-model", container: "none", precision: "bf16"}\n'
        f"{RESOURCES}backend:\n  type: {engine}\n  engine: sim\n  {engine}_config:\n"
        f"{ROLES[engine]}{BENCH}"
    )
    out = tmp_path / "run"
    result = disagg("run", recipe, "--local", "--out", out, "--json", timeout=300)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["status"] == "completed"
    assert [p["status"] for p in data["points"]] == ["measured"]
    [path] = (out / "results").glob("*.json")
    point = json.loads(path.read_text())
    assert (point["framework"], point["engine"]) == (engine, "sim")
    assert (point["prefill_tp"], point["decode_tp"]) == (2, 2)
    assert point["completed"] == 4
