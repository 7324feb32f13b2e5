"""`disagg migrate`: v1 -> schema 2 keeping comments, order and anchors; proven by planning."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from disagg.errors import DisaggError
from disagg.recipe import migrate
from disagg.recipe.migrate import migrate_file, plan_outcomes
from disagg.recipe.variants import load_variants
from needs import corpus

from .recipe_helpers import CORPUS, invoke

Write = Callable[..., Path]

OVERRIDES = """\
# a team's sweep
x-shared:
  prefill_args: &prefill_args
    tp-size: 8   # one node
base:
  name: sweep
  model: {path: hf:org/tiny, container: sglang, precision: bf16}
  resources:
    gpu_type: h100
    gpus_per_node: 8
    prefill_nodes: 1
    prefill_workers: 1
    decode_nodes: 0
    decode_workers: 1
    gpus_per_prefill: 4
    gpus_per_decode: 4
  frontend:
    type: sglang
  backend:
    type: sglang
    prefill_environment: {A: "1"}
    sglang_config:
      prefill: *prefill_args
      decode: {tp-size: 4}
  dynamo:
    version: 0.8.0
  infra:
    nats_max_payload_mb: 32
  benchmark: {type: sa-bench, isl: 128, osl: 16, concurrencies: [1, 2]}
override_more:
  backend:
    decode_environment: {B: "2"}
zip_override_conc:
  benchmark:
    concurrencies: [[4], [8]]
"""


def test_an_override_file_keeps_comments_order_and_anchors(write: Write) -> None:
    path = write(OVERRIDES)
    result = migrate_file(path, plan_outcomes)
    text = result.text
    assert text is not None and result.variants == 3
    assert text.startswith("# a team's sweep\nschema: 2\nx-shared:\n")
    assert "tp-size: 8   # one node" in text and "&prefill_args" in text
    assert "args: *prefill_args" in text
    assert "backend" not in text and "prefill_nodes" not in text
    assert "nodes: colocate" in text and "type: sglang-router" in text
    assert "pypi: 0.8.0" in text and "max_payload_mb: 32" in text
    assert text.index("engine: sglang") < text.index("roles:") < text.index("benchmark:")
    migrated = write(text, "migrated.yaml")
    before = [v.config for v in load_variants(path)]
    after = load_variants(migrated)
    assert [v.dialect for v in after] == ["schema2"] * 3
    assert [v.name for v in after] == [
        "override_more",
        "zip_override_conc[0]",
        "zip_override_conc[1]",
    ]
    assert after[0].config.backend.decode_environment == {"B": "2"}
    assert [v.config.resources for v in after] == [c.resources for c in before]


def test_cli_in_place_check_and_output(write: Write, tmp_path: Path) -> None:
    path = write(OVERRIDES)
    original = path.read_text()
    code, _, err = invoke("migrate", "--check", str(path))
    assert code == 1 and "would migrate" in err and path.read_text() == original
    out = tmp_path / "two.yaml"
    code, _, err = invoke("migrate", str(path), "--output", str(out))
    assert code == 0 and "3 variant(s) plan identically" in err
    assert path.read_text() == original and "\nschema: 2\n" in out.read_text()
    code, _, err = invoke("migrate", "--in-place", str(path))
    assert code == 0 and path.read_text() == out.read_text()
    code, _, err = invoke("migrate", "--check", str(path))
    assert code == 0 and "schema 2 already" in err
    config = write("default_partition: batch\ngpus_per_node: 8\n", "srtslurm.yaml")
    code, _, err = invoke("migrate", "--check", str(config))
    assert code == 0 and "an srt-slurm cluster config, left alone" in err


def test_nothing_is_written_when_a_variant_would_plan_differently(
    write: Write, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(OVERRIDES)
    original = path.read_text()
    real = migrate.migrate_document

    def lossy(doc: Any, file: str) -> None:
        real(doc, file)
        doc["base"]["benchmark"]["concurrencies"] = [1]  # a migration bug

    monkeypatch.setattr(migrate, "migrate_document", lossy)
    code, _, err = invoke("migrate", "--in-place", str(path))
    assert code == 2 and "override_more would plan differently" in err and "nothing written" in err
    assert path.read_text() == original


def test_what_cannot_be_migrated_faithfully_is_refused(write: Write) -> None:
    # a zip block zipping `infra` has no one `services:` list to write
    path = write(OVERRIDES + "  infra:\n    nats_max_payload_mb: [16, 64]\n")
    original = path.read_text()
    with pytest.raises(DisaggError, match=r"`infra` in zip_override_conc zips values"):
        migrate_file(path, plan_outcomes)
    assert path.read_text() == original


@corpus
@pytest.mark.timeout(1200)  # a round trip of 555 files: about 15 s of CPU, more when busy
def test_every_v1_corpus_file_migrates_and_plans_identically() -> None:
    """migrate_file plans every variant before and after and raises on any difference."""
    files = sorted(CORPUS.rglob("*.yaml"))
    assert len(files) == 555
    variants = 0
    for path in files:
        result = migrate_file(path, plan_outcomes)
        assert result.changed, path
        variants += result.variants
    print(f"\nmigrated {len(files)} files, {variants} variants plan identically")
    assert variants >= 670


@pytest.mark.parametrize(
    ("written", "refusal"),
    [
        (
            "    sglang_config:\n      prefil: {tp-size: 4}\n",
            r"sglang_config\.prefil: not a worker mode",
        ),
        ("    trtllm_config: 5\n", r"trtllm_config is int; expected a mapping"),
        ("    kv_events_config: {decod: true}\n", r"kv_events_config\.decod: not a worker mode"),
    ],
)
def test_a_backend_setting_of_the_wrong_shape_is_refused_by_name(
    write: Write, written: str, refusal: str
) -> None:
    path = write(OVERRIDES + "  backend:\n" + written)
    original = path.read_text()
    with pytest.raises(DisaggError, match=refusal):
        migrate_file(path, plan_outcomes)
    assert path.read_text() == original


def test_a_null_engine_config_is_no_per_role_settings(write: Write) -> None:
    # the base block of OVERRIDES as a flat recipe, its sglang_config written as null
    base = OVERRIDES.split("base:\n")[1].split("override_more:")[0]
    flat = "\n".join(line.removeprefix("  ") for line in base.splitlines())
    before, rest = flat.split("  sglang_config:\n")
    path = write(before + "  sglang_config: null\n" + rest.split("decode: {tp-size: 4}\n")[1])
    code, _, err = invoke("migrate", "--in-place", str(path))
    assert code == 0, err
    assert "schema: 2" in path.read_text() and "sglang_config" not in path.read_text()
