"""`backend.kv_events_config`: the ZMQ KV-cache event publisher each worker gets.

As srtctl v1.0.68 renders it (`get_kv_events_config_for_mode`, `build_worker_command`
in srtctl/backends/sglang.py and vllm.py): `--kv-events-config JSON` with an endpoint on
a port of the worker's own, after the worker's own flags, under every frontend.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from disagg.plan.model import WORKER_KINDS, RoleKind, RolePlan
from disagg.recipe.backend_section import RoleKvEvents

FIELD = "backend.kv_events_config"
PORT = "kv_events"
# The engines whose srtctl protocol reads the setting, and their publisher's defaults.
_DEFAULTS: dict[str, dict[str, Any]] = {
    "sglang": {"publisher": "zmq", "topic": "kv-events"},
    "vllm": {"publisher": "zmq", "topic": "kv-events", "enable_kv_cache_events": True},
}


def mode_config(
    setting: bool | RoleKvEvents | None, engine: str, kind: RoleKind
) -> dict[str, Any] | None:
    """The publisher config for workers of `kind`, or None when the setting leaves them off."""
    if not setting or engine not in _DEFAULTS or kind not in WORKER_KINDS:
        return None
    defaults = dict(_DEFAULTS[engine])
    if setting is True:
        return defaults if kind in (RoleKind.PREFILL, RoleKind.DECODE) else None
    assert isinstance(setting, RoleKvEvents)
    value = getattr(setting, kind.value)  # a worker mode: prefill, decode or aggregated
    if value is None or value is False:
        return None
    if isinstance(value, Mapping):
        return {**defaults, **value}
    return defaults


def publishing(role: RolePlan, config: Mapping[str, Any], engine: str) -> RolePlan:
    """`role` with its KV event publisher: the flag on every node's command, its own port."""
    endpoint = {**config, "endpoint": f"tcp://*:${{self.{PORT}_port}}"}
    flags = ["--kv-events-config", json.dumps(endpoint)]
    has_port = any(port.partition("*")[0] == PORT for port in role.ports)  # alone or as `PORT*N`
    env = dict(role.env)
    if engine == "vllm":
        env["DYN_VLLM_KV_EVENT_PORT"] = f"${{self.{PORT}_port}}"
    return role.model_copy(
        update={
            "argv": [*role.argv, *flags],
            "node_argv": [[*argv, *flags] for argv in role.node_argv],
            "ports": role.ports if has_port else [*role.ports, PORT],
            "env": env,
        }
    )


def with_publishers(
    roles: list[RolePlan], setting: bool | RoleKvEvents | None, engine: str
) -> list[RolePlan]:
    """Every worker of `roles` whose mode `setting` enables, publishing (the rest as given)."""
    wanted = [(role, mode_config(setting, engine, role.kind)) for role in roles]
    return [role if config is None else publishing(role, config, engine) for role, config in wanted]
