"""What srt-slurm's other static routers (`atomesh`, `tilert-router`) share here.

Each is its engine project's own router, in front of workers whose KV hand-over only it
drives (ATOM's Mooncake P/D, TileRT's vLLM-prefill -> TileRT-decode). Neither is installed
on this machine: a plan renders its command for a cluster job (golden files check it),
`disagg run --local` refuses a real one by name, and a simulated variant runs smg over
the simulated workers instead, which its plan names (`frontend`, `differs`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from disagg.frontends.base import FrontendContext, FrontendRoles
from disagg.frontends.nginx import nginx_role
from disagg.frontends.topology import frontend_topology
from disagg.plan.model import HealthPlan, RoleKind, RolePlan

# frontend type -> what it is, for messages.
STATIC_ROUTERS: dict[str, str] = {
    "atomesh": "ATOM's router (atomesh)",
    "tilert-router": "TileRT's router (tilert.pd_vllm.pd_router)",
}
STAND_IN_ROW = "static-router-stand-in"  # the `disagg.plan.compat` row
COMMAND_ROW = "static-router-command"
ROUTER_HEALTH_DEADLINE_S = 300.0


def stand_in(ctx: FrontendContext) -> FrontendRoles:
    """smg over the simulated workers (they speak SGLang's P/D protocol), named as such; the
    recipe's router flags are its own router's and are not passed on."""
    from disagg.frontends.smg import RouterFrontend

    planned = RouterFrontend().plan(ctx)
    planned.frontend = f"{planned.frontend} (standing in for {ctx.frontend.type})"
    planned.differs = [STAND_IN_ROW, *planned.differs]
    return planned


def local_refusal(frontend: str, simulated: bool) -> str | None:
    """Why `disagg run --local` cannot run this plan's frontend, else None."""
    what = STATIC_ROUTERS.get(frontend)
    if what is None or simulated:
        return None
    return (
        f"frontend type {frontend} runs {what}, which is not installed on this machine; "
        "submit the recipe to a cluster (`disagg submit`), or simulate it "
        "(`engine: sim`), which runs smg in its place"
    )


def router_roles(
    ctx: FrontendContext,
    argv: Sequence[str],
    *,
    ports: Sequence[str],
    health_path: str,
    env: Mapping[str, str] | None = None,
) -> tuple[list[list[RolePlan]], str]:
    """(stages, serving role) of `argv` placed as srtctl places every router: one, or nginx
    on the head over one on each other worker node."""
    topology = frontend_topology(ctx)
    count = len(topology.frontends)
    image = router_image(ctx)
    written = {key: str(value) for key, value in (ctx.frontend.env or {}).items()}
    routers = [
        RolePlan(
            name="router" if count == 1 else f"router-{i}",
            kind=RoleKind.ROUTER,
            node_ranks=[rank],
            ports=list(ports),
            argv=list(argv),
            env={**(env or {}), **written},
            health=HealthPlan(path=health_path, deadline_s=ROUTER_HEALTH_DEADLINE_S),
            container_image=image,
        )
        for i, rank in enumerate(topology.frontends)
    ]
    stages = [ctx.workers, routers]
    serving = routers[0].name
    if topology.nginx is not None:
        proxy = nginx_role(ctx.frontend, [role.name for role in routers], topology.nginx)
        stages.append([proxy])
        serving = proxy.name
    return stages, serving


def router_image(ctx: FrontendContext) -> str | None:
    """The model's image, which the decode workers run in (srtctl: "static routers use the
    model/backend image when omitted"); None when the workers run in no image."""
    ranked = sorted(ctx.workers, key=lambda role: role.kind is not RoleKind.DECODE)
    return next((role.container_image for role in ranked if role.container_image), None)


def render_flags(
    args: Mapping[str, Any] | None, managed: frozenset[str], fail: Callable[[str], Exception]
) -> list[str]:
    """`frontend.args` as the router's flags (`k: v` -> `--k v`, `true` -> `--k`); a flag
    the plan sets itself is refused by `fail`."""
    from disagg.engines.sglang import render_args

    kept: dict[str, Any] = {}
    for key, value in (args or {}).items():
        name = str(key).replace("_", "-")
        if name in managed:
            raise fail(str(key))
        kept[name] = value
    return render_args(kept)
