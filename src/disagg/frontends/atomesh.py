"""`frontend.type: atomesh`: ATOM's own router (built into ATOM's images), in front of ATOM
workers whose KV goes over Mooncake, with the SGLang gateway's command line as ATOM's P/D
jobs run it. ATOM prefill workers serve no bootstrap port, so `--prefill` names the URL
only; each router gets a `prometheus-port` of its own unless the recipe sets one (two on
one node would share the default).
"""

from __future__ import annotations

from disagg.engines.base import render_args
from disagg.frontends.base import FrontendContext, written_args
from disagg.frontends.smg import worker_url
from disagg.frontends.static import StaticRouter
from disagg.plan.model import RoleKind

ATOMESH_BINARY = "/app/ATOM/atom/mesh/target/release/atomesh"
_MANAGED = frozenset({"host", "port", "pd-disaggregation", "prefill", "decode", "worker-urls"})


class AtomeshFrontend(StaticRouter):
    engine = "atom"
    what = "ATOM's router (atomesh)"
    others = "atomesh routes ATOM workers; `frontend.type: sglang-router` fronts the others"
    health_path = "/readiness"  # 200 once every worker is registered

    def argv(self, ctx: FrontendContext) -> tuple[list[str], list[str]]:
        prefill, decode = ctx.names(RoleKind.PREFILL), ctx.names(RoleKind.DECODE)
        aggregated = ctx.names(RoleKind.AGGREGATED)
        argv = [ATOMESH_BINARY, "launch", "--host", "${self.bind_host}"]
        argv += ["--port", "${self.http_port}"]
        if prefill or decode:
            if not prefill or not decode or aggregated:
                raise ctx.fail(
                    "atomesh routes prefill and decode workers together, or aggregated ones",
                    ("frontend", "type"),
                    f"got prefill={prefill} decode={decode} aggregated={aggregated}",
                )
            argv.append("--pd-disaggregation")
            argv += [w for name in prefill for w in ("--prefill", worker_url(name))]
            argv += [w for name in decode for w in ("--decode", worker_url(name))]
        else:
            argv += ["--worker-urls", *(worker_url(name) for name in aggregated)]
        written = written_args(ctx, _MANAGED)
        argv += ["--backend", "atom", *render_args(written)]
        if any(str(key).replace("_", "-") == "prometheus-port" for key in written):
            return argv, ["http"]
        return [*argv, "--prometheus-port", "${self.metrics_port}"], ["http", "metrics"]


ADAPTER = AtomeshFrontend()
