"""What srt-slurm's other static routers (`atomesh`, `tilert-router`) share here.

Each is its engine project's own router, in front of workers whose KV hand-over only it
drives (ATOM's Mooncake P/D, TileRT's vLLM-prefill -> TileRT-decode). Neither is installed
on this machine: a plan renders its command for a cluster job (golden files check it),
`disagg run --local` refuses a real one by name, and a simulated variant runs smg over
the simulated workers instead, which its plan names (`frontend`, `differs`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from disagg.frontends.base import FrontendContext, FrontendRoles
from disagg.frontends.topology import router_roles
from disagg.plan.model import HealthPlan, RolePlan

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


def static_router_roles(
    ctx: FrontendContext,
    argv: Sequence[str],
    *,
    ports: Sequence[str],
    health_path: str,
    env: Mapping[str, str] | None = None,
) -> tuple[list[list[RolePlan]], str]:
    """(stages, serving role) of a static router, placed as srtctl places every router and
    run in the model's image."""
    health = HealthPlan(path=health_path, deadline_s=ROUTER_HEALTH_DEADLINE_S)
    image = router_image(ctx)
    return router_roles(ctx, argv, ports=ports, health=health, env=env, image=image)


def router_image(ctx: FrontendContext) -> str | None:
    """The model's image (srtctl: "static routers use the model/backend image when
    omitted"), also when a role names its own (`roles.<role>.container`); None when the
    workers run in no image."""
    return ctx.image


def refuse_managed(ctx: FrontendContext, managed: frozenset[str]) -> None:
    """A `frontend.args` flag in `managed` (one the plan sets itself) is bad input."""
    for key in ctx.frontend.args or {}:
        if str(key).replace("_", "-") in managed:
            raise ctx.fail(
                f"frontend.args.{key} is set by disagg and cannot be overridden",
                ("frontend", "args", str(key)),
                "disagg picks the router's address, ports and workers from the plan",
            )


def render_flags(ctx: FrontendContext, managed: frozenset[str]) -> list[str]:
    """The recipe's `frontend.args` as the router's flags (`k: v` -> `--k v`, `true` ->
    `--k`); a flag in `managed`, which the plan sets itself, is bad input."""
    from disagg.engines.sglang import render_args

    refuse_managed(ctx, managed)
    args = ctx.frontend.args or {}
    return render_args({str(key).replace("_", "-"): value for key, value in args.items()})
