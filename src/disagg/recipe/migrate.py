"""`disagg migrate`: rewrite a v1 recipe in srt-slurm's `schema: 2` layout, proven equivalent.

Edited as a ruamel round-trip document, so comments, key order and anchors stay; each
block's v1 keys move to their 2.x places (`legacy-v1.md`). The result is only written
when every variant plans exactly as before (or is refused alike); else the first
difference is named.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from io import StringIO
from pathlib import Path
from typing import Any

from ruamel.yaml.comments import CommentedMap

from disagg.errors import DisaggError, UnsupportedRecipe
from disagg.recipe.dialects.schema2 import ROLE_RESOURCES, ROLE_TO_MODE, SOURCE_TO_V1
from disagg.recipe.errors import dotted, undotted
from disagg.recipe.lint.fix import round_trip_yaml
from disagg.recipe.load import display_path, parse_yaml, read_text
from disagg.recipe.migrate_services import (
    ServicesMigrationError,
    migrate_services,
    take_service_fields,
)
from disagg.recipe.overrides import BASE, OVERRIDE_PREFIX, ZIP_PREFIX

MODES = {mode: role for role, mode in ROLE_TO_MODE.items()}
_RESOURCES = {name: key for key, name in ROLE_RESOURCES.items()}
_PER_ROLE_BACKEND = {f"{mode}_{kind}" for mode in MODES for kind in ("environment", "extra_args")}


class MigrationError(DisaggError):
    """A recipe this migrator cannot rewrite faithfully; the file is left alone."""


@dataclass(frozen=True)
class Migration:
    """One file: its new text (None when it is schema 2 already) and its variant count."""

    path: Path
    text: str | None
    variants: int
    not_recipe: bool = False  # an srt-slurm cluster config met in a directory

    @property
    def changed(self) -> bool:
        return self.text is not None


def migrate_file(path: Path, plan: Callable[[str, str], list[tuple[str, Any]]]) -> Migration:
    """Migrate one recipe; `plan(text, file)` gives (variant, outcome) pairs to compare."""
    text = read_text(path)
    name = display_path(path)
    loaded = parse_yaml(text, file=name)
    data = loaded.data
    if not isinstance(data, dict):
        raise MigrationError("a recipe is a map of fields", location=loaded.source.locate(()))
    from disagg.cluster_srtslurm import is_srtslurm_config
    from disagg.recipe.dialects import detect

    if is_srtslurm_config(data):
        return Migration(path, None, 0, not_recipe=True)
    if detect(data, lambda p: loaded.source.locate(p, key=True)) == "schema2":
        return Migration(path, None, 0)
    yaml = round_trip_yaml(text)
    doc = yaml.load(text)
    migrate_document(doc, name)
    out = StringIO()
    yaml.dump(doc, out)
    new_text = out.getvalue()
    before = plan(text, name)
    after = plan(new_text, name)
    if [v for v, _ in before] != [v for v, _ in after]:
        raise MigrationError(f"{name}: the migrated file has other variants; nothing written")
    for (variant, old), (_, new) in zip(before, after, strict=True):
        if old != new:
            raise MigrationError(
                f"{name}: variant {variant} would plan differently after migration "
                f"({_difference(old, new)}); nothing written",
                hint="migrate this file by hand (see legacy-v1.md), then `disagg plan` both",
            )
    return Migration(path, new_text, len(before))


def _difference(old: Any, new: Any) -> str:
    if isinstance(old, dict) and isinstance(new, dict):
        keys = sorted(k for k in {*old, *new} if old.get(k) != new.get(k))
        return "differs in " + ", ".join(map(str, keys[:5]))
    return f"{str(old)[:120]} vs {str(new)[:120]}"


def migrate_document(doc: CommentedMap, file: str) -> None:
    """Rewrite a loaded v1 document in place (flat recipe or override file)."""
    blocks = [k for k in doc if k == BASE or str(k).startswith((OVERRIDE_PREFIX, ZIP_PREFIX))]
    base_type = _backend_type(doc.get(BASE) if blocks else doc) or "sglang"
    mapped: list[tuple[str | None, CommentedMap]] = [
        (key, doc if key is None else doc[key])
        for key in blocks or [None]
        if isinstance(doc if key is None else doc[key], CommentedMap)
    ]
    engine_map = any(_engine_knobs(block) for _, block in mapped)
    taken = {key: take_service_fields(block) for key, block in mapped}
    base_block = [pair for pair in mapped if pair[0] in (None, BASE)] or [(None, CommentedMap())]
    taken.setdefault(base_block[0][0], take_service_fields(base_block[0][1]))
    try:
        migrate_services(base_block + [p for p in mapped if p[0] not in (None, BASE)], taken)
    except ServicesMigrationError as exc:
        raise MigrationError(f"{file}: {exc.message}") from None
    for key, block in mapped:
        _migrate_block(block, base_type, engine_map, is_base=key in (None, BASE))
    doc.insert(0, "schema", 2)


def _backend_type(block: Any) -> str | None:
    backend = block.get("backend") if isinstance(block, CommentedMap) else None
    value = backend.get("type") if isinstance(backend, CommentedMap) else None
    return str(value) if value is not None else None


def _engine_knobs(block: CommentedMap) -> bool:
    backend = block.get("backend")
    if not isinstance(backend, CommentedMap):
        return False
    return any(not _per_role(str(key)) and key != "type" for key in backend)


def _per_role(key: str) -> bool:
    return key.endswith("_config") or key in _PER_ROLE_BACKEND


def _migrate_block(block: CommentedMap, base_type: str, engine_map: bool, *, is_base: bool) -> None:
    roles = CommentedMap()
    position = _position(block, "backend", "resources")
    backend = block.pop("backend", None)
    engine: Any = None
    if isinstance(backend, CommentedMap):
        engine = _split_backend(backend, roles, base_type)
    if is_base and engine is None:
        engine = CommentedMap(type=base_type)
    if isinstance(engine, CommentedMap) and not engine_map and list(engine) == ["type"]:
        engine = engine["type"]
    if engine is not None:
        block.insert(position, "engine", engine)
        position += 1
    resources = block.get("resources")
    if isinstance(resources, CommentedMap):
        _split_resources(resources, roles)
    if roles:
        block.insert(position, "roles", _ordered(roles))
    _placement(block, "frontend", "orchestrator_placement", "dedicated_node")
    _placement(block, "benchmark", "client_placement", "client_dedicated_node")
    frontend = block.get("frontend")
    if isinstance(frontend, CommentedMap) and frontend.get("type") == "sglang":
        frontend["type"] = "sglang-router"
    _dynamo(block)


def _position(block: CommentedMap, *keys: str) -> int:
    for key in keys:
        if key in block:
            return list(block).index(key)
    return len(block)


def _mode_role(key: str, mode: Any) -> str:
    """The schema-2 role of a v1 mode key, or a refusal naming the key written."""
    if str(mode) not in MODES:
        raise MigrationError(
            f"backend.{key}.{mode}: not a worker mode; expected one of {', '.join(MODES)}"
        )
    return MODES[str(mode)]


def _role(roles: CommentedMap, role: str) -> CommentedMap:
    if role not in roles:
        roles[role] = CommentedMap()
    found: CommentedMap = roles[role]
    return found


def _split_backend(backend: CommentedMap, roles: CommentedMap, base_type: str) -> Any:
    kind = backend.get("type", base_type)
    engine = CommentedMap()
    if "type" in backend:
        engine["type"] = backend["type"]
    for key, value in backend.items():
        key = str(key)
        if key == "type":
            continue
        if key == "kv_events_config":
            _kv_events(value, roles)
        elif key.endswith("_config") and isinstance(value, CommentedMap):
            if isinstance(kind, str) and key != f"{kind}_config":  # a zipped type: any
                raise MigrationError(f"backend.{key} does not belong to engine {kind}")
            for mode, args in value.items():
                _role(roles, _mode_role(key, mode))["args"] = args
        elif key.endswith("_config") and value is None:
            continue  # no per-role settings; an override clearing the base's plans apart
        elif key.endswith("_config"):
            raise MigrationError(
                f"backend.{key} is {type(value).__name__}; expected a mapping of "
                "prefill/decode/aggregated settings or null"
            )
        elif _per_role(key):
            mode, _, suffix = key.partition("_")
            field = "env" if suffix == "environment" else "extra_args"
            _role(roles, MODES[mode])[field] = value
        else:
            engine[key] = value
    return engine or None


def _kv_events(value: Any, roles: CommentedMap) -> None:
    if isinstance(value, CommentedMap):
        for mode, setting in value.items():
            _role(roles, _mode_role("kv_events_config", mode))["kv_events"] = setting
    elif value:  # global true: prefill and decode with defaults
        for role in ("prefill", "decode"):
            _role(roles, role)["kv_events"] = value


def _split_resources(resources: CommentedMap, roles: CommentedMap) -> None:
    for role in MODES.values():
        for pattern, field in _RESOURCES.items():
            key = pattern.format(r=role)
            if key not in resources:
                continue
            value = resources.pop(key)
            if key == "decode_nodes" and value == 0:
                value = "colocate"
            _role(roles, role)[field] = value


def _ordered(roles: CommentedMap) -> CommentedMap:
    """Roles in srt-slurm's order, each with topology first, then env and args."""
    order = ("nodes", "workers", "gpus", "critical", "env", "extra_args", "kv_events", "args")
    out = CommentedMap()
    for role in ("prefill", "decode", "agg"):
        if role in roles:
            spec = roles[role]
            out[role] = CommentedMap((k, spec[k]) for k in order if k in spec)
    return out


def _placement(block: CommentedMap, section: str, node_key: str, dedicated_key: str) -> None:
    part = block.get(section)
    if not isinstance(part, CommentedMap) or not ({node_key, dedicated_key} & set(part)):
        return
    position = _position(part, node_key, dedicated_key)
    node = part.pop(node_key, None)
    if part.pop(dedicated_key, False):
        node = "dedicated"
    if node is not None:
        part.insert(position, "placement", CommentedMap(node=node))


def _dynamo(block: CommentedMap) -> None:
    dynamo = block.get("dynamo")
    if not isinstance(dynamo, CommentedMap):
        return
    back = {v1: written for written, v1 in SOURCE_TO_V1.items()}
    moved = [key for key in back if key in dynamo]
    if not moved:
        return
    position = _position(dynamo, *moved)
    source = CommentedMap()
    for key in moved:
        value = dynamo.pop(key)
        if value is not None:
            source[back[key]] = value
    if source:
        dynamo.insert(position, "source", source)


def plan_outcomes(text: str, file: str, profile: Any = None) -> list[tuple[str, Any]]:
    """Every variant of `text` and what planning it gives: the plan (minus what names the
    source: selector, file, raw config) or the one-line refusal."""
    from disagg.plan.placement import place
    from disagg.recipe.variants import variants_of

    outcomes: list[tuple[str, Any]] = []
    for variant in variants_of(parse_yaml(text, file=file)):
        try:
            data = place(variant, profile).model_dump(mode="json")
        except UnsupportedRecipe as exc:
            what = _internal_names(variant, exc.what.split(" (")[0])
            outcomes.append((variant.name, f"unsupported: {what}"))
            continue
        except DisaggError as exc:
            message = _internal_names(variant, exc.message.splitlines()[0])
            outcomes.append((variant.name, f"error: {message[:80]}"))
            continue
        for key in ("selector", "recipe_file", "config"):
            data.pop(key, None)
        for item in data.get("ignored", []):
            item["field"] = dotted(variant.internal_path(undotted(item["field"])))
        outcomes.append((variant.name, data))
    return outcomes


def _internal_names(variant: Any, message: str) -> str:
    """A plan message with the fields a schema-2 variant names in its own spelling put
    back in the internal (v1) one, so both dialects' outcomes compare."""
    translation = variant.translation
    if translation is None:
        return message
    if message.startswith("engine type "):
        message = "backend type " + message.removeprefix("engine type ")
    names = {dotted(w): dotted(i) for i, w in translation.origins.items() if len(w) > 1}
    spelled = "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True))
    pattern = re.compile(rf"(?<![\w.])(?:{spelled})(?![\w])")
    return pattern.sub(lambda found: names[found.group(0)], message)
