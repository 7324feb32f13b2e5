"""`disagg check-model` and `disagg stage` as a user runs them: output and exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from disagg.plan.model import ModelToStage, StagingPlan

from .ckpt import shard_names, write_cache_entry, write_checkpoint
from .conftest import DRAFT, MAIN
from .hub_server import HubServer


def disagg(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "disagg", *args],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **(env or {})},
    )


def test_check_model_exit_codes_and_messages(tmp_path: Path) -> None:
    good = write_checkpoint(tmp_path / "good", shards=2)
    bad = write_checkpoint(tmp_path / "bad", shards=3)
    missing, cut = shard_names(bad)[:2]
    (bad / missing).unlink()
    os.truncate(bad / cut, (bad / cut).stat().st_size - 7)

    ok = disagg("check-model", str(good))
    assert ok.returncode == 0, ok.stderr
    assert "complete" in ok.stdout

    broken = disagg("check-model", str(bad))
    assert broken.returncode == 1
    assert f"{missing}: shard named by model.safetensors.index.json is missing" in broken.stdout
    assert f"{cut}: truncated" in broken.stdout and "(7 missing)" in broken.stdout
    assert "hint:" in broken.stdout
    assert "Traceback" not in broken.stdout + broken.stderr

    data = json.loads(disagg("check-model", str(bad), "--json").stdout)
    assert {p["kind"] for p in data["problems"]} == {"missing-shard", "truncated"}

    unusable = disagg("check-model", str(good / "config.json"))
    assert unusable.returncode == 2
    assert "is a file" in unusable.stderr and "Traceback" not in unusable.stderr


def test_check_model_by_repo_id_in_a_cache(tmp_path: Path) -> None:
    source = write_checkpoint(tmp_path / "src", shards=2)
    snapshot = write_cache_entry(tmp_path / "cache" / "hub", MAIN, source)
    found = disagg("check-model", MAIN, "--cache", str(tmp_path / "cache"), "--json")
    assert found.returncode == 0
    assert json.loads(found.stdout)["commit"] == snapshot.name
    absent = disagg("check-model", "org-z/none", "--cache", str(tmp_path / "cache"))
    assert absent.returncode == 1
    assert "not in the cache" in absent.stdout


def write_plan_dir(run_dir: Path, staging: StagingPlan) -> Path:
    """A run directory whose plan.json carries `staging` (the rest is a minimal valid plan)."""
    from disagg.plan.model import BenchPlan, Plan, PointPlan, SlurmPlan

    plan = Plan(
        name="t",
        selector="t.yaml:base",
        recipe_file="t.yaml",
        variant="base",
        engine="sglang",
        simulated=False,
        nodes=1,
        gpus_per_node=0,
        prefill_gpus=0,
        decode_gpus=0,
        disaggregated=False,
        roles=[],
        bench=BenchPlan(
            model_name="m", isl=8, osl=8, points=[PointPlan(concurrency=1, num_prompts=1)]
        ),
        staging=staging,
        slurm=SlurmPlan(job_name="t", nodes=1, gpus_per_node=0),
        config={},
    )
    run_dir.mkdir(parents=True)
    plan.write(run_dir)
    return run_dir


def test_stage_a_run_directory_dry_run_then_for_real(
    tmp_path: Path, hub: HubServer, hf_env: dict[str, str]
) -> None:
    models = [ModelToStage(repo_id=MAIN), ModelToStage(repo_id=DRAFT, purpose="draft")]
    run_dir = write_plan_dir(
        tmp_path / "run", StagingPlan(models=models, hf_cache=str(tmp_path / "cache"))
    )
    dry = disagg("stage", str(run_dir), "--dry-run", "--json", env=hf_env)
    assert dry.returncode == 0, dry.stderr
    [variant] = json.loads(dry.stdout)["variants"]
    assert [(m["repo_id"], m["purpose"], m["action"]) for m in variant["models"]] == [
        (MAIN, "main", "download"),
        (DRAFT, "draft", "download"),
    ]
    assert hub.downloads() == 0

    real = disagg("stage", str(run_dir), "--json", env=hf_env)
    assert real.returncode == 0, real.stderr
    staged = json.loads(real.stdout)["staged"]
    assert [(s["repo_id"], s["action"]) for s in staged] == [
        (MAIN, "downloaded"),
        (DRAFT, "downloaded"),
    ]

    dry = disagg("stage", str(run_dir), "--dry-run", env=hf_env)
    assert dry.stdout.count("present") == 2
