"""`disagg run --local` and `disagg submit` with real vLLM workers, from a recipe, end to end.

The workers start from exactly the command disagg renders for the recipe (engines/vllm.py);
the engine comes from its own environment (scripts/engine-env vllm), put first on the
workers' PATH by the cluster profile, as a container image would be on a cluster. Every
request of every point must succeed with exactly the requested output tokens, measured
by disagg's own load generator.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from slurm.conftest import job_state, wait_job_end
from tiny_model import TinyModel

from .vllm_support import NIXL_CPU_ENV, VLLM_CPU_ENV, with_env_path

pytestmark = [pytest.mark.real_engine, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
ISL, OSL = 48, 12
CONCURRENCIES = [1, 4]
# The prefill/decode tests are about the KV hand-over through each router: one point of
# four streams is enough, and saves the slow one-at-a-time point (the sweep is this file's).
PD_CONCURRENCIES = [4]
NUM_PROMPTS = 8
RUN_TIMEOUT_S = 900


def write_recipe(
    tmp_path: Path,
    model: TinyModel,
    *,
    disaggregated: bool,
    concurrencies: list[int] = CONCURRENCIES,
) -> Path:
    """A v1 recipe for the tiny model: one aggregated worker, or one prefill + one decode.

    The prefill/decode pair names no KV connector: the adapter's default, NIXL as srt-slurm
    renders it (`kv_role: kv_both`), runs as written on CPU, where vLLM keeps the KV
    buffer in host memory by itself.
    """
    worker = {
        "served-model-name": model.served_name,
        "max-model-len": model.max_model_len,
        "enforce-eager": True,
    }
    if disaggregated:
        resources: dict[str, Any] = {
            "prefill_nodes": 1,
            "prefill_workers": 1,
            "decode_nodes": 0,
            "decode_workers": 1,
            "gpus_per_prefill": 1,
            "gpus_per_decode": 1,
        }
        # No connector named: backend.connector's default (nixl, as srt-slurm) applies.
        config = {"prefill": dict(worker), "decode": dict(worker)}
    else:
        resources = {"agg_nodes": 1, "agg_workers": 1, "gpus_per_agg": 1}
        config = {"aggregated": worker}
    recipe = {
        "name": "vllm-pd" if disaggregated else "vllm-agg",
        "model": {"path": str(model.path), "container": "none", "precision": "fp32"},
        "resources": {"gpu_type": "cpu", "gpus_per_node": 8, **resources},
        "backend": {"type": "vllm", "vllm_config": config},
        # `vllm serve` workers behind smg; Dynamo's dynamo.vllm cannot start in this
        # engine environment (its multimodal imports need torchvision, which has no CPU
        # build for torch 2.13 here).
        "frontend": {"type": "smg", "enable_multiple_frontends": False},
        # vLLM on two CPU cores can leave /health unanswered for tens of seconds while
        # its first requests run (the API server starves beside its engine core and
        # NIXL's threads); the default liveness limit of 30 s is for GPU hosts, and so is
        # the 5 s serving gap that would make every such point invalid here.
        "limits": {"liveness_timeout": 600, "serving_gap": 600},
        "benchmark": {
            "type": "sa-bench",
            "isl": ISL,
            "osl": OSL,
            "concurrencies": "x".join(map(str, concurrencies)),
            "req_rate": "inf",
            "num_prompts": NUM_PROMPTS,
            "num_warmup_mult": 0,
        },
    }
    path = tmp_path / f"{recipe['name']}.yaml"
    with path.open("w") as handle:
        YAML().dump(recipe, handle)
    return path


def write_profile(tmp_path: Path, env_dir: Path, *, slurm: bool) -> Path:
    """This host's cluster profile, with the engine environment and vLLM's CPU settings."""
    profile: dict[str, Any] = {
        "name": "local-slurm" if slurm else "laptop",
        "executor": "slurm" if slurm else "local",
        "gpus_per_node": 8,
        "gpu_directive": "gres" if slurm else "none",
        "gpu_vendor": "nvidia",
        "exclusive": False,
        "network_interface": "lo",
        # Stats (with the KV transfer metrics) every second, not every ten.
        "env": with_env_path(
            env_dir, {**VLLM_CPU_ENV, **NIXL_CPU_ENV, "VLLM_LOG_STATS_INTERVAL": "1"}
        ),
    }
    if slurm:
        profile.update({"partition": "debug", "time_limit": "00:20:00", "pyxis": False})
    path = tmp_path / f"{profile['name']}.yaml"
    with path.open("w") as handle:
        YAML().dump(profile, handle)
    return path


def disagg(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "disagg", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=dict(os.environ),
        timeout=RUN_TIMEOUT_S,
        check=False,
    )


def assert_every_request_exact(
    run_dir: Path, points: int = len(CONCURRENCIES)
) -> list[dict[str, Any]]:
    """All `points` measured and valid; every request ok with exactly OSL output tokens."""
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "completed", summary
    assert [p["status"] for p in summary["points"]] == ["measured"] * points
    results = []
    for point in summary["points"]:
        result = json.loads(Path(point["result"]).read_text())
        assert result["valid"] is True, result["invalid_reason"]
        assert result["simulated"] is False
        assert result["completed"] == NUM_PROMPTS and result["failed"] == 0
        rows = Path(point["result"]).with_suffix(".jsonl").read_text().splitlines()
        for row in map(json.loads, rows):
            assert row["success"], row["error"]
            assert row["output_len"] == row["requested_output_len"] == OSL, row
            assert row["server_prompt_tokens"] == row["input_len"] == ISL, row
        results.append(result)
    return results


def run_locally(
    tmp_path: Path,
    env_dir: Path,
    model: TinyModel,
    *,
    disaggregated: bool,
    concurrencies: list[int] = CONCURRENCIES,
) -> tuple[Path, dict[str, Any]]:
    """`disagg run --local` of the test recipe, which must succeed: its run dir and plan."""
    recipe = write_recipe(tmp_path, model, disaggregated=disaggregated, concurrencies=concurrencies)
    profile = write_profile(tmp_path, env_dir, slurm=False)
    run_dir = tmp_path / "run"
    done = disagg("run", recipe, "--local", "--cluster", profile, "--out", run_dir, "--json")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return run_dir, json.loads((run_dir / "plan.json").read_text())


def test_aggregated_vllm_worker_runs_a_sweep_locally(
    vllm_env: Path, tiny_model: TinyModel, tmp_path: Path
) -> None:
    run_dir, plan = run_locally(tmp_path, vllm_env, tiny_model, disaggregated=False)
    [worker] = [r for r in plan["roles"] if r["kind"] == "aggregated"]
    assert worker["argv"][:2] == ["vllm", "serve"]
    assert_every_request_exact(run_dir)


@pytest.mark.slurm
def test_aggregated_vllm_worker_runs_as_a_slurm_job(
    slurm_cluster: list[str], vllm_env: Path, tiny_model: TinyModel, tmp_path: Path
) -> None:
    recipe = write_recipe(tmp_path, tiny_model, disaggregated=False)
    profile = write_profile(tmp_path, vllm_env, slurm=True)
    done = disagg("submit", recipe, "--cluster", profile, "--out", tmp_path / "run", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    [row] = json.loads(done.stdout)
    job_id, run_dir = str(row["job_id"]), Path(row["run_dir"])
    state = wait_job_end(job_id, timeout_s=RUN_TIMEOUT_S)
    log = run_dir / f"slurm-{job_id}.out"
    assert state == "COMPLETED", log.read_text() if log.exists() else job_state(job_id)
    assert json.loads((run_dir / "summary.json").read_text())["executor"] == "slurm"
    assert_every_request_exact(run_dir)
