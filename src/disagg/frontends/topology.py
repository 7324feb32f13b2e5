"""Where the frontends and nginx run, as srtctl places them.

srtctl's rule (`FrontendStageMixin._compute_frontend_topology`, the same in v1.0.68 and
2.x), for every frontend type: on one worker node, or with `enable_multiple_frontends:
false`, one frontend and no nginx, on the head node or where
`frontend.orchestrator_placement` puts it (`first_decode` / `last_decode`); else nginx on
the head node and one frontend on each other worker node, at most `1 +
num_additional_frontends` (all worker nodes count when the frontend has a node of its own).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from disagg.frontends.base import FrontendContext, FrontendRoles
from disagg.frontends.nginx import nginx_role
from disagg.plan.job_nodes import PLACEMENTS, placed_rank
from disagg.plan.model import HealthPlan, RoleKind, RolePlan


@dataclass(frozen=True)
class FrontendTopology:
    """Node ranks of nginx (None: no nginx) and of each frontend, in order."""

    nginx: int | None
    frontends: tuple[int, ...]


def orchestrator_rank(ctx: FrontendContext) -> int:
    """The node of the one frontend (router, orchestrator) when there is no nginx."""
    return placed_rank(
        ctx.workers,
        ctx.frontend.orchestrator_placement,
        ctx.nodes.head,
        field=("frontend", "orchestrator_placement"),
        fail=ctx.fail,
    )


def frontend_topology(ctx: FrontendContext) -> FrontendTopology:
    """srtctl's frontend topology for this job (see the module's docstring)."""
    nodes, section = ctx.nodes, ctx.frontend
    if section.orchestrator_placement not in PLACEMENTS:  # refused even where nginx serves
        orchestrator_rank(ctx)
    if len(nodes.workers) == 1 or not section.enable_multiple_frontends:
        return FrontendTopology(nginx=None, frontends=(orchestrator_rank(ctx),))
    others = [rank for rank in nodes.workers if rank != nodes.head]
    count = min(section.num_additional_frontends + 1, len(others))
    return FrontendTopology(nginx=nodes.head, frontends=tuple(others[:count]))


def routed(
    ctx: FrontendContext,
    argv: Sequence[str],
    *,
    frontend: str,
    ports: Sequence[str],
    health: HealthPlan,
    differs: list[str],
    env: Mapping[str, str] | None = None,
    image: str | None = None,
) -> FrontendRoles:
    """A router running `argv` over the workers, placed by srtctl's topology: one `router`,
    or nginx on the head over `router-<i>` on each other worker node. The recipe's
    `frontend.env` goes over `env`. Routers take text prompts only."""
    topology = frontend_topology(ctx)
    count = len(topology.frontends)
    written = {key: str(value) for key, value in (ctx.frontend.env or {}).items()}
    routers = [
        RolePlan(
            name="router" if count == 1 else f"router-{i}",
            kind=RoleKind.ROUTER,
            node_ranks=[rank],
            ports=list(ports),
            argv=list(argv),
            env={**(env or {}), **written},
            health=health,
            container_image=image,
        )
        for i, rank in enumerate(topology.frontends)
    ]
    stages, serving = fronted(ctx, [ctx.workers, routers], routers, topology)
    return FrontendRoles(
        frontend=frontend,
        stages=stages,
        serving_role=serving,
        prompt_format="text",
        simulator="disagg sim-engine" if ctx.simulated else None,
        differs=differs,
    )


def fronted(
    ctx: FrontendContext,
    stages: list[list[RolePlan]],
    frontends: list[RolePlan],
    topology: FrontendTopology,
) -> tuple[list[list[RolePlan]], str]:
    """(stages, serving role) with nginx last over `frontends` where the topology has it."""
    if topology.nginx is None:
        return stages, frontends[0].name
    proxy = nginx_role(ctx.frontend, [role.name for role in frontends], topology.nginx)
    return [*stages, [proxy]], proxy.name
