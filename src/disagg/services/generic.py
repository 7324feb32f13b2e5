"""`type: generic` services: exactly the command the recipe wrote, where it says, when it says.

As srt-slurm runs one: `command` + `args` as argv (no shell), the `preamble` (if any) in
a shell first, the recipe's `env` over the discovery plane's (`ETCD_ENDPOINTS`,
`NATS_SERVER`, unless `inherit_discovery_env: false`), in the entry's container (else
the job's), one instance per placed node (`placement.node`, default `head`), started
after the frontend (default) or before the workers (`start: before_workers`), gated on
its `readiness` probe on every node. A critical one (`critical: true`) that ends fails
the run by name like a worker; any other ends with its log and the run goes on.
"""

from __future__ import annotations

from disagg.plan.job_plan import env_text
from disagg.plan.model import RoleKind, RolePlan
from disagg.recipe.job_sections import ServiceSection
from disagg.services.base import (
    PlannedService,
    ServiceContext,
    ServiceKind,
    container,
    readiness_plan,
    role_name,
)
from disagg.services.nodes import PLACEMENTS, node_ranks


def with_preamble(argv: list[str], preamble: str | None, name: str) -> list[str]:
    """argv run after the preamble in one shell (`exec` keeps the command's PID the role's);
    the command's words travel as the shell's arguments, never re-split."""
    if not preamble:
        return argv
    script = preamble.rstrip("\n") + '\nexec "$@"\n'
    return ["bash", "-c", script, name, *argv]


def placed_ranks(entry: ServiceSection, ctx: ServiceContext, default: str) -> list[int]:
    """The entry's nodes (`placement.node`, else the kind's default); none is bad input."""
    node = entry.placement.node if entry.placement is not None else default
    ranks = node_ranks(node, ctx.workers, ctx.job)
    if ranks is None:
        raise ctx.fail(
            f"service {entry.name}: unknown placement.node {node!r}",
            ("services",),
            f"one of: {', '.join(PLACEMENTS)}",
        )
    if not ranks:
        raise ctx.fail(
            f"service {entry.name}: placement.node {node} names no node of this job "
            "(no worker of that role)",
            ("services",),
            "place it on a role the variant runs",
        )
    return ranks


class GenericService(ServiceKind):
    def plan(self, entry: ServiceSection, ctx: ServiceContext) -> PlannedService:
        """The entry's role, as written."""
        name = role_name(entry, ctx.fail)
        if not entry.command:
            raise ctx.fail(
                f"service {entry.name}: a generic service needs `command` (its argv)",
                ("services",),
                "write the program and its arguments as a list under `command:`",
            )
        env = dict(ctx.discovery_env) if entry.inherit_discovery_env else {}
        env.update({key: env_text(value) for key, value in entry.env.items()})
        role = RolePlan(
            name=name,
            kind=RoleKind.SERVICE,
            node_ranks=placed_ranks(entry, ctx, "head"),
            argv=with_preamble([*entry.command, *entry.args], entry.preamble, name),
            env=env,
            container_image=container(entry, ctx),
            critical=bool(entry.critical),
            readiness=readiness_plan(entry.readiness, entry.name, ctx.fail),
        )
        return PlannedService(
            role=role, start=entry.start or "after_frontend", differs=["service-log"]
        )


ADAPTER = GenericService()
