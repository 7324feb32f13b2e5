"""A Slurm heterogeneous job: prefill and decode as two components, as srtctl submits them.

srtctl (`ResourceConfig.het_components`, `SrtConfig._validate_het_jobs`) makes group 0 of
the prefill nodes (after a dedicated infra node) and group 1 of the decode nodes, for a
disaggregated SGLang job only; it refuses anything else at load time, and so does this.
"""

from __future__ import annotations

from collections.abc import Callable

from disagg.cluster import ClusterProfile
from disagg.errors import DisaggError
from disagg.plan.job_nodes import JobNodes
from disagg.recipe.schema import RecipeConfig

Fail = Callable[..., DisaggError]  # (message, path, hint=None) -> the positioned error
Named = Callable[..., str]  # (*path) -> the field as the file spells it


def wanted(config: RecipeConfig, profile: ClusterProfile | None) -> bool:
    """The recipe's `resources.het_jobs`, else the cluster's `use_het_jobs` default."""
    if config.resources.het_jobs is not None:
        return config.resources.het_jobs
    return bool(profile and profile.use_het_jobs)


def het_nodes(
    config: RecipeConfig,
    profile: ClusterProfile | None,
    job: JobNodes,
    *,
    fail: Fail,
    named: Named,
) -> list[int]:
    """Node counts of the components (group 0, group 1), or [] for one homogeneous job."""
    if not wanted(config, profile):
        return []
    res = config.resources
    field = named("resources", "het_jobs")
    source = field if res.het_jobs is not None else "the cluster's use_het_jobs"
    path = ("resources", "het_jobs") if res.het_jobs is not None else ("resources",)
    if not res.disaggregated:
        raise fail(
            f"{source} asks for a heterogeneous Slurm job, which needs a disaggregated layout",
            path,
            f"set {named('resources', 'prefill_nodes')} and "
            f"{named('resources', 'decode_nodes')}, or {field}: false",
        )
    if (res.prefill_nodes or 0) < 1 or (res.decode_nodes or 0) < 1:
        raise fail(
            f"{source} asks for a heterogeneous Slurm job, which needs "
            f"{named('resources', 'prefill_nodes')} >= 1 and "
            f"{named('resources', 'decode_nodes')} >= 1 (one component per side)",
            path,
            f"give each side its own nodes, or set {field}: false",
        )
    if config.backend.type != "sglang":
        raise fail(
            f"{source} asks for a heterogeneous Slurm job, which srt-slurm runs only for "
            f"the sglang backend (this recipe's is {config.backend.type})",
            path,
            f"set {field}: false",
        )
    if "frontend" in job.dedicated or "client" in job.dedicated:
        raise fail(
            f"{source} asks for a heterogeneous Slurm job, in which no node is reserved "
            "for the frontend or the benchmark client",
            path,
            f"drop the dedicated frontend/client node, or set {field}: false",
        )
    prefill = job.offset + (res.prefill_nodes or 0)
    decode = res.decode_nodes or 0
    if prefill + decode != job.total:  # the layout places decode after the prefill nodes
        raise fail(
            f"the heterogeneous job's components ({prefill} + {decode} nodes) do not add "
            f"up to the job's {job.total} nodes",
            path,
        )
    return [prefill, decode]
