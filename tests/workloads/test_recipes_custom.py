"""A `benchmark.type: custom` recipe plans with its command and environment in the plan
(every one of the team's corpus too, or is refused for a reason that is not the
benchmark's), and a variant the job would refuse is refused by `plan` first."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from disagg.errors import UnsupportedRecipe
from disagg.plan.model import RoleKind
from disagg.plan.placement import place
from disagg.recipe.variants import load_variants
from needs import SHARED_RECIPES, corpus
from recipes.recipe_helpers import bad_input

from .workload_support import disagg as run_cli

DATA = Path(__file__).parent / "data"  # recipes written for these tests
FIXED_SEQ = DATA / "custom-fixed-seq.yaml"
RECIPES = Path(__file__).resolve().parents[1] / "recipes"
MI355X = Path(__file__).resolve().parents[2] / "examples" / "mi355x" / "dsr1-fp4-disagg.yaml"


def disagg(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, env={"COLUMNS": "400", "PATH": "/usr/bin:/bin"})


def custom_variants_plan_with_command_and_env(files: list[Path]) -> int:
    """Plan every custom-benchmark variant of `files`; how many planned."""
    planned = 0
    for path in files:
        if "cluster-configs" in path.parts or bad_input(path):
            continue  # bad_input: srtctl rejects it too (tests/recipes/test_corpus.py)
        for variant in load_variants(path):
            section = variant.config.benchmark
            if section.type != "custom":
                continue
            try:
                plan = place(variant)
            except UnsupportedRecipe as exc:
                assert not exc.what.startswith("benchmark"), (variant.selector, exc.what)
                continue
            planned += 1
            assert plan.bench.command is not None and plan.bench.points == []
            assert plan.bench.command.argv == ["bash", "-lc", section.command]
            bench = next(role for role in plan.roles if role.kind is RoleKind.BENCH)
            assert bench.argv == plan.bench.command.argv
            for key, value in (section.env or {}).items():
                assert bench.env[key] == str(value), (variant.selector, key)
            assert bench.env["SRT_FRONTEND_URL"].endswith(".url}")
            assert bench.env["DISAGG_RESULTS_DIR"] == "${run.dir}/bench-results"
    return planned


def test_custom_recipes_plan_with_command_and_env() -> None:
    own = [FIXED_SEQ, DATA / "sim-custom.yaml", RECIPES / "data" / "schema2-agg-custom-bench.yaml"]
    assert custom_variants_plan_with_command_and_env(own) >= 3


@corpus
def test_custom_recipes_of_the_shared_corpora_plan_with_command_and_env() -> None:
    files = sorted(SHARED_RECIPES.rglob("*.yaml"))
    assert custom_variants_plan_with_command_and_env(files) >= 9


def test_plan_shows_the_custom_command_and_its_environment() -> None:
    human = disagg("plan", FIXED_SEQ)
    assert human.returncode == 0, human.stderr
    assert "srt_fixed_sequence.sh" in human.stdout
    assert "TOKENIZER=/model" in human.stdout and "SRT_FRONTEND_PORT=" in human.stdout
    assert "PREFILL_TP=4" in human.stdout and "DECODE_TP=8" in human.stdout

    shown = disagg("plan", FIXED_SEQ, "--json")
    assert shown.returncode == 0, shown.stderr
    plan = json.loads(shown.stdout)["variants"][0]
    assert plan["bench"]["type"] == "custom"
    assert plan["bench"]["command"]["env"]["ISL"] == "8192"
    bench = next(role for role in plan["roles"] if role["kind"] == "bench")
    assert bench["argv"][:2] == ["bash", "-lc"] and bench["env"]["ISL"] == "8192"


def test_mi355x_family_plans_every_variant_with_its_benchmark() -> None:
    plans = [place(variant) for variant in load_variants(MI355X)]
    assert len(plans) == 12
    assert all(plan.bench.type == "sa-bench" and plan.bench.points for plan in plans)
    assert all("concNone" not in [p.key for p in plan.bench.points] for plan in plans)


def test_a_benchmark_the_job_would_refuse_is_refused_by_plan(tmp_path: Path) -> None:
    recipe = tmp_path / "r.yaml"
    text = (Path(__file__).parent / "data" / "sim-custom.yaml").read_text()
    recipe.write_text(text.replace("    type: custom\n", "    type: mmlu\n", 1))
    done = disagg("plan", f"{recipe}:base")
    assert done.returncode == 2, done.stdout
    assert "unsupported: benchmark type mmlu (an accuracy benchmark" in " ".join(
        (done.stdout + done.stderr).split()
    )
    field = tmp_path / "f.yaml"
    field.write_text(text.replace("  benchmark:\n", "  benchmark:\n    num_shots: 5\n", 1))
    done = disagg("plan", f"{field}:base")
    assert done.returncode == 2, done.stdout
    assert "unsupported: benchmark.num_shots (benchmark.type custom does not read it)" in (
        " ".join((done.stdout + done.stderr).split())
    )


MI355X_CUSTOM = """
override_custom_fixed_seq:
  name: "mi355x-dsr1-fp4-custom-fixed-seq"
  benchmark:
    type: custom
    concurrencies: [4, 8]
    command: bash /infmax-workspace/benchmarks/multi_node/srt_fixed_sequence.sh
    env:
      TOKENIZER: /model

override_custom_own_image:
  name: "mi355x-dsr1-fp4-custom-own-image"
  benchmark:
    type: custom
    command: run-client --url "$SRT_FRONTEND_URL"
    container_image: "docker://example/bench-client:1"
"""


def test_a_custom_variant_of_the_mi355x_family_runs_in_the_jobs_container(tmp_path: Path) -> None:
    from disagg.plan.from_recipe import plans_for

    recipe = tmp_path / "family.yaml"
    recipe.write_text(MI355X.read_text() + MI355X_CUSTOM)
    profile = MI355X.parents[1] / "clusters" / "mi355x.yaml"
    fixed, own = plans_for([f"{recipe}:override_custom_*"], profile)

    bench = next(role for role in fixed.roles if role.kind is RoleKind.BENCH)
    assert fixed.slurm.container_image and bench.container_image == fixed.slurm.container_image
    # The sa-bench base's load fields reach the command instead of being dropped.
    assert bench.env["NUM_PROMPTS_MULT"] == "10" and bench.env["REQ_RATE"] == "inf"
    assert bench.env["ISL"] == "8192" and bench.env["CONC_LIST"] == "4 8"
    assert bench.env["PREFILL_TP"] == "8" and bench.env["TOKENIZER"] == "/model"
    own_bench = next(role for role in own.roles if role.kind is RoleKind.BENCH)
    assert own_bench.container_image == "docker://example/bench-client:1"


def test_a_benchmark_field_without_effect_is_listed_as_ignored_with_why() -> None:
    recipe = DATA / "sa-bench-custom-tokenizer.yaml"
    plan = place(load_variants(recipe)[0])
    ignored = {item["field"]: item["why"] for item in plan.ignored}
    assert "tokenizer.json" in ignored["benchmark.custom_tokenizer"]
    shown = disagg("plan", recipe)
    assert "benchmark.custom_tokenizer" in shown.stdout
