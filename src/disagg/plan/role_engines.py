"""A worker role that runs its own engine (schema 2's `roles.<role>.engine`) in the plan.

srt-slurm's role engines inherit no options from each other, so the role gets its own
knobs only, judged by its own engine's adapter.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from disagg.engines import registry
from disagg.plan.model import RoleKind
from disagg.plan.role_images import ROLE_KEYS, role_override
from disagg.recipe.schema import RecipeConfig


def own_engine(config: RecipeConfig, kind: RoleKind) -> tuple[str, dict[str, Any]] | None:
    """(engine, its knobs) when this worker kind names an engine other than the variant's."""
    override = role_override(config, kind)
    if override is None or not override.engine:
        return None
    return override.engine, {"type": override.engine, **override.knobs}


def with_role_knobs(
    config: RecipeConfig, kind: RoleKind, backend: Mapping[str, Any]
) -> Mapping[str, Any]:
    """`backend` with the knobs written on this role's engine only (same engine as the
    variant's) put into the role's settings as the adapter takes them (`role_knobs`); a
    setting the role writes itself wins. Any other such knob is refused by
    `disagg.recipe.honoured`."""
    override = role_override(config, kind)
    if override is None or override.engine or not override.knobs:
        return backend
    adapter = registry.adapter(config.backend.type)
    mode = kind.value
    section = dict(backend.get(adapter.config_section) or {})
    own = {adapter.role_knobs[k]: v for k, v in override.knobs.items() if k in adapter.role_knobs}
    section[mode] = {**own, **dict(section.get(mode) or {})}
    return {**backend, adapter.config_section: section}


def shown(config: RecipeConfig) -> dict[str, str]:
    """role -> its own engine, for the plan (`Plan.role_engines`)."""
    found = {key: own_engine(config, kind) for kind, key in ROLE_KEYS.items()}
    return {key: own[0] for key, own in found.items() if own is not None}
