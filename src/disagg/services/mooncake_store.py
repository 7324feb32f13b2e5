"""`type: mooncake-store`: a standalone Mooncake Store wired to the job's Mooncake master.

srt-slurm's schema defines the kind (a standalone store, `start: before_workers` and
critical by default) but its command is not in the srt-slurm source this project
follows, so the store runs Mooncake's own standalone store process, `mooncake_client`
(the `services` dependency group's wheel ships it next to `mooncake_master`), told the
master's RPC and metadata addresses, listening on its node's address with its run-time
ports, its HTTP server on for the readiness gate (`GET /health` answers
`{"status":"healthy"}` once the segment is mounted). The recipe's `args` come last, so a
flag given there (`--global_segment_size=...`, `--protocol=rdma`) wins. One instance per
worker node unless `placement.node` says otherwise. It needs the master: a recipe with a
store and no mooncake-master entry (or v1 `mooncake_kv_store`) is bad input.
"""

from __future__ import annotations

from disagg.frontends.mooncake import MASTER
from disagg.plan.job_plan import env_text
from disagg.plan.model import ReadinessPlan, RoleKind, RolePlan
from disagg.recipe.job_sections import ServiceSection
from disagg.services.base import (
    PlannedService,
    ServiceContext,
    ServiceKind,
    container,
    readiness_plan,
    role_name,
)
from disagg.services.generic import placed_ranks, with_preamble

TYPES = ("mooncake-store",)
READY_TIMEOUT_S = 120.0
_FLAGS = (
    f"--master_server_address=${{{MASTER}.host}}:${{{MASTER}.rpc_port}}",
    f"--metadata_server=http://${{{MASTER}.host}}:${{{MASTER}.metadata_port}}/metadata",
    "--host=${self.bind_host}",
    "--port=${self.rpc_port}",
    "--enable_http_server=true",
    "--http_port=${self.http_port}",
)


class MooncakeStore(ServiceKind):
    def plan(self, entry: ServiceSection, ctx: ServiceContext) -> PlannedService:
        """The store's role, on the master's addresses."""
        name = role_name(entry, ctx.fail)
        if ctx.master is None:
            raise ctx.fail(
                f"service {entry.name}: a mooncake-store needs the job's Mooncake master",
                ("services",),
                "add a `type: mooncake-master` service (v1: backend.mooncake_kv_store)",
            )
        image = container(entry, ctx)
        if entry.command:  # the recipe's own program: run as written, as a generic one is
            argv = [*entry.command, *entry.args]
        else:
            program = (
                ["mooncake_client"] if image else ["${run.python}", "-m", "mooncake.cli_client"]
            )
            argv = [*program, *_FLAGS, *entry.args]
        readiness = readiness_plan(entry.readiness, entry.name, ctx.fail) or ReadinessPlan(
            http_port="http", http_path="/health", timeout_s=READY_TIMEOUT_S, interval_s=0.2
        )
        role = RolePlan(
            name=name,
            kind=RoleKind.SERVICE,
            node_ranks=placed_ranks(entry, ctx, "workers"),
            ports=["rpc", "http"],
            argv=with_preamble(argv, entry.preamble, name),
            env={key: env_text(value) for key, value in entry.env.items()},
            container_image=image,
            critical=True if entry.critical is None else entry.critical,
            readiness=readiness,
        )
        start = entry.start or "before_workers"
        return PlannedService(role=role, start=start, differs=["service-log", "mooncake-store"])


ADAPTER = MooncakeStore()
