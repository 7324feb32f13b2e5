"""`--fix` for cross-variant anchors: proven equivalent, comment-preserving, robust to deletion."""

from __future__ import annotations

import shutil
from io import StringIO
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from disagg.recipe.lint import lint_paths
from disagg.recipe.lint.fix import fix_file, fix_text
from disagg.recipe.overrides import expand_variants

DATA = Path(__file__).parent / "data"
SIBLINGS = ("override_lowlat", "override_mtp")


def load_variants(text: str) -> dict[str, dict[str, Any]]:
    return expand_variants(YAML(typ="rt").load(text), file="t.yaml")


def delete_blocks(text: str, names: tuple[str, ...]) -> str:
    yaml = YAML(typ="rt")
    yaml.width = 4096
    doc = yaml.load(text)
    for name in names:
        del doc[name]
    out = StringIO()
    yaml.dump(doc, out)
    return out.getvalue()


def test_deleting_the_sibling_breaks_the_file_before_the_fix(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text(delete_blocks_text_only((DATA / "cross_variant.yaml").read_text()))
    report = lint_paths([broken])
    assert {f.rule for f in report.findings} == {"DA002"}
    assert any("*graph_bs" in f.message for f in report.findings)


def delete_blocks_text_only(text: str) -> str:
    """Delete the sibling blocks as a person would: cut their lines out of the file."""
    kept: list[str] = []
    skipping = False
    for line in text.splitlines(keepends=True):
        if line and not line[0].isspace() and not line.startswith("#"):
            skipping = line.split(":")[0] in SIBLINGS
        if not skipping:
            kept.append(line)
    return "".join(kept)


def test_fix_hoists_anchors_keeps_comments_and_survives_sibling_deletion(tmp_path: Path) -> None:
    path = tmp_path / "recipe.yaml"
    shutil.copy(DATA / "cross_variant.yaml", path)
    original = path.read_text()
    before = load_variants(original)

    result = fix_file(path)

    assert result.changed and sorted(result.moved) == ["eagle", "graph_bs"]
    fixed = path.read_text()
    assert load_variants(fixed) == before
    assert list(load_variants(fixed)) == list(before)
    # x-shared sits after base and before every variant block
    top = [line.split(":")[0] for line in fixed.splitlines() if line and line[0].isalpha()]
    assert top[:3] == ["base", "x-shared", "override_lowlat"]
    # comments survive the round trip
    for comment in (
        "# DeepSeek sweep",
        "# every batch size the decode worker captures",
        "# multi-token prediction",
        "# MTP: the sibling below",
    ):
        assert comment in fixed
    assert lint_paths([path]).findings == []

    # The point of the fix: the siblings can now go without breaking the others.
    pruned = tmp_path / "pruned.yaml"
    pruned.write_text(delete_blocks_text_only(fixed))
    assert "override_lowlat" not in pruned.read_text()
    after = load_variants(pruned.read_text())
    expected = {k: v for k, v in before.items() if k not in SIBLINGS}
    assert after == expected
    assert lint_paths([pruned]).exit_code == 0


def test_fix_is_idempotent_and_leaves_clean_files_alone(tmp_path: Path) -> None:
    path = tmp_path / "recipe.yaml"
    shutil.copy(DATA / "cross_variant.yaml", path)
    assert fix_file(path).changed
    once = path.read_text()
    again = fix_file(path)
    assert not again.changed and again.reason is None
    assert path.read_text() == once


def test_fix_reuses_an_existing_x_shared_block(tmp_path: Path) -> None:
    text = (
        "base: {k: 1}\nx-shared:\n  keep: &keep 3  # kept\n"
        "override_a:\n  v: &v [1, 2]\n  w: *keep\noverride_b:\n  v: *v\n"
    )
    fixed, result = fix_text(text, "t.yaml")
    assert fixed is not None and result.changed
    doc = YAML(typ="rt").load(fixed)
    assert list(doc["x-shared"]) == ["keep", "v"]
    assert "# kept" in fixed
    assert load_variants(fixed) == load_variants(text)


def test_fix_refuses_when_x_shared_is_not_a_map(tmp_path: Path) -> None:
    path = tmp_path / "recipe.yaml"
    text = "base: {k: 1}\nx-shared: [1]\noverride_a:\n  v: &v [1]\noverride_b:\n  v: *v\n"
    path.write_text(text)
    result = fix_file(path)
    assert not result.changed and "not a map" in (result.reason or "")
    assert path.read_text() == text


def test_fix_refuses_files_with_undefined_aliases() -> None:
    fixed, result = fix_text("base: {k: 1}\noverride_a:\n  v: *nope\n", "t.yaml")
    assert fixed is None and "undefined" in (result.reason or "")
