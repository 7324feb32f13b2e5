"""`services:` kinds run as roles of their own: generic commands and the Mooncake store.

Each kind is one module here with its `ADAPTER` (a `ServiceKind`), registered by its
`type`; each entry becomes one role (`service_<name>`) started in a stage of its own.
Kinds not registered here are judged by `disagg.recipe.honoured`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from disagg.adapter_table import AdapterTable
from disagg.plan.model import WORKER_KINDS, RoleKind, RolePlan
from disagg.services.base import ServiceContext, ServiceKind

__all__ = ["KINDS", "ServiceContext", "discovery_env", "service_plane", "with_service_stages"]

KINDS: AdapterTable[ServiceKind] = AdapterTable(ServiceKind, package="disagg.services")


@dataclass
class ServicePlane:
    """The service roles by when they start, and the compat rows they hit."""

    before_workers: list[RolePlan] = field(default_factory=list)
    after_frontend: list[RolePlan] = field(default_factory=list)
    differs: list[str] = field(default_factory=list)


def service_plane(ctx: ServiceContext) -> ServicePlane:
    """Every enabled entry of a kind registered here, planned."""
    plane = ServicePlane()
    names = [entry.name for entry in ctx.config.services if entry.enabled]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ctx.fail(
            f"services named twice: {', '.join(twice)} (a name labels its role and its log)",
            ("services",),
            "give every service its own name",
        )
    for entry in ctx.config.services:
        kind = KINDS.get(entry.type)
        if kind is None or not entry.enabled:
            continue
        planned = kind.plan(entry, ctx)
        if planned.start == "before_workers":
            plane.before_workers.append(planned.role)
        else:
            plane.after_frontend.append(planned.role)
        plane.differs += [row for row in planned.differs if row not in plane.differs]
    return plane


def with_service_stages(stages: list[list[RolePlan]], plane: ServicePlane) -> list[list[RolePlan]]:
    """The stages with the before-workers services just ahead of the workers' stage and
    the after-frontend ones last."""
    out = list(stages)
    if plane.before_workers:
        workers = (i for i, stage in enumerate(out) if any(r.kind in WORKER_KINDS for r in stage))
        out.insert(next(workers, 0), list(plane.before_workers))
    if plane.after_frontend:
        out.append(list(plane.after_frontend))
    return out


def discovery_env(roles: list[RolePlan]) -> dict[str, str]:
    """What the job's Dynamo processes are told of its discovery plane (none without one)."""
    keys = ("ETCD_ENDPOINTS", "NATS_SERVER")
    for role in roles:
        if role.kind in (*WORKER_KINDS, RoleKind.ROUTER) and any(k in role.env for k in keys):
            return {key: role.env[key] for key in keys if key in role.env}
    return {}
