"""The router role's command line: the real `sglang-router` (0.3.2) in PD or regular mode.

The plan renders the argv once with `${role.field}` placeholders (see
`disagg.plan.templates`); the orchestrator binds them inside the allocation.

Facts about sglang-router 0.3.2, observed by running it in front of logging servers:

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
  `--worker-startup-check-interval` seconds (default 30, so we pass 1).
- The Prometheus exporter always starts (default port 29000) and a port already in
  use makes the router panic at start, so every router gets its own `metrics` port.
- It loads a tokenizer for each worker's `model_path` (from `/server_info`); a name
  that is not a local directory is fetched from the hub, which offline only logs a
  warning. `--tokenizer-path DIR` points it at a local tokenizer instead.
- Logging at `info` writes two lines per request; `warn` keeps long sweeps quiet.
- `/v1/completions` through the router needs `model`, and `prompt` must be a string
  or a list of strings: token-id prompts are refused with 422 (`StringOrArray`).
  For a list of prompts the added `bootstrap_*` fields are lists, one per prompt.
  `/generate` with `input_ids` passes through.
- On SIGTERM it exits within a fraction of a second when idle.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from disagg.engines import sglang
from disagg.errors import DisaggError

ROUTER_MODULE = "sglang_router.launch_router"
ROUTER_VERSION = "0.3.2"
# Named ports the router role needs; bind them as `${self.http_port}`, `${self.metrics_port}`.
ROUTER_PORTS: tuple[str, ...] = ("http", "metrics")
# `/health` is liveness only; `/readiness` is 200 once every worker is registered.
ROUTER_HEALTH_PATH = "/readiness"
DEFAULT_POLICY = "round_robin"

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
    host: str = "${self.bind_host}",
    log_level: str = "warn",
) -> list[str]:
    """Render the router's argv for the given worker role names.

    PD mode when `prefill`/`decode` are given (both required), regular mode when
    `aggregated` is. `extra` is a recipe's `frontend.args` map, rendered like SGLang
    args (`k: v` -> `--k v`, `true` -> `--k`, `false`/`null` -> omitted, list ->
    `--k v1 v2`, map -> JSON); its `policy` is used when `policy` is not given.
    `bootstrap`: whether prefill workers serve SGLang's bootstrap port (vLLM's do not:
    the router is told `none`).
    """
    extra = dict(extra or {})
    if extra.get("host") is not None:  # the recipe asks for another address than the node's
        host = str(extra.pop("host"))
    recipe_policy = _policy_from(extra)
    chosen_policy = policy or recipe_policy or DEFAULT_POLICY
    argv = [python, "-m", ROUTER_MODULE]
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
        for name in prefill:
            port = f"${{{name}.bootstrap_port}}" if bootstrap else "none"
            argv += ["--prefill", f"${{{name}.url}}", port]
        for name in decode:
            argv += ["--decode", f"${{{name}.url}}"]
    elif aggregated:
        argv += ["--worker-urls", *(f"${{{name}.url}}" for name in aggregated)]
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
        "--policy",
        chosen_policy,
        "--worker-startup-check-interval",
        "1",
        "--log-level",
        log_level,
    ]
    if tokenizer_path:
        argv += ["--tokenizer-path", tokenizer_path]
    argv += render_args(extra, skip={"tokenizer_path"} if tokenizer_path else set())
    return argv


def _policy_from(extra: dict[str, Any]) -> str | None:
    value = extra.pop("policy", None)
    return None if value is None else str(value)


def render_args(args: Mapping[str, Any], *, skip: set[str] | None = None) -> list[str]:
    """`frontend.args` -> flags by SGLang's rules, refusing keys the router helper manages."""
    kept: dict[str, Any] = {}
    for raw_key, value in args.items():
        key = str(raw_key).replace("-", "_")
        if skip and key in skip:
            continue
        if key in _MANAGED:
            raise DisaggError(
                f"frontend.args.{raw_key} is set by disagg and cannot be overridden",
                hint="disagg picks the router's host, ports and worker list from the plan",
            )
        kept[key] = value
    return sglang.render_args(kept)
