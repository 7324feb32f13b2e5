"""The whole srt-slurm corpus: every file loads into typed variants; each variant either plans
or is reported with a one-line `unsupported: <what>`. Nothing else, and never a traceback."""

from __future__ import annotations

from collections import Counter

from disagg.errors import DisaggError, UnsupportedRecipe
from disagg.plan.model import Plan
from disagg.plan.placement import place
from disagg.recipe.variants import load_variants
from needs import corpus

from .recipe_helpers import BAD_INPUT, CORPUS, SHARED_RECIPES

pytestmark = corpus

# What runs for each `frontend.type` when the plan says nothing about it: the frontend it
# names (srt-slurm v1's `sglang` is the SGLang router, whose successor is smg).
RUNS = {
    "atomesh": {"atomesh", "smg (standing in for atomesh)"},
    "tilert-router": {"tilert-router", "smg (standing in for tilert-router)"},
    "dynamo": {"dynamo"},
    "sglang": {"smg", "sglang-router"},
    "sglang-router": {"smg", "sglang-router"},
    "smg": {"smg"},
    "trtllm_serve": {"trtllm-serve disaggregated", "trtllm-serve (direct)"},
    "sglang-direct": {"sglang (direct)"},  # schema 2's `sglang`
    "vllm-direct": {"vllm (direct)"},  # schema 2's `vllm`
    "vllm-router": {"vllm-router"},
}


def test_every_corpus_file_loads_and_every_variant_plans_or_is_unsupported() -> None:
    files = sorted(CORPUS.rglob("*.yaml"))
    assert len(files) == 555
    planned: Counter[str] = Counter()  # per engine
    refused: Counter[str] = Counter()
    unsupported: Counter[str] = Counter()
    for path in files:
        for variant in load_variants(path):  # any other DisaggError fails the test
            engine = variant.config.backend.type
            try:
                plan = place(variant)
            except UnsupportedRecipe as exc:
                text = str(exc)
                assert "\n" not in text and "unsupported: " in text, text
                unsupported[exc.what.split(" (")[0].split(" in variant")[0]] += 1
                refused[engine] += 1
                continue
            assert isinstance(plan, Plan) and plan.total_gpus > 0 and plan.engine == engine
            planned[engine] += 1
    total = sum(planned.values()) + sum(refused.values())
    print(
        f"\ncorpus: {len(files)} files, {total} variants: {sum(planned.values())} supported, "
        f"{sum(refused.values())} unsupported"
    )
    for engine in sorted(set(planned) | set(refused)):
        print(f"  {engine}: {planned[engine]} planned, {refused[engine]} unsupported")
    for what, count in unsupported.most_common():
        print(f"  unsupported: {what}: {count}")
    assert sum(planned.values()) >= 300
    # TRT-LLM prefill/decode recipes default to Dynamo: dynamo.trtllm workers plan.
    assert planned["vllm"] >= 5 and planned["trtllm"] >= 300 and planned["mocker"] >= 1
    # Refused for a named feature, never for the engine itself.
    assert set(unsupported) <= {
        "benchmark type gsm8k-bench",  # srt-slurm defines no such type (it has gsm8k)
    }


def test_every_shared_recipe_of_either_dialect_loads_and_plans_or_is_unsupported() -> None:
    """v1.0.68, the srt-slurm 2.x examples and InferenceX's sample: no file is bad input, and
    no variant that plans runs a frontend other than it names without saying so."""
    files = [p for p in sorted(SHARED_RECIPES.rglob("*.yaml")) if "cluster-configs" not in p.parts]
    assert len(files) >= 580
    outcomes: Counter[tuple[str, str]] = Counter()
    by_engine: Counter[tuple[str, str]] = Counter()  # (engine, planned | unsupported)
    reasons: Counter[str] = Counter()
    bad: dict[str, str] = {}
    for path in files:
        for variant in load_variants(path):  # any DisaggError fails the test
            engine = variant.config.backend.type
            try:
                plan = place(variant)
            except UnsupportedRecipe as exc:
                assert "\n" not in str(exc) and "unsupported: " in str(exc)
                outcomes[(variant.dialect, "unsupported")] += 1
                by_engine[(engine, "unsupported")] += 1
                reasons[exc.what.split(" (")[0].split(" in variant")[0]] += 1
                continue
            except DisaggError as exc:
                where = path.relative_to(SHARED_RECIPES).as_posix()
                if where not in BAD_INPUT:
                    raise
                bad[where] = exc.message.split(": ", 1)[-1]
                continue
            outcomes[(variant.dialect, "planned")] += 1
            by_engine[(engine, "planned")] += 1
            named = variant.config.frontend.type if variant.config.frontend else "dynamo"
            said = any(note["field"] == "frontend.type" for note in plan.ignored)
            assert said or plan.frontend in RUNS[named], (path, variant.name, plan.frontend)
    print(f"\nshared recipes: {len(files)} files")
    for (dialect, outcome), count in sorted(outcomes.items()):
        print(f"  {dialect}: {count} {outcome}")
    for engine in sorted({engine for engine, _ in by_engine}):
        planned, refused = by_engine[(engine, "planned")], by_engine[(engine, "unsupported")]
        print(f"  {engine}: {planned} planned, {refused} unsupported")
    for what, count in reasons.most_common():
        print(f"  unsupported: {what}: {count}")
    assert {where: bad.get(where, "") for where in BAD_INPUT} == BAD_INPUT
    # a role's own image and srun options run as written (srt-slurm 2.x's RoleConfig)
    assert not [what for what in reasons if what.endswith((".container", ".srun_options"))]
    # the rest name a feature srt-slurm itself does not define; a role's own engine is
    # not among them (srt-slurm's TileRT examples: a vllm prefill role, a tilert decode)
    assert set(reasons) <= {"frontend type infera", "benchmark type gsm8k-bench"}, reasons
    assert outcomes[("schema2", "planned")] >= 10
    assert outcomes[("v1", "planned")] >= 290
