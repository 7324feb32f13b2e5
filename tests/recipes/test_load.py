"""The YAML loader: same values as ruamel's safe loader, plus positions, plus clear errors."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from disagg.errors import DisaggError
from disagg.recipe.load import load_yaml, parse_yaml

from .recipe_helpers import CORPUS


def test_values_match_ruamel_safe_loader_on_the_whole_corpus() -> None:
    reference = YAML(typ="safe", pure=False)
    files = sorted(CORPUS.rglob("*.yaml"))
    assert len(files) > 500
    for path in files:
        text = path.read_text()
        assert parse_yaml(text, file=str(path)).data == reference.load(text), path


def test_yaml_1_2_scalars() -> None:
    data = parse_yaml(
        "t: 03:00:00\nyes_: yes\non_: on\noct: 0o17\nhex: 0x1f\nf: 1e3\ninf: .inf\n"
        "nul: ~\nb: True\nq: '1'\nstamp: 2025-01-02\nneg: -4\nus: 1_000\n",
        file="x.yaml",
    ).data
    assert data["t"] == "03:00:00"  # YAML 1.1 would read 10800
    assert data["yes_"] == "yes" and data["on_"] == "on"
    assert data["oct"] == 15 and data["hex"] == 31 and data["f"] == 1000.0
    assert math.isinf(data["inf"]) and data["nul"] is None and data["b"] is True
    assert data["q"] == "1" and data["stamp"] == "2025-01-02"
    assert data["neg"] == -4 and data["us"] == 1000


def test_positions_of_keys_values_and_list_items() -> None:
    loaded = parse_yaml("a:\n  b: 1\n  c: [x, y]\n", file="f.yaml")
    assert str(loaded.source.locate(("a", "b"), key=True)) == "f.yaml:2:3"
    assert str(loaded.source.locate(("a", "b"))) == "f.yaml:2:6"
    assert str(loaded.source.locate(("a", "c", 1))) == "f.yaml:3:10"
    # unknown paths fall back to the nearest written ancestor
    assert str(loaded.source.locate(("a", "zzz", "q"))) == "f.yaml:2:3"


def test_positions_follow_aliases_and_ruamel_style_lc() -> None:
    text = "x-shared:\n  s: &s\n    k: 1\nuse:\n  v: *s\n"
    loaded = parse_yaml(text, file="f.yaml")
    assert loaded.data["use"]["v"] == {"k": 1}
    assert str(loaded.source.locate(("use", "v"))) == "f.yaml:5:6"  # the alias itself
    assert str(loaded.source.locate(("use", "v", "k"))) == "f.yaml:3:8"  # inside the anchor
    assert loaded.data["x-shared"].lc.value("s") == (1, 5)  # 0-based like ruamel


def test_merge_keys() -> None:
    data = parse_yaml("a: &a {x: 1, y: 2}\nb:\n  <<: *a\n  y: 3\n", file="f").data
    assert data["b"] == {"x": 1, "y": 3}
    lists = parse_yaml("a: &a {x: 1}\nc: &c {z: 2}\nb:\n  <<: [*a, *c]\n", file="f").data
    assert lists["b"] == {"x": 1, "z": 2}


@pytest.mark.parametrize(
    ("text", "expected", "where"),
    [
        ("a: [1, 2\nb: 3\n", "malformed YAML", "f.yaml:2:2"),
        ("a: 1\na: 2\n", "duplicate key 'a'", "f.yaml:2:1"),
        ("a: *nope\n", "undefined alias *nope", "f.yaml:1:4"),
        ("a: 1\n---\nb: 2\n", "several YAML documents", "f.yaml:2:1"),
        ("a: !!python/name:os.system x\n", "unsupported YAML tag", "f.yaml:1:4"),
        ("a: !!int abc\n", "'abc' is not a valid int", "f.yaml:1:4"),
        ("a: \x07\n", "unreadable YAML", "f.yaml:1:4"),
        ("# only a comment\n", "file is empty", "f.yaml"),
        ("[" * 150 + "]" * 150, "nested deeper", "f.yaml:1:"),
    ],
)
def test_bad_yaml_is_one_positioned_error(text: str, expected: str, where: str) -> None:
    with pytest.raises(DisaggError) as caught:
        parse_yaml(text, file="f.yaml")
    assert expected in caught.value.message
    assert str(caught.value.location).startswith(where)


def test_unreadable_files(tmp_path: Path) -> None:
    binary = tmp_path / "b.yaml"
    binary.write_bytes(b"name: x\n\x00\x01")
    latin = tmp_path / "l.yaml"
    latin.write_bytes(b"name: caf\xe9\n")
    cases = {
        binary: ("binary", ":2:1"),
        latin: ("not UTF-8", ":1:10"),
        tmp_path: ("a directory", ""),
        tmp_path / "missing.yaml": ("not found", ""),
    }
    for path, (expected, where) in cases.items():
        with pytest.raises(DisaggError) as caught:
            load_yaml(path)
        assert expected in str(caught.value)
        assert where in str(caught.value.location or "")
