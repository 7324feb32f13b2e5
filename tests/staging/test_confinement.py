"""The contract reads only regular files inside the checkpoint and never prints an outside file.

An index, a symlink, a revision or a tree listing that points elsewhere is reported
as outside the checkpoint; the outside file is never opened, so none of its bytes can
appear in any message. A FIFO is reported, not opened (opening it would block).
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from disagg.staging import checkpoint as ck

from .ckpt import shard_names, write_cache_entry, write_checkpoint

SCRIPT = Path(ck.__file__)
SECRET = b"TOPSECRT"  # what an outside file starts with; its u64 would be the "header length"
SECRET_AS_LENGTH = str(struct.unpack("<Q", SECRET)[0])


def _outside_file(tmp_path: Path) -> Path:
    path = tmp_path / "elsewhere" / "secret.safetensors"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(SECRET + b"password: hunter2\n")
    return path


def _rename_shard(directory: Path, to: str) -> str:
    """Point the index's first shard at `to`; returns the shard name it replaced."""
    index_path = directory / ck.INDEX
    index = json.loads(index_path.read_text())
    first = shard_names(directory)[0]
    index["weight_map"] = {k: (to if v == first else v) for k, v in index["weight_map"].items()}
    index_path.write_text(json.dumps(index))
    return first


RECIPE = """\
name: tiny
model: {{path: "{model}", container: sglang, precision: bf16}}
resources: {{gpu_type: h100, gpus_per_node: 8, prefill_nodes: 1, prefill_workers: 1,
  decode_nodes: 1, decode_workers: 1}}
backend: {{sglang_config: {{prefill: {{tp-size: 8}}, decode: {{tp-size: 8}}}}}}
benchmark: {{type: sa-bench, isl: 128, osl: 16, concurrencies: "1"}}
"""


def run_script(*args: str) -> subprocess.CompletedProcess[str]:
    # A guard against a hang (a FIFO opened for reading), not a timing claim.
    return subprocess.run(
        [sys.executable, "-S", "-I", str(SCRIPT), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def _assert_nothing_leaked(text: str) -> None:
    assert SECRET.decode() not in text
    assert SECRET_AS_LENGTH not in text
    assert "hunter2" not in text


@pytest.mark.parametrize("kind", ["absolute", "climbing"])
def test_an_index_naming_an_outside_file_is_refused_without_reading_it(
    tmp_path: Path, kind: str
) -> None:
    model = write_checkpoint(tmp_path / "model", shards=2)
    secret = _outside_file(tmp_path)
    name = str(secret) if kind == "absolute" else "../elsewhere/secret.safetensors"
    (model / _rename_shard(model, name)).unlink()
    report = ck.check_directory(str(model))
    assert [(p.kind, p.path) for p in report.problems] == [(ck.OUTSIDE, name)]
    assert report.safetensors_files == 1  # the other shard, read as before
    done = run_script(str(model), "--json")
    assert done.returncode == 1
    _assert_nothing_leaked(done.stdout + done.stderr)
    _assert_nothing_leaked(run_script(str(model)).stdout)


def test_complete_shards_elsewhere_do_not_make_a_checkpoint_complete(tmp_path: Path) -> None:
    model = write_checkpoint(tmp_path / "model", shards=2)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    first = shard_names(model)[0]
    os.rename(model / first, elsewhere / first)
    _rename_shard(model, f"../elsewhere/{first}")
    report = ck.check_directory(str(model))
    assert not report.complete
    assert [p.kind for p in report.problems] == [ck.OUTSIDE]


def test_a_symlink_out_of_a_plain_checkpoint_is_refused(tmp_path: Path) -> None:
    model = write_checkpoint(tmp_path / "model", shards=1)
    secret = _outside_file(tmp_path)
    (model / "model.safetensors").unlink()
    (model / "model.safetensors").symlink_to(secret)
    (model / "config.json").unlink()
    (model / "config.json").symlink_to(tmp_path / "elsewhere")
    report = ck.check_directory(str(model))
    kinds = {(p.kind, p.path) for p in report.problems}
    assert (ck.OUTSIDE, "model.safetensors") in kinds
    assert (ck.OUTSIDE, "config.json") in kinds
    assert report.bytes_read == 0
    _assert_nothing_leaked(json.dumps(report.to_dict()))


def test_a_fifo_shard_is_reported_not_opened(tmp_path: Path) -> None:
    model = write_checkpoint(tmp_path / "model", shards=2)
    first = shard_names(model)[0]
    (model / first).unlink()
    os.mkfifo(model / first)
    done = run_script(str(model), "--json")
    assert done.returncode == 1
    problems = json.loads(done.stdout)["problems"]
    assert [(p["kind"], p["path"]) for p in problems] == [(ck.NOT_REGULAR, first)]
    assert "FIFO" in problems[0]["detail"]


def test_a_directory_where_a_shard_should_be_is_not_a_shard(tmp_path: Path) -> None:
    model = write_checkpoint(tmp_path / "model", shards=2)
    first = shard_names(model)[0]
    (model / first).unlink()
    (model / first).mkdir()
    [problem] = ck.check_directory(str(model)).problems
    assert (problem.kind, problem.path) == (ck.NOT_REGULAR, first)


def test_cache_snapshot_links_into_its_own_blobs_are_fine(tmp_path: Path) -> None:
    source = write_checkpoint(tmp_path / "src", shards=2)
    snapshot = write_cache_entry(tmp_path / "hub", "org-a/tiny", source)
    assert ck.check(str(snapshot)).complete
    assert ck.check_directory(str(snapshot)).complete


def test_cache_snapshot_links_into_another_tree_are_refused(tmp_path: Path) -> None:
    source = write_checkpoint(tmp_path / "src", shards=2)
    snapshot = write_cache_entry(tmp_path / "hub", "org-a/tiny", source)
    secret = _outside_file(tmp_path)
    (snapshot / "config.json").unlink()
    (snapshot / "config.json").symlink_to(secret)
    report = ck.check_repo("org-a/tiny", cache=str(tmp_path))
    assert (ck.OUTSIDE, "config.json") in [(p.kind, p.path) for p in report.problems]
    _assert_nothing_leaked(json.dumps(report.to_dict()))


def test_a_snapshot_directory_linked_elsewhere_is_refused(tmp_path: Path) -> None:
    source = write_checkpoint(tmp_path / "src", shards=2)
    snapshot = write_cache_entry(tmp_path / "hub", "org-a/tiny", source)
    plain = write_checkpoint(tmp_path / "plain", shards=1)
    os.rename(snapshot, tmp_path / "moved")
    snapshot.symlink_to(plain, target_is_directory=True)
    report = ck.check_repo("org-a/tiny", cache=str(tmp_path))
    assert [p.kind for p in report.problems] == [ck.OUTSIDE]


def test_a_revision_that_climbs_out_reads_nothing(tmp_path: Path) -> None:
    source = write_checkpoint(tmp_path / "src", shards=1)
    write_cache_entry(tmp_path / "hub", "org-a/tiny", source)
    secret = tmp_path / "elsewhere" / "ref"
    secret.parent.mkdir()
    secret.write_text("a" * 40)  # would name a commit if it were read
    report = ck.check_repo("org-a/tiny", revision="../../../elsewhere/ref", cache=str(tmp_path))
    assert [p.kind for p in report.problems] == [ck.UNKNOWN_REVISION]
    assert report.commit is None


def test_a_tree_listing_naming_an_outside_path_is_refused(tmp_path: Path) -> None:
    source = write_checkpoint(tmp_path / "src", shards=1)
    snapshot = write_cache_entry(tmp_path / "hub", "org-a/tiny", source)
    entry = snapshot.parent.parent
    (entry / "trees").mkdir()
    listing = {"files": {"config.json": {"blob_id": "x"}, "../../../elsewhere/x": {"blob_id": "y"}}}
    (entry / "trees" / f"{snapshot.name}.json").write_text(json.dumps(listing))
    report = ck.check_repo("org-a/tiny", cache=str(tmp_path))
    assert [(p.kind, p.path) for p in report.problems] == [(ck.OUTSIDE, "../../../elsewhere/x")]


def test_check_model_cli_reports_outside_files_without_their_bytes(tmp_path: Path) -> None:
    model = write_checkpoint(tmp_path / "model", shards=2)
    _rename_shard(model, str(_outside_file(tmp_path)))
    done = subprocess.run(
        [sys.executable, "-m", "disagg", "check-model", str(model)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 1
    assert "outside the checkpoint" in done.stdout + done.stderr
    _assert_nothing_leaked(done.stdout + done.stderr)


def test_the_submit_preflight_refuses_a_checkpoint_reaching_outside(tmp_path: Path) -> None:
    from disagg.launch.slurm_preflight import check_models
    from disagg.plan.placement import place
    from disagg.recipe.variants import load_variants

    model = write_checkpoint(tmp_path / "model", shards=2)
    (model / _rename_shard(model, str(_outside_file(tmp_path)))).unlink()
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(RECIPE.format(model=model))
    [variant] = load_variants(recipe)
    plan = place(variant)
    assert plan.staging.local_path == str(model)
    result = check_models(plan)
    [error] = result.errors
    assert "outside the checkpoint" in error
    _assert_nothing_leaked(error)
