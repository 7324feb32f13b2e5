"""Mutated recipes (keys, values, types, structure) never escape as anything but DisaggError."""

from __future__ import annotations

import copy
import random
import tempfile
import tracemalloc
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from disagg.errors import DisaggError
from disagg.plan.placement import place
from disagg.recipe.limits import MAX_DEPTH, MAX_NODES, expanded_size
from disagg.recipe.lint import lint_paths
from disagg.recipe.load import parse_yaml
from disagg.recipe.variants import load_variants
from needs import corpus

from .recipe_helpers import CORPUS, MINIMAL, alias_bomb, deep_block, deep_flow

MEMORY_BOUND = 96 * 2**20  # everything a file within MAX_NODES may build, with margin

TESTS = Path(__file__).resolve().parents[1]
# The recipes written in this repository (examples and test inputs), and the team's corpus.
OWN_SEEDS = [
    path
    for path in sorted([*TESTS.parent.glob("examples/*/*.yaml"), *TESTS.glob("*/data/**/*.yaml")])
    if "clusters" not in path.parts
    and "cluster-configs" not in path.parts
    and "model:" in path.read_text()
]
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
        # a copy: the same list or map inserted twice, once inside itself, makes a cycle
        # this walk never ends on (a recursive alias is not what this test mutates into)
        parent[last] = copy.deepcopy(value)  # new value of any type
    elif action == 1 and isinstance(parent, dict):
        parent[key] = parent.pop(last)  # renamed key
    elif action == 2:
        del parent[last]  # dropped field
    elif action == 3:
        parent[last] = [parent[last]]  # wrapped in a list
    else:
        parent[last] = {key: parent[last]}  # wrapped in a map
    return doc


def _mutated_only_raise_disagg_errors(
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


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    seed=st.sampled_from(OWN_SEEDS),
    rnd=st.randoms(use_true_random=False),
    value=VALUES,
    key=st.text(max_size=10),
    rounds=st.integers(1, 4),
)
def test_mutated_recipes_only_raise_disagg_errors(
    seed: Path, rnd: random.Random, value: Any, key: str, rounds: int
) -> None:
    assert len(OWN_SEEDS) >= 30
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
def test_mutated_corpus_recipes_only_raise_disagg_errors(
    seed: Path, rnd: random.Random, value: Any, key: str, rounds: int
) -> None:
    assert len(SEEDS) == 40
    _mutated_only_raise_disagg_errors(seed, rnd, value, key, rounds)


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list("ab:- []{}&*!#'\"\n\t0.,|>~%@`")), max_size=60))
def test_random_yaml_text_only_raises_disagg_errors(text: str) -> None:
    try:
        parse_yaml(text, file="f.yaml")
    except DisaggError as exc:
        assert exc.location is not None


def _nested_aliases(levels: int, fanout: int, as_map: bool, used: bool) -> str:
    """An alias chain in list or map form (maps via `<<` merges and keyed aliases)."""
    if not as_map:
        return alias_bomb(levels, fanout, used=used)
    lines = ["x-l0: &l0 {" + ", ".join(f"k{i}: lol" for i in range(fanout)) + "}"]
    for level in range(1, levels + 1):
        items = ", ".join(f"k{i}: *l{level - 1}" for i in range(fanout))
        lines.append(f"x-l{level}: &l{level} {{<<: *l{level - 1}, {items}}}")
    recipe = MINIMAL.replace("backend:\n", f"backend:\n  extra: *l{levels}\n") if used else MINIMAL
    return "\n".join(lines) + "\n" + recipe


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    levels=st.integers(1, 12),
    fanout=st.integers(2, 12),
    as_map=st.booleans(),
    used=st.booleans(),
)
def test_alias_bombs_are_refused_within_memory_and_node_bounds(
    levels: int, fanout: int, as_map: bool, used: bool
) -> None:
    text = _nested_aliases(levels, fanout, as_map, used)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bomb.yaml"
        path.write_text(text)
        refused = False
        tracemalloc.start()
        try:
            try:
                loaded = parse_yaml(text, file="bomb.yaml")
            except DisaggError as exc:
                assert "alias *l" in exc.message
                refused = True
            else:  # what loads is within the node bound, and so is every variant
                assert expanded_size(loaded.data, MAX_NODES + 1) <= MAX_NODES
                try:
                    for variant in load_variants(path):
                        assert expanded_size(variant.raw, MAX_NODES + 1) <= MAX_NODES
                except DisaggError as exc:
                    assert str(exc)
            report = lint_paths([path])
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert peak < MEMORY_BOUND
    # lint and the loader count the same way: both refuse the same files
    assert any("alias *l" in f.message for f in report.findings) == refused
    assert (report.exit_code == 2) == refused


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    depth=st.one_of(st.integers(1, 3000), st.integers(MAX_DEPTH - 3, MAX_DEPTH + 3)),
    flow=st.booleans(),
)
def test_deep_nesting_is_a_clean_error_past_the_depth_limit(depth: int, flow: bool) -> None:
    text = (deep_flow if flow else deep_block)(depth)
    # the innermost map sits `depth` levels down (flow) or one more (block: `b: 1`)
    too_deep = depth >= (MAX_DEPTH if flow else MAX_DEPTH - 1)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "deep.yaml"
        path.write_text(text)
        try:
            parse_yaml(text, file="deep.yaml")
        except DisaggError as exc:
            assert too_deep and "nested deeper" in exc.message
        else:
            assert not too_deep
        report = lint_paths([path])
    deep = [f for f in report.findings if "nested deeper" in f.message]
    assert bool(deep) == too_deep
    assert report.exit_code == 2 if deep else report.exit_code in (0, 1)
