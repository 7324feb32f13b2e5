"""The job around the roles: the Slurm allocation and the container images to import, read
from the recipe and the cluster profile alone (the recipe's values over the profile's),
and `host_setup`: srt-slurm runs its commands on the bare host of each node it targets
before any worker starts, and `teardown` after they stop.
"""

from __future__ import annotations

import shlex
from typing import Any

from disagg.cluster import ClusterProfile, container_source
from disagg.plan.model import ContainerToStage, HostSetupPlan, RolePlan, SlurmPlan
from disagg.recipe.job_sections import HostSetupSection
from disagg.recipe.schema import RecipeConfig


def slurm_plan(
    cfg: RecipeConfig,
    profile: ClusterProfile | None,
    nodes: int,
    gpn: int,
    *,
    image: str | None,
    mounts: dict[str, str],
    pyxis: bool,
    het_nodes: list[int] | None = None,
) -> SlurmPlan:
    """The allocation for `nodes` nodes of `gpn` GPUs; `image` runs the roles (or None);
    `het_nodes`: the node count of each heterogeneous-job component (srtctl's het_jobs)."""
    directives = dict(profile.sbatch_directives) if profile else {}
    directives.update({k: env_text(v) for k, v in cfg.sbatch_directives.items()})
    srun = dict(profile.srun_options) if profile else {}
    srun.update({k: env_text(v) for k, v in cfg.srun_options.items()})
    return SlurmPlan(
        job_name=cfg.name,
        nodes=nodes,
        gpus_per_node=gpn,
        gpu_directive=profile.gpu_directive if profile else "gres",
        partition=cfg.slurm.partition or (profile.partition if profile else None),
        account=cfg.slurm.account or (profile.account if profile else None),
        time_limit=cfg.slurm.time_limit or (profile.time_limit if profile else None),
        exclusive=profile.exclusive if profile else True,
        segment=nodes if profile and profile.segment else None,
        directives=directives,
        srun_options=srun,
        container_image=image,
        container_mounts=mounts,
        pyxis=pyxis,
        secret_env=list(profile.secret_env) if profile else ["HF_TOKEN"],
        het_nodes=list(het_nodes or []),
    )


def containers_to_stage(
    written: list[str], profile: ClusterProfile | None, pyxis: bool
) -> list[ContainerToStage]:
    """The squashfs images to import, one per file, for the written images (the job's and
    each role's own) whose alias says how, when pyxis will use them."""
    if profile is None or not pyxis:
        return []
    staged: dict[str, ContainerToStage] = {}
    for name in written:
        source = container_source(name, profile)
        if source is not None and source.squashfs not in staged:
            staged[source.squashfs] = ContainerToStage(
                squashfs=source.squashfs,
                image=source.image,
                import_command=shlex.split(profile.container_import),
            )
    return list(staged.values())


def env_text(value: Any) -> str:
    """A YAML scalar as an environment or directive value (`true`, not `True`)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def host_setup_plan(
    section: HostSetupSection | None, workers: list[RolePlan], nodes: int
) -> HostSetupPlan | None:
    """The recipe's host setup on the node ranks it names; None when it runs nothing."""
    if section is None or not (section.commands or section.teardown):
        return None
    if section.nodes == "workers":
        ranks = sorted({rank for role in workers for rank in role.node_ranks})
    else:
        ranks = list(range(nodes))
    return HostSetupPlan(
        commands=section.commands,
        teardown=section.teardown,
        node_ranks=ranks,
        ignore_failure=section.ignore_failure,
        timeout_s=float(section.timeout_seconds),
    )
