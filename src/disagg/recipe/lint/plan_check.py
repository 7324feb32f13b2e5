"""DA013: what `disagg plan` would refuse in this file, so that a lint gate means the recipe
plans; DA015, from the same plans: a `model.path` directory this machine does not have.

Every variant is planned through `disagg.plan.file_plans`, as `plan` does, on the profile
`plan` would use. Bad input is an error, `unsupported: ...` a warning, fields the plan
ignores info notes (engine settings are DA010's). An srt-slurm cluster config is not a
recipe and is left alone. srtctl reads a `model.path` without `hf:` as a directory and
fails at submit when it is missing: one written like a hub repo (`org/name`, no alias) is
a warning, as `hf:` was most likely meant; any other is an info note, expected off the cluster.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from disagg.cluster import is_repo_id
from disagg.errors import DisaggError, SourceLocation, UnsupportedRecipe
from disagg.plan.stage_list import MISSING_MODEL_HINT, missing_model_dir
from disagg.recipe.errors import undotted
from disagg.recipe.lint.context import FileContext
from disagg.recipe.lint.model import Finding, Location, Rule, Severity

if TYPE_CHECKING:
    from disagg.cluster import ClusterProfile
    from disagg.plan.model import Plan
    from disagg.recipe.variants import Variant

RULE = Rule("DA013", "does-not-plan")
MODEL_DIR = Rule("DA015", "model-directory-missing")


def _at(path: str, where: SourceLocation | None, role: str) -> tuple[Location]:
    line, col = (where.line, where.column) if where else (None, None)
    return (Location(path, line, col, role),)


def _finding(
    path: str,
    where: SourceLocation | None,
    severity: Severity,
    message: str,
    hint: str | None = None,
) -> Finding:
    return RULE.finding(severity, message, _at(path, where, "plan"), hint=hint)


def _refusal(path: str, exc: DisaggError) -> Finding:
    if isinstance(exc, UnsupportedRecipe):
        return _finding(path, exc.location, Severity.WARNING, exc.message)
    return _finding(path, exc.location, Severity.ERROR, exc.message, exc.hint)


def _missing_model_dir(
    path: str, variant: Variant, plan: Plan, profile: ClusterProfile | None
) -> Finding | None:
    missing = missing_model_dir(plan.staging)
    if missing is None:
        return None
    written = variant.config.model.path
    aliased = profile is not None and written in profile.models
    hub_like = not aliased and is_repo_id(written)
    looks = f" (written like a hub repo: `hf:{written}` is one)" if hub_like else ""
    return MODEL_DIR.finding(
        Severity.WARNING if hub_like else Severity.INFO,
        f"model.path {written!r} is the directory {missing}, which does not exist on this "
        f"machine{looks}; `disagg submit` refuses the variant until it does "
        f"(variant {variant.name})",
        _at(path, variant.locate_written(("model", "path")), "model"),
        hint=MISSING_MODEL_HINT,
    )


def check(ctx: FileContext) -> list[Finding]:
    from disagg.plan.file_plans import file_plans

    planned = file_plans(ctx.scanned.text, ctx.path, ctx.profile)
    if planned.is_cluster_config:
        return []
    if isinstance(planned.variants, DisaggError):
        return [_refusal(ctx.path, planned.variants)]
    findings = []
    for variant, outcome in planned.placed:
        if isinstance(outcome, DisaggError):
            findings.append(_refusal(ctx.path, outcome))
            continue
        missing = _missing_model_dir(ctx.path, variant, outcome, ctx.profile)
        if missing is not None:
            findings.append(missing)
        for item in outcome.ignored:
            written = undotted(item["field"])
            if variant.internal_path(written)[:1] == ("backend",):
                continue  # engine settings: DA010 reports them, with their own place
            findings.append(
                _finding(
                    ctx.path,
                    variant.locate_written(written),
                    Severity.INFO,
                    f"{item['field']} is ignored by the plan: {item['why']} "
                    f"(variant {variant.name})",
                )
            )
    return findings
