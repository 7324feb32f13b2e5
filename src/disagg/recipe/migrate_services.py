"""v1's `infra` and `backend.mooncake_kv_store` as schema 2's `services:` entries.

A block's list replaces base's instead of merging, so a block whose own settings change
what its variant runs gets that variant's whole list (one literal `[[...]]` in a zip
block; a zip block that zips these settings has no single list and is refused).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq

from disagg.errors import DisaggError
from disagg.recipe.overrides import ZIP_PREFIX, deep_merge

_ABSENT = object()


class ServicesMigrationError(DisaggError):
    """A block whose services cannot be written as one schema-2 list."""


def take_service_fields(block: CommentedMap) -> tuple[Any, Any]:
    """Pop `infra` and `backend.mooncake_kv_store` from a v1 block ((_ABSENT, ...) if unset)."""
    infra = block.pop("infra", _ABSENT)
    backend = block.get("backend")
    mooncake = _ABSENT
    if isinstance(backend, CommentedMap) and "mooncake_kv_store" in backend:
        mooncake = backend.pop("mooncake_kv_store")
    return infra, mooncake


def migrate_services(
    blocks: list[tuple[str | None, CommentedMap]], taken: dict[str | None, tuple[Any, Any]]
) -> None:
    """Write the `services` of every block; `blocks[0]` is base (or the flat recipe)."""
    base_key, base = blocks[0]
    base_infra, base_mooncake = taken[base_key]
    own = base.get("services")
    original = copy.deepcopy(own) if isinstance(own, CommentedSeq) else CommentedSeq()
    base_entries = _entries(base_infra, base_mooncake)
    if base_entries:
        if not isinstance(own, CommentedSeq):
            own = base["services"] = CommentedSeq()
        own.extend(base_entries)
    for key, block in blocks[1:]:
        infra, mooncake = taken[key]
        if infra is _ABSENT and mooncake is _ABSENT and not (base_entries and "services" in block):
            continue  # the variant keeps base's list as migrated
        zipped = str(key).startswith(ZIP_PREFIX)
        for name, value in (("infra", infra), ("backend.mooncake_kv_store", mooncake)):
            if zipped and _has_list(value):
                raise ServicesMigrationError(
                    f"`{name}` in {key} zips values that schema 2 writes inside one "
                    "`services:` list; write one `override_` block per value, then migrate"
                )
        if zipped and "services" in block:
            raise ServicesMigrationError(
                f"{key} zips a `services` list and sets `infra` / `mooncake_kv_store`; "
                "give the services in base, then migrate"
            )
        entries = _entries(_merged(base_infra, infra), _merged(base_mooncake, mooncake))
        services = block.get("services")
        listed = services if isinstance(services, CommentedSeq) else copy.deepcopy(original)
        listed.extend(entries)
        block["services"] = CommentedSeq([listed]) if zipped else listed


def _merged(base: Any, own: Any) -> Any:
    """What v1's deep merge gives for one field of a variant block over base."""
    return base if own is _ABSENT else deep_merge(base, own)


def _has_list(value: Any) -> bool:
    if isinstance(value, list):
        return True
    return isinstance(value, Mapping) and any(_has_list(v) for v in value.values())


def _entries(infra: Any, mooncake: Any) -> list[CommentedMap]:
    """The schema-2 services entries that say what `infra` and `mooncake_kv_store` said."""
    entries: list[CommentedMap] = []
    if isinstance(infra, Mapping):
        dedicated = bool(infra.get("etcd_nats_dedicated_node"))
        payload = infra.get("nats_max_payload_mb")
        for kind in ("etcd", "nats"):
            if not (dedicated or (kind == "nats" and payload is not None)):
                continue
            entry = CommentedMap(name=kind, type=kind)
            if dedicated:
                entry["placement"] = CommentedMap(node="dedicated")
            if kind == "nats" and payload is not None:
                entry["options"] = CommentedMap(max_payload_mb=payload)
            entries.append(entry)
    if mooncake is not _ABSENT and mooncake is not None:
        settings = mooncake if isinstance(mooncake, Mapping) else {}
        entry = CommentedMap(name="mooncake-master", type="mooncake-master")
        for v1, written in (("container", "container"), ("env", "env")):
            if settings.get(v1) is not None:
                entry[written] = copy.deepcopy(settings[v1])
        if settings.get("master_extra_args"):
            entry["args"] = copy.deepcopy(settings["master_extra_args"])
        if settings.get("store_config") is not None:
            entry["options"] = CommentedMap(store_config=copy.deepcopy(settings["store_config"]))
        entries.append(entry)
    return entries
