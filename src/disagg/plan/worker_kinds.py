"""A worker role kind as the engine adapters name it (`prefill`, `decode`, `aggregated`)."""

from __future__ import annotations

from disagg.engines.worker import WorkerRole
from disagg.plan.model import RoleKind


def adapter_role(kind: RoleKind) -> WorkerRole:
    """The adapters' name for a worker kind; any other kind is a programming error."""
    if kind is RoleKind.PREFILL:
        return "prefill"
    if kind is RoleKind.DECODE:
        return "decode"
    if kind is RoleKind.AGGREGATED:
        return "aggregated"
    raise ValueError(f"{kind.value} is not a worker role")
