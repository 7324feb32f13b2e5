"""Override-file merge and zip rules, as recipe authors rely on them."""

from __future__ import annotations

import copy
from io import StringIO
from typing import Any

import pytest
from ruamel.yaml import YAML

from disagg.errors import DisaggError
from disagg.recipe.overrides import deep_merge, expand_variants, expand_zip
from needs import CORPUS, corpus


def rt_load(text: str) -> Any:
    return YAML(typ="rt").load(StringIO(text))


def test_maps_merge_lists_and_scalars_replace_none_deletes() -> None:
    base = {"a": {"x": 1, "y": [1, 2, 3], "z": "keep"}, "b": 2, "gone": {"deep": 1}}
    override = {"a": {"x": 10, "y": [9]}, "b": None, "gone": None, "new": {"k": [1]}}
    assert deep_merge(base, override) == {
        "a": {"x": 10, "y": [9], "z": "keep"},
        "new": {"k": [1]},
    }


def test_none_inside_a_new_map_deletes_too() -> None:
    assert deep_merge({"a": 1}, {"env": {"A": "1", "B": None}}) == {"a": 1, "env": {"A": "1"}}


def test_map_replaces_scalar_and_scalar_replaces_map() -> None:
    assert deep_merge({"a": 1, "b": {"c": 1}}, {"a": {"x": 1}, "b": 3}) == {"a": {"x": 1}, "b": 3}


def test_inputs_not_mutated_and_result_shares_nothing() -> None:
    base = {"a": {"l": [1, [2]]}, "m": {"n": {"o": 1}}}
    override = {"m": {"n": {"p": 2}}, "q": [{"r": 1}]}
    before = (copy.deepcopy(base), copy.deepcopy(override))
    merged = deep_merge(base, override)
    merged["a"]["l"][1].append(3)
    merged["m"]["n"]["o"] = 5
    merged["q"][0]["r"] = 7
    assert (base, override) == before


def test_result_is_plain_even_from_ruamel_input() -> None:
    doc = rt_load("base:\n  a: {b: [1, 2]}\noverride_x:\n  a: {c: 3}\n")
    merged = deep_merge(doc["base"], doc["override_x"])
    assert type(merged) is dict and type(merged["a"]) is dict
    assert type(merged["a"]["b"]) is list
    assert merged == {"a": {"b": [1, 2], "c": 3}}


def test_zip_by_index_with_broadcast_and_literal_lists() -> None:
    block = {
        "name": ["a", "b", "c"],
        "resources": {"decode_nodes": [1, 2, 4], "prefill_nodes": 1, "gpus": [8]},
        "benchmark": {"concurrencies": [[4, 8], [4, 8], [4]]},
    }
    out = expand_zip(block, block_name="zip_override_t", file="f.yaml")
    assert out == [
        {
            "name": "a",
            "resources": {"decode_nodes": 1, "prefill_nodes": 1, "gpus": 8},
            "benchmark": {"concurrencies": [4, 8]},
        },
        {
            "name": "b",
            "resources": {"decode_nodes": 2, "prefill_nodes": 1, "gpus": 8},
            "benchmark": {"concurrencies": [4, 8]},
        },
        {
            "name": "c",
            "resources": {"decode_nodes": 4, "prefill_nodes": 1, "gpus": 8},
            "benchmark": {"concurrencies": [4]},
        },
    ]


def test_zip_of_only_broadcast_lists_gives_one_variant_and_without_lists_is_refused() -> None:
    # srt-slurm `_determine_zip_length`: all-length-1 lists give N=1; no list at all raises
    # "zip_override section contains no list values — nothing to zip"
    with pytest.raises(DisaggError, match="no list values"):
        expand_zip({"a": 1}, block_name="z", file="f")
    assert expand_zip({"a": [1], "b": {"c": [[1, 2]]}}, block_name="z", file="f") == [
        {"a": 1, "b": {"c": [1, 2]}}
    ]


def test_zip_mismatch_names_every_leaf_with_position() -> None:
    doc = rt_load(
        "zip_override_t:\n"
        "  name: [a, b]\n"
        "  backend:\n"
        "    sglang_config:\n"
        "      decode:\n"
        "        tensor-parallel-size: [4, 8, 16]\n"
        "  mem: [0.8]\n"
    )
    with pytest.raises(DisaggError) as info:
        expand_zip(doc["zip_override_t"], block_name="zip_override_t", file="r.yaml")
    text = str(info.value)
    assert "r.yaml:2:9: name has 2" in text
    assert "r.yaml:6:31: backend.sglang_config.decode.tensor-parallel-size has 3" in text
    assert "r.yaml:7:8: mem has 1" in text
    assert "zip_override_t" in text
    assert info.value.exit_code == 2


def test_zip_mismatch_on_plain_dict_names_leaves_without_position() -> None:
    with pytest.raises(DisaggError, match=r"a has 2; f: b.c has 3"):
        expand_zip({"a": [1, 2], "b": {"c": [1, 2, 3]}}, block_name="z", file="f")


def test_zip_empty_list_is_an_error_with_hint() -> None:
    with pytest.raises(DisaggError) as info:
        expand_zip({"a": []}, block_name="z", file="f")
    assert "empty list" in str(info.value) and "[[" in str(info.value)


def test_zip_none_element_deletes_key_in_that_variant() -> None:
    doc = {
        "base": {"env": {"A": "1", "B": "2"}},
        "zip_override_z": {"env": {"B": ["3", None]}},
    }
    # named as srtctl names a zip variant of a base without a name: unnamed_<group>_<i>
    assert expand_variants(doc, file="f") == {
        "zip_override_z[0]": {"env": {"A": "1", "B": "3"}, "name": "unnamed_z_0"},
        "zip_override_z[1]": {"env": {"A": "1"}, "name": "unnamed_z_1"},
    }


def test_flat_doc_is_one_base_variant_without_x_keys() -> None:
    doc = {"x-shared": {"a": 1}, "name": "n", "model": {"path": "m"}}
    assert expand_variants(doc, file="f") == {"base": {"name": "n", "model": {"path": "m"}}}


def test_variants_in_document_order_base_excluded_x_ignored() -> None:
    doc = rt_load(
        "base: {name: b, k: 1}\n"
        "x-shared: {anything: [1]}\n"
        "zip_override_z: {k: [2, 3]}\n"
        "override_o: {k: 4}\n"
        "override_empty:\n"
    )
    variants = expand_variants(doc, file="f")
    assert list(variants) == [
        "zip_override_z[0]",
        "zip_override_z[1]",
        "override_o",
        "override_empty",
    ]
    # job names as srtctl's generate_override_configs gives them
    assert variants["zip_override_z[1]"] == {"name": "b_z_1", "k": 3}
    assert variants["override_o"] == {"name": "b_o", "k": 4}
    assert variants["override_empty"] == {"name": "b_empty", "k": 1}


def test_override_without_base_is_an_error() -> None:
    doc = rt_load("name: n\noverride_o: {k: 4}\n")
    with pytest.raises(DisaggError, match=r"f:2:13: `override_o` needs a `base:` block"):
        expand_variants(doc, file="f")


def test_stray_top_level_key_in_override_file_is_an_error() -> None:
    doc = rt_load("base: {k: 1}\nname: n\noverride_o: {k: 4}\n")
    with pytest.raises(DisaggError, match=r"unexpected top-level key `name`"):
        expand_variants(doc, file="f")


def test_non_map_block_is_an_error() -> None:
    with pytest.raises(DisaggError, match="`override_o` must be a map"):
        expand_variants({"base": {}, "override_o": [1]}, file="f")


def test_aliases_shared_between_variants_expand_independently() -> None:
    doc = rt_load("base: {k: 1}\noverride_a:\n  bs: &bs [1, 2, 4]\noverride_b:\n  bs: *bs\n")
    variants = expand_variants(doc, file="f")
    variants["override_a"]["bs"].append(8)
    assert variants["override_b"]["bs"] == [1, 2, 4]


@corpus
def test_corpus_override_files_expand() -> None:
    """Every zip/override file in the corpus expands; names zip with the other leaves."""
    yaml = YAML(typ="rt")
    total = 0
    for path in sorted(CORPUS.rglob("*.yaml")):
        text = path.read_text()
        if "override_" not in text:
            continue
        variants = expand_variants(yaml.load(text), file=str(path))
        assert variants and "base" not in variants
        names = [v.get("name") for v in variants.values()]
        assert all(isinstance(n, str) for n in names)
        total += len(variants)
    assert total > 50
