"""Variant job names, zip blocks without lists, the `*` selector and `sweep:` as srtctl does them.

The reference is srt-slurm's `srtctl/core/config.py` (`generate_override_configs`,
`expand_zip_override`, `_determine_zip_length`, `_expand_wildcard`) and
`srtctl/core/sweep.py` (`generate_sweep_configs`, `expand_template`), identical in
v1.0.68 and 2.x.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from disagg.errors import DisaggError
from disagg.recipe.variants import load_variants

from .recipe_helpers import MINIMAL

BASE = "base:\n" + "".join(f"  {line}\n" for line in MINIMAL.splitlines())


def _names(path: Path, pattern: str | None = None) -> list[tuple[str, str]]:
    return [(v.name, v.config.name) for v in load_variants(path, pattern=pattern)]


def test_an_override_without_a_name_runs_as_base_name_underscore_suffix(
    write: Callable[..., Path],
) -> None:
    # generate_override_configs: merged["name"] = f"{base_name}_{suffix}" unless the block names it
    path = write(BASE + "override_big:\n  benchmark: {osl: 256}\noverride_own:\n  name: mine\n")
    assert _names(path) == [("override_big", "tiny_big"), ("override_own", "mine")]


def test_a_zip_variant_runs_as_base_name_group_index_unless_the_block_lists_names(
    write: Callable[..., Path],
) -> None:
    # expand_zip_override: f"{base_name}_{group_name}_{i}"; a list of names wins, a scalar
    # name does not (it would name every variant alike)
    path = write(
        BASE
        + "zip_override_isl:\n  benchmark: {isl: [256, 512]}\n"
        + "zip_override_named:\n  name: [a, b]\n  benchmark: {isl: [256, 512]}\n"
        + "zip_override_scalar:\n  name: same\n  benchmark: {isl: [256, 512]}\n"
    )
    assert _names(path) == [
        ("zip_override_isl[0]", "tiny_isl_0"),
        ("zip_override_isl[1]", "tiny_isl_1"),
        ("zip_override_named[0]", "a"),
        ("zip_override_named[1]", "b"),
        ("zip_override_scalar[0]", "tiny_scalar_0"),
        ("zip_override_scalar[1]", "tiny_scalar_1"),
    ]


def test_a_zip_block_with_no_list_is_refused_where_it_is_written(
    write: Callable[..., Path],
) -> None:
    # _determine_zip_length: "zip_override section contains no list values — nothing to zip"
    path = write(BASE + "zip_override_flat:\n  benchmark: {isl: 256}\n")
    with pytest.raises(DisaggError) as caught:
        load_variants(path)
    assert "zip_override_flat" in str(caught.value)
    assert "no list values" in str(caught.value)
    assert caught.value.location is not None and caught.value.location.file == str(path)


def test_a_glob_never_selects_base_but_base_selects_itself(write: Callable[..., Path]) -> None:
    # _expand_wildcard: "base always excluded"; selector == "base" returns base
    path = write(BASE + "override_big:\n  benchmark: {osl: 256}\n")
    assert [name for name, _ in _names(path, "*")] == ["override_big"]
    assert _names(path, "base") == [("base", "tiny")]


def test_a_glob_matching_only_base_finds_nothing(write: Callable[..., Path]) -> None:
    path = write(BASE + "override_big:\n  benchmark: {osl: 256}\n")
    with pytest.raises(DisaggError, match="no variant matches"):
        load_variants(path, pattern="b*")


def test_a_flat_recipe_is_its_own_one_variant_under_any_glob(write: Callable[..., Path]) -> None:
    # submit: a selector on a config without `base` is warned about and the config runs
    path = write(MINIMAL)
    assert _names(path, "*") == [("base", "tiny")]


SWEPT = (
    MINIMAL.replace("  osl: 128\n", '  osl: "{osl}"\n').replace(
        "      tp-size: 8\n    decode:", '      tp-size: "{tp}"\n    decode:'
    )
    + "sweep:\n  osl: [128, 256]\n  tp: [4, 8]\n"
)


def test_a_sweep_is_the_grid_of_its_parameters_named_and_filled_as_srtctl_does(
    write: Callable[..., Path],
) -> None:
    # generate_sweep_configs: itertools.product in key order; name f"{name}_{k}{v}_..."
    variants = load_variants(write(SWEPT))
    assert [(v.name, v.config.name) for v in variants] == [
        ("sweep[0]", "tiny_osl128_tp4"),
        ("sweep[1]", "tiny_osl128_tp8"),
        ("sweep[2]", "tiny_osl256_tp4"),
        ("sweep[3]", "tiny_osl256_tp8"),
    ]
    filled = [
        (v.config.benchmark.osl, v.raw["backend"]["sglang_config"]["prefill"]["tp-size"])
        for v in variants
    ]
    assert filled == [(128, 4), (128, 8), (256, 4), (256, 8)]
    assert all("sweep" not in v.raw for v in variants)


def test_a_placeholder_inside_text_is_replaced_by_the_values_text(
    write: Callable[..., Path],
) -> None:
    # expand_template: str(value) inside a longer string; lists joined with commas
    text = MINIMAL.replace("name: tiny", 'name: tiny\nsetup_script: "setup-{tag}.sh"') + (
        "sweep:\n  tag: [a, b]\n"
    )
    variants = load_variants(write(text))
    assert [v.raw["setup_script"] for v in variants] == ["setup-a.sh", "setup-b.sh"]


def test_sweep_variants_are_selected_by_their_block_or_one_by_one(
    write: Callable[..., Path],
) -> None:
    path = write(SWEPT)
    assert [name for name, _ in _names(path, "sweep")] == [f"sweep[{i}]" for i in range(4)]
    assert _names(path, "sweep[2]") == [("sweep[2]", "tiny_osl256_tp4")]


def test_an_override_variant_with_a_sweep_sweeps_under_its_own_name(
    write: Callable[..., Path],
) -> None:
    # submit_override: a variant whose config holds `sweep` goes through submit_sweep,
    # whose jobs are named after the variant's job name
    path = write(BASE + 'override_big:\n  benchmark: {osl: "{osl}"}\n  sweep: {osl: [64, 96]}\n')
    assert _names(path) == [
        ("override_big.sweep[0]", "tiny_big_osl64"),
        ("override_big.sweep[1]", "tiny_big_osl96"),
    ]
    assert [name for name, _ in _names(path, "override_big")] == [
        "override_big.sweep[0]",
        "override_big.sweep[1]",
    ]


@pytest.mark.parametrize(
    ("sweep", "said"),
    [
        ("sweep:\n  tp: 4\n", "sweep.tp"),
        ("sweep:\n  tp: []\n", "sweep.tp"),
        ("sweep:\n  mode: grid\n  tp: [4]\n", "sweep.mode"),
        ("sweep: {}\n", "`sweep`"),
    ],
)
def test_a_sweep_that_would_not_sweep_what_it_says_is_refused_in_place(
    write: Callable[..., Path], sweep: str, said: str
) -> None:
    path = write(MINIMAL + sweep)
    with pytest.raises(DisaggError) as caught:
        load_variants(path)
    assert said in str(caught.value)
    assert caught.value.location is not None and caught.value.location.line is not None


def test_a_swept_recipe_migrates_with_its_sweep_and_plans_identically(
    write: Callable[..., Path],
) -> None:
    from disagg.recipe.migrate import migrate_file, plan_outcomes

    result = migrate_file(write(SWEPT), plan_outcomes)  # raises if any variant plans otherwise
    assert result.text is not None and result.variants == 4
    assert "schema: 2" in result.text and "sweep:" in result.text and '"{tp}"' in result.text
