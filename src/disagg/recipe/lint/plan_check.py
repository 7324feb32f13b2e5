"""DA013: what `disagg plan` would refuse in this file, so that a lint gate means the recipe plans.

Every variant is planned through `disagg.plan.file_plans`, as `plan` does, on the profile
`plan` would use. Bad input is an error, `unsupported: ...` a warning, fields the plan
ignores info notes (engine settings are DA010's, a missing model directory DA015's).
An srt-slurm cluster config is not a recipe and is left alone.
"""

from __future__ import annotations

from disagg.errors import DisaggError, SourceLocation, UnsupportedRecipe
from disagg.recipe.errors import undotted
from disagg.recipe.lint.context import FileContext
from disagg.recipe.lint.model import Finding, Location, Rule, Severity
from disagg.recipe.lint.model_dir import check as check_model_dir

RULE = Rule("DA013", "does-not-plan")


def _finding(
    path: str,
    where: SourceLocation | None,
    severity: Severity,
    message: str,
    hint: str | None = None,
) -> Finding:
    line, col = (where.line, where.column) if where else (None, None)
    return RULE.finding(severity, message, (Location(path, line, col, "plan"),), hint=hint)


def _refusal(path: str, exc: DisaggError) -> Finding:
    if isinstance(exc, UnsupportedRecipe):
        return _finding(path, exc.location, Severity.WARNING, exc.message)
    return _finding(path, exc.location, Severity.ERROR, exc.message, exc.hint)


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
        missing = check_model_dir(ctx.path, variant, outcome, ctx.profile)
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
