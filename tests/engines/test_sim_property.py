"""The simulated engine runs what the engine would: over every planned variant of the
engine recipes written for these tests and of the team's corpus, simulated, each worker's
parallel sizes and GPU count are the plan's."""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path

from disagg.engines.sim.args import parse_args
from disagg.errors import UnsupportedRecipe
from disagg.plan.model import Plan, RoleKind
from disagg.plan.placement import place
from disagg.recipe.lint.runner import lint_paths
from disagg.recipe.variants import Variant, load_variants
from needs import SHARED_RECIPES, corpus
from recipes.recipe_helpers import bad_input

WORKER_KINDS = (RoleKind.PREFILL, RoleKind.DECODE, RoleKind.AGGREGATED)
DATA = Path(__file__).parent / "data"  # one small recipe per engine feature set
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def simulated(variant: Variant) -> Variant:
    """The variant on the simulated engine. A named Dynamo frontend would need the model as
    a local tokenizer directory (refused without one); these checks are about the workers,
    so Dynamo is left as the default frontend, which a simulated plan fronts with smg."""
    backend = variant.config.backend.model_copy(update={"engine": "sim"})
    update: dict[str, object] = {"backend": backend}
    frontend = variant.config.frontend
    if frontend is not None and frontend.type == "dynamo":
        update["frontend"] = None
    return dataclasses.replace(variant, config=variant.config.model_copy(update=update))


def bound(argv: list[str]) -> list[str]:
    return ["1" if "${" in arg else arg for arg in argv]


def simulated_workers_match(files: list[Path]) -> Counter[str]:
    """Check every simulated worker of `files`; the count checked, per engine."""
    checked: Counter[str] = Counter()
    short_or_over: dict[Path, set[str]] = {}  # files whose engines ask for other GPU counts
    for path in files:
        if bad_input(path):
            continue  # srtctl rejects it too (tests/recipes/test_corpus.py)
        for variant in load_variants(path):
            try:
                plan: Plan = place(simulated(variant))
            except UnsupportedRecipe:
                continue  # refused for a benchmark, frontend or field, never for its engine
            for role in plan.roles:
                if role.kind not in WORKER_KINDS:
                    continue
                sim = parse_args(bound(role.argv[4:]))
                assert role.argv[:4] == ["${run.python}", "-m", "disagg", "sim-engine"]
                # SGLang's own argv carries flags the simulator does not model; the others
                # get only the simulator's flags, each of which it reads.
                assert plan.backend == "sglang" or not sim.ignored, (path, role.name)
                par = role.parallel
                assert par is not None
                reading = (sim.tp_size, sim.dp_size, sim.ep_size, sim.pp_size, sim.gpus)
                assert reading == (par.tp, par.dp, par.ep, par.pp, par.gpus), (path, role.name)
                if sim.gpus != role.total_gpus:
                    short_or_over.setdefault(path, set()).add(variant.name)
                checked[plan.backend] += 1
    print(f"\nsimulated workers checked: {dict(checked)}")
    # Where an engine uses more or fewer GPUs than its worker gets, lint says so (DA005).
    for path, variants in short_or_over.items():
        flagged = {
            v.strip()
            for finding in lint_paths([path]).findings
            if finding.rule == "DA005" and "GPUs per worker" in finding.message
            for v in finding.message.rpartition(" [variants: ")[2][:-1].split(",")
        }
        assert variants <= flagged, (path, variants - flagged)
    return checked


def test_simulated_workers_of_the_engine_recipes_have_the_plans_sizes_and_gpus() -> None:
    files = sorted(DATA.rglob("*.yaml")) + sorted((EXAMPLES / "sim").glob("*.yaml"))
    checked = simulated_workers_match(files)
    assert checked["sglang"] >= 12 and checked["vllm"] >= 8 and checked["trtllm"] >= 8


@corpus
def test_simulated_workers_of_the_corpus_have_the_plans_parallel_sizes_and_gpus() -> None:
    files = [p for p in sorted(SHARED_RECIPES.rglob("*.yaml")) if "cluster-configs" not in p.parts]
    checked = simulated_workers_match(files)
    assert checked["sglang"] > 1000 and checked["vllm"] > 10 and checked["trtllm"] > 1000
