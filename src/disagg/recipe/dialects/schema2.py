"""`schema: 2` -> the internal (v1-shaped) config, and internal paths back to schema-2 paths.

The internal config keeps v1's places for schema 2's per-role facts, so engine adapters,
placement and lint read one shape; `translate` records where the file wrote each
internal path, so every message names the user's own field and line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from disagg.errors import DisaggError
from disagg.recipe.dialects.schema2_engines import split as split_engines
from disagg.recipe.source_map import Key, KeyPath, rewritten

ROLE_TO_MODE = {"prefill": "prefill", "decode": "decode", "agg": "aggregated"}
# Schema 2's frontend types whose meaning differs from the v1 spelling the internal config uses.
FRONTEND_TYPES = {"sglang-router": "sglang", "sglang": "sglang-direct", "vllm": "vllm-direct"}
FRONTEND_TYPES_BACK = {internal: written for written, internal in FRONTEND_TYPES.items()}
# The internal names of schema 2's direct frontends (the one worker serves): no file
# may spell them itself.
DIRECT_FRONTENDS = ("sglang-direct", "vllm-direct")
SOURCE_TO_V1 = {"pypi": "version", "wheel": "wheel", "rev": "hash", "patches": "cargo_patches"}
_RESOURCE_FIELDS = {"nodes": "{r}_nodes", "workers": "{r}_workers", "gpus": "gpus_per_{r}"}
ROLE_RESOURCES = {**_RESOURCE_FIELDS, "critical": "{r}_critical"}  # roles.<role>.<key> -> v1

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
        ("resources", name.format(r=role)): f"`roles.{role}.{key}`"
        for role in ROLE_TO_MODE
        for key, name in _RESOURCE_FIELDS.items()
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
# v1 per-role backend keys, as schema 2 writes them instead (an engine map may not hold them).
_PER_ROLE_SPELLING = {
    "kv_events_config": "`roles.<role>.kv_events`",
    "mooncake_kv_store": "a `services:` entry of type mooncake-master",
    **{f"{mode}_environment": f"`roles.{role}.env`" for role, mode in ROLE_TO_MODE.items()},
    **{f"{mode}_extra_args": f"`roles.{role}.extra_args`" for role, mode in ROLE_TO_MODE.items()},
}


def check_engine_knobs(raw: Mapping[str, Any], locate: Any) -> None:
    """Each engine map (`engine:`, `roles.<role>.engine`) holds its own engine's knobs only:
    a knob of another engine, a v1 per-role key or a typo is an error naming the engine."""
    from disagg.recipe.backend_section import ENGINE_COMMON, ENGINE_KNOBS
    from disagg.recipe.errors import did_you_mean

    roles = raw.get("roles")
    places: list[KeyPath] = [("engine",)]
    if isinstance(roles, Mapping):
        places += [("roles", role, "engine") for role in roles]
    for where in places:
        engine = _written_engine(raw, where)
        kind = engine.get("type") if isinstance(engine, Mapping) else None
        if not isinstance(kind, str) or kind not in ENGINE_KNOBS:
            continue  # a string, or a type the schema check names
        own = ENGINE_KNOBS[kind] | ENGINE_COMMON
        for key in engine:
            if key in own:
                continue
            name = ".".join(map(str, (*where, key)))
            others = sorted(k for k, knobs in ENGINE_KNOBS.items() if key in knobs)
            if key in _PER_ROLE_SPELLING or str(key).endswith("_config"):
                spelling = _PER_ROLE_SPELLING.get(str(key), "`roles.<role>.args`")
                message = f"`{name}` is not an engine knob; a `schema: 2` recipe writes {spelling}"
                hint = "`disagg migrate FILE` rewrites a whole v1 recipe into schema 2"
            elif others:
                message = f"`{name}` is a knob of {'/'.join(others)}, not of engine {kind}"
                hint = f"engine {kind} takes: {', '.join(sorted(ENGINE_KNOBS[kind]))}"
            else:
                message = f"unknown key `{name}` for engine {kind}"
                guess = did_you_mean(str(key), own)
                listing = f"engine {kind} takes: {', '.join(sorted(own))}"
                hint = f"did you mean `{guess}`? ({listing})" if guess else listing
            raise DisaggError(message, location=locate((*where, key), True), hint=hint)


Origins = dict[KeyPath, KeyPath]


@dataclass(frozen=True)
class Translation:
    """One schema-2 variant in the internal layout; `origins` maps an internal path (or a
    prefix of one) to the schema-2 path it came from."""

    internal: dict[str, Any]
    origins: Origins = field(default_factory=dict)

    def written_path(self, path: Sequence[Key]) -> KeyPath:
        """The schema-2 path of the internal `path` (unchanged where both layouts agree)."""
        return rewritten(tuple(path), self.origins) or tuple(path)

    def internal_path(self, written: Sequence[Key]) -> KeyPath:
        """The internal path of a schema-2 `written` path (the inverse of `written_path`)."""
        inverse = {back: internal for internal, back in sorted(self.origins.items(), reverse=True)}
        return rewritten(tuple(written), inverse) or tuple(written)


def translate(raw: Mapping[str, Any]) -> Translation:
    """The internal config for one validated schema-2 variant (plain data, new objects),
    with the origin of every moved field recorded on the way."""
    origins: Origins = {}
    out: dict[str, Any] = {k: v for k, v in raw.items() if k not in ("engine", "roles")}
    engines = split_engines(raw)
    engine, where = engines.engine, engines.where
    kind = engine["type"]
    backend: dict[str, Any] = dict(engine)
    origins[("backend",)] = where
    written_engine = _written_engine(raw, where)
    type_at = (*where, "type") if isinstance(written_engine, Mapping) else where
    origins[("backend", "type")] = type_at
    resources = dict(raw.get("resources") or {})
    roles = raw.get("roles") or {}
    extras: dict[str, Any] = {}
    for role, mode in ROLE_TO_MODE.items():
        _role_origins(origins, role, mode, kind)
    for role, spec in roles.items():
        if not isinstance(spec, Mapping):
            continue
        mode = ROLE_TO_MODE[role]
        for key, name in ROLE_RESOURCES.items():
            value = spec.get(key)
            if value is not None:
                resources[name.format(r=role)] = 0 if value == "colocate" else value
        if spec.get("args"):
            backend.setdefault(f"{kind}_config", {})[mode] = spec["args"]
        if spec.get("env"):
            backend[f"{mode}_environment"] = spec["env"]
        if spec.get("extra_args"):
            backend[f"{mode}_extra_args"] = spec["extra_args"]
        if spec.get("kv_events") is not None:
            backend.setdefault("kv_events_config", {})[mode] = spec["kv_events"]
            origins.setdefault(("backend", "kv_events_config"), ("roles", role, "kv_events"))
        if spec.get("sidecar"):
            out["dynamo"] = {**(out.get("dynamo") or {}), "sidecar": True}
            origins.setdefault(("dynamo", "sidecar"), ("roles", role, "sidecar"))
        kept = {k: spec[k] for k in ("container", "srun_options") if spec.get(k)}
        kept.update(engines.kept.get(str(role), {}))
        if kept:
            extras[role] = kept
    out["resources"] = resources
    out["backend"] = backend
    if extras:
        out["role_overrides"] = extras
    _placement(out, origins, "frontend", "orchestrator_placement", "dedicated_node")
    _placement(out, origins, "benchmark", "client_placement", "client_dedicated_node")
    frontend = out.get("frontend")
    if isinstance(frontend, Mapping) and frontend.get("type") in FRONTEND_TYPES:
        out["frontend"] = {**frontend, "type": FRONTEND_TYPES[frontend["type"]]}
    _dynamo_source(out, origins)
    _infra_services(out, origins)
    return Translation(out, origins)


def _written_engine(raw: Mapping[str, Any], where: KeyPath) -> Any:
    node: Any = raw
    for part in where:
        node = node.get(part) if isinstance(node, Mapping) else None
    return node


def _role_origins(origins: Origins, role: str, mode: str, kind: str) -> None:
    """Where a role's facts live in schema 2, recorded whether or not the file sets them
    (a message about a missing field names the schema-2 spelling too)."""
    for key, name in ROLE_RESOURCES.items():
        origins[("resources", name.format(r=role))] = ("roles", role, key)
    origins[("backend", f"{kind}_config", mode)] = ("roles", role, "args")
    origins[("backend", "kv_events_config", mode)] = ("roles", role, "kv_events")
    origins[("backend", f"{mode}_environment")] = ("roles", role, "env")
    origins[("backend", f"{mode}_extra_args")] = ("roles", role, "extra_args")
    origins[("role_overrides", role)] = ("roles", role)
    origins[("role_overrides", role, "knobs")] = ("roles", role, "engine")


def _placement(
    out: dict[str, Any], origins: Origins, section: str, node_field: str, dedicated_field: str
) -> None:
    for name in (node_field, dedicated_field):
        origins[(section, name)] = (section, "placement", "node")
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


def _dynamo_source(out: dict[str, Any], origins: Origins) -> None:
    for written, v1 in SOURCE_TO_V1.items():
        origins[("dynamo", v1)] = ("dynamo", "source", written)
    dynamo = out.get("dynamo")
    source = dynamo.get("source") if isinstance(dynamo, Mapping) else None
    if not isinstance(source, Mapping):
        return
    moved = dict(dynamo)  # type: ignore[arg-type]
    for written, v1 in SOURCE_TO_V1.items():
        if source.get(written) is not None:
            moved[v1] = source[written]
    rest = {k: v for k, v in source.items() if k in ("git", "sha") and v is not None}
    if rest:
        moved["source"] = rest
    else:
        moved.pop("source", None)
    out["dynamo"] = moved


def _infra_services(out: dict[str, Any], origins: Origins) -> None:
    """etcd / nats service entries say what v1's `infra` said; the entries stay too."""
    infra: dict[str, Any] = {}
    for index, service in enumerate(out.get("services") or []):
        if not isinstance(service, Mapping) or service.get("type") not in ("etcd", "nats"):
            continue
        if (service.get("placement") or {}).get("node") == "dedicated":
            infra["etcd_nats_dedicated_node"] = True
            origins.setdefault(
                ("infra", "etcd_nats_dedicated_node"), ("services", index, "placement", "node")
            )
        payload = (service.get("options") or {}).get("max_payload_mb")
        if service.get("type") == "nats" and payload is not None:
            infra["nats_max_payload_mb"] = payload
            where = ("services", index, "options", "max_payload_mb")
            origins[("infra", "nats_max_payload_mb")] = where
    if infra:  # only then: a `services.<name>` the plan names is not an `infra` field
        out["infra"] = infra
        origins[("infra",)] = ("services",)
    _mooncake_master(out, origins)


def _mooncake_master(out: dict[str, Any], origins: Origins) -> None:
    """A mooncake-master service entry says what v1's `backend.mooncake_kv_store` said."""
    for index, service in enumerate(out.get("services") or []):
        if not isinstance(service, Mapping) or service.get("type") != "mooncake-master":
            continue
        if service.get("enabled") is False:
            continue
        store: dict[str, Any] = {k: service[k] for k in ("container", "env") if k in service}
        if service.get("args"):
            store["master_extra_args"] = service["args"]
        options = service.get("options")
        if isinstance(options, Mapping) and options.get("store_config") is not None:
            store["store_config"] = options["store_config"]
        out["backend"] = {**out["backend"], "mooncake_kv_store": store}
        origins[("backend", "mooncake_kv_store")] = ("services", index)
        return
