"""`frontend.type: atomesh`: ATOM's own router, in front of ATOM workers.

Atomesh (`atom/mesh` in ATOM's repository, a Rust gateway built into ATOM's images at
`/app/ATOM/atom/mesh/target/release/atomesh`) routes prefill/decode ATOM workers whose
KV goes over Mooncake; it takes the SGLang gateway's command line. The command is the one
ATOM's own P/D jobs run (`.github/scripts/atomesh/pd_server_atom.sh`):

    atomesh launch --host H --port P --pd-disaggregation --prefill URL ... --decode URL ...
        --backend atom <frontend.args>

aggregated workers as `--worker-urls URL ...`. The recipe's `frontend.args` follow as
written (`policy`, `log-level`, `disable-circuit-breaker`, `prometheus-port`, ...); the
plan owns the address, the port and the worker list. Without a `prometheus-port` of the
recipe's, each router gets a port of its own (two on one node would share the default).
ATOM prefill workers serve no SGLang bootstrap port, so `--prefill` names the URL only,
as ATOM's jobs do. Not installed here: see `disagg.frontends.static`.
"""

from __future__ import annotations

from typing import ClassVar

from disagg.frontends.base import Frontend, FrontendContext, FrontendRoles
from disagg.frontends.smg import worker_url
from disagg.frontends.static import COMMAND_ROW, render_flags, stand_in, static_router_roles
from disagg.plan.model import RoleKind

ATOMESH_BINARY = "/app/ATOM/atom/mesh/target/release/atomesh"
HEALTH_PATH = "/readiness"  # 200 once every worker is registered (the gateway's probe)
_MANAGED = frozenset({"host", "port", "pd-disaggregation", "prefill", "decode", "worker-urls"})


def atomesh_argv(ctx: FrontendContext) -> tuple[list[str], list[str]]:
    """(argv, named ports) of one atomesh router over the context's workers."""
    prefill, decode = ctx.names(RoleKind.PREFILL), ctx.names(RoleKind.DECODE)
    aggregated = ctx.names(RoleKind.AGGREGATED)
    argv = [ATOMESH_BINARY, "launch", "--host", ctx.host, "--port", "${self.http_port}"]
    if prefill or decode:
        if not prefill or not decode or aggregated:
            raise ctx.fail(
                "atomesh routes prefill and decode workers together, or aggregated ones",
                ("frontend", "type"),
                f"got prefill={prefill} decode={decode} aggregated={aggregated}",
            )
        argv.append("--pd-disaggregation")
        for name in prefill:
            argv += ["--prefill", worker_url(name)]
        for name in decode:
            argv += ["--decode", worker_url(name)]
    else:
        argv += ["--worker-urls", *(worker_url(name) for name in aggregated)]
    argv += ["--backend", "atom"]
    argv += render_flags(ctx, _MANAGED)
    written = ctx.frontend.args or {}
    ports = ["http"]
    if not any(str(key).replace("_", "-") == "prometheus-port" for key in written):
        argv += ["--prometheus-port", "${self.metrics_port}"]
        ports.append("metrics")
    return argv, ports


class AtomeshFrontend(Frontend):
    """ATOM's router over ATOM workers; smg stands in over simulated ones."""

    types: ClassVar[tuple[str, ...]] = ("atomesh",)

    def plan(self, ctx: FrontendContext) -> FrontendRoles:
        if ctx.simulated:
            return stand_in(ctx)
        if ctx.engine != "atom":
            raise ctx.refuse(
                f"frontend type atomesh over {ctx.engine} workers (atomesh routes ATOM "
                "workers; `frontend.type: sglang-router` fronts the others)",
                ("frontend", "type"),
            )
        argv, ports = atomesh_argv(ctx)
        stages, serving = static_router_roles(ctx, argv, ports=ports, health_path=HEALTH_PATH)
        return FrontendRoles(
            frontend="atomesh",
            stages=stages,
            serving_role=serving,
            prompt_format="text",
            differs=[COMMAND_ROW],
        )
