"""`type: mooncake-store`: a standalone Mooncake Store wired to the job's Mooncake master.

srt-slurm's schema defines the kind but not its command, so the store runs Mooncake's own
`mooncake_client`, its HTTP server on for the readiness gate; the recipe's `args` come
last, so a flag given there wins. A store without the master is bad input.
"""

from __future__ import annotations

from typing import ClassVar

from disagg.frontends.mooncake import MASTER
from disagg.plan.model import ReadinessPlan
from disagg.recipe.job_sections import ServiceSection
from disagg.services.base import ServiceContext, ServiceKind, Start

TYPES = ("mooncake-store",)
_FLAGS = (
    f"--master_server_address=${{{MASTER}.host}}:${{{MASTER}.rpc_port}}",
    f"--metadata_server=http://${{{MASTER}.host}}:${{{MASTER}.metadata_port}}/metadata",
    "--host=${self.bind_host}",
    "--port=${self.rpc_port}",
    "--enable_http_server=true",
    "--http_port=${self.http_port}",
)


class MooncakeStore(ServiceKind):
    node: ClassVar[str] = "workers"
    start: ClassVar[Start] = "before_workers"
    critical: ClassVar[bool] = True
    ports: ClassVar[tuple[str, ...]] = ("rpc", "http")
    differs: ClassVar[tuple[str, ...]] = ("service-log", "mooncake-store")
    readiness: ClassVar[ReadinessPlan | None] = ReadinessPlan(
        http_port="http", http_path="/health", timeout_s=120.0, interval_s=0.2
    )

    def argv(self, entry: ServiceSection, ctx: ServiceContext, image: str | None) -> list[str]:
        if ctx.master is None:
            raise ctx.fail(
                f"service {entry.name}: a mooncake-store needs the job's Mooncake master",
                ("services",),
                "add a `type: mooncake-master` service (v1: backend.mooncake_kv_store)",
            )
        if entry.command:  # the recipe's own program: run as written, as a generic one is
            return [*entry.command, *entry.args]
        own = ["${run.python}", "-m", "mooncake.cli_client"]  # disagg's environment's
        return [*(["mooncake_client"] if image else own), *_FLAGS, *entry.args]


ADAPTER = MooncakeStore()
