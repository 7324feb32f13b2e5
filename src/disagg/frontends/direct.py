"""Direct frontends (schema 2's `sglang`, `vllm`, aggregated `trtllm_serve`): the single
aggregated worker serves.

No router process runs; the load goes to the worker's own HTTP port, so the recipe must
have exactly one aggregated worker. The worker's command is the engine adapter's (for
vLLM, srt-slurm's direct `vllm serve`: vLLM's own multi-node serve across the worker's
nodes, see `disagg.engines.vllm`); the port it serves is picked at run time like every
role's (compat row `direct-frontend`).
"""

from __future__ import annotations

from typing import ClassVar

from disagg.frontends.base import Frontend, FrontendContext, FrontendRoles, ignored
from disagg.plan.model import RoleKind

DIRECT_ROW = "direct-frontend"  # the `disagg.plan.compat` row on the served port


class DirectFrontend(Frontend):
    """The one aggregated worker is the endpoint (srt-slurm's direct frontends)."""

    types: ClassVar[tuple[str, ...]] = ("sglang-direct", "vllm-direct")

    def plan(self, ctx: FrontendContext) -> FrontendRoles:
        engine = ctx.frontend.type.removesuffix("-direct")
        if ctx.config.backend.type != engine:
            raise ctx.fail(
                f"frontend type {engine} serves a {engine} worker directly, but the "
                f"engine is {ctx.config.backend.type}",
                ("frontend", "type"),
                "use the engine's own name, or a router such as sglang-router",
            )
        if engine == "vllm" and ctx.frontend.enable_multiple_frontends:
            # srt-slurm's `_validate_vllm_frontend`: no nginx or extra routers over the worker
            raise ctx.fail(
                "frontend type vllm binds vllm serve to the public port directly; there is "
                "no router to replicate",
                ("frontend", "enable_multiple_frontends"),
                "set frontend.enable_multiple_frontends: false",
            )
        aggregated = ctx.names(RoleKind.AGGREGATED)
        if len(ctx.workers) != 1 or len(aggregated) != 1:
            raise ctx.fail(
                f"frontend type {engine} needs exactly one aggregated worker, "
                f"the recipe has {len(ctx.workers)} worker(s)",
                ("frontend", "type"),
                "use a router (sglang-router, smg) for several or prefill/decode workers",
            )
        return FrontendRoles(
            frontend=f"{engine} (direct)",
            stages=[ctx.workers],
            serving_role=aggregated[0],
            prompt_format="text",
            simulator="disagg sim-engine" if ctx.simulated else None,
            differs=[DIRECT_ROW],
        )


class TrtllmServeFrontend(Frontend):
    """`trtllm_serve`: `trtllm-serve disaggregated` over prefill/decode workers, or the one
    aggregated `trtllm-serve` worker serving directly."""

    types: ClassVar[tuple[str, ...]] = ("trtllm_serve",)

    def plan(self, ctx: FrontendContext) -> FrontendRoles:
        from disagg.frontends.smg import RouterFrontend, engine_router_plan

        if ctx.engine_router is not None:
            return engine_router_plan(ctx, ctx.engine_router)
        aggregated = ctx.names(RoleKind.AGGREGATED)
        if len(ctx.workers) == 1 and aggregated:
            return FrontendRoles(
                frontend="trtllm-serve (direct)",
                stages=[ctx.workers],
                serving_role=aggregated[0],
                prompt_format="text",
                simulator="disagg sim-engine" if ctx.simulated else None,
                differs=[DIRECT_ROW],
            )
        planned = RouterFrontend().plan(ctx)  # simulated workers speak SGLang's protocol
        why = f"trtllm_serve: the simulated workers are fronted by {planned.frontend}"
        planned.ignored = [ignored("frontend.type", why), *planned.ignored]
        return planned
