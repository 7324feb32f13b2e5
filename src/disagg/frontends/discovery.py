"""Dynamo's discovery plane: etcd (where workers register) and NATS (a request or event
plane) as service roles of their own, or file discovery in the run directory.

As srt-slurm does, a Dynamo job on a cluster runs both before the workers, each taken over
by a `services:` entry of its type when there is one; mocker workers get them only when
the recipe names them. nats-server (2.9.10) takes `max_payload` only from a configuration
file, and refuses one above `max_pending` (64 MB unless raised).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from disagg.frontends.base import FrontendContext, ignored
from disagg.plan.model import HealthPlan, RoleKind, RolePlan
from disagg.recipe.job_sections import ServiceSection

DISCOVERY_DIR = "${run.dir}/dynamo-discovery"
SERVICE_HEALTH_DEADLINE_S = 60.0
PLANES = {"request_plane": ("tcp", "nats"), "event_plane": ("nats", "zmq")}
_MB = 1024 * 1024
_NATS_OPTIONS = frozenset({"max_payload_mb"})
# `services:` fields of an etcd/nats entry that the role started here does not carry out.
_NOT_CARRIED = ("command", "source", "build_command", "preamble", "readiness", "metrics")
# Where srtctl runs one etcd / NATS: the infra node (the head's, or a node of its own).
_ON_INFRA = (None, "head", "infra", "dedicated")


@dataclass
class DiscoveryPlane:
    """How every Dynamo process of one plan finds the others."""

    discovery: str  # `etcd` or `file`, as `--discovery-backend` takes it
    request_plane: str
    env: dict[str, str]  # what each Dynamo process needs to reach the plane
    services: list[RolePlan] = field(default_factory=list)  # started before the workers
    notes: list[dict[str, str]] = field(default_factory=list)  # as Plan.ignored lists them
    honoured: set[str] = field(default_factory=set)  # recipe fields the services carry out

    @property
    def discovery_flags(self) -> list[str]:
        """`--discovery-backend` unless it is Dynamo's default, etcd (srtctl passes none)."""
        return [] if self.discovery == "etcd" else ["--discovery-backend", self.discovery]

    @property
    def worker_flags(self) -> list[str]:
        """What a Dynamo worker is told of the planes (srtctl's `build_worker_command`)."""
        return [*self.discovery_flags, "--request-plane", self.request_plane]


def discovery_plane(ctx: FrontendContext, mocked: bool) -> DiscoveryPlane:
    """etcd and NATS as the recipe (and srt-slurm's defaults for a cluster) ask for them."""
    planes = _planes(ctx)
    request, event = planes["request_plane"] or "tcp", planes["event_plane"]
    declared = _declared(ctx)
    etcd, nats = declared.get("etcd"), declared.get("nats")
    wants_etcd = etcd.enabled if etcd else not mocked
    nats_plane = "nats" in (request, event)
    wants_nats = nats.enabled if nats else (not mocked or nats_plane)
    if nats_plane and not wants_nats:
        which = "request_plane" if request == "nats" else "event_plane"
        raise ctx.fail(
            f"dynamo.{which}: nats needs a NATS server, and services.nats is disabled",
            ("dynamo", which),
            "enable the nats service, or use the tcp request plane and the zmq event plane",
        )
    plane = DiscoveryPlane(
        discovery="etcd" if wants_etcd else "file", request_plane=request, env={}
    )
    if event:
        plane.env["DYN_EVENT_PLANE"] = event
    if wants_etcd:
        _add_etcd(ctx, plane, etcd)
    else:
        plane.env["DYN_FILE_KV"] = DISCOVERY_DIR
    if wants_nats:
        _add_nats(ctx, plane, nats)
    if plane.services and "infra" in ctx.nodes.dedicated:  # they run on the node reserved
        plane.honoured.add("infra.etcd_nats_dedicated_node")
    runs = {"etcd": wants_etcd, "nats": wants_nats}
    plane.notes += _not_started(mocked, runs, declared)
    return plane


def _planes(ctx: FrontendContext) -> dict[str, str | None]:
    dynamo = ctx.config.dynamo
    chosen: dict[str, str | None] = {}
    for name, allowed in PLANES.items():
        value = getattr(dynamo, name)
        if value is not None and value not in allowed:
            raise ctx.fail(
                f"dynamo.{name} must be one of {', '.join(allowed)}, not {value!r}",
                ("dynamo", name),
                f"Dynamo takes --{name.replace('_', '-')} {' or '.join(allowed)}",
            )
        chosen[name] = value
    return chosen


def _declared(ctx: FrontendContext) -> dict[str, ServiceSection]:
    """The recipe's etcd / nats `services:` entries by type (the last one of a type wins);
    v1's `infra` names them too: a NATS payload limit NATS, a node reserved for them both."""
    infra = ctx.config.infra
    named = {"nats"} if infra.nats_max_payload_mb else set()
    named |= {"etcd", "nats"} if infra.etcd_nats_dedicated_node else set()
    declared = {kind: ServiceSection(name=kind, type=kind) for kind in sorted(named)}
    declared.update({s.type: s for s in ctx.config.services if s.type in ("etcd", "nats")})
    return declared


def _external(plane: DiscoveryPlane, entry: ServiceSection | None, variable: str) -> bool:
    """Whether the entry points at a running server (`external: URL`): then it is found there."""
    if entry is None or not entry.external:
        return False
    plane.env[variable] = entry.external
    plane.honoured.add(f"services.{entry.name}")
    return True


def _add_etcd(ctx: FrontendContext, plane: DiscoveryPlane, entry: ServiceSection | None) -> None:
    if _external(plane, entry, "ETCD_ENDPOINTS"):
        return
    name = entry.name if entry else "etcd"
    argv = ["etcd", "--name", "disagg", "--data-dir", f"${{run.dir}}/{name}"]
    argv += ["--listen-client-urls", "http://${self.bind_host}:${self.http_port}"]
    argv += ["--advertise-client-urls", "http://${self.host}:${self.http_port}"]
    argv += ["--listen-peer-urls", "http://${self.bind_host}:${self.peer_port}"]
    argv += ["--initial-advertise-peer-urls", "http://${self.host}:${self.peer_port}"]
    argv += ["--initial-cluster", "disagg=http://${self.host}:${self.peer_port}"]
    role = RolePlan(
        name=name,
        kind=RoleKind.SERVICE,
        node_ranks=[ctx.nodes.infra],
        ports=["http", "peer"],
        argv=argv,
        health=HealthPlan(path="/health", deadline_s=SERVICE_HEALTH_DEADLINE_S, expect='"true"'),
    )
    if entry is not None:
        role = _taken_over(ctx, role, entry, plane, known_options=frozenset())
    plane.services.append(role)
    plane.env["ETCD_ENDPOINTS"] = f"${{{name}.url}}"


def _add_nats(ctx: FrontendContext, plane: DiscoveryPlane, entry: ServiceSection | None) -> None:
    if _external(plane, entry, "NATS_SERVER"):
        return
    name = entry.name if entry else "nats"
    argv = ["nats-server", "-js", "--addr", "${self.bind_host}", "--port", "${self.client_port}"]
    argv += ["--http_port", "${self.http_port}", "--store_dir", f"${{run.dir}}/{name}"]
    role = RolePlan(
        name=name,
        kind=RoleKind.SERVICE,
        node_ranks=[ctx.nodes.infra],
        ports=["client", "http"],
        argv=argv,
        health=HealthPlan(path="/healthz", deadline_s=SERVICE_HEALTH_DEADLINE_S),
    )
    payload = _payload_mb(ctx, entry)
    if payload is not None:
        conf = f"{name}/nats.conf"
        size = payload * _MB
        text = f"max_payload: {size}\nmax_pending: {max(size, 64 * _MB)}\n"
        role = role.model_copy(
            update={"argv": [*argv, "-c", f"${{run.dir}}/{conf}"], "files": {conf: text}}
        )
        plane.honoured.add("infra.nats_max_payload_mb")
    if entry is not None:
        role = _taken_over(ctx, role, entry, plane, known_options=_NATS_OPTIONS)
    plane.services.append(role)
    plane.env["NATS_SERVER"] = f"nats://${{{name}.host}}:${{{name}.client_port}}"


def _payload_mb(ctx: FrontendContext, entry: ServiceSection | None) -> int | None:
    if entry is not None and "max_payload_mb" in entry.options:
        value = entry.options["max_payload_mb"]
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ctx.fail(
                f"services.{entry.name}.options.max_payload_mb must be a whole number of MB",
                ("services",),
                "e.g. max_payload_mb: 32",
            )
        return value
    return ctx.config.infra.nats_max_payload_mb


def _taken_over(
    ctx: FrontendContext,
    role: RolePlan,
    entry: ServiceSection,
    plane: DiscoveryPlane,
    *,
    known_options: frozenset[str],
) -> RolePlan:
    """The recipe's entry for this service: its extra args, env and image; the rest said."""
    unknown = sorted(set(entry.options) - known_options)
    if unknown:
        known = ", ".join(sorted(known_options)) or "none"
        raise ctx.fail(
            f"services.{entry.name}.options.{unknown[0]} is not an option of {entry.type}",
            ("services",),
            f"{entry.type} options: {known}",
        )
    plane.honoured.add(f"services.{entry.name}")
    for key in _NOT_CARRIED:
        if getattr(entry, key):
            why = f"the {entry.type} service runs disagg's own command, without {key}"
            plane.notes.append(ignored(f"services.{entry.name}.{key}", why))
    where = entry.placement.node if entry.placement else None
    if where not in _ON_INFRA:
        why = f"{entry.type} runs once, on the infra node, not on {where}"
        plane.notes.append(ignored(f"services.{entry.name}.placement.node", why))
    return role.model_copy(
        update={
            "argv": [*role.argv, *entry.args],
            "env": {**role.env, **entry.env},
            "container_image": entry.container,
        }
    )


# What stands in for each service a run does not start: (when the run's mocker workers
# need none and the recipe names none, when the recipe disables it).
_STAND_INS = {
    "etcd": (
        "mocker workers: Dynamo discovers them through files in the run directory,"
        " not etcd; a services entry of type etcd runs etcd",
        "disabled: Dynamo discovers its workers through files in the run directory",
    ),
    "nats": (
        "mocker workers: no Dynamo plane uses NATS (request plane tcp, event plane zmq),"
        " so none is started; a services entry of type nats runs it",
        "disabled: no NATS server is started",
    ),
}


def _not_started(
    mocked: bool, runs: dict[str, bool], declared: dict[str, ServiceSection]
) -> list[dict[str, str]]:
    """Say what stands in for an etcd or NATS that srt-slurm would start for this recipe."""
    return [
        ignored(f"services.{kind}", unneeded if mocked and kind not in declared else disabled)
        for kind, (unneeded, disabled) in _STAND_INS.items()
        if not runs[kind]
    ]
