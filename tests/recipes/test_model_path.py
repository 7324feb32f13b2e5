"""`model.path` as srt-slurm reads it: `hf:org/name` is a hub repo, anything else a directory.

srtctl v1.0.68 replaces a `model.path` its cluster's `model_paths` hold with the target
(`resolve_config_with_defaults`, core/config.py), then takes `hf:org/name` as a repo id the
engines fetch and anything else as a directory: variables expanded, made absolute in the
working directory, required to exist, never downloaded (`RuntimeContext.from_config`,
core/runtime.py; its pre-submit check in core/validation.py). A plan may be made away
from the cluster's filesystem, so disagg plans such a variant, says the directory is
missing in the plan and in lint (DA015), and `disagg submit`'s pre-flight refuses it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from disagg.cluster import ClusterProfile
from disagg.launch.slurm_preflight import check_models
from disagg.plan.placement import place
from disagg.recipe.lint import Severity, lint_paths
from disagg.recipe.variants import load_variants

from .recipe_helpers import MINIMAL, invoke


@pytest.fixture
def recipe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """MINIMAL with `model.path: org/tiny` (no `hf:`), in a working directory without it."""
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "recipe.yaml"
    path.write_text(MINIMAL.replace("hf:org/tiny", "org/tiny"))
    return path


def test_a_repo_shaped_path_is_a_directory_plan_and_lint_say_it_is_missing(
    recipe: Path, tmp_path: Path
) -> None:
    directory = tmp_path.resolve() / "org" / "tiny"
    code, out, _ = invoke("plan", str(recipe))
    assert code == 0
    shown = " ".join(out.split())  # the summary wraps at the terminal's width
    assert f"{directory} (local; no such directory on this machine: `disagg submit` " in shown
    assert "refuses it)" in shown and "staged-hf-model" not in shown  # nothing from the hub
    [finding] = [f for f in lint_paths([recipe]).findings if f.rule == "DA015"]
    assert finding.severity is Severity.WARNING and str(directory) in finding.message
    assert "`hf:org/tiny` is one" in finding.message
    assert finding.locations[0].line == 3  # `path:` under `model:`
    assert "hf:org/name" in (finding.hint or "")


def test_a_missing_directory_an_alias_names_is_only_a_lint_note(recipe: Path) -> None:
    """Off the cluster its directories are missing as a rule: lint notes it, submit's
    pre-flight still refuses it there."""
    profile = ClusterProfile(models={"org/tiny": "/cluster/models/tiny"})
    [finding] = [f for f in lint_paths([recipe], profile).findings if f.rule == "DA015"]
    assert finding.severity is Severity.INFO and "/cluster/models/tiny" in finding.message
    [variant] = load_variants(recipe)
    [error] = check_models(place(variant, profile)).errors
    assert "model directory /cluster/models/tiny does not exist" in error


def test_submit_refuses_a_missing_model_directory_and_checks_one_that_exists(
    recipe: Path, tmp_path: Path
) -> None:
    [variant] = load_variants(recipe)
    [error] = check_models(place(variant)).errors
    assert f"model directory {tmp_path.resolve() / 'org' / 'tiny'} does not exist" in error
    (tmp_path / "org" / "tiny").mkdir(parents=True)  # there, but holds no checkpoint
    plan = place(variant)
    assert not [f for f in lint_paths([recipe]).findings if f.rule == "DA015"]
    [error] = check_models(plan).errors
    assert "is incomplete" in error and "does not exist" not in error


def test_hf_prefixed_models_are_staged_from_the_hub(recipe: Path) -> None:
    recipe.write_text(MINIMAL)  # `hf:org/tiny`
    [variant] = load_variants(recipe)
    plan = place(variant)
    assert [m.repo_id for m in plan.staging.models] == ["org/tiny"]
    assert plan.staging.local_path is None
    assert not [f for f in lint_paths([recipe]).findings if f.rule == "DA015"]


def test_a_simulated_plan_keeps_the_path_as_written_and_stages_nothing(recipe: Path) -> None:
    recipe.write_text(recipe.read_text().replace("backend:\n", "backend:\n  engine: sim\n"))
    [variant] = load_variants(recipe)
    plan = place(variant)
    assert plan.staging.skip and plan.staging.local_path == "org/tiny"
    assert check_models(plan).errors == []
    assert not [f for f in lint_paths([recipe]).findings if f.rule == "DA015"]
    code, out, _ = invoke("plan", str(recipe))
    assert code == 0 and "no such directory" not in out
