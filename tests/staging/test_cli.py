"""`disagg check-model` and `disagg stage` as a user runs them: output and exit codes."""

from __future__ import annotations

import io
import json
import os
import sys
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from unittest.mock import patch

from disagg.cli import main
from disagg.plan.model import ModelToStage, StagingPlan

from .ckpt import shard_names, write_cache_entry, write_checkpoint
from .conftest import DRAFT, MAIN, TOKENIZER
from .hub_server import HubServer


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


def disagg(*args: str, env: dict[str, str] | None = None) -> Result:
    """Run the CLI in this process (its real entry point), capturing output and exit code."""
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with (
        patch.dict(os.environ, env or {}),
        patch.object(sys, "argv", ["disagg", *args]),
        redirect_stdout(out),
        redirect_stderr(err),
    ):
        try:
            main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    return Result(code, out.getvalue(), err.getvalue())


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


RECIPE = Path(__file__).with_name("data") / "spec-decode.yaml"


def test_stage_a_recipe_fetches_main_draft_and_extra_once(
    tmp_path: Path, hub: HubServer, hf_env: dict[str, str]
) -> None:
    profile = tmp_path / "cluster.yaml"
    profile.write_text(f"name: test\ngpus_per_node: 8\nhf_cache: {tmp_path / 'cache'}\n")
    dry = disagg("stage", str(RECIPE), "--cluster", str(profile), "--dry-run", "--json", env=hf_env)
    assert dry.returncode == 0, dry.stderr
    variants = json.loads(dry.stdout)["variants"]
    assert [v["selector"].split(":")[1] for v in variants] == [
        "zip_override_conc[0]",
        "zip_override_conc[1]",
    ]
    for variant in variants:
        assert [(m["purpose"], m["repo_id"]) for m in variant["models"]] == [
            ("main", MAIN),
            ("draft", DRAFT),
            ("extra", TOKENIZER),
        ]

    real = disagg("stage", f"{RECIPE}:*", "--cluster", str(profile), "--json", env=hf_env)
    assert real.returncode == 0, real.stderr
    staged = json.loads(real.stdout)["staged"]
    assert sorted(s["repo_id"] for s in staged) == sorted([MAIN, DRAFT, TOKENIZER])
    assert all(s["action"] == "downloaded" for s in staged)
    assert all(n == 1 for repo in (MAIN, DRAFT, TOKENIZER) for n in hub.per_file(repo).values())


def test_stage_reports_bad_recipe_without_traceback(tmp_path: Path) -> None:
    result = disagg("stage", str(tmp_path / "absent.yaml"), "--dry-run")
    assert result.returncode == 2
    assert "absent.yaml" in result.stderr and "Traceback" not in result.stderr
