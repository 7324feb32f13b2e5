"""What a job stages before it starts: the model, one draft model, the recipe's extra repos
and the images. A `model.path` that is a directory stages nothing; one missing here is
said in the plan, since the plan may be made where the cluster's filesystem is not.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from disagg.cluster import is_repo_id
from disagg.plan.job_plan import containers_to_stage
from disagg.plan.model import WORKER_KINDS, ModelToStage, RoleKind, RolePlan, StagingPlan

if TYPE_CHECKING:
    from disagg.plan.containers import Containers


def staging_plan(
    containers: Containers, workers: list[RolePlan], draft_of: Callable[[RoleKind], str | None]
) -> StagingPlan:
    """`draft_of(kind)`: the draft model a worker kind's settings name, if any."""
    config, profile, model = containers.config, containers.profile, containers.model
    revision = config.model.revision or "main"
    models: list[ModelToStage] = []
    if model.repo_id:
        models.append(ModelToStage(repo_id=model.repo_id, revision=revision, purpose="main"))
    drafts: dict[str, None] = {}
    for kind in WORKER_KINDS:
        if any(role.kind is kind for role in workers):
            draft = draft_of(kind)
            if draft and is_repo_id(draft):
                drafts[draft.removeprefix("hf:")] = None
    if len(drafts) > 1:
        raise containers.fail(
            f"roles name different draft models ({', '.join(drafts)})",
            ("backend", containers.adapter.config_section),
            "one variant can stage one draft model (bound as ${model.draft})",
        )
    models += [ModelToStage(repo_id=repo, purpose="draft") for repo in drafts]
    for extra in config.model.stage_extra:
        models.append(ModelToStage(repo_id=extra.removeprefix("hf:"), purpose="extra"))
    return StagingPlan(
        models=models,
        hf_cache=profile.hf_cache if profile else None,
        legacy_roots=list(profile.legacy_cache_roots) if profile else [],
        local_path=None if model.kind == "repo" else model.value,
        allow_download=profile.allow_download if profile else True,
        skip=containers.simulated,
        containers=containers_to_stage(containers.written(workers), profile, containers.pyxis),
    )


MISSING_MODEL_HINT = (
    "a `model.path` without `hf:` that the cluster's model aliases (`models`, srt-slurm's "
    "`model_paths`) do not name is a directory, as srt-slurm reads it: write "
    "`hf:org/name` for a hub model, or add the name to the cluster's aliases"
)


def missing_model_dir(staging: StagingPlan) -> str | None:
    """The model directory a real job reads, when this machine has no such directory."""
    path = staging.local_path
    if staging.skip or not path or os.path.isdir(path):
        return None
    return path
