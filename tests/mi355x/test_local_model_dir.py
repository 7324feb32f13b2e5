"""The family as the MI355X cluster runs it: `model.path` a local directory outside every
cluster mount (`fixtures/fp4-disagg-fixed-seq.yaml`, the example with the original path).

srtctl mounts a local model directory at `/model` in every worker container and gives the
engines `/model` (srt-slurm v1.0.68 core/runtime.py `RuntimeContext.from_config`,
backends/sglang.py `build_worker_command`); the log directory is mounted at `/logs`.
So all 12 variants plan, with an srt-slurm cluster config of an AMD cluster in
InferenceX's form (tests/recipes/data/cluster-configs) and with disagg's own MI355X
profile, and every worker reads `/model`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from disagg.cluster import load_profile
from disagg.plan.from_recipe import plans_for
from disagg.plan.model import WORKER_KINDS
from disagg.recipe.lint import lint_paths
from slurm.golden_support import srun_lines

from .test_recipe_family import EXPECTED

ROOT = Path(__file__).resolve().parents[2]
RECIPE = Path(__file__).parent / "fixtures" / "fp4-disagg-fixed-seq.yaml"
MODEL_DIR = "/it-share/data/DeepSeek-R1-0528-MXFP4-v2"
CLUSTERS = {
    "inferencex": ROOT / "tests" / "recipes" / "data" / "cluster-configs" / "amd-east.yaml",
    "disagg": ROOT / "examples" / "clusters" / "mi355x.yaml",
}
NODES = ["mi355x-001", "mi355x-002", "mi355x-003"]
RUN_DIR = Path("/it-share/results/run-1")


def test_the_fixture_is_the_example_with_the_local_path() -> None:
    example = (ROOT / "examples" / "mi355x" / "dsr1-fp4-disagg.yaml").read_text()
    assert RECIPE.read_text() == example.replace('path: "dsr1-fp4"', f'path: "{MODEL_DIR}"')


@pytest.mark.parametrize("cluster", sorted(CLUSTERS))
def test_all_twelve_variants_plan_and_every_worker_reads_model(cluster: str) -> None:
    plans = plans_for([str(RECIPE)], CLUSTERS[cluster])
    assert sorted(p.variant for p in plans) == sorted(EXPECTED)
    for plan in plans:
        assert plan.slurm.container_mounts[MODEL_DIR] == "/model", plan.variant
        assert plan.staging.local_path == MODEL_DIR
        lines = srun_lines(plan, nodes=NODES, run_dir=RUN_DIR, model_path=MODEL_DIR)
        workers = [line for line in lines.splitlines() if "sglang.launch_server" in line]
        assert len(workers) == sum(
            1 for r in plan.roles if r.kind in WORKER_KINDS for _ in r.node_ranks
        )
        for line in workers:
            assert "--model-path /model " in line, plan.variant
            assert f"{MODEL_DIR}:/model" in line and f"{RUN_DIR}:/logs" in line
            assert f"--model-path {MODEL_DIR}" not in line
        # the recipe names its served model; every worker and the load generator use it
        assert plan.bench.model_name == "deepseek-ai/DeepSeek-R1-0528"


@pytest.mark.parametrize("cluster", sorted(CLUSTERS))
def test_lint_with_the_cluster_finds_nothing_to_refuse(cluster: str) -> None:
    report = lint_paths([RECIPE], load_profile(CLUSTERS[cluster]))
    assert [f for f in report.findings if f.severity.value != "info"] == []
    assert report.exit_code == 0
