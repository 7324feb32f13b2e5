"""DA013: lint reports what `disagg plan` refuses, so a lint gate in CI means the recipes plan."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest

from disagg.errors import DisaggError, UnsupportedRecipe
from disagg.plan.placement import place
from disagg.recipe.lint import Severity, lint_paths
from disagg.recipe.variants import load_variants
from needs import SHARED_RECIPES, corpus
from recipes.recipe_helpers import MINIMAL, invoke

from .test_lint_rules import BASE, lint_text, only


def test_an_unknown_key_plan_refuses_is_a_lint_error_at_its_line(tmp_path: Path) -> None:
    text = BASE.replace("    gpus_per_node: 8\n", "    gpus_per_nod: 8\n")
    [finding] = only(lint_text(tmp_path, text + "override_a: {}\n"), "DA013")
    assert finding.severity is Severity.ERROR
    assert "unknown key `resources.gpus_per_nod`" in finding.message
    assert finding.where is not None and finding.where.line == 6
    assert finding.hint is not None and "gpus_per_node" in finding.hint


def test_an_unsupported_variant_is_a_warning_and_ignored_fields_are_info(tmp_path: Path) -> None:
    text = BASE + "  telemetry: {enabled: true}\noverride_t:\n  backend: {type: tilert}\n"
    text += "override_ok: {}\n"
    report = lint_text(tmp_path, text)
    found = only(report, "DA013")
    warnings = [f for f in found if f.severity is Severity.WARNING]
    infos = [f for f in found if f.severity is Severity.INFO]
    assert len(warnings) == 1 and "unsupported: a TileRT prefill worker" in warnings[0].message
    assert any("telemetry.enabled is ignored" in f.message for f in infos)
    assert report.exit_code == 1


def test_a_schema2_override_file_lints_clean(tmp_path: Path) -> None:
    text = (
        "schema: 2\nbase:\n  name: t\n  model: {path: hf:org/m, container: c, precision: fp8}\n"
        "  resources: {gpu_type: h100, gpus_per_node: 8}\n  engine: sglang\n  roles:\n"
        "    prefill: {nodes: 1, workers: 1, args: {tp-size: 8}}\n"
        "    decode: {nodes: 1, workers: 1, args: {tp-size: 8}}\n"
        "  benchmark: {type: sa-bench, isl: 8, osl: 8, concurrencies: [1]}\n"
        "override_a: {benchmark: {concurrencies: [4]}}\n"
    )
    report = lint_text(tmp_path, text)
    assert [f for f in report.findings if f.severity is not Severity.INFO] == []


@corpus
def test_lint_and_plan_agree_on_every_shared_recipe() -> None:
    """A file plan refuses as bad input has a DA013 error; one plan accepts has none."""
    files = sorted(SHARED_RECIPES.rglob("*.yaml"))
    assert len(files) >= 580  # the whole corpus, not what happens to be found
    report = lint_paths(files)
    errors = {f.file for f in report.findings if f.rule == "DA013" and f.severity is Severity.ERROR}
    unreadable = {f.file for f in report.findings if f.rule == "DA000"}
    assert unreadable == set()
    for path in files:
        if "cluster-configs" in path.parts:
            continue
        bad = False
        try:
            for variant in load_variants(path):
                with contextlib.suppress(UnsupportedRecipe):
                    place(variant)
        except DisaggError:
            bad = True
        assert (str(path) in errors) == bad, path


def test_consistency_rules_read_schema2_and_point_at_its_lines(tmp_path: Path) -> None:
    text = (
        "schema: 2\nname: t\nmodel: {path: hf:org/m, container: c, precision: fp8}\n"
        "resources: {gpu_type: h100, gpus_per_node: 8}\nengine: sglang\nroles:\n"
        "  prefill:\n    nodes: 1\n    workers: 1\n    args: {tp-size: 4}\n"
        "  decode:\n    nodes: 1\n    workers: 1\n    args: {tp-size: 8}\n"
        "benchmark: {type: sa-bench, isl: 8, osl: 8, concurrencies: [1]}\n"
    )
    report = lint_text(tmp_path, text)
    [finding] = only(report, "DA005")
    assert "prefill" in finding.message and "tp 4" in finding.message
    assert finding.where is not None and finding.where.line == 10  # roles.prefill.args


def test_schema2_layout_without_the_marker_is_a_warning(tmp_path: Path) -> None:
    marked = (
        "schema: 2\nname: t\nmodel: {path: hf:org/m, container: c, precision: fp8}\n"
        "resources: {gpu_type: h100, gpus_per_node: 8}\nengine: sglang\nroles:\n"
        "  agg: {nodes: 1, workers: 1, args: {tp-size: 8}}\n"
        "benchmark: {type: sa-bench, isl: 8, osl: 8, concurrencies: [1]}\n"
    )
    assert only(lint_text(tmp_path, marked), "DA014") == []
    [finding] = only(lint_text(tmp_path, marked.removeprefix("schema: 2\n")), "DA014")
    assert finding.severity is Severity.WARNING and "`engine`" in finding.message
    assert finding.where is not None and finding.where.line == 4


def test_an_srtslurm_cluster_config_is_not_planned_as_a_recipe(tmp_path: Path) -> None:
    """`disagg plan` passes over a cluster config; DA013 does not call it a bad recipe."""
    config = tmp_path / "srtslurm.yaml"
    config.write_text("cluster: east\ndefault_partition: batch\ngpus_per_node: 8\n")
    assert only(lint_paths([config]), "DA013") == []


def test_lint_plans_on_the_srtslurm_yaml_plan_finds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A recipe that plans with no profile but not on the cluster config found two levels
    up (its model cache lies outside every mount there): lint refuses it as plan does."""
    (tmp_path / "srtslurm.yaml").write_text(
        "cluster: east\ndefault_partition: batch\ngpus_per_node: 8\n"
    )
    deeper = tmp_path / "recipes" / "team"
    deeper.mkdir(parents=True)
    recipe = deeper / "r.yaml"
    recipe.write_text(MINIMAL)
    monkeypatch.delenv("SRTSLURM_CONFIG", raising=False)
    monkeypatch.chdir(deeper)
    assert only(lint_paths([recipe]), "DA013") == []  # no profile: it plans
    code, _, error = invoke("plan", "r.yaml")
    assert code == 2 and "outside every container mount" in error
    code, out, _ = invoke("lint", "--json", "r.yaml")
    [finding] = [f for f in json.loads(out) if f["rule"] == "DA013"]
    assert code == 1 and finding["severity"] == "error"
    assert "outside every container mount" in finding["message"]
    monkeypatch.setenv("SRTSLURM_CONFIG", str(tmp_path / "absent.yaml"))  # nothing found
    code, out, _ = invoke("lint", "--json", "r.yaml")
    assert code == 0 and json.loads(out) == []
    code, out, _ = invoke("lint", "--json", "--cluster", str(tmp_path / "srtslurm.yaml"), "r.yaml")
    assert code == 1 and [f["rule"] for f in json.loads(out)] == ["DA013"]


def test_the_submit_preflight_lints_on_the_profile_the_plans_were_made_on(
    tmp_path: Path,
) -> None:
    """`disagg submit`'s pre-flight lints again before sbatch: its DA013 must plan on the
    submission's cluster profile, or it passes a recipe the cluster refuses (and refuses one
    only the cluster can place)."""
    from disagg.launch.slurm_preflight import check_recipes
    from disagg.plan.from_recipe import load_cluster

    config = tmp_path / "srtslurm.yaml"
    config.write_text("cluster: east\ndefault_partition: batch\ngpus_per_node: 8\n")
    recipe = tmp_path / "r.yaml"
    recipe.write_text(MINIMAL)
    assert check_recipes([str(recipe)]).errors == []  # no profile: it plans
    [error] = check_recipes([str(recipe)], load_cluster(config)).errors
    assert "DA013" in error and "outside every container mount" in error
