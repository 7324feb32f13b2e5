"""Prefetch against a real local Hub-compatible server: download, reuse, lock, crash safety."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from rich.console import Console

from disagg.plan.model import ModelToStage, StagingPlan
from disagg.staging import StagingError, stage_plan
from disagg.staging import checkpoint as ck
from disagg.staging.progress import RichReporter

from .ckpt import shard_names, write_cache_entry
from .conftest import DRAFT, MAIN
from .hub_server import HubServer


def plan(cache: Path, *repos: tuple[str, str], **extra: object) -> StagingPlan:
    models = [ModelToStage(repo_id=r, purpose=p) for r, p in repos]  # type: ignore[arg-type]
    return StagingPlan(models=models, hf_cache=str(cache), **extra)  # type: ignore[arg-type]


def test_stages_main_and_draft_then_fetches_nothing_when_complete(
    tmp_path: Path, hub: HubServer, repo_sources: dict[str, Path]
) -> None:
    cache = tmp_path / "cache"
    staging = plan(cache, (MAIN, "main"), (DRAFT, "draft"))
    log: list[str] = []
    staged = stage_plan(staging, log=log.append, endpoint=hub.endpoint)

    assert [o.action for o in staged.outcomes] == ["downloaded", "downloaded"]
    assert staged.main_path == staged.paths[MAIN]
    assert staged.draft_path == staged.paths[DRAFT]
    for repo_id in (MAIN, DRAFT):
        source = repo_sources[repo_id]
        path = Path(staged.paths[repo_id])
        assert path.parent.parent == cache / "hub" / ck.repo_folder_name(repo_id)
        assert ck.check_directory(str(path)).complete
        assert (path / "config.json").read_bytes() == (source / "config.json").read_bytes()
    assert hub.per_file(MAIN) == {name: 1 for name in hub.state.repos[MAIN].files}
    assert any("downloaded" in line and MAIN in line for line in log)

    hub.reset_counts()
    again = stage_plan(staging, log=log.append, endpoint=hub.endpoint)
    assert [o.action for o in again.outcomes] == ["present", "present"]
    assert again.paths == staged.paths
    assert hub.downloads() == 0


def run_stager(staging_json: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "disagg.staging", str(staging_json)],
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def test_two_concurrent_stager_processes_download_once(
    tmp_path: Path, hub: HubServer, hf_env: dict[str, str]
) -> None:
    # The first stager stalls on a shard until the second one is seen waiting for the lock.
    shard = shard_names_of(hub, MAIN)[0]
    hub.hold(shard)
    staging_json = tmp_path / "staging.json"
    staging_json.write_text(plan(tmp_path / "cache", (MAIN, "main")).model_dump_json())
    procs = [run_stager(staging_json, hf_env) for _ in range(2)]
    outputs: list[list[str]] = [[], []]
    readers = [
        threading.Thread(target=lambda p=p, o=o: o.extend(p.stdout), daemon=True)  # type: ignore[misc]
        for p, o in zip(procs, outputs, strict=True)
    ]
    for reader in readers:
        reader.start()
    try:
        deadline = time.monotonic() + 60
        while not any("waiting for lock" in line for out in outputs for line in out):
            assert time.monotonic() < deadline, outputs
            assert all(p.poll() is None for p in procs), outputs
            time.sleep(0.05)
        hub.release()
        for proc in procs:
            assert proc.wait(timeout=120) == 0, outputs
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        for reader in readers:
            reader.join(timeout=10)
    assert hub.per_file(MAIN) == {name: 1 for name in hub.state.repos[MAIN].files}
    joined = "".join(line for out in outputs for line in out)
    assert joined.count("downloaded") == 1
    assert "completed by another stager" in joined
    snapshot = next(line.split(" -> ")[1].strip() for line in outputs[0] if " -> " in line)
    assert ck.check_directory(snapshot).complete


def test_legacy_layout_is_linked_not_copied(
    tmp_path: Path, hub: HubServer, repo_sources: dict[str, Path]
) -> None:
    cache = tmp_path / "cache"
    extra_root = tmp_path / "old-share"
    # MAIN sits directly under the cache root; DRAFT under an extra legacy root.
    legacy_main = write_cache_entry(cache, MAIN, repo_sources[MAIN])
    legacy_draft = write_cache_entry(extra_root / "hub", DRAFT, repo_sources[DRAFT])
    staging = plan(cache, (MAIN, "main"), (DRAFT, "draft"), legacy_roots=[str(extra_root)])
    log: list[str] = []
    staged = stage_plan(staging, log=log.append, endpoint=hub.endpoint)

    assert [o.action for o in staged.outcomes] == ["linked", "linked"]
    assert hub.downloads() == 0 and hub.bytes_sent == 0
    for repo_id, legacy in ((MAIN, legacy_main), (DRAFT, legacy_draft)):
        canonical = cache / "hub" / ck.repo_folder_name(repo_id) / "snapshots" / legacy.name
        assert canonical.is_symlink()
        assert canonical.resolve() == legacy.resolve()
        assert ck.check_repo(repo_id, cache=str(cache)).directory == str(canonical)
        for name in os.listdir(legacy):
            assert os.stat(canonical / name).st_ino == os.stat(legacy / name).st_ino
    assert not list((cache / "hub").rglob("blobs/*"))  # no bytes copied into hub/


def test_incomplete_legacy_copy_is_not_linked(
    tmp_path: Path, hub: HubServer, repo_sources: dict[str, Path]
) -> None:
    cache = tmp_path / "cache"
    legacy = write_cache_entry(cache, MAIN, repo_sources[MAIN])
    shard = shard_names(repo_sources[MAIN])[0]
    os.truncate((legacy / shard).resolve(), 100)
    staged = stage_plan(plan(cache, (MAIN, "main")), log=lambda _: None, endpoint=hub.endpoint)
    assert [o.action for o in staged.outcomes] == ["downloaded"]
    assert not Path(staged.main_path or "").is_symlink()


def test_a_linked_legacy_copy_that_broke_is_replaced_by_a_download(
    tmp_path: Path, hub: HubServer, repo_sources: dict[str, Path]
) -> None:
    cache = tmp_path / "cache"
    legacy = write_cache_entry(cache, MAIN, repo_sources[MAIN])
    staging = plan(cache, (MAIN, "main"))
    stage_plan(staging, log=lambda _: None, endpoint=hub.endpoint)
    shard = shard_names(repo_sources[MAIN])[0]
    original = (legacy / shard).resolve()
    os.truncate(original, 64)  # someone damaged the legacy copy after it was linked

    log: list[str] = []
    staged = stage_plan(staging, log=log.append, endpoint=hub.endpoint)
    assert staged.outcomes[0].action == "downloaded"
    assert not Path(staged.paths[MAIN]).is_symlink()
    assert any("dropped link" in line for line in log)
    assert original.stat().st_size == 64  # nothing was written into the legacy tree
    assert ck.check_repo(MAIN, cache=str(cache)).complete


def test_crash_mid_download_is_never_taken_as_complete(
    tmp_path: Path, hub: HubServer, hf_env: dict[str, str]
) -> None:
    cache = tmp_path / "cache"
    shard = shard_names_of(hub, MAIN)[-1]
    hub.hold(shard)
    staging_json = tmp_path / "staging.json"
    staging_json.write_text(plan(cache, (MAIN, "main")).model_dump_json())
    proc = run_stager(staging_json, hf_env)
    try:
        deadline = time.monotonic() + 60
        while hub.per_file(MAIN).get(shard, 0) == 0 or not list(cache.rglob("*.incomplete")):
            assert proc.poll() is None, proc.communicate()[0]
            assert time.monotonic() < deadline, "the stager never reached the held shard"
            time.sleep(0.05)
        time.sleep(0.3)  # let every other file finish
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate()
    hub.release()

    report = ck.check_repo(MAIN, cache=str(cache))
    assert not report.complete
    assert {p.path for p in report.problems} >= {shard}
    assert (cache / "hub" / ".disagg-locks" / f"{ck.repo_folder_name(MAIN)}.lock").is_dir()

    hub.reset_counts()
    log: list[str] = []
    staged = stage_plan(plan(cache, (MAIN, "main")), log=log.append, endpoint=hub.endpoint)
    assert staged.outcomes[0].action == "downloaded"
    assert hub.per_file(MAIN) == {shard: 1}  # only the missing shard, resumed
    assert any("broke stale lock" in line for line in log)
    assert ck.check_repo(MAIN, cache=str(cache)).complete


def shard_names_of(hub: HubServer, repo_id: str) -> list[str]:
    return sorted(p for p in hub.state.repos[repo_id].files if p.endswith(".safetensors"))


def test_unknown_repo_is_an_error_naming_it_and_others_still_stage(
    tmp_path: Path, hub: HubServer
) -> None:
    staging = plan(tmp_path / "cache", ("org-c/absent", "main"), (DRAFT, "draft"))
    with pytest.raises(StagingError) as info:
        stage_plan(staging, log=lambda _: None, endpoint=hub.endpoint)
    assert "org-c/absent" in str(info.value)
    assert "not found" in str(info.value)
    assert ck.check_repo(DRAFT, cache=str(tmp_path / "cache")).complete


def test_downloads_off_and_missing_lists_the_problem(tmp_path: Path, hub: HubServer) -> None:
    staging = plan(tmp_path / "cache", (MAIN, "main"), allow_download=False)
    with pytest.raises(StagingError) as info:
        stage_plan(staging, log=lambda _: None, endpoint=hub.endpoint)
    assert f"{MAIN}@main is not complete" in str(info.value)
    assert hub.downloads() == 0


def test_local_path_is_validated_as_the_main_model(
    tmp_path: Path, repo_sources: dict[str, Path]
) -> None:
    staged = stage_plan(StagingPlan(local_path=str(repo_sources[MAIN])), log=lambda _: None)
    assert staged.main_path == str(repo_sources[MAIN])
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text(json.dumps({}))
    with pytest.raises(StagingError) as info:
        stage_plan(StagingPlan(local_path=str(broken)), log=lambda _: None)
    assert "tokenizer_config.json is missing" in str(info.value)


def test_skip_stages_nothing(tmp_path: Path) -> None:
    staging = plan(tmp_path / "cache", (MAIN, "main"), skip=True)
    log: list[str] = []
    staged = stage_plan(staging, log=log.append)
    assert staged.skipped and staged.paths == {}
    assert not (tmp_path / "cache").exists()


def test_terminal_progress_counts_every_file_and_byte(tmp_path: Path, hub: HubServer) -> None:
    screen = io.StringIO()
    reporter = RichReporter(Console(file=screen, force_terminal=True, width=120))
    staged = stage_plan(
        plan(tmp_path / "cache", (MAIN, "main")),
        log=lambda _: None,
        reporter=reporter,
        endpoint=hub.endpoint,
    )
    reporter.close()
    files = hub.state.repos[MAIN].files
    [outcome] = staged.outcomes
    assert outcome.files_fetched == len(files)
    assert outcome.bytes_fetched == sum(len(f.data) for f in files.values())
    assert reporter.counts(MAIN) == (len(files), outcome.bytes_fetched)
    text = screen.getvalue()
    assert MAIN in text and f"{len(files)}/{len(files)} files" in text
