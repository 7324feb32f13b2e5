"""The scan records every node of a file as it composes it, in the order `walk` visits them,
so the rules that look at every node (DA004, DA005, DA011) see each one exactly once."""

from __future__ import annotations

from disagg.recipe.lint.nodes import scan, walk
from needs import SHARED_RECIPES, corpus

TRICKY = """\
x-shared: &common {env: {A: "1,2"}, list: [1, &item {b: 2}]}
base:
  <<: *common
  again: *item
  missing: *nowhere
  nested: [[1, 2], {c: [3]}]
override_a: {again: *common}
---
second: {not: linted}
"""


def _same(text: str) -> None:
    scanned = scan("r.yaml", text)
    assert scanned.root is not None
    walked = list(walk(scanned.root))
    assert len(walked) == len(scanned.nodes)
    assert all(a is b for a, b in zip(walked, scanned.nodes, strict=True))


def test_recorded_nodes_are_the_walk_with_aliases_merges_and_later_documents() -> None:
    _same(TRICKY)
    scanned = scan("r.yaml", TRICKY)
    values = [n.value for n in scanned.nodes if n.kind == "scalar"]
    assert "second" not in values  # only the first document is linted
    assert values.count("b") == 1  # an alias target is recorded once, where it is defined


@corpus
def test_recorded_nodes_are_the_walk_for_every_shared_recipe() -> None:
    files = sorted(SHARED_RECIPES.rglob("*.yaml"))
    assert len(files) >= 580  # the whole corpus, not what happens to be found
    for path in files:
        _same(path.read_text())


def test_text_libyaml_refuses_is_scanned_as_the_loader_reads_it() -> None:
    """libyaml refuses a `%YAML 1.3` directive that PyYAML's pure parser (and so the
    loader's fallback, and plan) reads: lint must not call that file a syntax error."""
    from disagg.recipe.load import parse_yaml

    text = "%YAML 1.3\n---\nname: x\nmodel: {path: /m}\n"
    assert parse_yaml(text, file="r.yaml").data == {"name": "x", "model": {"path": "/m"}}
    scanned = scan("r.yaml", text)
    assert scanned.syntax is None and scanned.root is not None
    _same(text)


def test_malformed_text_is_still_a_syntax_error_at_its_position() -> None:
    scanned = scan("r.yaml", "a: [1, 2\nb: 3\n")
    assert scanned.syntax is not None and scanned.syntax.line is not None
    assert scanned.syntax.message.startswith("YAML syntax error")
