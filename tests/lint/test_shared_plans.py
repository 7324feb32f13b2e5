"""Plan then lint in one process: inside `file_plans.shared()` each variant is placed once,
and lint says exactly what it says on its own; outside it nothing is kept."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from disagg.plan import placement
from disagg.plan.file_plans import file_plans, shared
from disagg.plan.from_recipe import plan_all
from disagg.recipe.lint import lint_paths

from .test_lint_rules import BASE

# Three variants: base is not planned in an override file, so a, b (tilert: unsupported), c.
TEXT = BASE + "override_a: {}\noverride_b:\n  backend: {type: tilert}\noverride_c: {}\n"


@pytest.fixture
def placements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The selector of every variant placed from now on."""
    placed: list[str] = []
    real = placement.place

    def counting(variant: Any, profile: Any = None) -> Any:
        placed.append(variant.selector)
        return real(variant, profile)

    monkeypatch.setattr(placement, "place", counting)
    return placed


def test_lint_after_plan_places_no_variant_again(tmp_path: Path, placements: list[str]) -> None:
    recipe = tmp_path / "r.yaml"
    recipe.write_text(TEXT)
    alone = lint_paths([recipe])
    assert len(placements) == 3
    placements.clear()
    with shared():
        planned = plan_all([str(recipe)], None)
        assert len(planned.plans) == 2 and len(planned.unsupported) == 1
        reused = lint_paths([recipe])
    assert sorted(placements) == [f"{recipe}:override_{name}" for name in "abc"]
    assert reused.findings == alone.findings
    assert any("a TileRT prefill worker" in f.message for f in reused.findings)


def test_outside_shared_every_call_plans_afresh(tmp_path: Path, placements: list[str]) -> None:
    recipe = tmp_path / "r.yaml"
    recipe.write_text(TEXT)
    plan_all([str(recipe)], None)
    lint_paths([recipe])
    assert len(placements) == 6
    assert file_plans(TEXT, str(recipe)) is not file_plans(TEXT, str(recipe))


def test_a_file_changed_inside_shared_is_planned_from_its_new_text(tmp_path: Path) -> None:
    recipe = tmp_path / "r.yaml"
    recipe.write_text(TEXT)
    with shared():
        assert plan_all([str(recipe)], None).errors == []
        recipe.write_text(TEXT.replace("gpus_per_node: 8", "gpus_per_nod: 8"))
        [finding] = [f for f in lint_paths([recipe]).findings if f.rule == "DA013"]
        assert "unknown key `resources.gpus_per_nod`" in finding.message
        with shared():  # a nested block keeps the outer one's plans
            inner = file_plans(TEXT, str(recipe))
        assert file_plans(TEXT, str(recipe)) is inner
