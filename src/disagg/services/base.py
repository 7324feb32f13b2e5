"""What a `services:` kind is told when it is planned, and what it answers."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from disagg.errors import Fail
from disagg.plan.job_nodes import JobNodes
from disagg.plan.job_plan import env_text
from disagg.plan.model import ReadinessPlan, RoleKind, RolePlan
from disagg.recipe.job_sections import ServiceReadiness, ServiceSection
from disagg.recipe.schema import RecipeConfig
from disagg.recipe.unhonoured_field import Unhonoured

Start = Literal["after_frontend", "before_workers"]
_SRUN = "a service's own srun options are not applied"
# srt-slurm's `placement.node` names
_ROLE_NODES = {"prefill": RoleKind.PREFILL, "decode": RoleKind.DECODE, "agg": RoleKind.AGGREGATED}
PLACEMENTS = ("head", "infra", "workers", "compute", "all", *_ROLE_NODES)
# A service name names its role, its log file and `${service_<name>.host}` placeholders.
_NAME = re.compile(r"[A-Za-z0-9_-]+")


@dataclass(frozen=True)
class ServiceContext:
    """The job around the services: its workers as placed, its nodes, its discovery plane."""

    config: RecipeConfig
    workers: list[RolePlan]
    job: JobNodes
    image: str | None  # the containers' default image; None runs on the host (simulated)
    discovery_env: dict[str, str]  # ETCD_ENDPOINTS / NATS_SERVER, when the job runs them
    master: RolePlan | None  # the Mooncake master the job starts, if any
    fail: Fail


@dataclass
class PlannedService:
    """One entry's role and when it starts."""

    role: RolePlan
    start: Start
    differs: list[str] = field(default_factory=list)


def role_name(entry: ServiceSection, fail: Fail) -> str:
    """`service_<name>` (srtctl's `service_<name>.out` label), for a name fit to be one."""
    if not _NAME.fullmatch(entry.name):
        raise fail(
            f"service name {entry.name!r} has characters a role name cannot hold",
            ("services",),
            "use letters, digits, `-` and `_`",
        )
    return f"service_{entry.name}"


def with_preamble(argv: list[str], preamble: str | None, name: str) -> list[str]:
    """argv run after the preamble in one shell (`exec` keeps the command's PID the role's);
    the command's words travel as the shell's arguments, never re-split."""
    if not preamble:
        return argv
    script = preamble.rstrip("\n") + '\nexec "$@"\n'
    return ["bash", "-c", script, name, *argv]


def node_ranks(node: str, workers: list[RolePlan], job: JobNodes) -> list[int] | None:
    """The node ranks `node` names, in order; None for a name srt-slurm does not define.
    `head`/`infra`: one node; a role: the nodes its workers use; `workers`/`compute`: every
    worker node (no node pools here, so the two agree); `all`: every node."""
    if node == "head":
        return [job.head]
    if node == "infra":
        return [job.infra]
    if node in ("workers", "compute"):
        return sorted({rank for role in workers for rank in role.node_ranks})
    if node == "all":
        return list(range(job.total))
    kind = _ROLE_NODES.get(node)
    if kind is None:
        return None
    return sorted({rank for role in workers if role.kind is kind for rank in role.node_ranks})


def placed_ranks(entry: ServiceSection, ctx: ServiceContext, default: str) -> list[int]:
    """The entry's nodes (`placement.node`, else the kind's default); none is bad input."""
    node = entry.placement.node if entry.placement is not None else default
    ranks = node_ranks(node, ctx.workers, ctx.job)
    if ranks is None:
        raise ctx.fail(
            f"service {entry.name}: unknown placement.node {node!r}",
            ("services",),
            f"one of: {', '.join(PLACEMENTS)}",
        )
    if not ranks:
        raise ctx.fail(
            f"service {entry.name}: placement.node {node} names no node of this job "
            "(no worker of that role)",
            ("services",),
            "place it on a role the variant runs",
        )
    return ranks


def readiness_plan(
    readiness: ServiceReadiness | None, name: str, fail: Fail
) -> ReadinessPlan | None:
    """The recipe's readiness gate; one with no probe in it is bad input."""
    if readiness is None:
        return None
    tcp = readiness.tcp.port if readiness.tcp is not None else readiness.port
    http = readiness.http
    log = readiness.log.pattern if readiness.log is not None else None
    if tcp is None and http is None and log is None:
        raise fail(
            f"service {name}: `readiness` names no probe",
            ("services",),
            "give it `port`, `tcp: {port}`, `http: {port, path}` or `log: {pattern}`",
        )
    if log is not None:
        try:
            re.compile(log)
        except re.error as exc:
            raise fail(
                f"service {name}: readiness log pattern {log!r} is not a regular expression: {exc}",
                ("services",),
                "write a Python regular expression",
            ) from None
    return ReadinessPlan(
        tcp_port=tcp,
        http_port=http.port if http is not None else None,
        http_path=http.path if http is not None else "/health",
        http_status=http.status if http is not None else 200,
        log_pattern=log,
        timeout_s=float(readiness.timeout_seconds),
        interval_s=float(max(readiness.interval_seconds, 0) or 0.2),
    )


class ServiceKind(ABC):
    """One `services:` type: the module `services/<type>.py` with its `ADAPTER`, which
    registers it (`disagg.services`)."""

    # Fields of an entry its role does not carry out: refused when running without them
    # would change what runs, ignored when they only concern how Slurm pins or scrapes it.
    refused: ClassVar[Mapping[str, str]] = {
        "terminal": "a terminal service (the service is the run, no benchmark) is not run: "
        "every disagg run measures its benchmark",
        "source": "the service's git source is not cloned and built",
        "build_command": "the service's git source is not cloned and built",
        "nodes": "services owning node pools are not laid out (the job has only role nodes)",
        "external": "`external` is for the discovery-plane kinds and the Mooncake master",
        "options": "this kind takes no options",
    }
    ignored: ClassVar[Mapping[str, str]] = {
        "cpus_per_task": _SRUN,
        "cpu_bind": _SRUN,
        "srun_options": _SRUN,
        "metrics": "no metrics scraping",
    }

    node: ClassVar[str]  # where it runs unless `placement.node` says (one per node named)
    start: ClassVar[Start]  # when it starts unless the entry's `start` says
    critical: ClassVar[bool]  # whether its end fails the run, unless the entry's says
    ports: ClassVar[tuple[str, ...]] = ()
    differs: ClassVar[tuple[str, ...]] = ("service-log",)  # `disagg.plan.compat` rows
    readiness: ClassVar[ReadinessPlan | None] = None  # the gate when the entry names none

    @abstractmethod
    def argv(self, entry: ServiceSection, ctx: ServiceContext, image: str | None) -> list[str]:
        """The program and its arguments (in `image`, when not None); what the kind needs
        and the entry lacks is bad input."""

    def env(self, entry: ServiceSection, ctx: ServiceContext) -> dict[str, str]:
        return {key: env_text(value) for key, value in entry.env.items()}

    def plan(self, entry: ServiceSection, ctx: ServiceContext) -> PlannedService:
        """The entry's role (one task per placed node) and when it starts."""
        name = role_name(entry, ctx.fail)
        image = None if ctx.image is None else (entry.container or ctx.image)
        argv = self.argv(entry, ctx, image)
        role = RolePlan(
            name=name,
            kind=RoleKind.SERVICE,
            node_ranks=placed_ranks(entry, ctx, self.node),
            ports=list(self.ports),
            argv=with_preamble(argv, entry.preamble, name),
            env=self.env(entry, ctx),
            container_image=image,
            critical=self.critical if entry.critical is None else entry.critical,
            readiness=readiness_plan(entry.readiness, entry.name, ctx.fail) or self.readiness,
        )
        start = entry.start or self.start
        return PlannedService(role=role, start=start, differs=list(self.differs))

    def unhonoured(self, name: str, service: Mapping[str, Any]) -> list[Unhonoured]:
        """The entry's fields (as written) its role does not carry out, in a fixed order."""
        found: list[Unhonoured] = [
            Unhonoured(("services", name, key), "refused", why)
            for key, why in self.refused.items()
            if service.get(key)
        ]
        placement = service.get("placement")
        if isinstance(placement, Mapping):
            if placement.get("pool"):
                why = "services owning node pools are not laid out, so no pool to join"
                found.append(Unhonoured(("services", name, "placement", "pool"), "refused", why))
            if placement.get("per") == "worker":
                why = "one instance per worker (a sidecar on its GPUs) is not laid out"
                found.append(Unhonoured(("services", name, "placement", "per"), "refused", why))
        found += [
            Unhonoured(("services", name, key), "ignored", why)
            for key, why in self.ignored.items()
            if service.get(key)
        ]
        return found
