"""Where a `services:` entry runs: srt-slurm's placement names as the job's node ranks."""

from __future__ import annotations

from disagg.plan.job_nodes import JobNodes
from disagg.plan.model import RoleKind, RolePlan

_ROLE_NODES = {"prefill": RoleKind.PREFILL, "decode": RoleKind.DECODE, "agg": RoleKind.AGGREGATED}
PLACEMENTS = ("head", "infra", "workers", "compute", "all", *_ROLE_NODES)


def node_ranks(node: str, workers: list[RolePlan], job: JobNodes) -> list[int] | None:
    """The node ranks `node` names, in order; None for a name srt-slurm does not define."""
    if node == "head":
        return [job.head]
    if node == "infra":
        return [job.infra]
    if node in ("workers", "compute"):
        return sorted({rank for role in workers for rank in role.node_ranks})
    if node == "all":
        return list(range(job.total))
    kind = _ROLE_NODES.get(node)
    if kind is None:
        return None
    return sorted({rank for role in workers if role.kind is kind for rank in role.node_ranks})
