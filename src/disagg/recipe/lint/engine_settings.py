"""DA010: engine settings the plan does not carry out as written (ignored or refused, with why).

The plan sets placement itself (listen ports, node ranks, rendezvous addresses, the
staged model path); a recipe that writes one of those gets the plan's value instead.
Nothing about that is silent: `disagg plan` and plan.json list each such field under
`ignored`, and this rule points at where it is written. The engine adapters decide
which settings these are, the same answer the plan gets. Engine-wide `backend.*` knobs
no adapter carries out (`engines.backend_fields`) are listed the same way; the ones
the plan refuses are warnings.
"""

from __future__ import annotations

from collections.abc import Mapping

from disagg.engines import registry
from disagg.engines.backend_fields import unhonoured
from disagg.engines.base import WORKER_ROLES
from disagg.recipe.lint.context import FileContext
from disagg.recipe.lint.model import Finding, Location, Rule, Severity

RULE = Rule("DA010", "engine-setting-ignored")


def check(ctx: FileContext) -> list[Finding]:
    variants: dict[tuple[str, str], list[str]] = {}
    where: dict[tuple[str, str], Location] = {}
    refused: set[str] = set()
    configs = dict(ctx.variants.configs)
    if ctx.is_override_file and not configs:  # `file.yaml:base` is the only runnable selection
        base = ctx.data.get("base")
        configs["base"] = base if isinstance(base, dict) else {}
    for variant, config in configs.items():
        backend = config.get("backend")
        if not isinstance(backend, Mapping):
            continue
        adapter = registry.get(str(backend.get("type") or "sglang"))
        if adapter is None:
            continue
        for field, action, why in unhonoured(backend, adapter.backend_fields):
            key = (field, why)
            variants.setdefault(key, []).append(variant)
            if action == "refused":
                refused.add(field)
            if key not in where:
                node = ctx.locate(variant, tuple(field.split(".")))
                where[key] = (
                    ctx.loc(node, field) if node is not None else Location(ctx.path, role=field)
                )
        for role in WORKER_ROLES:
            path = adapter.args_path(role)
            for item in adapter.ignored(adapter.role_args(backend, role), role):
                field = ".".join((*path, item.key))
                key = (field, item.reason)
                variants.setdefault(key, []).append(variant)
                if key not in where:
                    node = ctx.locate(variant, (*path, item.key))
                    where[key] = (
                        ctx.loc(node, item.key)
                        if node is not None
                        else Location(ctx.path, role=item.key)
                    )
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
