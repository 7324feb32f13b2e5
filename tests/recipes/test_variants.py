"""Override files, zip blocks and selectors: which variants come out and where their values live."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from disagg.errors import DisaggError
from disagg.recipe.selectors import parse_selector, select
from disagg.recipe.variants import load_variants

OVERRIDES = """\
x-shared:
  big: &big
    tp-size: 8
base:
  name: base-name
  model: {path: "hf:org/m", container: c, precision: fp8}
  resources:
    gpu_type: h100
    gpus_per_node: 8
    prefill_nodes: 1
    prefill_workers: 1
    decode_nodes: 1
    decode_workers: 1
  backend:
    sglang_config:
      prefill: {tp-size: 8}
      decode: {tp-size: 8, mem-fraction-static: 0.8}
  benchmark: {type: sa-bench, isl: 8, osl: 8, concurrencies: [1]}
override_dep8:
  name: dep8
  backend:
    sglang_config:
      decode:
        <<: *big
        mem-fraction-static: null
zip_override_scale:
  name: [s1, s2]
  resources:
    decode_nodes: [1, 2]
    decode_workers: [1, 2]
  benchmark:
    concurrencies: [[1, 2], [4]]
"""


@pytest.fixture
def recipe(write: Callable[..., Path]) -> Path:
    return write(OVERRIDES)


def test_every_variant_in_document_order_without_base(recipe: Path) -> None:
    names = [v.name for v in load_variants(recipe)]
    assert names == ["override_dep8", "zip_override_scale[0]", "zip_override_scale[1]"]


def test_override_merges_and_null_deletes(recipe: Path) -> None:
    (variant,) = load_variants(f"{recipe}:override_dep8")
    decode = variant.raw["backend"]["sglang_config"]["decode"]
    assert decode == {"tp-size": 8}
    assert variant.config.name == "dep8"
    assert variant.raw["resources"]["decode_workers"] == 1  # from base


def test_zip_takes_one_element_per_variant_and_literal_lists(recipe: Path) -> None:
    first, second = load_variants(f"{recipe}:zip_override_scale")
    assert (first.config.name, second.config.name) == ("s1", "s2")
    assert second.config.resources.decode_nodes == 2
    assert first.config.benchmark.concurrencies == [1, 2]
    assert second.config.benchmark.concurrencies == [4]


def test_locate_points_into_the_block_the_value_came_from(recipe: Path) -> None:
    (zipped,) = load_variants(f"{recipe}:zip_override_scale[1]")
    assert str(zipped.locate(("resources", "decode_nodes"))).endswith(":29:23")
    assert str(zipped.locate(("resources", "gpu_type"))).endswith(":8:15")  # base
    (override,) = load_variants(f"{recipe}:override_dep8")
    assert str(override.locate(("name",))).endswith(":20:9")
    assert str(override.locate(("backend", "sglang_config", "decode", "tp-size"))).endswith(
        ":3:14"
    )  # through the merge key into the x- block


def test_base_is_selectable_and_x_blocks_are_ignored(recipe: Path) -> None:
    (base,) = load_variants(f"{recipe}:base")
    assert base.config.name == "base-name" and "x-shared" not in base.raw


def test_globs_and_the_brackets_in_them(recipe: Path) -> None:
    assert [v.name for v in load_variants(f"{recipe}:*scale[1]")] == ["zip_override_scale[1]"]
    assert len(load_variants(f"{recipe}:*_*")) == 3


def test_select_rules() -> None:
    names = ["base", "override_a", "zip_override_b[0]", "zip_override_b[1]"]
    assert select(names, None, file="f") == names[1:]
    assert select(["base"], None, file="f") == ["base"]
    assert select(names, "zip_override_b", file="f") == names[2:]
    with pytest.raises(DisaggError, match="available: base, override_a"):
        select(names, "override_z", file="f")


def test_parse_selector_splits_on_the_last_colon(tmp_path: Path) -> None:
    assert parse_selector("a/b.yaml:override_x").pattern == "override_x"
    assert parse_selector("a/b.yaml").pattern is None
    odd = tmp_path / "has:colon.yaml"
    odd.write_text("x: 1")
    assert parse_selector(str(odd)).path == odd
