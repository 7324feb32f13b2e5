"""Cluster profiles: what a recipe cannot know about the cluster it runs on.

A recipe says "model `dsr1`, container `dynamo-sglang`"; the profile says what those
aliases mean on one cluster, which partition to use, how to ask Slurm for GPUs, where
the shared caches and results live. One recipe, many clusters. An srt-slurm cluster
config is read as a profile too (`disagg.cluster_srtslurm`).
"""

# No `from __future__ import annotations` here: pydantic would compile and evaluate
# each field's annotation string when the class is made, a cost every command pays.

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from disagg.errors import DisaggError, SourceLocation
from disagg.model_defaults import empty_dict, empty_list
from disagg.plan.model import GpuVendor
from disagg.recipe.errors import validation_error
from disagg.recipe.job_sections import HostSetupSection
from disagg.recipe.load import load_yaml
from disagg.recipe.source_map import KeyPath

_Model = TypeVar("_Model", bound=BaseModel)
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
        description="model alias -> `hf:org/name` (a hub repo) or a directory, as "
        "srt-slurm's `model_paths`",
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

    def validated(model: type[_Model], data: dict[str, Any], context: str) -> _Model:
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            raise validation_error(
                exc, data=data, root=model, locate=locate, context=context
            ) from None

    data = loaded.data
    if cluster_srtslurm.is_srtslurm_config(data):
        srt = validated(cluster_srtslurm.SrtSlurmCluster, data, "srt-slurm cluster config")
        data = cluster_srtslurm.profile_fields(srt)
    return validated(ClusterProfile, data, "cluster profile")


@dataclass(frozen=True)
class ModelRef:
    """A recipe's `model.path` as srtctl reads it: a hub repo (`hf:`) or a directory."""

    kind: Literal["repo", "path"]
    value: str  # repo id, or the directory (absolute once resolved for a job)
    written: str  # what the recipe said
    named: str = ""  # the cluster alias's target, else `written`: the served name's source

    @property
    def repo_id(self) -> str | None:
        return self.value if self.kind == "repo" else None


def is_repo_id(text: str) -> bool:
    """`org/name` (or `hf:org/name`): how engine settings name a draft model on the hub,
    as opposed to a path. `model.path` is read by `resolve_model` instead."""
    if text.startswith(HF_PREFIX):
        return True
    return bool(_REPO_ID.fullmatch(text)) and not text.startswith((".", "/", "~", "$"))


def resolve_model(
    text: str, profile: ClusterProfile | None, *, cwd: Path | None = None
) -> ModelRef:
    """A recipe's `model.path` as srtctl resolves it: an alias of the profile's `models`
    replaced by its target (srt-slurm's `resolve_config_with_defaults`); then `hf:org/name`
    is a hub repo the engines fetch, anything else (`org/name` included) a directory
    (`RuntimeContext.from_config`), with `cwd` as the job reads it (`local_model_dir`)."""
    target = profile.models.get(text) if profile is not None else None
    named = text if target is None else target
    if named.startswith(HF_PREFIX):
        return ModelRef("repo", named[len(HF_PREFIX) :], text, named)
    return ModelRef("path", named if cwd is None else local_model_dir(named, cwd), text, named)


def local_model_dir(text: str, cwd: Path) -> str:
    """A directory `model.path` as the job reads it: variables and `~` expanded, absolute
    against `cwd`, symlinks resolved (srtctl's `Path(os.path.expandvars(path)).resolve()`)."""
    path = Path(os.path.expanduser(os.path.expandvars(text)))
    return str((cwd / path).resolve())


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
