"""Each lint rule on small recipes shaped like the mistakes it exists for."""

from __future__ import annotations

from pathlib import Path

from disagg.recipe.lint import Finding, LintReport, Severity, lint_paths
from disagg.recipe.lint.nodes import scan, to_python
from disagg.recipe.load import parse_yaml

DATA = Path(__file__).parent / "data"

BASE = """\
base:
  name: t
  model: {path: hf:org/model, container: c, precision: fp8}
  resources:
    gpu_type: h100
    gpus_per_node: 8
    prefill_nodes: 1
    prefill_workers: 1
    decode_nodes: 1
    decode_workers: 1
  backend:
    type: sglang
    sglang_config:
      prefill: {tensor-parallel-size: 8}
      decode: {tensor-parallel-size: 8}
  benchmark: {type: sa-bench, isl: 8, osl: 8, concurrencies: [1, 2]}
"""


def lint_text(tmp_path: Path, text: str, name: str = "r.yaml") -> LintReport:
    path = tmp_path / name
    path.write_text(text)
    return lint_paths([path])


def only(report: LintReport, rule: str) -> list[Finding]:
    return [f for f in report.findings if f.rule == rule]


def test_clean_recipe_exits_zero(tmp_path: Path) -> None:
    report = lint_text(tmp_path, BASE + "override_a: {benchmark: {concurrencies: [4]}}\n")
    assert report.findings == []
    assert report.exit_code == 0


def test_cross_variant_anchor_names_anchor_and_every_alias_grouped(tmp_path: Path) -> None:
    report = lint_paths([DATA / "cross_variant.yaml"])
    found = only(report, "DA001")
    assert len(found) == 2
    graph = next(f for f in found if "&graph_bs" in f.message)
    file = str(DATA / "cross_variant.yaml")
    assert graph.severity is Severity.ERROR and graph.fixable
    assert graph.locations[0].role == "anchor"
    assert str(graph.locations[0]) == f"{file}:34:24"
    assert [loc.block for loc in graph.locations[1:]] == [
        "override_conc32",
        "override_conc64",
        "override_conc128",
        "override_conc256",
    ]
    assert f"override_conc32 ({file}:43:24)" in graph.message
    assert "4 other block(s)" in graph.message
    eagle = next(f for f in found if "&eagle" in f.message)
    assert [loc.role for loc in eagle.locations] == ["anchor", "alias"]
    assert eagle.locations[1].block == "override_mtp_conc64"
    assert report.exit_code == 1


def test_anchors_in_base_x_blocks_or_own_block_are_fine(tmp_path: Path) -> None:
    text = (
        "x-shared:\n  bs: &bs [1, 2, 3, 4, 5, 6, 7, 8, 9]\n"
        + BASE.replace("concurrencies: [1, 2]", "concurrencies: &c [1, 2]")
        + "override_a:\n  benchmark: {concurrencies: *c}\n"
        "  backend: {sglang_config: {decode: {cuda-graph-bs: *bs}}}\n"
        "override_b:\n  x: &own 1\n  y: *own\n"
    )
    report = lint_text(tmp_path, text)
    assert only(report, "DA001") == []


def test_undefined_alias_points_at_the_later_anchor(tmp_path: Path) -> None:
    text = (
        BASE + "override_a:\n  benchmark:\n    concurrencies: *conc\n"
        "override_b:\n  benchmark:\n    concurrencies: &conc [8, 16]\n"
    )
    report = lint_text(tmp_path, text)
    [finding] = only(report, "DA002")
    file = str(tmp_path / "r.yaml")
    assert f"alias *conc at {file}:19:20" in finding.message
    assert f"appears later in this file at {file}:22:20" in finding.message
    assert [loc.role for loc in finding.locations] == ["alias", "later-anchor"]
    assert report.exit_code == 1


def test_undefined_alias_found_in_another_linted_file(tmp_path: Path) -> None:
    (tmp_path / "shared.yaml").write_text("x-shared:\n  bs: &graph [1, 2]\nname: s\n")
    (tmp_path / "r.yaml").write_text(BASE + "override_a:\n  bs: *graph\n")
    report = lint_paths([tmp_path / "r.yaml", tmp_path / "shared.yaml"])
    [finding] = only(report, "DA002")
    assert f"defined in another file at {tmp_path / 'shared.yaml'}:2:7" in finding.message


def test_undefined_alias_suggests_a_close_name(tmp_path: Path) -> None:
    text = BASE + "x-s:\n  v: &graph_bs [1]\noverride_a:\n  bs: *graph_b\n"
    [finding] = only(lint_text(tmp_path, text), "DA002")
    assert "did you mean *graph_bs?" in finding.message


def test_repeated_long_list_in_several_variants_suggests_anchor(tmp_path: Path) -> None:
    long = "[" + ", ".join(str(i) for i in range(1, 513)) + "]"
    text = (
        BASE
        + f"override_a:\n  backend: {{sglang_config: {{decode: {{cuda-graph-bs: {long}}}}}}}\n"
        + f"override_b:\n  backend: {{sglang_config: {{decode: {{cuda-graph-bs: {long}}}}}}}\n"
        + "override_c:\n  benchmark: {concurrencies: [1, 2, 3]}\n"
    )
    report = lint_text(tmp_path, text)
    [finding] = only(report, "DA003")
    assert finding.severity is Severity.WARNING
    assert "list of 512 entries" in finding.message
    assert {loc.block for loc in finding.locations} == {"override_a", "override_b"}
    assert "x-shared" in (finding.hint or "")
    assert report.exit_code == 1


def test_short_or_single_copies_are_not_repeated_literals(tmp_path: Path) -> None:
    text = (
        BASE + "override_a:\n  benchmark: {concurrencies: [1, 2, 4]}\n"
        "override_b:\n  benchmark: {concurrencies: [1, 2, 4]}\n"
    )
    assert only(lint_text(tmp_path, text), "DA003") == []


def test_export_hazard_in_environment_and_export_directive(tmp_path: Path) -> None:
    text = BASE.replace(
        "    type: sglang\n",
        "    type: sglang\n    decode_environment:\n      UCX_TLS: rc,tcp\n      OK: plain\n",
    ) + ("srun_options:\n  export: ALL,MODEL_REPOS=a/x,b/y\nsbatch_directives:\n  mem: '0'\n")
    report = lint_text(tmp_path, text.replace("base:\n", "base:\n", 1))
    found = only(report, "DA004")
    messages = " ".join(f.message for f in found)
    assert "decode_environment.UCX_TLS = 'rc,tcp'" in messages
    assert "UCX_TLS='rc'" in messages
    assert "'b/y'" in messages
    assert len(found) == 2
    by_text = {("UCX_TLS" in f.message): f.severity for f in found}
    # disagg sets role environments from plan.json, so an environment value with a comma
    # is only informational; an --export directive that Slurm will split is an error.
    assert by_text[True] is Severity.INFO
    assert by_text[False] is Severity.ERROR


def test_parallelism_larger_than_worker_gpus_is_an_error(tmp_path: Path) -> None:
    text = BASE.replace("decode: {tensor-parallel-size: 8}", "decode: {tensor-parallel-size: 16}")
    [finding] = only(lint_text(tmp_path, text), "DA005")
    assert finding.severity is Severity.ERROR
    assert "needs tp 16 x pp 1 = 16 GPUs per worker, but each worker gets 8" in finding.message
    assert finding.locations[0].role == "tensor-parallel-size"
    assert finding.locations[0].line == 15


def test_dp_without_dp_attention_multiplies_gpus(tmp_path: Path) -> None:
    text = BASE.replace(
        "decode: {tensor-parallel-size: 8}", "decode: {tensor-parallel-size: 8, dp-size: 8}"
    )
    [finding] = only(lint_text(tmp_path, text), "DA005")
    assert "x dp 8 = 64 GPUs" in finding.message
    ok = BASE.replace(
        "decode: {tensor-parallel-size: 8}",
        "decode: {tensor-parallel-size: 8, dp-size: 8, enable-dp-attention: true, ep-size: 8}",
    )
    assert only(lint_text(tmp_path, ok), "DA005") == []


def test_workers_that_do_not_divide_nodes(tmp_path: Path) -> None:
    text = BASE.replace("decode_workers: 1", "decode_workers: 3")
    [finding] = only(lint_text(tmp_path, text), "DA006")
    assert "3 workers cannot split 1 node(s) x 8 GPUs evenly" in finding.message


def test_colocated_roles_share_the_pool(tmp_path: Path) -> None:
    text = (
        BASE.replace("prefill_nodes: 1", "prefill_nodes: 2")
        .replace("prefill_workers: 1", "prefill_workers: 6")
        .replace("decode_nodes: 1", "decode_nodes: 0")
        .replace("decode_workers: 1", "decode_workers: 2")
        .replace("{tensor-parallel-size: 8}", "{tensor-parallel-size: 2}")
    )
    report = lint_text(tmp_path, text)
    assert [f for f in report.findings if f.severity is not Severity.INFO] == []
    too_many = text.replace("decode_workers: 2", "decode_workers: 4")
    [finding] = only(lint_text(tmp_path, too_many), "DA006")
    assert "6 x 2 + 4 x 2 = 20 GPUs" in finding.message


def test_concurrency_lists(tmp_path: Path) -> None:
    def conc(value: str) -> list[Finding]:
        return only(lint_text(tmp_path, BASE.replace("[1, 2]", value)), "DA007")

    assert conc('"1x4x16"') == []
    [empty] = conc("[]")
    assert empty.severity is Severity.ERROR and "empty" in empty.message
    [unsorted] = conc('"64x16x4"')
    assert unsorted.severity is Severity.WARNING and "ascending" in unsorted.message
    [dup] = conc("[4, 4, 8]")
    assert "repeats [4]" in dup.message
    [bad] = conc("[a, 2]")
    assert bad.severity is Severity.ERROR
    # Read as the plan reads it: a comma list is not a sweep (the plan rejects it too).
    [comma] = conc('"1,4"')
    assert comma.severity is Severity.ERROR and "'1,4' is not an integer" in comma.message


def test_concurrency_finding_lists_every_variant_once(tmp_path: Path) -> None:
    text = BASE.replace("[1, 2]", "[2, 1]") + "override_a: {name: a}\noverride_b: {name: b}\n"
    [finding] = only(lint_text(tmp_path, text), "DA007")
    assert finding.message.endswith("[variants: override_a, override_b]")
    assert finding.locations[0].block == "base"


def test_draft_model_repo_must_be_staged(tmp_path: Path) -> None:
    # SGLang drafts named by repo id are staged by the plan; one per variant.
    draft = "decode: {tensor-parallel-size: 8, speculative-draft-model-path: org/draft}"
    text = BASE.replace("decode: {tensor-parallel-size: 8}", draft)
    assert only(lint_text(tmp_path, text), "DA008") == []
    other = "prefill: {tensor-parallel-size: 8, speculative-draft-model-path: org/other}"
    two = text.replace("prefill: {tensor-parallel-size: 8}", other)
    [finding] = only(lint_text(tmp_path, two), "DA008")
    assert "decode: org/draft" in finding.message and "prefill: org/other" in finding.message
    # TRT-LLM's drafts are staged by the plan too (its adapter reads them), one per variant.
    eagle = "speculative_config: {decoding_type: Eagle, speculative_model_dir: org/eagle}"
    trt = (
        BASE.replace("type: sglang", "type: trtllm")
        .replace("sglang_config", "trtllm_config")
        .replace("tensor-parallel-size", "tensor_parallel_size")
        .replace(
            "decode: {tensor_parallel_size: 8}", f"decode: {{tensor_parallel_size: 8, {eagle}}}"
        )
    )
    assert only(lint_text(tmp_path, trt), "DA008") == []
    both = trt.replace(
        "prefill: {tensor_parallel_size: 8}",
        f"prefill: {{tensor_parallel_size: 8, {eagle.replace('org/eagle', 'org/other')}}}",
    )
    [finding] = only(lint_text(tmp_path, both), "DA008")
    assert "decode: org/eagle" in finding.message and "prefill: org/other" in finding.message


def test_unreadable_inputs_exit_two(tmp_path: Path) -> None:
    (tmp_path / "bin.yaml").write_bytes(b"\x00\x01\x02")
    (tmp_path / "empty.yaml").write_text("")
    (tmp_path / "bad.yaml").write_text("base:\n  a: [1, 2\n")
    (tmp_path / "list.yaml").write_text("- 1\n")
    (tmp_path / "zip.yaml").write_text(BASE + "zip_override_z:\n  a: [1, 2]\n  b: [1, 2, 3]\n")
    report = lint_paths([tmp_path, tmp_path / "missing.yaml"])
    by_file = {Path(f.file).name: f for f in report.findings if f.rule == "DA000"}
    assert set(by_file) == {
        "bin.yaml",
        "empty.yaml",
        "bad.yaml",
        "list.yaml",
        "zip.yaml",
        "missing.yaml",
    }
    assert "binary" in by_file["bin.yaml"].message
    assert by_file["bad.yaml"].locations[0].line is not None
    assert "a has 2" in by_file["zip.yaml"].message and "b has 3" in by_file["zip.yaml"].message
    assert by_file["zip.yaml"].locations[0].line == 18
    assert report.exit_code == 2


def test_info_alone_does_not_fail(tmp_path: Path) -> None:
    text = BASE.replace("prefill_nodes: 1", "prefill_nodes: 1\n    gpus_per_prefill: 4").replace(
        "prefill: {tensor-parallel-size: 8}", "prefill: {tensor-parallel-size: 4}"
    )
    report = lint_text(tmp_path, text)
    assert [f.severity for f in report.findings] == [Severity.INFO]
    assert report.exit_code == 0


def test_scalars_resolve_as_the_loader_resolves_them() -> None:
    # One resolver for both: `-.nan` is text in YAML 1.2 core (only `.nan` is a float).
    text = "a: -.nan\nb: 0x1F\nc: 1_000\nd: .5\ne: null\nf: '3'\ng: !!int 7\n"
    assert to_python(scan("r.yaml", text).root) == parse_yaml(text, file="r.yaml").data
    assert parse_yaml(text, file="r.yaml").data["a"] == "-.nan"


def test_duplicate_key_is_a_warning_naming_both_lines_and_the_last_one_wins(
    tmp_path: Path,
) -> None:
    text = BASE.replace("    gpu_type: h100\n", "    gpu_type: h100\n    gpu_type: h200\n")
    report = lint_text(tmp_path, text + "override_a: {benchmark: {concurrencies: [4]}}\n")
    [finding] = only(report, "DA012")
    assert finding.severity is Severity.WARNING and report.exit_code == 1
    assert "base.resources.gpu_type" in finding.message
    assert "line 5 and line 6" in finding.message and "line 6 wins" in finding.message
    assert [(loc.line, loc.role) for loc in finding.locations] == [(6, "duplicate"), (5, "first")]
    assert parse_yaml(text, file="r.yaml").data["base"]["resources"]["gpu_type"] == "h200"


def test_engine_settings_the_plan_replaces_are_listed_as_ignored(tmp_path: Path) -> None:
    written = "prefill: {tensor-parallel-size: 8, model-path: /model/, port: 9000, host: 0.0.0.0}"
    text = BASE.replace("prefill: {tensor-parallel-size: 8}", written)
    findings = only(lint_text(tmp_path, text), "DA010")
    fields = sorted(f.message.split(" is ignored")[0] for f in findings)
    assert fields == [
        "backend.sglang_config.prefill.model-path",
        "backend.sglang_config.prefill.port",
    ]  # `host` is honoured: the worker listens where the recipe says
    assert all(f.severity is Severity.INFO for f in findings)
    assert sorted((f.locations[0].line, f.locations[0].col) for f in findings) == [
        (14, 54),
        (14, 69),
    ]
