"""DA010: engine settings the plan does not carry out as written (ignored or refused, with why).

The plan sets placement itself (ports, node ranks, rendezvous addresses, the staged
model path) and lists a recipe's own value under `ignored`; this rule points at where
it is written. The engine adapters decide which settings these are, as for the plan;
engine-wide `backend.*` knobs the plan refuses (`engines.backend_fields`) are warnings.
"""

from __future__ import annotations

from collections.abc import Mapping

from disagg.engines import registry
from disagg.engines.backend_fields import unhonoured
from disagg.engines.worker import WORKER_ROLES
from disagg.recipe.lint.context import FileContext
from disagg.recipe.lint.model import Finding, Location, Rule, Severity

RULE = Rule("DA010", "engine-setting-ignored")


def check(ctx: FileContext) -> list[Finding]:
    variants: dict[tuple[str, str], list[str]] = {}
    where: dict[tuple[str, str], Location] = {}
    refused: set[str] = set()

    def found(variant: str, field: str, why: str, path: tuple[str, ...], role: str) -> None:
        key = (field, why)
        variants.setdefault(key, []).append(variant)
        if key not in where:
            where[key] = ctx.at(variant, path, role)

    for variant, config in ctx.runnable.items():
        backend = config.get("backend")
        if not isinstance(backend, Mapping):
            continue
        adapter = registry.get(str(backend.get("type") or "sglang"))
        if adapter is None:
            continue
        for field, action, why in unhonoured(backend, adapter.backend_fields):
            if action == "refused":
                refused.add(field)
            found(variant, field, why, tuple(field.split(".")), field)
        for role in WORKER_ROLES:
            path = adapter.args_path(role)
            for item in adapter.ignored(adapter.role_args(backend, role), role):
                field = ".".join((*path, item.key))
                found(variant, field, item.reason, (*path, item.key), item.key)
    return [
        RULE.finding(
            Severity.WARNING if field in refused else Severity.INFO,
            message=f"{ctx.written_name(names[0], field)} is "
            f"{'refused' if field in refused else 'ignored'}: {why} "
            f"[variants: {', '.join(names)}]",
            locations=(where[(field, why)],),
            hint="remove it; plan refuses the variant while it is set"
            if field in refused
            else "remove it; the plan decides this value",
        )
        for (field, why), names in variants.items()
    ]
