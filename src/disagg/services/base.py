"""What a `services:` kind is told when it is planned, and what it answers."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from disagg.errors import Fail
from disagg.plan.job_nodes import JobNodes
from disagg.plan.model import ReadinessPlan, RolePlan
from disagg.recipe.job_sections import ServiceReadiness, ServiceSection
from disagg.recipe.schema import RecipeConfig

Start = Literal["after_frontend", "before_workers"]
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


def container(entry: ServiceSection, ctx: ServiceContext) -> str | None:
    """The entry's image, else the job's; none where the job runs on the host."""
    return None if ctx.image is None else (entry.container or ctx.image)


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
