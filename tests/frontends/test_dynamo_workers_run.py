"""Simulated vLLM and TRT-LLM recipes behind Dynamo through the REAL `dynamo.frontend`.

No vLLM-under-Dynamo or TRT-LLM runs on this machine, so a simulated plan keeps the
recipe's prefill/decode/aggregated layout and starts Dynamo's mocker in each worker's
mode; the frontend it names is the one that runs, and the results say they are simulated
and by what.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from disagg.launch.state import RunSummary
from disagg.plan.model import Plan
from run.conftest import disagg, wait_gone
from tiny_model import TinyModel

from .shipped_examples import EXAMPLES, pointed_at

pytestmark = pytest.mark.slow

RESOURCES = {
    "1p1d": (
        "  prefill_nodes: 1\n  prefill_workers: 1\n  decode_nodes: 0\n  decode_workers: 1\n"
        "  gpus_per_prefill: 1\n  gpus_per_decode: 1\n"
    ),
    "aggregated": "  agg_nodes: 1\n  agg_workers: 1\n  gpus_per_agg: 1\n",
}
# One setting per role in each engine's own spelling (the mocker reads none of them).
ROLE = {"vllm": "max-model-len: 2048", "trtllm": "max_seq_len: 2048"}


EXAMPLE = EXAMPLES / "dynamo" / "sim-1p1d-vllm-dynamo.yaml"


def recipe(tmp_path: Path, model: TinyModel, engine: str, layout: str) -> Path:
    """The shipped vLLM example for vLLM 1P1D (pointed at the tiny model), else its like."""
    path = tmp_path / f"{engine}-{layout}.yaml"
    if (engine, layout) == ("vllm", "1p1d"):
        return pointed_at(EXAMPLE, model, path)
    roles = ["prefill", "decode"] if layout == "1p1d" else ["aggregated"]
    config = "".join(f"    {role}:\n      {ROLE[engine]}\n" for role in roles)
    text = (
        f"name: sim-{engine}-{layout}-dynamo\n"
        f"model: {{path: {json.dumps(str(model.path))}, container: none, precision: bf16}}\n"
        f"resources:\n  gpu_type: sim\n  gpus_per_node: 8\n{RESOURCES[layout]}"
        f"backend:\n  type: {engine}\n  engine: sim\n  speedup_ratio: 1.0\n"
        f"  served_model_name: {json.dumps(model.served_name)}\n  {engine}_config:\n{config}"
        "frontend: {type: dynamo, enable_multiple_frontends: false}\n"
        "benchmark: {type: sa-bench, isl: 64, osl: 16, concurrencies: '1x4', req_rate: inf,"
        " num_prompts_mult: 2, num_warmup_mult: 1}\n"
    )
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("engine", "layout"), [("vllm", "1p1d"), ("trtllm", "1p1d"), ("vllm", "aggregated")]
)
def test_simulated_sweep_runs_through_the_real_dynamo_frontend_over_mockers(
    tmp_path: Path, tiny_model: TinyModel, engine: str, layout: str
) -> None:
    path = recipe(tmp_path, tiny_model, engine, layout)
    done = disagg("run", path, "--local", "--out", tmp_path / "runs", "--json", timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    run_dir = Path(json.loads(done.stdout)["run_dir"])
    plan = Plan.read(run_dir)
    assert plan.engine == "sim" and plan.config["backend"]["type"] == engine
    assert plan.frontend == "dynamo"
    assert plan.simulator == "dynamo.mocker"
    assert not [note for note in plan.ignored if note["field"] == "frontend.type"]
    workers = [r for r in plan.roles if r.kind.value in ("prefill", "decode", "aggregated")]
    assert [w.argv[1:3] for w in workers] == [["-m", "dynamo.mocker"]] * len(workers)
    assert plan.role("frontend").argv[1:3] == ["-m", "dynamo.frontend"]
    results = [json.loads(p.read_text()) for p in sorted((run_dir / "results").glob("*.json"))]
    assert len(results) == 2
    for result in results:
        assert result["valid"] is True and result["simulated"] is True
        assert result["failed"] == 0
        assert result["total_output_tokens"] == result["completed"] * plan.bench.osl
    log = (run_dir / "logs" / "frontend.log").read_text()
    # The frontend found the prefill mocker and routes prefill -> decode itself.
    assert ("Prefill router target activated" in log) is (layout == "1p1d")
    orchestrator = (run_dir / "logs" / "orchestrator.log").read_text()
    assert "simulated by dynamo.mocker" in orchestrator
    summary = RunSummary.model_validate_json((run_dir / "summary.json").read_text())
    assert wait_gone([pid for pids in summary.role_pids.values() for pid in pids]) == []
