"""A worker role's own image and srun options (schema 2's `roles.<role>.container` and
`roles.<role>.srun_options`) over the job's; roles without their own keep the job's.
"""

from __future__ import annotations

from typing import Literal

from disagg.engines.worker import WorkerRole
from disagg.plan.job_plan import env_text
from disagg.plan.model import RoleKind
from disagg.recipe.schema import RecipeConfig, RoleOverride

# The key of a worker kind in `role_overrides` (schema 2's role names).
RoleKey = Literal["prefill", "decode", "agg"]
ROLE_KEYS: dict[RoleKind, RoleKey] = {
    RoleKind.PREFILL: "prefill",
    RoleKind.DECODE: "decode",
    RoleKind.AGGREGATED: "agg",
}
# The engine adapters' name for a worker kind.
ADAPTER_ROLES: dict[RoleKind, WorkerRole] = {
    RoleKind.PREFILL: "prefill",
    RoleKind.DECODE: "decode",
    RoleKind.AGGREGATED: "aggregated",
}


def role_override(config: RecipeConfig, kind: RoleKind) -> RoleOverride | None:
    key = ROLE_KEYS.get(kind)
    return config.role_overrides.get(key) if key else None


def role_image(config: RecipeConfig, kind: RoleKind) -> str | None:
    """The image this worker kind names for itself, as written (an alias or a reference)."""
    override = role_override(config, kind)
    return override.container if override and override.container else None


def role_srun_options(config: RecipeConfig, kind: RoleKind) -> dict[str, str]:
    """This worker kind's own srun options (`key: value`; "" for a bare `--key`)."""
    override = role_override(config, kind)
    if override is None:
        return {}
    return {key: env_text(value) for key, value in override.srun_options.items()}
