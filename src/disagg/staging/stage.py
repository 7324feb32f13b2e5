"""Stage every model a plan lists: the entry point for `disagg stage` and the in-job stage."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import disagg.staging.checkpoint as ck
from disagg.errors import DisaggError
from disagg.plan.model import ModelToStage, StagingPlan
from disagg.staging.container import ensure_container
from disagg.staging.prefetch import CacheSettings, RepoOutcome, StagingError, prefetch
from disagg.staging.progress import Reporter, default_reporter


@dataclass
class StagedModels:
    """Snapshot directories of the staged models, for `${model.path}` / `${model.draft}`."""

    main_path: str | None = None
    draft_path: str | None = None
    paths: dict[str, str] = field(default_factory=dict)  # repo_id -> snapshot directory
    outcomes: list[RepoOutcome] = field(default_factory=list)
    skipped: bool = False
    containers: list[str] = field(default_factory=list)  # squashfs images present or imported


def cache_settings(staging: StagingPlan, *, endpoint: str | None = None) -> CacheSettings:
    """Resolve the plan's cache root (default: HF_HOME-style parent of the default hub cache)."""
    root = Path(staging.hf_cache) if staging.hf_cache else Path(ck.default_hub_cache()).parent
    return CacheSettings(
        root=root,
        legacy_roots=tuple(Path(p) for p in staging.legacy_roots),
        allow_download=staging.allow_download,
        endpoint=endpoint if endpoint is not None else os.environ.get("HF_ENDPOINT") or None,
    )


def unique_models(models: list[ModelToStage]) -> list[ModelToStage]:
    """Each (repo, revision) once, keeping the first purpose (main before draft before extra)."""
    order = {"main": 0, "draft": 1, "extra": 2}
    first: dict[tuple[str, str], ModelToStage] = {}
    for model in sorted(models, key=lambda m: order[m.purpose]):
        first.setdefault((model.repo_id, model.revision), model)
    return list(first.values())


def stage_plan(
    staging: StagingPlan,
    *,
    log: Callable[[str], None],
    reporter: Reporter | None = None,
    endpoint: str | None = None,
) -> StagedModels:
    """Make every model of the plan complete in the shared cache and say where each one is.

    All repos are attempted; failures are collected and raised together as one
    StagingError naming each repo and its problems.
    """
    result = StagedModels()
    if staging.skip:
        local = [staging.local_path] if staging.local_path else []
        names = ", ".join([*local, *(m.repo_id for m in staging.models)]) or "none"
        log(f"staging skipped: the simulated engine needs no weights (models: {names})")
        result.skipped = True
        return result

    failures: list[str] = []
    for container in staging.containers:
        try:
            result.containers.append(str(ensure_container(container, log=log)))
        except DisaggError as exc:
            failures.append(str(exc))
    if staging.local_path:
        try:
            report = ck.check(staging.local_path)
        except ck.UnusableInput as exc:
            raise StagingError(str(exc)) from exc
        if report.complete:
            result.main_path = report.directory or staging.local_path
            log(f"{staging.local_path}: complete ({report.safetensors_files} safetensors files)")
        else:
            failures.append(report.listed(f"{staging.local_path} is incomplete"))

    models = unique_models(staging.models)
    if models:
        settings = cache_settings(staging, endpoint=endpoint)
        own_reporter = reporter is None
        reporter = reporter or default_reporter(log)
        try:
            for model in models:
                try:
                    outcome = prefetch(model, settings, reporter)
                except StagingError as exc:
                    failures.append(str(exc))
                    continue
                result.outcomes.append(outcome)
                result.paths[model.repo_id] = outcome.path
        finally:
            if own_reporter:
                reporter.close()

    for model in staging.models:
        path = result.paths.get(model.repo_id)
        if model.purpose == "main" and result.main_path is None and path:
            result.main_path = path
        if model.purpose == "draft" and result.draft_path is None and path:
            result.draft_path = path
    if failures:
        raise StagingError(
            f"{len(failures)} model(s) not staged:\n" + "\n".join(failures),
            hint="fix the problems above and re-run; complete repos are not fetched again",
        )
    return result
