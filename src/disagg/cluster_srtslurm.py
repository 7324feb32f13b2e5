"""srt-slurm cluster configs (`srtslurm.yaml`) read as disagg cluster profiles.

Teams already keep one per cluster, so disagg accepts it where a profile is expected
and finds it as srt-slurm does when no `--cluster` is given. Keys a disagg profile has
no counterpart for are listed (`ignored_settings`) in every plan's ignored list.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

CONFIG_NAME = "srtslurm.yaml"
ENV_VAR = "SRTSLURM_CONFIG"

# Keys only srt-slurm cluster configs have: one of them marks a file as one.
MARKERS = frozenset(
    {
        "cluster",
        "default_account",
        "default_partition",
        "default_time_limit",
        "default_mounts",
        "model_paths",
        "use_gpus_per_node_directive",
        "use_segment_sbatch_directive",
        "use_exclusive_sbatch_directive",
        "default_sbatch_directives",
        "accelerator_vendor",
        "gpu_sbatch_directive",
        "visible_devices_env",
    }
)


class SrtSlurmCluster(BaseModel):
    """Every key of srt-slurm's `ClusterConfig` (2.x), plus those InferenceX's AMD configs use."""

    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)

    cluster: str | None = None
    default_account: str | None = None
    default_partition: str | None = None
    default_time_limit: str | None = None
    gpus_per_node: int | None = Field(default=None, ge=1)
    default_gpu_type: str | None = None
    network_interface: str | None = None
    visible_devices_env: str = "CUDA_VISIBLE_DEVICES"
    accelerator_vendor: Literal["nvidia", "amd"] | None = None
    default_gpu_exporter: dict[str, Any] | None = None
    use_gpus_per_node_directive: bool = True
    gpu_sbatch_directive: Literal["gres", "gpus-per-node", "none"] | None = None
    use_segment_sbatch_directive: bool = True
    use_exclusive_sbatch_directive: bool = False
    use_het_jobs: bool = False
    default_sbatch_directives: dict[str, str] | None = None
    default_health_check: dict[str, int] | None = None
    srtctl_root: str | None = None
    output_dir: str | None = None
    model_paths: dict[str, str] | None = None
    containers: dict[str, str] | None = None
    cloud: dict[str, str] | None = None
    default_mounts: dict[str, str] | None = None
    default_bash_preamble: str | None = None
    default_host_setup: dict[str, Any] | None = None
    reporting: dict[str, Any] | None = None
    telemetry: dict[str, Any] | None = None
    nginx_raise_ulimit: bool | None = None
    git_http_version: str | None = None
    preflight: bool = True
    runtime_config_transport: str | None = None
    record_launch_plan: bool | None = None


# Keys that change what runs when set, and why a disagg profile does not carry them.
_NOT_CARRIED: dict[str, str] = {
    "default_bash_preamble": "no shell preamble runs before roles",
    "default_health_check": "health deadlines come from the recipe and engine",
    "default_gpu_type": "the recipe's resources.gpu_type is used as written",
    "default_gpu_exporter": "no GPU telemetry exporter runs",
    "telemetry": "no power telemetry is collected",
    "reporting": "no status reporting or log upload",
    "cloud": "no cloud storage sync",
    "srtctl_root": "srtctl's own files are not used, but for its configs directory (setup scripts)",
    "nginx_raise_ulimit": "only the recipe's frontend.nginx_raise_ulimit raises nginx's limit",
    "runtime_config_transport": "plan.json travels on the shared filesystem",
}


def is_srtslurm_config(data: Mapping[str, Any]) -> bool:
    """Whether a loaded YAML map is an srt-slurm cluster config, not a disagg profile."""
    return any(key in data for key in MARKERS)


def find_config(start: Path | None = None) -> Path | None:
    """`srtslurm.yaml` where srt-slurm looks for it, or None."""
    env = os.environ.get(ENV_VAR)
    if env:
        path = Path(env).expanduser()
        return path if path.is_file() else None
    here = (start or Path.cwd()).resolve()
    for directory in (here, here.parent, here.parent.parent):
        candidate = directory / CONFIG_NAME
        if candidate.is_file():
            return candidate
    return None


# Where srt-slurm recipes expect the Hugging Face cache inside their containers
# (`HF_HOME: /hf_hub_cache`, `HF_HUB_CACHE: /hf_hub_cache/hub`).
HUB_CACHE_INSIDE = "/hf_hub_cache"


def hub_cache_mount(mounts: Mapping[str, str]) -> str | None:
    """The host directory mounted at `/hf_hub_cache`: the shared model cache an srt-slurm
    cluster config names this way, having no key for it."""
    for host, target in mounts.items():
        if str(target).split(":", 1)[0].rstrip("/") == HUB_CACHE_INSIDE:
            return str(host)
    return None


def profile_fields(config: SrtSlurmCluster) -> dict[str, Any]:
    """The disagg profile fields an srt-slurm cluster config means (plain data)."""
    if config.gpu_sbatch_directive is not None:
        directive = config.gpu_sbatch_directive
    else:
        directive = "gpus-per-node" if config.use_gpus_per_node_directive else "none"
    amd = config.accelerator_vendor == "amd" or config.visible_devices_env.startswith(
        ("ROCR_", "HIP_")
    )
    fields: dict[str, Any] = {
        "name": config.cluster,
        "partition": config.default_partition,
        "account": config.default_account,
        "time_limit": config.default_time_limit,
        "gpus_per_node": config.gpus_per_node,
        "gpu_directive": directive,
        "exclusive": config.use_exclusive_sbatch_directive,
        "segment": config.use_segment_sbatch_directive,
        "use_het_jobs": config.use_het_jobs,
        "gpu_vendor": "amd" if amd else "nvidia",
        "network_interface": config.network_interface,
        # srt-slurm starts every worker in its container image through pyxis: its
        # `containers` and `default_mounts` mean nothing otherwise.
        "pyxis": True,
        "mounts": {**configs_mount(config), **(config.default_mounts or {})},
        "containers": dict(config.containers or {}),
        "models": dict(config.model_paths or {}),
        "hf_cache": hub_cache_mount(config.default_mounts or {}),
        "results_root": config.output_dir,
        "sbatch_directives": dict(config.default_sbatch_directives or {}),
        "host_setup": config.default_host_setup,
        "ignored_settings": ignored_settings(config),
    }
    return {key: value for key, value in fields.items() if value is not None}


def configs_mount(config: SrtSlurmCluster) -> dict[str, str]:
    """`<srtctl_root>/configs` at `/configs`, where srtctl mounts its configs directory in
    every container (`RuntimeContext.from_config`) and a recipe's `setup_script` is found;
    only when it exists, as srtctl mounts it."""
    if not config.srtctl_root:
        return {}
    directory = Path(os.path.expandvars(config.srtctl_root)).expanduser() / "configs"
    return {str(directory): "/configs"} if directory.is_dir() else {}


def ignored_settings(config: SrtSlurmCluster) -> dict[str, str]:
    """{key: why} for every key set that a disagg profile does not carry out."""
    defaults = SrtSlurmCluster()
    out = {}
    for key, why in _NOT_CARRIED.items():
        value = getattr(config, key)
        if key == "runtime_config_transport" and value == "shared-filesystem":
            continue  # what disagg does anyway
        if value not in (None, False, {}, []) and value != getattr(defaults, key):
            out[key] = why
    return out
