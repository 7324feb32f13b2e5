"""Host paths as a containerised role sees them: through the job's container mounts.

A pyxis container sees the host only through `--container-mounts HOST:INSIDE`, so a
model staged at `/it-share/hf-hub-cache/hub/models--x/...` is
`/hf_hub_cache/hub/models--x/...` inside. Plan time refuses a plan whose containerised
roles would need a host path outside every mount; run time translates the paths the
roles are given (`${model.path}`, `${model.draft}`) for the roles that run in one.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping

from disagg.errors import DisaggError, SourceLocation
from disagg.plan.model import Plan, RolePlan


def mount_pairs(mounts: Mapping[str, str]) -> list[tuple[str, str]]:
    """(host, inside) per mount, most specific host path first; pyxis options (`:ro`) dropped."""
    pairs = []
    for host, target in mounts.items():
        inside = target.split(":", 1)[0] or host
        pairs.append((posixpath.normpath(host), posixpath.normpath(inside)))
    return sorted(pairs, key=lambda pair: len(pair[0]), reverse=True)


def to_container(path: str, mounts: Mapping[str, str]) -> str | None:
    """Where host `path` appears inside the container, or None when no mount holds it."""
    if not posixpath.isabs(path):
        return None
    norm = posixpath.normpath(path)
    for host, inside in mount_pairs(mounts):
        if norm == host:
            return inside
        if norm.startswith(host.rstrip("/") + "/"):
            return posixpath.join(inside, norm[len(host) :].lstrip("/"))
    return None


def in_container(plan: Plan, role: RolePlan) -> bool:
    """Whether this role's processes start inside a container image (pyxis on Slurm)."""
    return bool(role.container_image) and plan.slurm.pyxis


def translate(plan: Plan, role: RolePlan, path: str) -> str:
    """`path` as `role` sees it: unchanged on the host, through the mounts in a container."""
    if not posixpath.isabs(path) or not in_container(plan, role):
        return path  # a relative name (a simulated model's) is not a host path
    inside = to_container(path, plan.slurm.container_mounts)
    if inside is None:
        raise DisaggError(
            f"role {role.name} runs in a container, but {path} is outside every container mount",
            hint="mount the directory that holds it (cluster profile `mounts`)",
        )
    return inside


def check_container_paths(plan: Plan, *, model_location: SourceLocation | None = None) -> None:
    """Refuse, at plan time, host paths a containerised role needs that no mount holds."""
    if not any(in_container(plan, role) for role in plan.roles):
        return
    mounts = plan.slurm.container_mounts
    staging = plan.staging
    problems: list[str] = []
    location: SourceLocation | None = None
    if staging.local_path:
        if to_container(staging.local_path, mounts) is None:
            problems.append(f"the model directory {staging.local_path}")
            location = model_location
    elif staging.models and not staging.skip:
        if staging.hf_cache is None:
            problems.append("the model cache (the cluster profile sets no `hf_cache`)")
        elif to_container(staging.hf_cache, mounts) is None:
            problems.append(f"the model cache {staging.hf_cache} (cluster profile `hf_cache`)")
        for root in staging.legacy_roots:
            # a linked legacy snapshot is an absolute host path: it resolves only at the same place
            if to_container(root, mounts) != posixpath.normpath(root):
                problems.append(f"the legacy cache root {root}, which must be mounted at {root}")
    if not problems:
        return
    shown = ", ".join(f"{host}:{inside}" for host, inside in mount_pairs(mounts)) or "none"
    raise DisaggError(
        f"workers run in container {plan.slurm.container_image} but {'; '.join(problems)} "
        f"lies outside every container mount (mounts: {shown})",
        location=location,
        hint="add a mount that holds it to the cluster profile's `mounts` (or the recipe's "
        "`container_mounts`), or stage the model below a mounted directory",
    )
