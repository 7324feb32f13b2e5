"""Hostile recipe shapes (alias bombs, deep nesting, over-long names) end as exit 2, cheaply.

The bounds are checked through what the code counts (nodes, tracemalloc peak), never
through wall-clock time, so the tests hold on a loaded machine.
"""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from disagg.errors import DisaggError
from disagg.recipe.limits import MAX_DEPTH, MAX_NODES, MAX_VARIANT_NODES
from disagg.recipe.lint import lint_paths
from disagg.recipe.load import parse_yaml
from disagg.recipe.overrides import expand_variants
from disagg.recipe.variants import load_variants

from .recipe_helpers import MINIMAL, alias_bomb, deep_block, deep_flow, disagg, invoke

FEW_MB = 8 * 2**20


def test_loader_refuses_an_alias_bomb_naming_the_anchor_in_bounded_memory() -> None:
    text = alias_bomb()  # under 2 KB of text for 10**10 nodes
    assert len(text) < 2_000
    tracemalloc.start()
    try:
        with pytest.raises(DisaggError) as caught:
            parse_yaml(text, file="bomb.yaml")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < FEW_MB
    message = str(caught.value)
    assert "alias *l" in message and "anchor &l" in message
    assert f"more than {MAX_NODES:,} nodes" in message
    assert caught.value.location is not None and caught.value.location.line is not None


def test_aliases_within_the_bound_still_load_and_share_their_value() -> None:
    loaded = parse_yaml(alias_bomb(levels=3), file="ok.yaml")  # 10**4 leaves
    assert loaded.data["x-l3"][0] is loaded.data["x-l3"][1]
    assert loaded.data["x-l3"][9][9][9][9] == "lol"


@pytest.mark.parametrize("used", [False, True])
def test_plan_and_submit_dry_run_refuse_an_alias_bomb_with_exit_2(
    write: Callable[..., Path], used: bool
) -> None:
    path = write(alias_bomb(used=used))
    for command in (["plan", str(path)], ["submit", "--dry-run", str(path)]):
        code, _, error = invoke(*command)
        assert code == 2, error
        assert "alias *l" in error and "Traceback" not in error


def test_lint_refuses_an_alias_bomb_as_unreadable_naming_the_anchor(
    write: Callable[..., Path],
) -> None:
    path = write(alias_bomb())
    tracemalloc.start()
    try:
        report = lint_paths([path])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < FEW_MB
    assert report.exit_code == 2
    [finding] = report.findings
    assert finding.rule == "DA000" and "alias *l" in finding.message and finding.hint
    code, out, _ = invoke("lint", str(path), "--json")
    assert code == 2
    assert "alias *l" in json.loads(out)[0]["message"]


def test_variant_expansion_is_bounded_across_variants(write: Callable[..., Path]) -> None:
    # One document within MAX_NODES whose many variants each copy a big base.
    per_alias = 10_000
    copies = 4
    overrides = MAX_VARIANT_NODES // (per_alias * copies) + 5
    doc = {
        "base": {"name": "big", "x": [["v"] * per_alias] * copies},
        **{f"override_{i}": {"name": f"v{i}"} for i in range(overrides)},
    }
    with pytest.raises(DisaggError) as caught:
        expand_variants(doc, file="big.yaml")
    assert f"more than {MAX_VARIANT_NODES:,} nodes" in str(caught.value)
    assert "override_" in str(caught.value)
    # The same through the loader and the CLI: a located error, exit 2.
    text = "x-a: &a [" + ", ".join(["v"] * per_alias) + "]\n"
    text += "base:\n  name: big\n  x: [" + ", ".join(["*a"] * copies) + "]\n"
    text += "".join(f"override_{i}:\n  name: v{i}\n" for i in range(overrides))
    path = write(text)
    with pytest.raises(DisaggError):
        load_variants(path)
    code, _, error = invoke("plan", str(path))
    assert code == 2 and "variants expand to more than" in error


@pytest.mark.parametrize("shape", [deep_flow, deep_block])
def test_a_thousand_deep_mapping_is_a_clean_error_in_load_and_lint(
    write: Callable[..., Path], shape: Callable[[int], str]
) -> None:
    path = write(shape(1000))
    code, _, error = invoke("plan", str(path))
    assert code == 2 and f"nested deeper than {MAX_DEPTH} levels" in error
    report = lint_paths([path])
    assert report.exit_code == 2
    assert any(f"nested deeper than {MAX_DEPTH}" in f.message for f in report.findings)
    code, out, _ = invoke("lint", str(path))
    assert code == 2 and "nested deeper" in out


def test_nesting_at_the_limit_still_lints(write: Callable[..., Path]) -> None:
    path = write(deep_flow(MAX_DEPTH - 5))
    report = lint_paths([path])
    assert report.exit_code != 2, [f.message for f in report.findings]


def test_a_selector_longer_than_a_file_name_is_a_clean_error(write: Callable[..., Path]) -> None:
    path = write(MINIMAL)
    long = "x" * 300
    code, _, error = invoke("plan", f"{path}:{long}")
    assert code == 2 and "no variant matches selector" in error
    code, _, error = invoke("submit", "--dry-run", f"{path}:{long}")
    assert code == 2 and "no variant matches selector" in error


def test_a_recipe_path_longer_than_a_file_name_is_a_clean_error(tmp_path: Path) -> None:
    long = str(tmp_path / ("y" * 300 + ".yaml"))
    code, _, error = invoke("plan", long)
    assert code == 2 and "File name too long" in error and len(error) < 400
    code, out, _ = invoke("lint", long)
    assert code == 2 and "File name too long" in out


@pytest.mark.parametrize(
    "command",
    [
        ["plan"],
        ["lint"],
        ["stage"],
        ["submit", "--dry-run"],
        ["submit", "--resume"],
        ["report"],
        ["status"],
        ["logs"],
        ["check-model"],
    ],
)
def test_every_command_given_an_overlong_path_exits_2_without_a_traceback(
    tmp_path: Path, command: list[str]
) -> None:
    done = disagg(*command, str(tmp_path / ("z" * 300)))
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr + done.stdout
