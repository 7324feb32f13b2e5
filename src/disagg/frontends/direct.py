"""Direct frontends (schema 2's `sglang`): the single aggregated worker serves.

No router process runs; the load goes to the worker's own HTTP port, so the recipe must
have exactly one aggregated worker.
"""

from __future__ import annotations

from typing import ClassVar

from disagg.frontends.base import Frontend, FrontendContext, FrontendRoles, ignored
from disagg.plan.model import RoleKind


class DirectFrontend(Frontend):
    """The one aggregated worker is the endpoint (srt-slurm's direct frontends)."""

    types: ClassVar[tuple[str, ...]] = ("sglang-direct",)

    def plan(self, ctx: FrontendContext) -> FrontendRoles:
        engine = ctx.frontend.type.removesuffix("-direct")
        if ctx.config.backend.type != engine:
            raise ctx.fail(
                f"frontend type {engine} serves a {engine} worker directly, but the "
                f"engine is {ctx.config.backend.type}",
                ("frontend", "type"),
                "use the engine's own name, or a router such as sglang-router",
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
            )
        planned = RouterFrontend().plan(ctx)  # simulated workers speak SGLang's protocol
        why = f"trtllm_serve: the simulated workers are fronted by {planned.frontend}"
        planned.ignored = [ignored("frontend.type", why), *planned.ignored]
        return planned
