"""`frontend.type: trtllm_serve`: TRT-LLM's own `trtllm-serve disaggregated` router over
prefill/decode workers (the engine renders it: `EngineAdapter.pd_router`), or the one
aggregated `trtllm-serve` worker serving directly."""

from __future__ import annotations

from disagg.frontends.base import Frontend, FrontendContext, FrontendRoles, ignored
from disagg.frontends.direct import DIRECT_ROW
from disagg.frontends.smg import ADAPTER as smg
from disagg.frontends.smg import engine_router_plan
from disagg.plan.model import RoleKind


class TrtllmServeFrontend(Frontend):
    """`trtllm_serve`: `trtllm-serve disaggregated` over prefill/decode workers, or the one
    aggregated `trtllm-serve` worker serving directly."""

    def plan(self, ctx: FrontendContext) -> FrontendRoles:
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
        planned = smg.plan(ctx)  # simulated workers speak SGLang's protocol
        why = f"trtllm_serve: the simulated workers are fronted by {planned.frontend}"
        planned.ignored = [ignored("frontend.type", why), *planned.ignored]
        return planned


ADAPTER = TrtllmServeFrontend()
