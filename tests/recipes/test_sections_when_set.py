"""Sections few recipes set are validated as strictly as the rest, and only when set.

`WhenSet` builds a section's validator the first time a recipe sets the section; the
recipe's errors, their locations, the did-you-mean hints and `disagg schema` must read
exactly as if the section were part of RecipeConfig's own validator.
"""

from __future__ import annotations

import json
from pathlib import Path

from .recipe_helpers import MINIMAL, after_loading, invoke

SET = "observability:\n  enabled: maybe\n  scrape_metrix: true\n"
SET += "services:\n  - {type: etcd, nme: x}\n"
TYPO = MINIMAL + SET
LINE = MINIMAL.count("\n")  # lines before SET


def test_a_set_section_is_checked_with_located_errors_and_hints(tmp_path: Path) -> None:
    path = tmp_path / "recipe.yaml"
    path.write_text(TYPO)
    code, _, err = invoke("plan", str(path))
    assert code == 2
    assert f"{path}:{LINE + 3}:3: unknown key `observability.scrape_metrix`" in err
    assert "did you mean `scrape_metrics`?" in err
    assert "`observability.enabled`: input should be a valid boolean, got text ('maybe')" in err
    assert f"{path}:{LINE + 5}:18: unknown key `services[0].nme`" in err


def test_the_schema_still_describes_each_section() -> None:
    code, out, _ = invoke("schema")
    assert code == 0
    schema = json.loads(out)
    fields = schema["$defs"]["RecipeConfig"]["properties"]
    assert {"$ref": "#/$defs/ObservabilitySection"} in fields["observability"]["anyOf"]
    assert fields["services"]["items"] == {"$ref": "#/$defs/ServiceSection"}
    assert "scrape_metrics" in schema["$defs"]["ObservabilitySection"]["properties"]


def _built(recipe: Path) -> list[str]:
    built: list[str] = after_loading(
        recipe,
        "from disagg.recipe.section_base import WhenSet",
        "sorted(str(kind) for kind in WhenSet._validators)",
    )
    return built


def test_only_the_sections_a_recipe_sets_get_a_validator(tmp_path: Path) -> None:
    plain = tmp_path / "plain.yaml"
    plain.write_text(MINIMAL)
    assert _built(plain) == []
    observed = tmp_path / "observed.yaml"
    observed.write_text(MINIMAL + "observability:\n  enabled: true\n")
    assert [kind for kind in _built(observed) if "Observability" in kind] != []
    assert [kind for kind in _built(observed) if "Telemetry" in kind] == []
