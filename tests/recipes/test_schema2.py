"""`schema: 2` recipes load into the same typed config as v1 and plan the same way."""

from __future__ import annotations

import random
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from disagg.errors import DisaggError, UnsupportedRecipe
from disagg.plan.placement import place
from disagg.recipe.variants import load_variants
from needs import corpus

from .recipe_helpers import MINIMAL, SHARED_RECIPES
from .test_fuzz import OWN_SEEDS, VALUES, _mutate

Write = Callable[..., Path]

SCHEMA2 = """\
schema: 2
name: tiny
model:
  path: hf:org/tiny
  container: sglang
  precision: bf16
resources:
  gpu_type: h100
  gpus_per_node: 8
engine: sglang
roles:
  prefill:
    nodes: 1
    workers: 1
    args:
      tp-size: 8
  decode:
    nodes: 1
    workers: 1
    args:
      tp-size: 8
benchmark:
  type: sa-bench
  isl: 1024
  osl: 128
  concurrencies: "1x4"
frontend:
  type: sglang-router
  enable_multiple_frontends: false
"""


def _comparable(plan: Any) -> Any:
    data = plan.model_dump(mode="json")
    for key in ("selector", "recipe_file", "config"):
        data.pop(key)
    return data


def test_schema2_plans_exactly_as_the_same_v1_recipe(write: Write) -> None:
    [v1] = load_variants(write(MINIMAL, "v1.yaml"))
    [two] = load_variants(write(SCHEMA2, "two.yaml"))
    assert two.dialect == "schema2" and v1.dialect == "v1"
    assert two.config == v1.config
    assert _comparable(place(two)) == _comparable(place(v1))


def test_per_role_settings_land_where_v1_keeps_them(write: Write) -> None:
    text = SCHEMA2.replace(
        "    workers: 1\n    args:\n      tp-size: 8\n  decode:",
        "    workers: 1\n    gpus: 4\n    env: {A: '1'}\n    args:\n      tp-size: 4\n  decode:",
    ).replace("  decode:\n    nodes: 1\n", "  decode:\n    nodes: colocate\n    gpus: 4\n")
    [variant] = load_variants(write(text))
    backend, resources = variant.config.backend, variant.config.resources
    assert backend.sglang_config is not None and backend.sglang_config.prefill == {"tp-size": 4}
    assert backend.prefill_environment == {"A": "1"}
    assert resources.decode_nodes == 0 and resources.gpus_per_prefill == 4
    plan = place(variant)
    assert plan.nodes == 1 and plan.total_gpus == 8


def test_override_file_with_schema_at_the_top_level(write: Write) -> None:
    body = "\n".join("  " + line if line else line for line in SCHEMA2.splitlines()[1:])
    text = (
        "schema: 2\nbase:\n" + body + "\noverride_big:\n  roles:\n    decode:\n"
        "      workers: 2\n      nodes: 2\n"
    )
    variants = load_variants(write(text))
    assert [v.name for v in variants] == ["override_big"]
    assert variants[0].config.resources.decode_workers == 2
    assert place(variants[0]).nodes == 3


def test_unknown_key_is_reported_against_schema2_keys_at_its_line(write: Write) -> None:
    path = write(SCHEMA2.replace("    workers: 1\n", "    workerz: 1\n", 1))
    with pytest.raises(DisaggError) as caught:
        load_variants(path)
    assert "unknown key `roles.prefill.workerz`" in caught.value.message
    assert caught.value.location is not None and caught.value.location.line == 14
    assert caught.value.hint is not None and "did you mean `workers`" in caught.value.hint


def test_a_v1_key_in_a_schema2_recipe_names_its_new_spelling(write: Write) -> None:
    path = write(SCHEMA2.replace("engine: sglang\n", "backend:\n  type: sglang\n"))
    with pytest.raises(DisaggError) as caught:
        load_variants(path)
    assert "`backend` is a v1 key" in caught.value.message and "`engine:`" in caught.value.message
    assert caught.value.location is not None and caught.value.location.line == 10


def test_plan_errors_point_at_the_schema2_lines(write: Write) -> None:
    text = SCHEMA2.replace(
        "      tp-size: 8\n  decode:", "      tp-size: 8\n    gpus: 16\n  decode:"
    )
    [variant] = load_variants(write(text))
    assert str(variant.locate(("resources", "gpus_per_prefill"))).endswith(":17:11")
    assert str(variant.locate(("backend", "sglang_config", "decode", "tp-size"))).endswith(":22:16")


def test_a_role_engine_beside_the_top_level_engine_is_bad_input(write: Write) -> None:
    """srt-slurm 2.x: one top-level engine or an engine on every role, never both."""
    text = SCHEMA2.replace(
        "  decode:\n    nodes: 1\n", "  decode:\n    engine: vllm\n    nodes: 1\n"
    )
    with pytest.raises(DisaggError, match=r"`roles.decode.engine` is written beside") as caught:
        load_variants(write(text))
    assert not isinstance(caught.value, UnsupportedRecipe)


def _schema2(path: Path) -> bool:
    text = path.read_text()
    return text.lstrip("# \n").startswith("schema: 2") or "\nschema: 2" in text


# The schema 2 recipes written in this repository, and the team's corpus's.
OWN_SCHEMA2 = [path for path in OWN_SEEDS if _schema2(path)]
SEEDS = [path for path in sorted(SHARED_RECIPES.rglob("*.yaml")) if _schema2(path)]


def _mutated_only_raise_disagg_errors(
    seed: Path, rnd: random.Random, value: Any, key: str, rounds: int
) -> None:
    doc = YAML(typ="safe", pure=True).load(seed.read_text())
    for _ in range(rounds):
        doc = _mutate(doc, rnd, value, key)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "mutated.yaml"
        with path.open("w") as handle:
            YAML(typ="safe", pure=True).dump(doc, handle)
        try:
            for variant in load_variants(path):
                place(variant)
        except DisaggError as exc:
            assert str(exc)


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    seed=st.sampled_from(OWN_SCHEMA2),
    rnd=st.randoms(use_true_random=False),
    value=VALUES,
    key=st.text(max_size=10),
    rounds=st.integers(1, 4),
)
def test_mutated_schema2_recipes_only_raise_disagg_errors(
    seed: Path, rnd: random.Random, value: Any, key: str, rounds: int
) -> None:
    assert len(OWN_SCHEMA2) >= 6
    _mutated_only_raise_disagg_errors(seed, rnd, value, key, rounds)


@corpus
@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    seed=st.sampled_from(SEEDS or [Path("missing")]),
    rnd=st.randoms(use_true_random=False),
    value=VALUES,
    key=st.text(max_size=10),
    rounds=st.integers(1, 4),
)
def test_mutated_schema2_corpus_recipes_only_raise_disagg_errors(
    seed: Path, rnd: random.Random, value: Any, key: str, rounds: int
) -> None:
    assert len(SEEDS) >= 20
    _mutated_only_raise_disagg_errors(seed, rnd, value, key, rounds)


def test_an_internal_only_key_is_unknown_in_a_v1_recipe(write: Write) -> None:
    path = write(MINIMAL + "role_overrides:\n  prefill: {container: other}\n")
    with pytest.raises(DisaggError) as caught:
        load_variants(path)
    assert "unknown key `role_overrides`" in caught.value.message
    where = len(MINIMAL.splitlines()) + 1  # the appended key's own line
    assert caught.value.location is not None and caught.value.location.line == where
