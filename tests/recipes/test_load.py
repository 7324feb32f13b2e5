"""The YAML loader: same values as ruamel's safe loader, plus positions, plus clear errors."""

from __future__ import annotations

import datetime
import math
from pathlib import Path
from typing import Any

import pytest
import yaml

from disagg.errors import DisaggError
from disagg.recipe.load import load_yaml, parse_yaml
from needs import corpus

from .recipe_helpers import SHARED_RECIPES


def _dates_as_text(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _dates_as_text(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_dates_as_text(item) for item in value]
    return value.isoformat() if isinstance(value, datetime.date) else value


@corpus
def test_values_match_srt_slurms_pyyaml_loader_on_every_shared_recipe() -> None:
    """srt-slurm reads recipes with PyYAML's safe_load: same values, file by file."""
    files = sorted(SHARED_RECIPES.rglob("*.yaml"))
    assert len(files) > 580
    for path in files:
        text = path.read_text()
        expected = _dates_as_text(yaml.safe_load(text))
        assert parse_yaml(text, file=str(path)).data == expected, path


def test_yaml_1_1_scalars_as_pyyaml_reads_them() -> None:
    text = (
        "t: 03:00:00\nt2: 1:30:00\nyes_: yes\non_: On\nno_: NO\noff_: off\noct: 017\n"
        "oct2: 0o17\nhex: 0x1f\nf: 1e3\ng: 1.5e+3\ninf: .inf\nnul: ~\nb: True\nq: '1'\n"
        "stamp: 2025-01-02\nneg: -4\nus: 1_000\non: key\n"
    )
    data = parse_yaml(text, file="x.yaml").data
    assert data == _dates_as_text(yaml.safe_load(text))
    assert data["t"] == "03:00:00" and data["t2"] == 5400  # 1.1 sexagesimal needs 1-9 first
    assert data["yes_"] is True and data["on_"] is True
    assert data["no_"] is False and data["off_"] is False
    assert data["oct"] == 15 and data["oct2"] == "0o17" and data["hex"] == 31
    assert data["f"] == "1e3" and data["g"] == 1500.0
    assert math.isinf(data["inf"]) and data["nul"] is None and data["b"] is True
    assert data["q"] == "1" and data["stamp"] == "2025-01-02"
    assert data["neg"] == -4 and data["us"] == 1000 and data[True] == "key"


def test_duplicate_keys_load_last_one_wins_and_is_located() -> None:
    text = "a:\n  x: 1\n  y: [1, 2, 3]\n  x: 2\n  y: [9]\nb: 3\n"
    loaded = parse_yaml(text, file="f.yaml")
    assert loaded.data == {"a": {"x": 2, "y": [9]}, "b": 3} == yaml.safe_load(text)
    assert str(loaded.source.locate(("a", "x"))) == "f.yaml:4:6"  # the value that counts
    assert loaded.source.find(("a", "y", 1)) is None  # the replaced list's items are gone


def test_valid_flow_map_with_colons_in_a_plain_value_is_not_malformed() -> None:
    """ruamel's C scanner refuses this; PyYAML and ruamel's pure parser read it."""
    text = "model:\n  container: {image: org/image:tag-20260901-07c8f729, pull: true}\n"
    loaded = parse_yaml(text, file="f.yaml")
    assert loaded.data == yaml.safe_load(text)
    assert loaded.data["model"]["container"]["image"] == "org/image:tag-20260901-07c8f729"
    assert str(loaded.source.locate(("model", "container", "pull"))) == "f.yaml:2:61"


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
