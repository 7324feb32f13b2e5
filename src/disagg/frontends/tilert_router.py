"""`frontend.type: tilert-router`: TileRT's router over a vLLM prefill and TileRT decode.

TileRT's router (`python -m tilert.pd_vllm.pd_router`, TileRT's README, Topology A) is
the OpenAI API of TileRT's disaggregated layout: it runs each request's prefill on the
vLLM prefill (`--vllm-url`, one), hands the decode to a free TileRT decode server
(`--decode HOST:CTRL_PORT:HTTP_PORT`, one per decode worker) and streams the answer. Its
command here:

    python3 -m tilert.pd_vllm.pd_router --vllm-url URL --decode H:C:P ... --host H
        --port P <frontend.args>

with the recipe's `frontend.args` as written (`parser`, `model-path`, `queue-timeout`,
...) and `CUDA_VISIBLE_DEVICES` empty (TileRT: the router must never touch a GPU). Its
`/health` answers as soon as it listens; the workers are health-gated before it starts.
Not installed here: see `disagg.frontends.static`.
"""

from __future__ import annotations

from typing import ClassVar

from disagg.frontends.base import Frontend, FrontendContext, FrontendRoles
from disagg.frontends.static import COMMAND_ROW, render_flags, stand_in, static_router_roles
from disagg.plan.model import RoleKind

ROUTER_MODULE = "tilert.pd_vllm.pd_router"
_MANAGED = frozenset({"vllm-url", "decode", "host", "port"})


def tilert_router_argv(ctx: FrontendContext) -> list[str]:
    """The router's argv over the context's one prefill and its decode workers."""
    prefill, decode = ctx.names(RoleKind.PREFILL), ctx.names(RoleKind.DECODE)
    if len(prefill) != 1 or not decode:
        raise ctx.refuse(
            f"frontend type tilert-router over {len(prefill)} prefill and {len(decode)} "
            "decode workers (TileRT's router takes one vLLM prefill URL and TileRT decode "
            "servers)",
            ("frontend", "type"),
        )
    argv = ["python3", "-m", ROUTER_MODULE, "--vllm-url", f"${{{prefill[0]}.url}}"]
    argv += ["--decode"]
    argv += [f"${{{name}.host}}:${{{name}.ctrl_port}}:${{{name}.http_port}}" for name in decode]
    argv += ["--host", ctx.host, "--port", "${self.http_port}"]
    return argv + render_flags(ctx, _MANAGED)


class TileRTRouterFrontend(Frontend):
    """TileRT's router over TileRT workers; smg stands in over simulated ones."""

    types: ClassVar[tuple[str, ...]] = ("tilert-router",)

    def plan(self, ctx: FrontendContext) -> FrontendRoles:
        if ctx.simulated:
            return stand_in(ctx)
        if ctx.engine != "tilert":
            raise ctx.refuse(
                f"frontend type tilert-router over {ctx.engine} workers (TileRT's router "
                "drives a vLLM prefill and TileRT decode servers: `engine: tilert`)",
                ("frontend", "type"),
            )
        argv = tilert_router_argv(ctx)
        env = {"CUDA_VISIBLE_DEVICES": ""}
        stages, serving = static_router_roles(
            ctx, argv, ports=["http"], health_path="/health", env=env
        )
        return FrontendRoles(
            frontend="tilert-router",
            stages=stages,
            serving_role=serving,
            prompt_format="text",
            differs=[COMMAND_ROW],
        )
