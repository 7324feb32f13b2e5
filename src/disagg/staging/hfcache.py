"""Hugging Face cache layout: where a repo lives, legacy copies, and linking them in.

The canonical layout is `ROOT/hub/models--org--name/` (what `huggingface_hub` uses when
`HF_HOME=ROOT`). Older setups left entries directly under `ROOT/` or under other
shared roots; a complete one of those is reused by linking its snapshot into the
canonical entry, never by copying hundreds of gigabytes.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from collections.abc import Iterable
from pathlib import Path

import disagg.staging.checkpoint as ck
from disagg.atomic import write_text


def entry_dir(hub: Path, repo_id: str) -> Path:
    return hub / ck.repo_folder_name(repo_id)


def check_canonical(
    hub: Path, repo_id: str, revision: str, *, model_files: bool = True
) -> ck.Report:
    """The contract applied to the canonical entry (a `not-in-cache` report if absent)."""
    entry = entry_dir(hub, repo_id)
    if not entry.is_dir():
        report = ck.Report(target=repo_id, repo_id=repo_id, revision=revision)
        report.add(ck.NOT_IN_CACHE, "", f"{repo_id} is not in {hub}")
        return report
    return ck.check_cache_entry(str(entry), revision, target=repo_id, model_files=model_files)


def legacy_entries(cache_root: Path, legacy_roots: Iterable[Path], repo_id: str) -> list[Path]:
    """Existing legacy entries for `repo_id`: directly under the cache root, then each extra root.

    An extra root may itself be HF_HOME-style, so `ROOT/hub/` is looked at too.
    """
    folder = ck.repo_folder_name(repo_id)
    canonical = os.path.realpath(entry_dir(cache_root / "hub", repo_id))
    candidates = [cache_root / folder]
    for root in legacy_roots:
        candidates += [root / folder, root / "hub" / folder]
    found: list[Path] = []
    seen = {canonical}
    for path in candidates:
        real = os.path.realpath(path)
        if path.is_dir() and real not in seen:
            seen.add(real)
            found.append(path)
    return found


def find_complete_legacy(
    cache_root: Path,
    legacy_roots: Iterable[Path],
    repo_id: str,
    revision: str,
    *,
    model_files: bool = True,
) -> ck.Report | None:
    """The first legacy entry that passes the contract at `revision`, if any."""
    for entry in legacy_entries(cache_root, legacy_roots, repo_id):
        report = ck.check_cache_entry(str(entry), revision, target=repo_id, model_files=model_files)
        if report.complete:
            return report
    return None


def link_legacy(legacy: ck.Report, hub: Path, repo_id: str, revision: str) -> Path:
    """Make the canonical entry point at a complete legacy snapshot; returns the snapshot path.

    `snapshots/COMMIT` becomes a symlink to the legacy snapshot directory (its own
    relative blob links keep resolving inside the legacy entry), then `refs/REVISION`
    is written. The ref comes last, so a crash in between leaves no ref and therefore
    nothing that looks complete. A partial canonical snapshot is moved aside first.
    """
    assert legacy.commit is not None and legacy.directory is not None
    entry = entry_dir(hub, repo_id)
    snapshots = entry / "snapshots"
    snapshots.mkdir(parents=True, exist_ok=True)
    link = snapshots / legacy.commit
    target = os.path.abspath(legacy.directory)
    aside: Path | None = None
    if link.is_dir() and not link.is_symlink():
        aside = snapshots / f".{legacy.commit}.partial-{secrets.token_hex(4)}"
        os.rename(link, aside)
    tmp = snapshots / f".{legacy.commit}.link-{secrets.token_hex(4)}"
    os.symlink(target, tmp, target_is_directory=True)
    try:
        os.replace(tmp, link)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    if revision != legacy.commit:
        write_text(entry / "refs" / revision, legacy.commit)
    if aside is not None:
        shutil.rmtree(aside, ignore_errors=True)
    return link


def unlink_linked_snapshots(hub: Path, repo_id: str) -> list[str]:
    """Remove snapshot links into legacy copies (the links only, never their targets).

    Called before a download, so that the download tool never writes through a link
    into someone else's legacy tree. A complete legacy copy is linked again on demand.
    """
    snapshots = entry_dir(hub, repo_id) / "snapshots"
    removed: list[str] = []
    with contextlib.suppress(FileNotFoundError):
        for child in snapshots.iterdir():
            if child.is_symlink():
                child.unlink()
                removed.append(child.name)
    return removed
