"""`backend.kv_events_config`: the ZMQ KV-cache event publisher each worker gets.

srtctl (v1.0.68, `SGLangProtocol` / `VLLMProtocol.get_kv_events_config_for_mode` and
`build_worker_command` in srtctl/backends/sglang.py and vllm.py) renders, for a mode the
setting enables, `--kv-events-config JSON` on the worker: `true` enables prefill and
decode with `{"publisher": "zmq", "topic": "kv-events"}`, a per-mode map (`aggregated`
for aggregated workers) enables the modes it names, a map value merged over those
defaults; vLLM's also carries `"enable_kv_cache_events": true`. The endpoint is
`tcp://*:<port>` with a port of the worker's own (vLLM workers are also told it in
`DYN_VLLM_KV_EVENT_PORT`). It does so under every frontend; Dynamo's frontend with
`router-mode: kv` routes on these events. The flags go after the worker's own (after
any Dynamo install wrapper too, which passes its arguments on).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from disagg.plan.model import RoleKind, RolePlan
from disagg.recipe.backend_section import RoleKvEvents

FIELD = "backend.kv_events_config"
PORT = "kv_events"
ENGINES = ("sglang", "vllm")  # the engines whose srtctl protocol reads the setting
_DEFAULTS: dict[str, dict[str, Any]] = {
    "sglang": {"publisher": "zmq", "topic": "kv-events"},
    "vllm": {"publisher": "zmq", "topic": "kv-events", "enable_kv_cache_events": True},
}
_MODE_KEY = {
    RoleKind.PREFILL: "prefill",
    RoleKind.DECODE: "decode",
    RoleKind.AGGREGATED: "aggregated",
}


def mode_config(
    setting: bool | RoleKvEvents | None, engine: str, kind: RoleKind
) -> dict[str, Any] | None:
    """The publisher config for workers of `kind`, or None when the setting leaves them off."""
    if not setting or engine not in _DEFAULTS or kind not in _MODE_KEY:  # workers only
        return None
    defaults = dict(_DEFAULTS[engine])
    if setting is True:
        return defaults if kind in (RoleKind.PREFILL, RoleKind.DECODE) else None
    assert isinstance(setting, RoleKvEvents)
    value = getattr(setting, _MODE_KEY[kind])
    if value is None or value is False:
        return None
    if isinstance(value, Mapping):
        return {**defaults, **value}
    return defaults


def publishing(role: RolePlan, config: Mapping[str, Any], engine: str) -> RolePlan:
    """`role` with its KV event publisher: the flag on every node's command, its own port."""
    endpoint = {**config, "endpoint": f"tcp://*:${{self.{PORT}_port}}"}
    flags = ["--kv-events-config", json.dumps(endpoint)]
    env = dict(role.env)
    if engine == "vllm":
        env["DYN_VLLM_KV_EVENT_PORT"] = f"${{self.{PORT}_port}}"
    return role.model_copy(
        update={
            "argv": [*role.argv, *flags],
            "node_argv": [[*argv, *flags] for argv in role.node_argv],
            "ports": role.ports if _has_port(role, PORT) else [*role.ports, PORT],
            "env": env,
        }
    )


def _has_port(role: RolePlan, name: str) -> bool:
    """Whether `role` already has the port `name` (alone or as a block `name*N`)."""
    return any(port.partition("*")[0] == name for port in role.ports)


def with_publishers(
    roles: list[RolePlan], setting: bool | RoleKvEvents | None, engine: str
) -> list[RolePlan]:
    """Every worker of `roles` whose mode `setting` enables, publishing (the rest as given)."""
    placed = []
    for role in roles:
        wanted = mode_config(setting, engine, role.kind)
        placed.append(role if wanted is None else publishing(role, wanted, engine))
    return placed
