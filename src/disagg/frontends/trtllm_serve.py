"""`frontend.type: trtllm_serve`: TRT-LLM's own `trtllm-serve disaggregated` router over
prefill/decode workers (the engine renders it: `EngineAdapter.pd_router`), or the one
aggregated `trtllm-serve` worker serving directly."""

from __future__ import annotations

from disagg.frontends.base import Frontend, FrontendContext, FrontendRoles, ignored
from disagg.frontends.direct import served_directly
from disagg.frontends.smg import ADAPTER as smg
from disagg.frontends.topology import orchestrator_rank
from disagg.plan.model import RoleKind


class TrtllmServeFrontend(Frontend):
    def plan(self, ctx: FrontendContext) -> FrontendRoles:
        router = ctx.engine_router
        if router is not None:  # where srtctl runs its orchestrator
            router = router.model_copy(update={"node_ranks": [orchestrator_rank(ctx)]})
            return FrontendRoles(
                frontend=" ".join(router.argv[:2]),
                stages=[ctx.workers, [router]],
                serving_role=router.name,
                prompt_format="text",
            )
        aggregated = ctx.names(RoleKind.AGGREGATED)
        if len(ctx.workers) == 1 and aggregated:
            return served_directly(ctx, "trtllm-serve (direct)", aggregated[0])
        planned = smg.plan(ctx)  # simulated workers speak SGLang's protocol
        why = f"trtllm_serve: the simulated workers are fronted by {planned.frontend}"
        planned.ignored = [ignored("frontend.type", why), *planned.ignored]
        return planned


ADAPTER = TrtllmServeFrontend()
