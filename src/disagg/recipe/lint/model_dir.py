"""DA015: a `model.path` that names a directory this machine does not have.

srtctl reads a `model.path` without `hf:` as a directory and fails at submit when it is
missing. A path written like a hub repo (`org/name`, no alias) is a warning: `hf:` was
most likely meant; any other missing directory is an info note, expected off the cluster.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from disagg.cluster import is_repo_id
from disagg.plan.stage_list import MISSING_MODEL_HINT, missing_model_dir
from disagg.recipe.lint.model import Finding, Location, Rule, Severity

if TYPE_CHECKING:
    from disagg.cluster import ClusterProfile
    from disagg.plan.model import Plan
    from disagg.recipe.variants import Variant

RULE = Rule("DA015", "model-directory-missing")


def check(
    path: str, variant: Variant, plan: Plan, profile: ClusterProfile | None
) -> Finding | None:
    """A finding at `model.path` when the planned job's model directory is not here."""
    missing = missing_model_dir(plan.staging)
    if missing is None:
        return None
    written = variant.config.model.path
    aliased = profile is not None and written in profile.models
    hub_like = not aliased and is_repo_id(written)
    where = variant.locate_written(("model", "path"))
    line, col = (where.line, where.column) if where else (None, None)
    looks = f" (written like a hub repo: `hf:{written}` is one)" if hub_like else ""
    return RULE.finding(
        Severity.WARNING if hub_like else Severity.INFO,
        f"model.path {written!r} is the directory {missing}, which does not exist on this "
        f"machine{looks}; `disagg submit` refuses the variant until it does "
        f"(variant {variant.name})",
        (Location(path, line, col, "model"),),
        hint=MISSING_MODEL_HINT,
    )
