"""One served model name per job, as srtctl computes it.

srt-slurm v1.0.68: `SrtConfig.served_model_name` (core/schema.py) is
`backend.get_served_model_name(Path(model.path).name)` after the cluster config's
`model_paths` alias is resolved (core/config.py); SGLang's and vLLM's
`get_served_model_name` (backends/sglang.py, backends/vllm.py) return the first
`served-model-name` written in the prefill, aggregated, decode settings; TRT-LLM's
returns the default. `build_worker_command` pops each role's own name and passes the one
name; sa-bench sends it (benchmarks/sa_bench.py).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from disagg.cluster import ClusterProfile, load_profile, resolve_model
from disagg.plan.model import Plan, RoleKind
from disagg.plan.placement import place
from disagg.plan.served_name import model_basename
from disagg.recipe.variants import load_variants

from .recipe_helpers import MINIMAL

Write = Callable[..., Path]


def _plan(write: Write, text: str, profile: Path | None = None) -> Plan:
    (variant,) = load_variants(write(text))
    return place(variant, load_profile(profile) if profile else None)


def _served(argv: list[str]) -> str:
    return argv[argv.index("--served-model-name") + 1]


def _names(plan: Plan) -> set[str]:
    workers = [r for r in plan.roles if r.kind in (RoleKind.PREFILL, RoleKind.DECODE)]
    return {_served(r.argv) for r in workers} | {plan.bench.model_name}


@pytest.mark.parametrize(
    ("written", "name"),
    [
        ("/models/Qwen3-32B", "Qwen3-32B"),
        ("qwen", "Qwen3-32B"),  # an alias: its target's basename
        ("hf:Qwen/Qwen3-32B", "Qwen3-32B"),
        ("Qwen/Qwen3-8B", "Qwen3-8B"),  # a directory in the working directory
        ("nope", "nope"),  # a name no alias defines is a directory too
    ],
)
def test_the_default_is_the_basename_of_the_resolved_model(
    written: str, name: str, tmp_path: Path
) -> None:
    profile = ClusterProfile(models={"qwen": "/models/Qwen3-32B/"})
    assert model_basename(resolve_model(written, profile, cwd=tmp_path)) == name


def test_workers_and_load_generator_use_the_basename_for_a_repo_and_an_alias(
    write: Write,
) -> None:
    text = MINIMAL.replace("hf:org/tiny", "hf:Qwen/Qwen3-32B")
    assert _names(_plan(write, text)) == {"Qwen3-32B"}
    profile = write(
        "partition: gpu\ngpus_per_node: 8\nmodels:\n  qwen: /lustre/models/Qwen3-32B\n",
        name="cluster.yaml",
    )
    aliased = _plan(write, MINIMAL.replace("hf:org/tiny", "qwen"), profile)
    assert _names(aliased) == {"Qwen3-32B"}


def test_a_written_name_is_taken_from_prefill_first_and_given_to_every_worker(
    write: Write,
) -> None:
    both = MINIMAL.replace(
        "    prefill:\n      tp-size: 8\n",
        "    prefill:\n      tp-size: 8\n      served-model-name: from-prefill\n",
    ).replace(
        "    decode:\n      tp-size: 8\n",
        "    decode:\n      tp-size: 8\n      served-model-name: from-decode\n",
    )
    plan = _plan(write, both)
    assert _names(plan) == {"from-prefill"}
    workers = [r for r in plan.roles if r.kind in (RoleKind.PREFILL, RoleKind.DECODE)]
    assert all(r.argv.count("--served-model-name") == 1 for r in workers)
    decode_only = MINIMAL.replace(
        "    decode:\n      tp-size: 8\n",
        "    decode:\n      tp-size: 8\n      served_model_name: from-decode\n",
    )
    plan = _plan(write, decode_only)
    assert _names(plan) == {"from-decode"}
    assert not any("served_model_name" in " ".join(r.argv) for r in plan.roles)


def test_the_frontend_routes_the_same_name(write: Write) -> None:
    text = MINIMAL.replace("hf:org/tiny", "hf:Qwen/Qwen3-32B").replace(
        "  type: sglang\n", "  type: dynamo\n"
    )
    plan = _plan(write, text)
    # Dynamo's frontend discovers the workers' name; disagg waits until it lists that name
    frontend = next(r for r in plan.roles if r.kind is RoleKind.ROUTER)
    assert frontend.health is not None and frontend.health.expect == '"Qwen3-32B"'
    assert _names(plan) == {"Qwen3-32B"}
