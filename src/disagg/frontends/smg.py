"""The SGLang-style router frontend: `smg` (1.13.0, the default) or `sglang-router` 0.3.2.

`frontend.type: smg`, `sglang-router` and v1's `sglang` run it; smg continues the
sglang-router project and takes every flag rendered here. `frontend.package:
sglang-router` keeps the last release for recipes that pin it. Both (observed) load each
worker's tokenizer from the hub unless `--tokenizer-path` names one, always start a
Prometheus exporter on 29000 and panic when that port is taken (hence a `metrics` port per
router), and refuse token-id prompts on `/v1/completions`: text prompts only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from disagg.engines.base import render_args as render_flags
from disagg.errors import DisaggError
from disagg.frontends.base import Frontend, FrontendContext, FrontendRoles
from disagg.frontends.topology import routed
from disagg.plan.model import HealthPlan, RoleKind

TYPES = ("smg", "sglang-router", "sglang")
Package = Literal["smg", "sglang-router"]
MODULES: dict[str, str] = {
    "smg": "smg.launch_router",
    "sglang-router": "sglang_router.launch_router",
}
DEFAULT_PACKAGE: Package = "smg"
REGISTER_MODULE = "disagg.frontends.register"
ROUTER_HEALTH_DEADLINE_S = 120.0
ROUTER_PORTS: tuple[str, ...] = ("http", "metrics")
# `/health` answers before any worker is registered; `/readiness` once all are healthy.
ROUTER_HEALTH_PATH = "/readiness"

# Flags that `router_argv` sets itself; a recipe's `frontend.args` may not override them.
_MANAGED = frozenset(
    {
        "port",
        "pd_disaggregation",
        "prefill",
        "decode",
        "worker_urls",
        "prometheus_port",
        "prometheus_host",
        "policy",
        "mini_lb",
    }
)


def router_argv(
    *,
    prefill: Sequence[str] = (),
    decode: Sequence[str] = (),
    aggregated: Sequence[str] = (),
    python: str = "${run.python}",
    policy: str | None = None,
    extra: Mapping[str, Any] | None = None,
    tokenizer_path: str | None = None,
    bootstrap: bool = True,
    registered: bool = False,
    host: str = "${self.bind_host}",
    package: Package = DEFAULT_PACKAGE,
    grpc: frozenset[str] = frozenset(),
) -> list[str]:
    """The router's argv: PD mode over `prefill` and `decode`, else regular mode.

    `extra` (`frontend.args`) names the policy when `policy` does not (srtctl passes none).
    Prefill workers without SGLang's bootstrap port (`bootstrap`, vLLM's) are told `none`;
    `registered` workers join by `POST /workers` instead of URLs (`disagg.frontends.register`).
    """
    extra = dict(extra or {})
    if extra.get("host") is not None:  # the recipe asks for another address than the node's
        host = str(extra.pop("host"))
    written = extra.pop("policy", None)
    chosen_policy = policy or (None if written is None else str(written))
    argv = [python, "-m", MODULES[package]]
    if prefill or decode:
        if aggregated:
            raise DisaggError(
                "a router cannot mix aggregated workers with prefill/decode workers",
                hint="a variant is either disaggregated (prefill + decode) or aggregated",
            )
        if not prefill or not decode:
            raise DisaggError(
                "PD mode needs at least one prefill and one decode worker",
                hint=f"got prefill={list(prefill)} decode={list(decode)}",
            )
        argv.append("--pd-disaggregation")
        for name in () if registered else prefill:
            port = f"${{{name}.bootstrap_port}}" if bootstrap else "none"
            argv += ["--prefill", worker_url(name, grpc), port]
        for name in () if registered else decode:
            argv += ["--decode", worker_url(name, grpc)]
    elif aggregated:
        argv += ["--worker-urls", *(worker_url(name, grpc) for name in aggregated)]
    else:
        raise DisaggError("a router needs at least one worker", hint="no worker roles given")
    argv += ["--host", host, "--port", "${self.http_port}"]
    argv += ["--prometheus-port", "${self.metrics_port}", "--prometheus-host", host]
    argv += ["--policy", chosen_policy] if chosen_policy else []
    if not any(_key(key) == "shutdown_grace_period_secs" for key in extra):
        # smg waits up to 180 s (5 s even when idle) for in-flight requests on SIGTERM; the
        # orchestrator stops it only once the load is over, so 1 s is plenty.
        argv += ["--shutdown-grace-period-secs", "1"]
    if tokenizer_path:
        argv += ["--tokenizer-path", tokenizer_path]
    argv += render_args(extra, skip={"tokenizer_path"} if tokenizer_path else set())
    return argv


def worker_url(name: str, grpc: frozenset[str] = frozenset()) -> str:
    """A worker's URL as the router is given it: `grpc://` for a worker serving gRPC (as
    srtctl's `SGLangFrontend.start_frontends` gives a `grpc-mode` worker), else HTTP."""
    if name in grpc:
        return f"grpc://${{{name}.host}}:${{{name}.http_port}}"
    return f"${{{name}.url}}"


def _key(raw: object) -> str:
    return str(raw).replace("-", "_")


def render_args(args: Mapping[str, Any], *, skip: set[str] | None = None) -> list[str]:
    """`frontend.args` -> flags by SGLang's rules, refusing keys the router helper manages."""
    kept: dict[str, Any] = {}
    for raw_key, value in args.items():
        key = _key(raw_key)
        if skip and key in skip:
            continue
        if key in _MANAGED:
            raise DisaggError(
                f"frontend.args.{raw_key} is set by disagg and cannot be overridden",
                hint="disagg picks the router's host, ports and worker list from the plan",
            )
        kept[key] = value
    return render_flags(kept)


class RouterFrontend(Frontend):
    """smg / sglang-router in front of the workers: PD mode, or regular mode when aggregated."""

    def plan(self, ctx: FrontendContext) -> FrontendRoles:
        frontend = ctx.frontend
        package = _package(ctx)
        connectors = _kv_connectors(ctx)
        grpc = grpc_workers(ctx)
        argv = router_argv(
            prefill=ctx.names(RoleKind.PREFILL),
            decode=ctx.names(RoleKind.DECODE),
            aggregated=ctx.names(RoleKind.AGGREGATED),
            extra=frontend.args if frontend.type in TYPES else None,
            tokenizer_path=None if ctx.simulated else "${model.path}",
            bootstrap=all(
                "bootstrap" in role.ports for role in ctx.workers if role.kind is RoleKind.PREFILL
            ),
            package=package,
            registered=bool(connectors),
            grpc=grpc,
        )
        if connectors:
            argv = _registering(argv, ctx, connectors, grpc)
        health = HealthPlan(path=ROUTER_HEALTH_PATH, deadline_s=ROUTER_HEALTH_DEADLINE_S)
        # smg / sglang-router and disagg's compat rows: no etcd/NATS beside a real one
        rows = ["smg-router"] if package == "smg" else []
        rows += [] if ctx.simulated else ["router-infra"]
        return routed(ctx, argv, frontend=package, ports=ROUTER_PORTS, health=health, differs=rows)


def grpc_workers(ctx: FrontendContext) -> frozenset[str]:
    """The workers whose settings ask for a gRPC server: SGLang's `grpc-mode` (srtctl
    v1.0.68's `SGLangProtocol.is_grpc_mode`), vLLM's `grpc` (srtctl 2.x's smg frontend)."""
    key = {"sglang": "grpc-mode", "vllm": "grpc"}.get(ctx.engine)
    return frozenset(
        name
        for name, (settings, _spec) in ctx.worker_inputs.items()
        if key and any(str(k).replace("_", "-") == key and v for k, v in settings.items())
    )


def _kv_connectors(ctx: FrontendContext) -> dict[str, str]:
    """Worker name -> KV connector of real vLLM prefill/decode workers: smg transfers vLLM's
    KV only between workers registered with their connector."""
    if ctx.simulated or ctx.engine != "vllm" or not ctx.names(RoleKind.PREFILL):
        return {}
    found: dict[str, str] = {}
    for role in ctx.workers:
        argv = role.argv_on(0)
        if "--kv-transfer-config" not in argv:
            continue
        at = argv.index("--kv-transfer-config") + 1
        try:
            config = json.loads(argv[at]) if at < len(argv) else {}
        except ValueError:
            config = {}
        connector = config.get("kv_connector") if isinstance(config, dict) else None
        if isinstance(connector, str):
            found[role.name] = connector
    return found


def _registering(
    argv: list[str], ctx: FrontendContext, connectors: dict[str, str], grpc: frozenset[str]
) -> list[str]:
    """The router argv wrapped so that each worker is registered with its connector."""
    wrapper = [argv[0], "-m", REGISTER_MODULE]
    wrapper += ["--router", "http://${self.bind_host}:${self.http_port}"]
    for role in ctx.workers:
        if role.kind in (RoleKind.PREFILL, RoleKind.DECODE):
            connector = connectors.get(role.name, "none")
            wrapper += ["--worker", worker_url(role.name, grpc), role.kind.value, connector]
    return [*wrapper, "--", *argv]


def _package(ctx: FrontendContext) -> Package:
    chosen = ctx.frontend.package
    if ctx.frontend.type == "smg" and chosen == "sglang-router":
        raise ctx.fail(
            "frontend.type smg cannot run the sglang-router package",
            ("frontend", "package"),
            "use `type: sglang-router` to pin sglang-router 0.3.2, or drop `package`",
        )
    return chosen or DEFAULT_PACKAGE


ADAPTER = RouterFrontend()
