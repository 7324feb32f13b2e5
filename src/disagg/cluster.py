"""Cluster profiles: what a recipe cannot know about the cluster it runs on.

An srt-slurm cluster config (`srtslurm.yaml`) is read as a profile too
(`disagg.cluster_srtslurm`).

A recipe says "model `dsr1`, container `dynamo-sglang`, 8 GPUs per node"; the profile
says what those aliases mean on one cluster (a directory, a repo id, a squashfs
file), which partition and account to use, how to ask Slurm for GPUs, where the
shared Hugging Face cache and results live. One recipe, many clusters.
"""

# No `from __future__ import annotations` here: pydantic would compile and evaluate
# each field's annotation string when the class is made, a cost every command pays.

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from disagg.errors import DisaggError, SourceLocation
from disagg.model_defaults import empty_dict, empty_list
from disagg.plan.model import GpuVendor
from disagg.recipe.errors import validation_error
from disagg.recipe.job_sections import HostSetupSection
from disagg.recipe.load import load_yaml
from disagg.recipe.source_map import KeyPath

_REPO_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")
HF_PREFIX = "hf:"


class ContainerSource(BaseModel):
    """A container kept as a squashfs file, imported from `image` when the file is missing."""

    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)

    image: str = Field(description="what to import, e.g. docker://rocm/sgl-dev:TAG")
    squashfs: str = Field(description="the file on the shared filesystem that roles start from")


DEFAULT_CONTAINER_IMPORT = "enroot import --output {output} {image}"


class ClusterProfile(BaseModel):
    """One cluster. Every field is optional so a profile states only what differs."""

    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)

    name: str | None = None
    executor: Literal["slurm", "local"] = Field(
        default="slurm", description="`local`: run every node rank as processes on this host"
    )
    partition: str | None = None
    account: str | None = None
    time_limit: str | None = Field(default=None, description="default when a recipe sets none")
    gpus_per_node: int | None = Field(default=None, ge=1)
    gpu_directive: Literal["gres", "gpus-per-node", "none"] = Field(
        default="gres", description="how job.sbatch asks for GPUs: --gres=gpu:N, --gpus-per-node"
    )
    exclusive: bool = True
    segment: bool = Field(default=False, description="job.sbatch asks for --segment=<nodes>")
    use_het_jobs: bool = Field(
        default=False,
        description="disaggregated jobs are Slurm heterogeneous jobs (prefill, decode) "
        "unless a recipe sets resources.het_jobs (srt-slurm's use_het_jobs)",
    )
    gpu_vendor: GpuVendor = Field(default=GpuVendor.NVIDIA, strict=False)
    network_interface: str | None = Field(
        default=None, description="sets NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME for workers"
    )
    rdma_devices: list[str] = Field(default_factory=empty_list, description="sets NCCL_IB_HCA")
    mounts: dict[str, str] = Field(
        default_factory=empty_dict, description="host path -> container path"
    )
    containers: dict[str, str | ContainerSource] = Field(
        default_factory=empty_dict,
        description="container alias -> image reference or squashfs path, or "
        "{image, squashfs} to import the image into that file when it is missing",
    )
    models: dict[str, str] = Field(
        default_factory=empty_dict,
        description="model alias -> directory, `hf:org/name` or `org/name`",
    )
    hf_cache: str | None = Field(default=None, description="shared HF_HOME-style cache root")
    legacy_cache_roots: list[str] = Field(
        default_factory=empty_list, description="older model caches reused by symlink when complete"
    )
    results_root: str | None = None
    pyxis: bool = Field(default=False, description="run roles in containers via srun --container-*")
    container_import: str = Field(
        default=DEFAULT_CONTAINER_IMPORT,
        description="command that turns {image} into the squashfs file {output}",
    )
    allow_download: bool = True
    sbatch_directives: dict[str, str] = Field(default_factory=empty_dict)
    srun_options: dict[str, str] = Field(default_factory=empty_dict)
    env: dict[str, str] = Field(
        default_factory=empty_dict, description="added to every worker role"
    )
    secret_env: list[str] = Field(
        default_factory=lambda: ["HF_TOKEN"],
        description="variables passed through by name, never written into plan files",
    )
    host_setup: HostSetupSection | None = Field(
        default=None,
        description="host setup every recipe without a `host_setup` of its own runs "
        "(srt-slurm's default_host_setup)",
    )
    ignored_settings: dict[str, str] = Field(
        default_factory=empty_dict,
        description="settings of an imported srt-slurm config that disagg does not carry out",
    )

    def worker_env(self) -> dict[str, str]:
        """Environment every worker gets on this cluster (network selection first)."""
        env: dict[str, str] = {}
        if self.network_interface:
            env["NCCL_SOCKET_IFNAME"] = self.network_interface
            env["GLOO_SOCKET_IFNAME"] = self.network_interface
        if self.rdma_devices:
            env["NCCL_IB_HCA"] = ",".join(self.rdma_devices)
        env.update(self.env)
        return env


def load_profile(path: Path) -> ClusterProfile:
    """Read and validate a cluster profile; errors are positioned like recipe errors."""
    loaded = load_yaml(path, what="cluster profile")
    if not isinstance(loaded.data, dict):
        raise DisaggError(
            "a cluster profile is a map of fields",
            location=loaded.source.locate(()),
            hint="start with e.g. `partition: debug`",
        )
    from disagg import cluster_srtslurm

    def locate(path: KeyPath, key: bool) -> SourceLocation:
        return loaded.source.locate(path, key=key)

    data = loaded.data
    if cluster_srtslurm.is_srtslurm_config(data):
        try:
            srt = cluster_srtslurm.SrtSlurmCluster.model_validate(data)
        except ValidationError as exc:
            raise validation_error(
                exc,
                data=data,
                root=cluster_srtslurm.SrtSlurmCluster,
                locate=locate,
                context="srt-slurm cluster config",
            ) from None
        data = cluster_srtslurm.profile_fields(srt)
    try:
        return ClusterProfile.model_validate(data)
    except ValidationError as exc:
        raise validation_error(
            exc, data=data, root=ClusterProfile, locate=locate, context="cluster profile"
        ) from None


@dataclass(frozen=True)
class ModelRef:
    """A model after alias resolution: a hub repo, a directory, or an alias left as written."""

    kind: Literal["repo", "path", "alias"]
    value: str  # repo id, path, or alias text
    written: str  # what the recipe said

    @property
    def repo_id(self) -> str | None:
        return self.value if self.kind == "repo" else None


def is_repo_id(text: str) -> bool:
    """`org/name` (or `hf:org/name`), as opposed to a path or an alias."""
    if text.startswith(HF_PREFIX):
        return True
    return bool(_REPO_ID.fullmatch(text)) and not text.startswith((".", "/", "~", "$"))


def classify_model(text: str) -> ModelRef:
    """What a model string names, without any profile."""
    if text.startswith(HF_PREFIX):
        return ModelRef("repo", text[len(HF_PREFIX) :], text)
    if is_repo_id(text):
        return ModelRef("repo", text, text)
    if text.startswith(("/", ".", "~", "$")) or "/" in text:
        return ModelRef("path", text, text)
    return ModelRef("alias", text, text)


def resolve_model(text: str, profile: ClusterProfile | None) -> ModelRef:
    """Resolve a recipe's `model.path` through the profile's aliases.

    Without a profile an alias is kept as written (plans still show it); with a
    profile, an alias it does not define is an error, since nothing could run it.
    """
    ref = classify_model(text)
    if ref.kind != "alias":
        return ref
    if profile is None:
        return ref
    target = profile.models.get(text)
    if target is None:
        known = ", ".join(sorted(profile.models)) or "none"
        raise DisaggError(
            f"model alias {text!r} is not defined by the cluster profile",
            hint=f"add it under `models:` in the profile (defined: {known}), "
            "or write a path or `hf:org/name` in the recipe",
        )
    resolved = classify_model(target)
    if resolved.kind == "alias":  # a bare word in the profile is a relative directory
        resolved = ModelRef("path", target, text)
    return ModelRef(resolved.kind, resolved.value, text)


def resolve_container(text: str, profile: ClusterProfile | None) -> str:
    """A container alias -> image or squashfs path; unknown names are used as written."""
    if profile is None:
        return text
    entry = profile.containers.get(text, text)
    return entry.squashfs if isinstance(entry, ContainerSource) else entry


def container_source(text: str, profile: ClusterProfile | None) -> ContainerSource | None:
    """The import recipe for a container alias, when the profile gives one."""
    entry = profile.containers.get(text) if profile else None
    return entry if isinstance(entry, ContainerSource) else None
