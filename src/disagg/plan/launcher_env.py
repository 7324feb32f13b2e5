"""The environment srtctl's launcher gives every real worker process, whatever its engine
and frontend (srt-slurm v1.0.68, `cli/mixins/worker_stage.py`: `start_worker`,
`start_endpoint_worker`): the head's address, etcd/NATS, Dynamo's system port and
planes, OpenTelemetry and `DYN_LOG`, under what the worker already carries (the mode's
and the recipe's environment, the engine's own variables), which wins.
"""

from __future__ import annotations

from dataclasses import dataclass

from disagg.plan.model import WORKER_KINDS, RolePlan
from disagg.plan.role_images import ROLE_KEYS
from disagg.recipe.schema import RecipeConfig

SYSTEM_PORT = "system"  # `${self.system_port}`: Dynamo's system status server
DYN_LOG = "info,dynamo_runtime::pipeline::network::ingress::push_handler=warn"
ETCD_CLIENT_PORT = 2379  # srtctl/ports.py: where srtctl's etcd and NATS listen
NATS_PORT = 4222


@dataclass(frozen=True)
class JobAddresses:
    """Where the job's shared parts are, as placeholders bound at launch."""

    head_rank: int  # srtctl's head node: nginx or the one frontend
    infra_rank: int  # etcd and NATS
    # srtctl's fixed etcd/NATS addresses, for a job whose frontend plans no plane of its
    # own: a Dynamo job's processes read the ones its discovery plane gives them (a plane
    # of files, in a run without etcd, must not be pointed at an etcd that is not there)
    fixed_planes: bool = True


def otel_env(config: RecipeConfig, component: str) -> dict[str, str]:
    """OpenTelemetry export for one Dynamo component (srtctl `build_otel_env`)."""
    section = config.observability
    if section is None or not section.enable_otel or not section.otel_endpoint:
        return {}
    return {
        "DYN_LOGGING_JSONL": "1",
        "OTEL_EXPORT_ENABLED": "1",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": section.otel_endpoint,
        "OTEL_SERVICE_NAME": f"dynamo-{component}",
    }


def launcher_env(config: RecipeConfig, role: RolePlan, where: JobAddresses) -> dict[str, str]:
    """What srtctl's launcher sets on `role` before its own environment."""
    env = {"HEAD_NODE_IP": f"${{nodes.{where.head_rank}}}"}
    if where.fixed_planes:
        infra = f"${{node_names.{where.infra_rank}}}"
        env["ETCD_ENDPOINTS"] = f"http://{infra}:{ETCD_CLIENT_PORT}"
        env["NATS_SERVER"] = f"nats://{infra}:{NATS_PORT}"
    env["DYN_SYSTEM_PORT"] = f"${{self.{SYSTEM_PORT}_port}}"
    if role.mpi is None:
        env["DYN_REQUEST_PLANE"] = config.dynamo.request_plane or "tcp"
    env["DYN_SKIP_SGLANG_LOG_FORMATTING"] = "1"
    if config.dynamo.event_plane:
        env["DYN_EVENT_PLANE"] = config.dynamo.event_plane
    env.update(otel_env(config, ROLE_KEYS[role.kind]))
    env.setdefault("DYN_LOG", DYN_LOG)
    return env


def with_launcher_env(
    roles: list[RolePlan], config: RecipeConfig, where: JobAddresses
) -> list[RolePlan]:
    """Every worker of `roles` with srtctl's launcher environment under its own, and the
    system port that `DYN_SYSTEM_PORT` names; other roles as given."""

    def placed(role: RolePlan) -> RolePlan:
        ports = role.ports if SYSTEM_PORT in role.ports else [*role.ports, SYSTEM_PORT]
        env = {**launcher_env(config, role, where), **role.env}
        return role.model_copy(update={"env": env, "ports": ports})

    return [placed(role) if role.kind in WORKER_KINDS else role for role in roles]
