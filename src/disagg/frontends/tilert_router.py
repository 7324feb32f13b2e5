"""`frontend.type: tilert-router`: TileRT's router over a vLLM prefill and TileRT decode.

Each request's prefill runs on the one vLLM prefill (`--vllm-url`); the decode goes to a
free TileRT decode server (`--decode HOST:CTRL_PORT:HTTP_PORT` each). The router must never
touch a GPU (`CUDA_VISIBLE_DEVICES` empty).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from disagg.engines.base import render_args
from disagg.frontends.base import FrontendContext, written_args
from disagg.frontends.static import StaticRouter
from disagg.plan.model import RoleKind

TYPES = ("tilert-router",)
ROUTER_MODULE = "tilert.pd_vllm.pd_router"
_MANAGED = frozenset({"vllm-url", "decode", "host", "port"})


class TileRTRouterFrontend(StaticRouter):
    engine = "tilert"
    what = "TileRT's router (tilert.pd_vllm.pd_router)"
    others = "TileRT's router drives a vLLM prefill and TileRT decode servers: `engine: tilert`"
    health_path = "/health"  # answers as soon as it listens
    env: ClassVar[Mapping[str, str]] = {"CUDA_VISIBLE_DEVICES": ""}

    def argv(self, ctx: FrontendContext) -> tuple[list[str], list[str]]:
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
        argv += ["--host", "${self.bind_host}", "--port", "${self.http_port}"]
        return argv + render_args(written_args(ctx, _MANAGED)), ["http"]


ADAPTER = TileRTRouterFrontend()
