"""Prefetch one repo into the shared cache: lock, reuse a legacy copy, download, validate.

A complete canonical entry costs no lock and no network call. `snapshot_download` records
the commit's file list first and writes each blob to `*.incomplete` before renaming it, so
a crash at any point leaves the previous state or files the contract rejects (short
blobs, `.incomplete` blobs, files listed but absent), never a false "complete".
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import disagg.staging.checkpoint as ck
import disagg.staging.hfcache as hfcache
from disagg.errors import EXIT_FINDINGS, DisaggError
from disagg.plan.model import ModelToStage
from disagg.staging.locks import DirLock
from disagg.staging.progress import Reporter, tqdm_class_for

Action = Literal["present", "linked", "downloaded"]
LOCKS_DIR = ".disagg-locks"


class StagingError(DisaggError):
    """A model could not be made complete; the message names each repo and every problem."""

    exit_code = EXIT_FINDINGS


@dataclass(kw_only=True)
class RepoOutcome:
    """What staging did for one repo and where its snapshot is; fields in `disagg stage
    --json`'s order."""

    repo_id: str
    revision: str
    purpose: str
    action: Action
    path: str
    commit: str | None
    files_fetched: int = 0
    bytes_fetched: int = 0
    seconds: float


@dataclass(frozen=True)
class CacheSettings:
    """Where to stage and how: cache root (HF_HOME-style), legacy roots, hub endpoint."""

    root: Path
    legacy_roots: tuple[Path, ...] = ()
    allow_download: bool = True
    endpoint: str | None = None  # None: HF_ENDPOINT or the public default

    @property
    def hub(self) -> Path:
        return self.root / "hub"


def prefetch(model: ModelToStage, settings: CacheSettings, reporter: Reporter) -> RepoOutcome:
    """Make `model` complete in the canonical cache; raise StagingError if it cannot be."""
    started = time.monotonic()
    repo, rev = model.repo_id, model.revision
    # Main and draft models are checkpoints; an extra repo (e.g. a tokenizer) only has to be whole.
    is_checkpoint = model.purpose != "extra"

    def outcome(action: Action, report: ck.Report, files: int = 0, nbytes: int = 0) -> RepoOutcome:
        assert report.directory is not None
        return RepoOutcome(
            repo_id=repo,
            revision=rev,
            purpose=model.purpose,
            action=action,
            path=report.directory,
            commit=report.commit,
            seconds=time.monotonic() - started,
            files_fetched=files,
            bytes_fetched=nbytes,
        )

    def canonical() -> ck.Report:
        return hfcache.check_canonical(settings.hub, repo, rev, model_files=is_checkpoint)

    report = canonical()
    if report.complete:
        reporter.note(repo, f"complete in cache ({report.directory}); nothing to fetch")
        return outcome("present", report)

    lock = DirLock(
        settings.hub / LOCKS_DIR / f"{ck.repo_folder_name(repo)}.lock",
        on_wait=lambda line: reporter.note(repo, line),
    )
    with lock:
        report = canonical()
        if report.complete:
            waited = lock.waited_s
            reporter.note(repo, f"completed by another stager while we waited ({waited:.1f}s)")
            return outcome("present", report)

        legacy = hfcache.find_complete_legacy(
            settings.root, settings.legacy_roots, repo, rev, model_files=is_checkpoint
        )
        if legacy is not None:
            hfcache.link_legacy(legacy, settings.hub, repo, rev)
            report = _validated(canonical(), "after linking")
            reporter.note(repo, f"linked legacy copy {legacy.directory} (nothing copied)")
            return outcome("linked", report)

        if not settings.allow_download:
            raise StagingError(
                report.listed(f"{repo}@{rev} is not complete in the cache and downloads are off"),
                hint="stage it where downloads are allowed (`disagg stage RECIPE`), "
                "or add the directory that holds it to the cluster profile's legacy roots",
            )
        for commit in hfcache.unlink_linked_snapshots(settings.hub, repo):
            reporter.note(repo, f"dropped link to an incomplete legacy snapshot {commit}")
        _download(model, settings, reporter)
        report = _validated(canonical(), "after download")
        return outcome("downloaded", report, *reporter.counts(repo))


def _download(model: ModelToStage, settings: CacheSettings, reporter: Reporter) -> None:
    """`snapshot_download` into the canonical hub directory, errors turned into StagingError."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import (
        GatedRepoError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    repo, rev = model.repo_id, model.revision
    endpoint = settings.endpoint
    where = endpoint or "the default hub endpoint"
    reporter.begin_download(repo)
    started = time.monotonic()
    try:
        snapshot_download(
            repo,
            revision=rev,
            cache_dir=settings.hub,
            endpoint=endpoint,
            tqdm_class=tqdm_class_for(reporter, repo),
        )
    except GatedRepoError as exc:
        raise StagingError(
            f"{repo}: access to this gated repo was refused by {where}",
            hint="accept its terms on the hub and export HF_TOKEN",
        ) from exc
    except RepositoryNotFoundError as exc:
        raise StagingError(
            f"{repo}: repository not found at {where}",
            hint="check the repo id; for a private repo export HF_TOKEN",
        ) from exc
    except RevisionNotFoundError as exc:
        raise StagingError(f"{repo}: revision {rev!r} not found at {where}") from exc
    except LocalEntryNotFoundError as exc:
        raise StagingError(
            f"{repo}: cannot reach {where} and no complete copy is cached",
            hint="check HF_ENDPOINT / HF_HUB_OFFLINE, or stage from a node with network access",
        ) from exc
    except Exception as exc:  # network, disk full, consistency checks: all name the repo
        raise StagingError(f"{repo}: download failed: {type(exc).__name__}: {exc}") from exc
    reporter.end_download(repo, time.monotonic() - started)


def _validated(report: ck.Report, when: str) -> ck.Report:
    if not report.complete:
        raise StagingError(
            report.listed(f"{report.target}@{report.revision or 'main'} is incomplete {when}"),
            hint="; ".join(report.hints()) or None,
        )
    return report
