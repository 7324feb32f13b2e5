"""DA015: a `model.path` that names a directory this machine does not have.

srtctl reads a `model.path` without `hf:` that the cluster's `model_paths` do not name as
a directory and fails at submit when it is missing. A plan is often made away from the
cluster's filesystem, so the plan only says so; lint warns here, at the field, and
`disagg submit`'s pre-flight refuses it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from disagg.plan.stage_list import MISSING_MODEL_HINT, missing_model_dir
from disagg.recipe.lint.model import Finding, Location, Severity

if TYPE_CHECKING:
    from disagg.plan.model import Plan
    from disagg.recipe.variants import Variant

RULE = "DA015"
NAME = "model-directory-missing"


def check(path: str, variant: Variant, plan: Plan) -> Finding | None:
    """A warning at `model.path` when the planned job's model directory is not here."""
    missing = missing_model_dir(plan.staging)
    if missing is None:
        return None
    where = variant.locate_written(("model", "path"))
    line, col = (where.line, where.column) if where else (None, None)
    location = Location(path, line, col, "model")
    written = variant.config.model.path
    return Finding(
        RULE,
        NAME,
        Severity.WARNING,
        f"model.path {written!r} is the directory {missing}, which does not exist on this "
        f"machine; `disagg submit` refuses the variant until it does (variant {variant.name})",
        (location,),
        hint=MISSING_MODEL_HINT,
    )
