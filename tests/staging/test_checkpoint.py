"""The checkpoint contract on real safetensors checkpoints, complete and broken in each way."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from disagg.staging import checkpoint as ck

from .ckpt import shard_names, write_cache_entry, write_checkpoint, write_tokenizer

SCRIPT = Path(ck.__file__)


def kinds(report: ck.Report) -> list[tuple[str, str]]:
    return [(p.kind, p.path) for p in report.problems]


@pytest.mark.parametrize("tokenizer", ["json", "model", "tiktoken"])
def test_sharded_checkpoint_with_each_tokenizer_is_complete(tmp_path: Path, tokenizer: str) -> None:
    write_checkpoint(tmp_path, shards=3, tokenizer=tokenizer)  # type: ignore[arg-type]
    report = ck.check_directory(str(tmp_path))
    assert report.problems == []
    assert report.safetensors_files == 3
    assert report.complete and report.exit_code == 0


def test_single_file_checkpoint_is_complete(tmp_path: Path) -> None:
    write_checkpoint(tmp_path, shards=1)
    report = ck.check_directory(str(tmp_path))
    assert report.complete
    assert report.safetensors_files == 1


def test_reads_headers_only(tmp_path: Path) -> None:
    write_checkpoint(tmp_path, shards=3, hidden=256)
    report = ck.check_directory(str(tmp_path))
    assert report.complete
    assert report.weight_bytes > 1_000_000
    assert report.bytes_read < report.weight_bytes / 50


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    write_checkpoint(tmp_path, shards=4)
    first, second, third, _ = shard_names(tmp_path)
    (tmp_path / first).unlink()
    size = (tmp_path / second).stat().st_size
    os.truncate(tmp_path / second, size - 100)
    (tmp_path / third).write_bytes(struct.pack("<Q", 20) + b"{not json at all!!!}" + b"\0" * 64)
    (tmp_path / "tokenizer.json").unlink()
    report = ck.check_directory(str(tmp_path))
    assert sorted(kinds(report)) == sorted(
        [
            ("missing-tokenizer", ""),
            ("missing-shard", first),
            ("truncated", second),
            ("unreadable-header", third),
        ]
    )
    truncated = next(p for p in report.problems if p.kind == "truncated")
    assert truncated.expected_bytes == size
    assert truncated.actual_bytes == size - 100
    assert report.exit_code == 1


def test_header_with_a_broken_tensor_entry_is_unreadable(tmp_path: Path) -> None:
    write_checkpoint(tmp_path, shards=1)
    path = tmp_path / "model.safetensors"
    data = path.read_bytes()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + length])
    name = next(k for k in header if k != "__metadata__")
    header[name]["data_offsets"] = [header[name]["data_offsets"][0]]
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data[8 + length :])
    [problem] = ck.check_directory(str(tmp_path)).problems
    assert problem.kind == "unreadable-header"
    assert name in problem.detail


def test_missing_config_and_tokenizer_config(tmp_path: Path) -> None:
    write_checkpoint(tmp_path, shards=1)
    (tmp_path / "config.json").unlink()
    (tmp_path / "tokenizer_config.json").unlink()
    assert kinds(ck.check_directory(str(tmp_path))) == [
        ("missing-file", "config.json"),
        ("missing-file", "tokenizer_config.json"),
    ]


def test_index_naming_no_shards(tmp_path: Path) -> None:
    write_checkpoint(tmp_path, shards=2)
    for name in shard_names(tmp_path):
        (tmp_path / name).unlink()
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {}}))
    assert kinds(ck.check_directory(str(tmp_path))) == [
        ("index-names-no-shards", "model.safetensors.index.json")
    ]


def test_no_weights_at_all(tmp_path: Path) -> None:
    write_checkpoint(tmp_path, shards=1)
    (tmp_path / "model.safetensors").unlink()
    assert kinds(ck.check_directory(str(tmp_path))) == [("missing-weights", "")]


def test_a_repo_that_is_not_a_checkpoint_only_has_to_be_whole(tmp_path: Path) -> None:
    write_tokenizer(tmp_path, "json")
    assert ("missing-weights", "") in kinds(ck.check_directory(str(tmp_path)))
    assert ck.check_directory(str(tmp_path), model_files=False).complete
    write_checkpoint(tmp_path, shards=1)
    os.truncate(tmp_path / "model.safetensors", 200)
    assert kinds(ck.check_directory(str(tmp_path), model_files=False)) == [
        ("truncated", "model.safetensors")
    ]


def test_extra_bytes_after_last_tensor(tmp_path: Path) -> None:
    write_checkpoint(tmp_path, shards=1)
    with open(tmp_path / "model.safetensors", "ab") as handle:
        handle.write(b"\0" * 10)
    assert kinds(ck.check_directory(str(tmp_path))) == [("oversized", "model.safetensors")]


def test_file_cut_inside_header(tmp_path: Path) -> None:
    write_checkpoint(tmp_path, shards=1)
    os.truncate(tmp_path / "model.safetensors", 20)
    [problem] = ck.check_directory(str(tmp_path)).problems
    assert problem.kind == "truncated"
    assert problem.actual_bytes == 20


def test_cache_entry_resolves_ref_to_snapshot(tmp_path: Path) -> None:
    source = write_checkpoint(tmp_path / "src", shards=2)
    snapshot = write_cache_entry(tmp_path / "hub", "org-a/tiny", source)
    report = ck.check_repo("org-a/tiny", cache=str(tmp_path))
    assert report.complete, report.problems
    assert report.directory == str(snapshot)
    assert report.commit == snapshot.name
    by_entry = ck.check(str(snapshot.parent.parent))
    assert by_entry.complete and by_entry.repo_id == "org-a/tiny"
    by_commit = ck.check("org-a/tiny", revision=snapshot.name, cache=str(tmp_path))
    assert by_commit.complete


def test_cache_dangling_snapshot_link(tmp_path: Path) -> None:
    source = write_checkpoint(tmp_path / "src", shards=2)
    snapshot = write_cache_entry(tmp_path / "hub", "org-a/tiny", source)
    shard = shard_names(source)[1]
    Path(snapshot / shard).resolve().unlink()
    report = ck.check_repo("org-a/tiny", cache=str(tmp_path))
    assert kinds(report) == [("dangling-link", shard)]


def test_cache_incomplete_blob_named_by_tree_listing(tmp_path: Path) -> None:
    source = write_checkpoint(tmp_path / "src", shards=2)
    snapshot = write_cache_entry(tmp_path / "hub", "org-a/tiny", source)
    entry = snapshot.parent.parent
    shard = shard_names(source)[0]
    blob = Path(snapshot / shard).resolve()
    # What an interrupted download leaves: a partial `.incomplete` blob and no snapshot link.
    (snapshot / shard).unlink()
    blob.rename(blob.with_name(blob.name + ".incomplete"))
    listing = {
        "format_version": 1,
        "files": {shard: {"size": 1, "blob_id": "x", "lfs_sha256": blob.name}},
    }
    (entry / "trees").mkdir()
    (entry / "trees" / f"{snapshot.name}.json").write_text(json.dumps(listing))
    report = ck.check_repo("org-a/tiny", cache=str(tmp_path))
    assert ("incomplete-blob", shard) in kinds(report)
    assert ("missing-shard", shard) in kinds(report)


def test_cache_incomplete_blob_without_listing_is_not_ignored(tmp_path: Path) -> None:
    source = write_checkpoint(tmp_path / "src", shards=2)
    snapshot = write_cache_entry(tmp_path / "hub", "org-a/tiny", source)
    (snapshot.parent.parent / "blobs" / "deadbeef.incomplete").write_bytes(b"partial")
    report = ck.check_repo("org-a/tiny", cache=str(tmp_path))
    assert kinds(report) == [("incomplete-blob", "blobs/deadbeef.incomplete")]


def test_file_listed_in_tree_but_never_downloaded(tmp_path: Path) -> None:
    source = write_checkpoint(tmp_path / "src", shards=2)
    snapshot = write_cache_entry(tmp_path / "hub", "org-a/tiny", source)
    entry = snapshot.parent.parent
    listing = {
        "format_version": 1,
        "files": {
            "config.json": {"size": 1, "blob_id": "a"},
            "modeling_tiny.py": {"size": 9, "blob_id": "b"},
        },
    }
    (entry / "trees").mkdir()
    (entry / "trees" / f"{snapshot.name}.json").write_text(json.dumps(listing))
    report = ck.check_repo("org-a/tiny", cache=str(tmp_path))
    assert kinds(report) == [("missing-listed-file", "modeling_tiny.py")]


def test_repo_not_in_cache_and_unknown_revision(tmp_path: Path) -> None:
    report = ck.check("org-a/absent", cache=str(tmp_path))
    assert kinds(report) == [("not-in-cache", "")]
    source = write_checkpoint(tmp_path / "src", shards=1)
    write_cache_entry(tmp_path / "hub", "org-a/tiny", source)
    report = ck.check("org-a/tiny", revision="v2", cache=str(tmp_path))
    assert kinds(report) == [("unknown-revision", "refs/v2")]


def test_legacy_layout_directly_under_cache_root_is_found(tmp_path: Path) -> None:
    source = write_checkpoint(tmp_path / "src", shards=2)
    write_cache_entry(tmp_path / "cache", "org-b/legacy", source)
    report = ck.check("org-b/legacy", cache=str(tmp_path / "cache"))
    assert report.complete


def test_unusable_inputs(tmp_path: Path) -> None:
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(ck.UnusableInput):
        ck.check(str(tmp_path / "file.txt"))
    with pytest.raises(ck.UnusableInput):
        ck.check("not a repo id!")


def run_script(*args: str) -> subprocess.CompletedProcess[str]:
    # `-S -I`: no site packages, isolated: proves the module needs only the standard library.
    return subprocess.run(
        [sys.executable, "-S", "-I", str(SCRIPT), *args],
        capture_output=True,
        text=True,
        check=False,
    )


def test_runs_as_a_standalone_script_with_exit_codes(tmp_path: Path) -> None:
    good = write_checkpoint(tmp_path / "good", shards=2)
    bad = write_checkpoint(tmp_path / "bad", shards=2)
    shard = shard_names(bad)[0]
    os.truncate(bad / shard, 50)
    ok = run_script(str(good))
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith("complete:")
    broken = run_script(str(bad), "--json")
    assert broken.returncode == 1
    data = json.loads(broken.stdout)
    assert data["complete"] is False
    assert data["problems"][0]["path"] == shard
    assert data["problems"][0]["actual_bytes"] == 50
    assert run_script(str(tmp_path / "good" / "config.json")).returncode == 2
