"""What a point's result was measured under, so that a resume never reuses another plan's.

A result is reusable only when everything that changes its numbers is the same: the
load, the roles as rendered, GPUs, images, engine, hardware and models; names, recipe
paths and time limits change no number and are left out. The inputs are kept in the
result (`measured_under`) beside their hash, so a mismatch is said field by field.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from disagg.bench.identity import config_text, digest
from disagg.plan.model import Plan, PointPlan, RoleKind

FINGERPRINT = "measurement_fingerprint"
MEASURED_UNDER = "measured_under"
FINGERPRINT_KEYS = (FINGERPRINT, MEASURED_UNDER)
# Bench fields that do not change one point's numbers: the list of points (adding a
# point to a sweep keeps the others), and what plan output shows about the fields.
_BENCH_SKIP = frozenset({"points", "concurrencies", "ignored"})


def measured_under(plan: Plan, point: PointPlan) -> dict[str, Any]:
    """The plan fields that determine this point's numbers, as plain JSON values."""
    bench = plan.bench.model_dump(mode="json", exclude=set(_BENCH_SKIP))
    for name in ("slow_down", "profiling"):  # unset: results measured before still match
        if bench.get(name) is None:
            bench.pop(name, None)
    if bench.get("command") is not None:  # its environment may hold secrets: only a hash
        bench["command"] = digest(bench["command"])
    roles = {
        role.name: digest(
            role.model_dump(
                mode="json",
                include={
                    "kind",
                    "argv",
                    "node_argv",
                    "env",
                    "gpus_per_node",
                    "gpu_ids",
                    "node_ranks",
                    "container_image",
                },
            )
        )
        for role in plan.roles
        if role.kind is not RoleKind.BENCH or role.argv
    }
    return {
        "point": point.model_dump(mode="json"),
        "bench": bench,
        "engine": plan.engine,
        "simulated": plan.simulated,
        "gpus": {"prefill": plan.prefill_gpus, "decode": plan.decode_gpus},
        # the hardware: another GPU type or vendor measures something else
        "gpu_type": config_text(plan.config, "resources", "gpu_type"),
        "gpu_vendor": plan.gpu_vendor.value,
        "models": [m.model_dump(mode="json") for m in plan.staging.models],
        "local_model": plan.staging.local_path,
        "roles": roles,
    }


def fingerprint_fields(plan: Plan, point: PointPlan) -> dict[str, Any]:
    """The two result fields: the inputs and their hash."""
    inputs = measured_under(plan, point)
    return {FINGERPRINT: digest(inputs), MEASURED_UNDER: inputs}


def mismatch(result: Mapping[str, Any], expected: Mapping[str, Any]) -> list[str]:
    """Why a result was not measured under `expected` (empty when it was)."""
    if result.get(FINGERPRINT) == expected[FINGERPRINT]:
        return []
    old = result.get(MEASURED_UNDER)
    if not isinstance(old, Mapping):
        return ["it carries no measurement fingerprint (written by an older disagg)"]
    found = _differences(old, expected[MEASURED_UNDER], "")
    return found or ["its measurement fingerprint differs"]


def _differences(old: Any, new: Any, path: str) -> list[str]:
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        out: list[str] = []
        for key in sorted(set(old) | set(new), key=str):
            where = f"{path}.{key}" if path else str(key)
            if key not in old or key not in new or old[key] != new[key]:
                if path == "roles":
                    out.append(f"role {key}'s command or settings")
                else:
                    out += _differences(old.get(key), new.get(key), where)
        return out
    if old == new:
        return []
    return [f"{path}: {_short(old)} -> {_short(new)}"]


def _short(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."
