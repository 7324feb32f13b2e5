"""Direct frontends (schema 2's `sglang`, `vllm`; `trtllm_serve`'s aggregated worker too):
no router runs, the one aggregated worker serves on its own HTTP port (compat row
`direct-frontend`).
"""

from __future__ import annotations

from disagg.frontends.base import Frontend, FrontendContext, FrontendRoles
from disagg.plan.model import RoleKind

TYPES = ("sglang-direct", "vllm-direct")


class DirectFrontend(Frontend):
    """The one aggregated worker is the endpoint (srt-slurm's direct frontends)."""

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
        return served_directly(ctx, f"{engine} (direct)", aggregated[0])


def served_directly(ctx: FrontendContext, frontend: str, worker: str) -> FrontendRoles:
    """No router: the load goes to `worker`'s own HTTP port."""
    return FrontendRoles(
        frontend=frontend,
        stages=[ctx.workers],
        serving_role=worker,
        prompt_format="text",
        simulator="disagg sim-engine" if ctx.simulated else None,
        differs=["direct-frontend"],
    )


ADAPTER = DirectFrontend()
