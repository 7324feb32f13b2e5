"""Mutated recipes (keys, values, types, structure) never escape as anything but DisaggError."""

from __future__ import annotations

import random
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from disagg.errors import DisaggError
from disagg.plan.placement import place
from disagg.recipe.load import parse_yaml
from disagg.recipe.variants import load_variants

from .recipe_helpers import CORPUS

SEEDS = [
    path
    for path in sorted(CORPUS.rglob("*.yaml"))
    if "sglang" in path.read_text() and path.stat().st_size < 8000
][:40]
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 10_000),
    st.floats(allow_nan=False, allow_infinity=True),
    st.text(max_size=12),
    st.just("1x2x4"),
    st.just("inf"),
)
VALUES = st.one_of(
    SCALARS,
    st.lists(SCALARS, max_size=3),
    st.dictionaries(st.text(max_size=6), SCALARS, max_size=2),
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node[:3]):
            found += _paths(value, (*prefix, index))
    return found


def _mutate(doc: Any, rnd: random.Random, value: Any, key: str) -> Any:
    paths = [p for p in _paths(doc) if p]
    if not paths:
        return value
    path = rnd.choice(paths)
    parent = doc
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    action = rnd.randrange(5)
    if action == 0:
        parent[last] = value  # new value of any type
    elif action == 1 and isinstance(parent, dict):
        parent[key] = parent.pop(last)  # renamed key
    elif action == 2:
        del parent[last]  # dropped field
    elif action == 3:
        parent[last] = [parent[last]]  # wrapped in a list
    else:
        parent[last] = {key: parent[last]}  # wrapped in a map
    return doc


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    seed=st.sampled_from(SEEDS),
    rnd=st.randoms(use_true_random=False),
    value=VALUES,
    key=st.text(max_size=10),
    rounds=st.integers(1, 4),
)
def test_mutated_recipes_only_raise_disagg_errors(
    seed: Path, rnd: random.Random, value: Any, key: str, rounds: int
) -> None:
    doc = YAML(typ="safe", pure=False).load(seed.read_text())
    for _ in range(rounds):
        doc = _mutate(doc, rnd, value, key)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "mutated.yaml"
        yaml = YAML(typ="safe", pure=False)
        with path.open("w") as handle:
            yaml.dump(doc, handle)
        try:
            for variant in load_variants(path):
                place(variant)
        except DisaggError as exc:
            assert str(exc)


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list("ab:- []{}&*!#'\"\n\t0.,|>~%@`")), max_size=60))
def test_random_yaml_text_only_raises_disagg_errors(text: str) -> None:
    try:
        parse_yaml(text, file="f.yaml")
    except DisaggError as exc:
        assert exc.location is not None
