"""The SGLang-style router frontend: `smg` (1.13.0, the default) or `sglang-router` 0.3.2.

`frontend.type: smg`, `sglang-router` and v1's `sglang` all run this router; smg is the
continuation of the sglang-router project and takes every flag rendered here (it
lacks only `--mini-lb`, which disagg never renders). `frontend.package:
sglang-router` keeps the last sglang-router release for recipes that pin it.

The plan renders the argv once with `${role.field}` placeholders (see
`disagg.plan.templates`); the orchestrator binds them inside the allocation.

Facts about sglang-router 0.3.2, observed by running it in front of logging servers
(smg 1.13.0 behaves the same in each, answering 400 instead of 422 for token ids):

- PD mode (`--pd-disaggregation --prefill URL BOOTSTRAP_PORT --decode URL`): each
  worker is first probed for gRPC (an HTTP/2 prior-knowledge preface, which an
  HTTP/1.1 server rejects; the router then falls back to HTTP), then `GET /health`,
  `GET /server_info`, `GET /model_info`. Each request body goes unchanged to one
  prefill and one decode worker with `bootstrap_host`, `bootstrap_port` and
  `bootstrap_room` (a random u64) added, plus defaults such as `ignore_eos: false`
  and `stream: false` when the client did not set them; the decode worker's
  response is what the client gets.
- `/health` and `/liveness` answer 200 as soon as the router listens, before any
  worker is registered; `/readiness` answers 503 until every worker is registered
  and healthy, so `/readiness` is the health path to gate on.
- Workers that are not up when the router starts are retried every
  `--worker-startup-check-interval` seconds (default 30); the router starts only once
  every worker is healthy, so its first check finds them (srtctl passes no interval).
- The Prometheus exporter always starts (default 0.0.0.0:29000) and a port already in
  use makes the router panic at start, so every router gets its own `metrics` port
  and `--prometheus-host`.
- It loads a tokenizer for each worker's `model_path` (from `/server_info`); a name
  that is not a local directory is fetched from the hub, which offline only logs a
  warning. `--tokenizer-path DIR` points it at a local tokenizer instead.
- Logging at `info` (its default, which srtctl keeps) writes two lines per request.
- `/v1/completions` through the router needs `model`, and `prompt` must be a string
  or a list of strings: token-id prompts are refused with 422 (`StringOrArray`).
  For a list of prompts the added `bootstrap_*` fields are lists, one per prompt.
  `/generate` with `input_ids` passes through.
- On SIGTERM it exits within a fraction of a second when idle.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from disagg.engines.base import render_args as render_flags
from disagg.errors import DisaggError
from disagg.frontends.base import Frontend, FrontendContext, FrontendRoles
from disagg.frontends.topology import orchestrator_rank, router_roles
from disagg.plan.model import HealthPlan, RoleKind, RolePlan

TYPES = ("smg", "sglang-router", "sglang")
Package = Literal["smg", "sglang-router"]
MODULES: dict[str, str] = {
    "smg": "smg.launch_router",
    "sglang-router": "sglang_router.launch_router",
}
VERSIONS: dict[str, str] = {"smg": "1.13.0", "sglang-router": "0.3.2"}
DEFAULT_PACKAGE: Package = "smg"
REGISTER_MODULE = "disagg.frontends.register"
ROUTER_HEALTH_DEADLINE_S = 120.0
# Named ports the router role needs; bind them as `${self.http_port}`, `${self.metrics_port}`.
ROUTER_PORTS: tuple[str, ...] = ("http", "metrics")
# `/health` is liveness only; `/readiness` is 200 once every worker is registered.
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
    """Render the router's argv for the given worker role names.

    PD mode when `prefill`/`decode` are given (both required), regular mode when
    `aggregated` is. `extra` is a recipe's `frontend.args` map, rendered like SGLang
    args (`k: v` -> `--k v`, `true` -> `--k`, `false`/`null` -> omitted, list ->
    `--k v1 v2`, map -> JSON); its `policy` is used when `policy` is not given, and with
    neither no `--policy` is passed (srtctl passes none: the router's default applies).
    `bootstrap`: whether prefill workers serve SGLang's bootstrap port (vLLM's do not:
    the router is told `none`). `registered`: PD mode without worker URLs, the workers
    being registered with `POST /workers` (see `disagg.frontends.register`). `grpc`: the
    workers that serve gRPC, given as `grpc://` URLs.
    """
    extra = dict(extra or {})
    if extra.get("host") is not None:  # the recipe asks for another address than the node's
        host = str(extra.pop("host"))
    recipe_policy = _policy_from(extra)
    chosen_policy = policy or recipe_policy  # neither: the router's own default applies
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
    argv += [
        "--host",
        host,
        "--port",
        "${self.http_port}",
        "--prometheus-port",
        "${self.metrics_port}",
        "--prometheus-host",
        host,
        *(["--policy", chosen_policy] if chosen_policy else []),
    ]
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


def _policy_from(extra: dict[str, Any]) -> str | None:
    value = extra.pop("policy", None)
    return None if value is None else str(value)


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
        if ctx.engine_router is not None:
            return engine_router_plan(ctx, ctx.engine_router)
        frontend = ctx.frontend
        package = _package(ctx)
        connectors = _kv_connectors(ctx)
        argv = router_argv(
            prefill=ctx.names(RoleKind.PREFILL),
            decode=ctx.names(RoleKind.DECODE),
            aggregated=ctx.names(RoleKind.AGGREGATED),
            extra=frontend.args if frontend.type in TYPES else None,
            tokenizer_path=None if ctx.simulated else "${model.path}",
            bootstrap=all(
                "bootstrap" in role.ports for role in ctx.workers if role.kind is RoleKind.PREFILL
            ),
            host=ctx.host,
            package=package,
            registered=bool(connectors),
            grpc=grpc_workers(ctx),
        )
        if connectors:
            argv = _registering(argv, ctx, connectors)
        health = HealthPlan(path=ROUTER_HEALTH_PATH, deadline_s=ROUTER_HEALTH_DEADLINE_S)
        stages, serving = router_roles(ctx, argv, ports=ROUTER_PORTS, health=health)
        return FrontendRoles(
            frontend=package,
            stages=stages,
            serving_role=serving,
            prompt_format="text",  # token-id prompts: HTTP 400 (smg) / 422 (sglang-router)
            simulator="disagg sim-engine" if ctx.simulated else None,
            differs=_differs(ctx, package),
        )


def _differs(ctx: FrontendContext, package: Package) -> list[str]:
    """The compat rows a router job hits: smg for sglang-router; no etcd/NATS beside it."""
    rows = ["smg-router"] if package == "smg" else []
    return rows if ctx.simulated else [*rows, "router-infra"]


def engine_router_plan(ctx: FrontendContext, router: RolePlan) -> FrontendRoles:
    """Workers whose KV hand-over only their engine's own router does (TRT-LLM's), run
    where srtctl runs its orchestrator (`frontend.orchestrator_placement`).

    Only `frontend.type: trtllm_serve` runs that router. Under any other router type srtctl
    starts TRT-LLM's prefill/decode workers as `dynamo.trtllm` (`TRTLLMProtocol.
    build_worker_command`), which serve no HTTP a router could reach: such a variant is
    refused, not run with another frontend than the one it names.
    """
    program = " ".join(router.argv[:2])
    if ctx.frontend.type != "trtllm_serve":
        raise ctx.refuse(
            f"frontend type {ctx.frontend.type} over TRT-LLM prefill/decode workers (srtctl "
            "starts them as dynamo.trtllm workers, which no router but Dynamo's reaches; "
            f"`frontend.type: trtllm_serve` runs {program}, `dynamo` Dynamo's frontend)",
            ("frontend", "type"),
        )
    router = router.model_copy(update={"node_ranks": [orchestrator_rank(ctx)]})
    return FrontendRoles(
        frontend=program,
        stages=[ctx.workers, [router]],
        serving_role=router.name,
        prompt_format="text",
    )


def grpc_workers(ctx: FrontendContext) -> frozenset[str]:
    """The workers whose settings ask for a gRPC server: SGLang's `grpc-mode` (srtctl
    v1.0.68's `SGLangProtocol.is_grpc_mode`), vLLM's `grpc` (srtctl 2.x's smg frontend)."""
    key = {"sglang": "grpc-mode", "vllm": "grpc"}.get(ctx.engine)
    found = set()
    for name, (settings, _spec) in ctx.worker_inputs.items():
        if key and any(str(k).replace("_", "-") == key and v for k, v in settings.items()):
            found.add(name)
    return frozenset(found)


def _kv_connectors(ctx: FrontendContext) -> dict[str, str]:
    """Worker name -> KV connector, for real vLLM prefill/decode workers (else empty).

    smg transfers vLLM's KV only between workers registered with their connector.
    """
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


def _registering(argv: list[str], ctx: FrontendContext, connectors: dict[str, str]) -> list[str]:
    """The router argv wrapped so that each worker is registered with its connector."""
    wrapper = [argv[0], "-m", REGISTER_MODULE]
    wrapper += ["--router", "http://${self.bind_host}:${self.http_port}"]
    for role in ctx.workers:
        if role.kind in (RoleKind.PREFILL, RoleKind.DECODE):
            connector = connectors.get(role.name, "none")
            url = worker_url(role.name, grpc_workers(ctx))
            wrapper += ["--worker", url, role.kind.value, connector]
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
