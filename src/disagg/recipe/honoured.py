"""Recipe fields a plan does not honour: refused (`unsupported: <field> ...`) or listed as ignored.

srt-slurm defines many fields about the job around the engines (node layout knobs,
extra services, telemetry, uploads). A valid recipe may set any of them; a plan that
quietly dropped one would change what the recipe means. Each field here is either
refused at plan time, when running without it would measure something else, or
listed as ignored with the reason, in plan output, plan.json and lint, when it only
concerns what happens around the measurement. Engine, frontend and benchmark fields
are judged by their own adapters.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from disagg.recipe.unhonoured_field import Action, Unhonoured

# A rule's neutral value meaning "any value but null is set", an empty map included.
EVEN_EMPTY = object()
# (path, action, why). A field counts as set when it is present with a value other
# than null, false, an empty map/list, or the neutral value given.
_RULES: tuple[tuple[tuple[str, ...], Action, str, Any], ...] = (
    (("model", "stage_dir"), "ignored", "models are read from the profile's cache", None),
    (("infra", "nats_max_payload_mb"), "ignored", "no NATS server is started", None),
    # The node is reserved as srtctl reserves it; the Dynamo frontend runs etcd/NATS there.
    (
        ("infra", "etcd_nats_dedicated_node"),
        "ignored",
        "the node is reserved, but no etcd/NATS runs on it under this frontend",
        None,
    ),
    (("telemetry", "enabled"), "ignored", "no power telemetry is collected", None),
    (("observability", "enabled"), "ignored", "no metrics scraping or tracing", None),
    (("reporting",), "ignored", "no status reporting or log upload", None),
    (("output", "log_dir"), "ignored", "logs go to the run directory", None),
    (("post_eval",), "ignored", "no accuracy evaluation runs after the benchmark", None),
)


def _value(raw: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = raw
    for part in path:
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def _is_set(value: Any, neutral: Any) -> bool:
    if neutral is EVEN_EMPTY:
        return value is not None
    if value is None or value is False or value == neutral:
        return False
    return not (isinstance(value, Mapping | list) and not value)


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
    """Every rule-listed field this resolved variant sets, in rule order."""
    found = []
    for path, action, why, neutral in _RULES:
        if _is_set(_value(raw, path), neutral):
            found.append(Unhonoured(path, action, why))
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
    found += _role_engines(raw)
    return found


def _role_engines(raw: Mapping[str, Any]) -> list[Unhonoured]:
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
    """What the `disagg.services` kind that starts the entry does not carry out of it; an
    entry of a kind none starts is judged by `_service`."""
    from disagg.services import KINDS

    adapter = KINDS.get(kind)
    if adapter is None:
        return [_service(service, kind)]
    return adapter.unhonoured(name, service)


def _service(service: Mapping[str, Any], kind: str) -> Unhonoured:
    """A `services:` entry no adapter starts. One the run depends on (`critical: true`:
    in the live request path, srt-slurm fails the run when it dies; `terminal: true`: it
    is the run) is refused, since the workers would run without what their settings
    point at; any other is a sidecar whose absence the measurement does not see."""
    path = ("services", str(service.get("name")))
    for key, means in (("critical", "the workers depend on it"), ("terminal", "it is the run")):
        if service.get(key) is True:
            why = (
                f"no {kind} service is started, and `{key}: true` says {means}; run the "
                "variant without the service and the worker settings that use it"
            )
            return Unhonoured(path, "refused", why)
    why = f"no {kind} service is started (a frontend that needs one starts its own)"
    return Unhonoured(path, "ignored", why)
