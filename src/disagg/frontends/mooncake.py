"""Mooncake's KV store master as a service role, and what every worker is told about it.

srt-slurm runs `mooncake_master` once, on the infra node, before any worker, for
`backend.mooncake_kv_store` (v1) or a `mooncake-master` `services:` entry (schema 2 reads it
into that field). A vLLM worker also gets `MOONCAKE_CONFIG_PATH`: vLLM's
MooncakeStoreConnector reads its settings from that JSON file, not from the environment.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from disagg.errors import Fail
from disagg.plan.job_plan import env_text
from disagg.plan.model import HealthPlan, RoleKind, RolePlan
from disagg.recipe.backend_section import MooncakeKvStore
from disagg.recipe.schema import RecipeConfig

MASTER = "mooncake-master"
STORE_CONFIG = f"{MASTER}/mooncake_store_config.json"
HEALTH_DEADLINE_S = 120.0  # srtctl waits up to 120 s for each of the master's ports
# srtctl's flags, in its order; the ports are this role's own.
_FLAGS = (
    "--port=${self.rpc_port}",
    "--enable_http_metadata_server=true",
    "--http_metadata_server_port=${self.metadata_port}",
    "--eviction_high_watermark_ratio=0.9",
    "--default_kv_lease_ttl=10000",
    "--rpc_thread_num=16",
    "--enable_metric_reporting=true",
    "--metrics_port=${self.http_port}",
)


@dataclass
class MooncakePlane:
    """The master role (none when the recipe names no Mooncake store) and the workers' env."""

    services: list[RolePlan] = field(default_factory=list)
    worker_env: dict[str, str] = field(default_factory=dict)
    honoured: set[str] = field(default_factory=set)  # recipe fields the master carries out


def mooncake_plane(config: RecipeConfig, *, simulated: bool, image: str | None) -> MooncakePlane:
    """The Mooncake master the recipe asks for, or an empty plane."""
    store = config.backend.mooncake_kv_store or _from_services(config)
    if store is None:
        return MooncakePlane()
    # In a container (the recipe's, else the workers' image) the image's `mooncake_master`;
    # otherwise the one of disagg's own environment (the `services` dependency group).
    container = None if simulated or image is None else (store.container or image)
    program = ["mooncake_master"] if container else ["${run.python}", "-m", "mooncake.cli"]
    files: dict[str, str] = {}
    env = {
        # each node's own address: a worker over several nodes has a transfer engine on
        # each (srtctl resolves it per process in `start_worker`)
        "MOONCAKE_LOCAL_HOSTNAME": "${self.bind_host}",
        **{key: env_text(value) for key, value in store.env.items()},
        "MOONCAKE_MASTER": f"${{{MASTER}.host}}:${{{MASTER}.rpc_port}}",
        "MOONCAKE_TE_META_DATA_SERVER": f"http://${{{MASTER}.host}}:${{{MASTER}.metadata_port}}/metadata",
    }
    if config.backend.type == "vllm":
        files[STORE_CONFIG] = store_config_text(store.store_config or {})
        env["MOONCAKE_CONFIG_PATH"] = f"${{run.dir}}/{STORE_CONFIG}"
    role = RolePlan(
        name=MASTER,
        kind=RoleKind.SERVICE,
        node_ranks=[0],
        ports=["rpc", "metadata", "http"],
        argv=[*program, *_FLAGS, *store.master_extra_args],
        files=files,
        health=HealthPlan(
            path="/health", deadline_s=HEALTH_DEADLINE_S, expect='"service_ready":true'
        ),
        container_image=container,
    )
    return MooncakePlane(services=[role], worker_env=env, honoured={"backend.mooncake_kv_store"})


# Where a worker's settings name Mooncake as its KV transfer, per engine (srtctl's check).
_WIRED = {
    "sglang": (("disaggregation-transfer-backend", "disaggregation_transfer_backend"), "SGLang"),
    "vllm": (("kv-transfer-config", "kv_transfer_config"), "vLLM"),
}


def check_wired(config: RecipeConfig, backend: Mapping[str, Any], fail: Fail) -> None:
    """As srtctl refuses it: a disaggregated SGLang/vLLM recipe with a Mooncake store whose
    prefill and decode settings both leave Mooncake out (the master would go unused)."""
    wired = _WIRED.get(config.backend.type)
    if wired is None or not config.resources.disaggregated:
        return
    if config.backend.mooncake_kv_store is None and _from_services(config) is None:
        return
    keys, label = wired
    section = backend.get(f"{config.backend.type}_config")
    for role in ("prefill", "decode"):
        args = section.get(role) if isinstance(section, Mapping) else None
        for value in [args.get(key) for key in keys] if isinstance(args, Mapping) else []:
            text = json.dumps(value) if isinstance(value, Mapping) else str(value or "")
            if "mooncake" in text.lower():
                return
    if config.backend.type == "sglang":
        want = "`disaggregation-transfer-backend: mooncake`"
    else:
        want = "a `kv-transfer-config` whose connector is a Mooncake one (MooncakeStoreConnector)"
    raise fail(
        f"a Mooncake KV store is set, but neither the prefill nor the decode {label} "
        f"settings use it: the master would go unused",
        ("backend", "mooncake_kv_store"),
        f"give the prefill and decode settings {want}, or remove the Mooncake store",
    )


def _from_services(config: RecipeConfig) -> MooncakeKvStore | None:
    """A v1 file's own mooncake-master `services:` entry (schema 2 reads it into
    `backend.mooncake_kv_store` when it loads)."""
    for entry in config.services:
        if entry.type == "mooncake-master" and entry.enabled:
            settings = entry.options.get("store_config")
            return MooncakeKvStore(
                container=entry.container,
                env=dict(entry.env),
                master_extra_args=list(entry.args),
                store_config=dict(settings) if isinstance(settings, Mapping) else None,
            )
    return None


def store_config_text(store_config: Mapping[str, Any]) -> str:
    """vLLM's store config JSON: the recipe's keys, with the master's address written in
    (bound when the master starts; a value the recipe gives is replaced, as srtctl does)."""
    merged = {**store_config, "master_server_address": "${self.host}:${self.rpc_port}"}
    return json.dumps(merged, indent=2) + "\n"


def with_worker_env(workers: list[RolePlan], plane: MooncakePlane) -> list[RolePlan]:
    """Workers told where the master is (each one's own address for its transfers)."""
    if not plane.worker_env:
        return workers
    return [role.model_copy(update={"env": {**role.env, **plane.worker_env}}) for role in workers]


def before_workers(stages: list[list[RolePlan]], plane: MooncakePlane) -> list[list[RolePlan]]:
    """The frontend's stages with the master's own stage just before the workers'."""
    if not plane.services:
        return stages
    kinds = (RoleKind.PREFILL, RoleKind.DECODE, RoleKind.AGGREGATED)
    at = next((i for i, stage in enumerate(stages) if any(r.kind in kinds for r in stage)), 0)
    return [*stages[:at], list(plane.services), *stages[at:]]
