"""`schema: 2` -> the internal (v1-shaped) config, and internal paths back to schema-2 paths.

srt-slurm 2.x writes the engine once (`engine:`) and the topology per role
(`roles.<role>.{nodes,workers,gpus,env,args}`); the internal config keeps v1's
places for the same facts (`resources.prefill_nodes`, `backend.<engine>_config.prefill`,
`backend.prefill_environment`), so engine adapters, placement and lint read one
shape. `source_path` maps an internal path back to where a schema-2 file wrote it,
so every message points at the user's own line.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from disagg.errors import DisaggError
from disagg.recipe.source_map import Key, KeyPath

ROLE_TO_MODE = {"prefill": "prefill", "decode": "decode", "agg": "aggregated"}
MODE_TO_ROLE = {mode: role for role, mode in ROLE_TO_MODE.items()}
# Schema 2's frontend types whose meaning differs from the v1 spelling the internal config uses.
FRONTEND_TYPES = {"sglang-router": "sglang", "sglang": "sglang-direct", "vllm": "vllm-direct"}
FRONTEND_TYPES_BACK = {internal: written for written, internal in FRONTEND_TYPES.items()}
SOURCE_TO_V1 = {"pypi": "version", "wheel": "wheel", "rev": "hash", "patches": "cargo_patches"}
_RESOURCE_FIELDS = {"nodes": "{r}_nodes", "workers": "{r}_workers", "gpus": "gpus_per_{r}"}

# v1 keys that schema 2 replaced: path -> its 2.x spelling (srt-slurm rejects them too).
LEGACY_KEYS: dict[KeyPath, str] = {
    ("backend",): "`engine:` (type and engine-wide knobs) plus `roles.<role>.args` / `.env`",
    ("infra",): "`services:` entries of type etcd / nats",
    ("frontend", "orchestrator_placement"): "`frontend.placement.node`",
    ("frontend", "dedicated_node"): "`frontend.placement.node: dedicated`",
    ("benchmark", "client_placement"): "`benchmark.placement.node`",
    ("benchmark", "client_dedicated_node"): "`benchmark.placement.node: dedicated`",
    ("dynamo", "version"): "`dynamo.source.pypi`",
    ("dynamo", "wheel"): "`dynamo.source.wheel`",
    ("dynamo", "hash"): "`dynamo.source.git` + `dynamo.source.rev`",
    ("dynamo", "cargo_patches"): "`dynamo.source.patches`",
    **{
        ("resources", field.format(r=short)): f"`roles.{role}.{key}`"
        for role, short in (("prefill", "prefill"), ("decode", "decode"), ("agg", "agg"))
        for key, field in _RESOURCE_FIELDS.items()
    },
}


def check_legacy_keys(raw: Mapping[str, Any], locate: Any) -> None:
    """A v1 key in a schema-2 variant is an error naming its 2.x spelling."""
    for path, spelling in LEGACY_KEYS.items():
        node: Any = raw
        for part in path:
            node = node.get(part, _MISSING) if isinstance(node, Mapping) else _MISSING
        if node is not _MISSING:
            raise DisaggError(
                f"`{'.'.join(map(str, path))}` is a v1 key; a `schema: 2` recipe writes {spelling}",
                location=locate(path, True),
                hint="`disagg migrate FILE` rewrites a whole v1 recipe into schema 2",
            )


_MISSING = object()


def _engine_of(raw: Mapping[str, Any]) -> tuple[dict[str, Any], KeyPath]:
    """The variant's engine map (type + knobs) and where it was written: top level, or
    the first role that names one (roles naming another engine are kept per role)."""
    roles = raw.get("roles") or {}
    top = raw.get("engine")
    if top is not None:
        return _as_engine(top), ("engine",)
    for role, spec in roles.items():
        if isinstance(spec, Mapping) and spec.get("engine"):
            return _as_engine(spec["engine"]), ("roles", role, "engine")
    return {"type": "sglang"}, ("engine",)


def _as_engine(value: Any) -> dict[str, Any]:
    return {"type": value} if isinstance(value, str) else dict(value)


def to_internal(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The internal config for one validated schema-2 variant (plain data, new objects)."""
    out: dict[str, Any] = {k: v for k, v in raw.items() if k not in ("engine", "roles")}
    engine, _ = _engine_of(raw)
    kind = engine["type"]
    backend: dict[str, Any] = dict(engine)
    resources = dict(raw.get("resources") or {})
    roles = raw.get("roles") or {}
    extras: dict[str, Any] = {}
    for role, spec in roles.items():
        if not isinstance(spec, Mapping):
            continue
        mode = ROLE_TO_MODE[role]
        short = "agg" if role == "agg" else role
        for key, field in _RESOURCE_FIELDS.items():
            value = spec.get(key)
            if value is not None:
                resources[field.format(r=short)] = 0 if value == "colocate" else value
        if "critical" in spec:
            resources[f"{short}_critical"] = spec["critical"]
        if spec.get("args"):
            backend.setdefault(f"{kind}_config", {})[mode] = spec["args"]
        if spec.get("env"):
            backend[f"{mode}_environment"] = spec["env"]
        if spec.get("extra_args"):
            backend[f"{mode}_extra_args"] = spec["extra_args"]
        if spec.get("kv_events") is not None:
            backend.setdefault("kv_events_config", {})[mode] = spec["kv_events"]
        if spec.get("sidecar"):
            out["dynamo"] = {**(out.get("dynamo") or {}), "sidecar": True}
        kept = {k: spec[k] for k in ("container", "srun_options") if spec.get(k)}
        own = spec.get("engine")
        if own is not None and _as_engine(own) != engine:
            kept["engine"] = _as_engine(own)["type"]
        if kept:
            extras[role] = kept
    out["resources"] = resources
    out["backend"] = backend
    if extras:
        out["role_overrides"] = extras
    _placement(out, "frontend", "orchestrator_placement", "dedicated_node")
    _placement(out, "benchmark", "client_placement", "client_dedicated_node")
    frontend = out.get("frontend")
    if isinstance(frontend, Mapping) and frontend.get("type") in FRONTEND_TYPES:
        out["frontend"] = {**frontend, "type": FRONTEND_TYPES[frontend["type"]]}
    _dynamo_source(out)
    _infra_services(out)
    return out


def _placement(out: dict[str, Any], section: str, node_field: str, dedicated_field: str) -> None:
    block = out.get(section)
    if not isinstance(block, Mapping) or "placement" not in block:
        return
    placed = dict(block)
    node = (placed.pop("placement") or {}).get("node", "head")
    if node == "dedicated":
        placed[dedicated_field] = True
    else:
        placed[node_field] = node
    out[section] = placed


def _dynamo_source(out: dict[str, Any]) -> None:
    dynamo = out.get("dynamo")
    source = dynamo.get("source") if isinstance(dynamo, Mapping) else None
    if not isinstance(source, Mapping):
        return
    moved = dict(dynamo)  # type: ignore[arg-type]
    for written, v1 in (
        ("pypi", "version"),
        ("wheel", "wheel"),
        ("rev", "hash"),
        ("patches", "cargo_patches"),
    ):
        if source.get(written) is not None:
            moved[v1] = source[written]
    rest = {k: v for k, v in source.items() if k in ("git", "sha") and v is not None}
    if rest:
        moved["source"] = rest
    else:
        moved.pop("source", None)
    out["dynamo"] = moved


def _infra_services(out: dict[str, Any]) -> None:
    """etcd / nats service entries say what v1's `infra` said; the entries stay too."""
    infra: dict[str, Any] = {}
    for service in out.get("services") or []:
        if not isinstance(service, Mapping) or service.get("type") not in ("etcd", "nats"):
            continue
        if (service.get("placement") or {}).get("node") == "dedicated":
            infra["etcd_nats_dedicated_node"] = True
        payload = (service.get("options") or {}).get("max_payload_mb")
        if service.get("type") == "nats" and payload is not None:
            infra["nats_max_payload_mb"] = payload
    if infra:
        out["infra"] = infra


def source_path(path: KeyPath, raw: Mapping[str, Any]) -> KeyPath:
    """Where a schema-2 file wrote what the internal config holds at `path`."""
    if not path:
        return path
    head, rest = path[0], path[1:]
    if head == "backend" and rest:
        return _backend_path(rest, raw)
    if head == "resources" and rest:
        for role, short in (("prefill", "prefill"), ("decode", "decode"), ("agg", "agg")):
            for key, field in (*_RESOURCE_FIELDS.items(), ("critical", "{r}_critical")):
                if rest[0] == field.format(r=short):
                    return ("roles", role, key)
    if head == "frontend" and rest and rest[0] in ("orchestrator_placement", "dedicated_node"):
        return ("frontend", "placement", "node")
    if head == "benchmark" and rest and rest[0] in ("client_placement", "client_dedicated_node"):
        return ("benchmark", "placement", "node")
    if head == "dynamo" and rest:
        back = {v1: written for written, v1 in SOURCE_TO_V1.items()}
        if rest[0] in back:
            return ("dynamo", "source", back[str(rest[0])], *rest[1:])
    if head == "role_overrides" and rest:
        return ("roles", *rest)
    return path


def _backend_path(rest: tuple[Key, ...], raw: Mapping[str, Any]) -> KeyPath:
    first = str(rest[0])
    for mode, role in MODE_TO_ROLE.items():
        if first == f"{mode}_environment":
            return ("roles", role, "env", *rest[1:])
        if first == f"{mode}_extra_args":
            return ("roles", role, "extra_args", *rest[1:])
    if first.endswith("_config") and len(rest) > 1 and str(rest[1]) in MODE_TO_ROLE:
        role = MODE_TO_ROLE[str(rest[1])]
        key = "kv_events" if first == "kv_events_config" else "args"
        return ("roles", role, key, *rest[2:])
    try:
        _, where = _engine_of(raw)
    except DisaggError:
        where = ("engine",)
    return (*where, *rest)
