"""The srun command line of one step (what the Slurm golden tests record).

The task's variables are set on the srun process, never joined into `--export`; Slurm
sets GPU visibility from the step's GRES, so the plan's pinning is re-applied with `env`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from disagg.errors import DisaggError
from disagg.plan.container_paths import RUN_DIR_INSIDE
from disagg.plan.model import GpuVendor, MpiPlan, SlurmPlan

STEP_PREFIX = "disagg."
# Variables Slurm rewrites for a step from its GPU allocation.
GPU_VARS = frozenset(
    var for vendor in GpuVendor for var in vendor.visible_devices_vars
) | frozenset({"GPU_DEVICE_ORDINAL"})


def step_name(role: str, node_rank: int) -> str:
    return f"{STEP_PREFIX}{role}.{node_rank}"


def srun_argv(
    *,
    job_id: str,
    node: str,
    name: str,
    argv: Sequence[str],
    env: Mapping[str, str],
    slurm: SlurmPlan,
    container_image: str | None = None,
    container_env: Sequence[str] = (),
    mpi: MpiPlan | None = None,
    mpi_nodes: Sequence[str] = (),
    run_dir: Path | None = None,
    het_group: int | None = None,
    role_options: Mapping[str, str] | None = None,
) -> list[str]:
    """The full srun command line of one task. `role_options` go over the job's and an MPI
    step's, as srtctl merges them; `het_group` lets a step reach another component's node."""
    if mpi is not None and mpi_nodes:
        count = len(mpi_nodes)
        placement = [
            f"--nodes={count}",
            f"--ntasks={count * mpi.tasks_per_node}",
            f"--ntasks-per-node={mpi.tasks_per_node}",
            f"--nodelist={','.join(mpi_nodes)}",
            f"--mpi={mpi.mpi}",
        ]
    else:
        placement = ["--nodes=1", "--ntasks=1", f"--nodelist={node}"]
    if het_group is not None:
        placement.append(f"--het-group={het_group}")
    cmd = [
        "srun",
        "--overlap",
        f"--jobid={job_id}",
        *placement,
        f"--job-name={name}",
        "--kill-on-bad-exit=1",
    ]
    options = dict(slurm.srun_options)
    if mpi is not None and mpi_nodes:
        options.update(mpi.srun_options)
    options.update(role_options or {})
    for key, value in sorted(options.items()):
        cmd.append(f"--{key}={value}" if value != "" else f"--{key}")
    if container_image and slurm.pyxis:
        cmd.append(f"--container-image={container_image}")
        mounts = [_mount_text(host, target) for host, target in slurm.container_mounts.items()]
        if run_dir is not None:
            mounts.append(_mount_text(str(run_dir), RUN_DIR_INSIDE))
        if mounts:
            cmd.append(f"--container-mounts={','.join(mounts)}")
        if container_env:
            # Names only (no values): the host's values win over the image's defaults.
            cmd.append(f"--container-env={','.join(sorted(container_env))}")
    pinned = [f"{key}={env[key]}" for key in sorted(env) if key in GPU_VARS]
    if pinned:
        cmd += ["env", *pinned]
    cmd += list(argv)
    return cmd


def _mount_text(host: str, target: str) -> str:
    """One `--container-mounts` entry; `target` may carry pyxis options (`/data:ro`)."""
    if "," in host or "," in target or ":" in host:
        raise DisaggError(
            f"container mount {host}:{target} contains ',' (or ':' in the host path)",
            hint="pyxis splits --container-mounts on both; use a path without them",
        )
    return f"{host}:{target}"
