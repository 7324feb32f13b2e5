"""Recipe fields a plan does not honour: refused (`unsupported: <field> ...`) or listed as ignored.

A plan that quietly dropped a field srt-slurm defines would change what the recipe
means: each is refused when running without it would measure something else, or
listed as ignored with the reason when it only concerns what happens around the
measurement. Engine, frontend and benchmark fields are judged by their own adapters.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from disagg.recipe.unhonoured_field import Unhonoured

# (path, why) of fields ignored when set: present with a value other than null, false
# or an empty map/list.
_IGNORED: tuple[tuple[tuple[str, ...], str], ...] = (
    (("model", "stage_dir"), "models are read from the profile's cache"),
    (("infra", "nats_max_payload_mb"), "no NATS server is started"),
    # The node is reserved as srtctl reserves it; the Dynamo frontend runs etcd/NATS there.
    (
        ("infra", "etcd_nats_dedicated_node"),
        "the node is reserved, but no etcd/NATS runs on it under this frontend",
    ),
    (("telemetry", "enabled"), "no power telemetry is collected"),
    (("observability", "enabled"), "no metrics scraping or tracing"),
    (("reporting",), "no status reporting or log upload"),
    (("output", "log_dir"), "logs go to the run directory"),
    (("post_eval",), "no accuracy evaluation runs after the benchmark"),
)


def _is_set(raw: Mapping[str, Any], path: tuple[str, ...]) -> bool:
    node: Any = raw
    for part in path:
        if not isinstance(node, Mapping) or part not in node:
            return False
        node = node[part]
    return node is not None and node is not False and node not in ({}, [])


def _mooncake_master(name: str, service: Mapping[str, Any]) -> list[Unhonoured]:
    """What a mooncake-master entry asks that the master role (frontends/mooncake) does not do."""
    found = []
    if service.get("external"):
        why = "an external Mooncake master: the metadata server address workers need is not known"
        found.append(Unhonoured(("services", name, "external"), "refused", why))
    options = service.get("options")
    for key in options if isinstance(options, Mapping) else ():
        if key != "store_config":
            why = "a mooncake-master option not carried out (known: store_config)"
            found.append(Unhonoured(("services", name, "options", str(key)), "refused", why))
    placement = service.get("placement")
    node = placement.get("node") if isinstance(placement, Mapping) else None
    if node not in (None, "head", "infra"):
        why = f"the Mooncake master runs on the first node (where etcd/NATS run), not on {node}"
        found.append(Unhonoured(("services", name, "placement", "node"), "ignored", why))
    for key in ("command", "source", "build_command", "preamble", "readiness"):
        if service.get(key):
            why = f"the Mooncake master runs srt-slurm's own command, without {key}"
            found.append(Unhonoured(("services", name, key), "ignored", why))
    return found


def unhonoured(raw: Mapping[str, Any]) -> list[Unhonoured]:
    """Every field of `_IGNORED` this resolved variant sets, in that order, then services and
    role engines."""
    found = [Unhonoured(path, "ignored", why) for path, why in _IGNORED if _is_set(raw, path)]
    # etcd / nats entries are Dynamo's discovery plane: its adapter starts them or says why
    # not, and under any other frontend they say what v1's `infra` says (rules above).
    services = raw.get("services")
    for service in services if isinstance(services, list) else ():
        if not isinstance(service, Mapping) or service.get("enabled", True) is False:
            continue
        kind = service.get("type", "generic")
        name = str(service.get("name"))
        if kind == "mooncake-master":  # started as backend.mooncake_kv_store says
            found += _mooncake_master(name, service)
        elif kind not in ("etcd", "nats"):
            found += _started(service, name, str(kind))
    # A role's own `container` and `srun_options` are applied to its worker steps
    # (disagg.plan.role_images); its own engine and knobs are judged here.
    found += role_engines(raw)
    return found


def role_engines(raw: Mapping[str, Any]) -> list[Unhonoured]:
    """A role's own engine runs only as one of the mixed pairs a plan carries out
    (`dialects.schema2_engines.MIXED_PAIRS`); a knob on one role's engine only cannot be
    kept from the other roles, which run the same adapter with one set of knobs."""
    from disagg.recipe.dialects.schema2_engines import MIXED_PAIRS, PRIMARY_ROLE

    found: list[Unhonoured] = []
    backend = raw.get("backend")
    variant = backend.get("type") if isinstance(backend, Mapping) else None
    overrides = raw.get("role_overrides")
    for role, override in overrides.items() if isinstance(overrides, Mapping) else ():
        if not isinstance(override, Mapping):
            continue
        engine = override.get("engine")
        if engine:
            if (role, engine, variant) not in MIXED_PAIRS:
                partner = "prefill" if role == PRIMARY_ROLE else PRIMARY_ROLE
                why = (
                    "no KV hand-over between these engines; the one mixed pair that runs is a "
                    "vllm prefill with a tilert decode, TileRT's layout"
                )
                path = ("role_overrides", str(role), "engine")
                found.append(
                    Unhonoured(path, "refused", why, f"{engine} with {partner} engine {variant}")
                )
            continue  # its knobs are its own engine's, judged by that engine's adapter
        from disagg.engines import registry

        adapter = registry.get(str(variant))
        per_role = adapter.role_knobs if adapter is not None else {}
        for knob in override.get("knobs") or {}:
            if knob in per_role:
                continue  # the role's own setting (`disagg.plan.role_engines.with_role_knobs`)
            why = (
                f"a knob on this role's engine only; engine {variant} takes this knob for "
                "every role at once: write it alike on every role's engine"
            )
            knob_path = ("role_overrides", str(role), "knobs", str(knob))
            found.append(Unhonoured(knob_path, "refused", why))
    return found


def _started(service: Mapping[str, Any], name: str, kind: str) -> list[Unhonoured]:
    """What the `disagg.services` kind that starts the entry does not carry out of it. An entry
    no kind starts is refused when the run depends on it (`critical: true`: srt-slurm fails
    the run when it dies; `terminal: true`: it is the run), else ignored as a sidecar."""
    from disagg.services import KINDS

    adapter = KINDS.get(kind)
    if adapter is not None:
        return adapter.unhonoured(name, service)
    path = ("services", name)
    for key, means in (("critical", "the workers depend on it"), ("terminal", "it is the run")):
        if service.get(key) is True:
            why = (
                f"no {kind} service is started, and `{key}: true` says {means}; run the "
                "variant without the service and the worker settings that use it"
            )
            return [Unhonoured(path, "refused", why)]
    why = f"no {kind} service is started (a frontend that needs one starts its own)"
    return [Unhonoured(path, "ignored", why)]
