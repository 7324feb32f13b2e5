"""The job's nodes by purpose, as srtctl carves its allocation: workers, head, client, infra.

srtctl (`Nodes.from_slurm` in srtctl/core/runtime.py) adds one node per dedicated role,
or one for all of them while `benchmark.colocate_with_frontend` is true; the client's node
from the end, the others from the front. The head is the frontend's node, else the first
worker node; the client and etcd/NATS run on it unless they have a node of their own.

With `resources.het_jobs` (or the cluster's `use_het_jobs`), srtctl submits a Slurm
heterogeneous job (`ResourceConfig.het_components`, `SrtConfig._validate_het_jobs`): group 0
of the prefill nodes (after a dedicated infra node), group 1 of the decode nodes, for a
disaggregated SGLang job only; it refuses anything else at load time, and so does this.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from disagg.cluster import ClusterProfile
from disagg.errors import Fail
from disagg.plan.model import RoleKind, RolePlan
from disagg.recipe.schema import RecipeConfig

PLACEMENTS = ("head", "first_decode", "last_decode")  # srtctl's `placed_node` names
Named = Callable[..., str]  # (*path) -> the field as the file spells it


@dataclass(frozen=True)
class JobNodes:
    """Node ranks of one job by purpose (0 = the allocation's first node)."""

    total: int  # the sbatch node count
    workers: tuple[int, ...]  # the nodes the workers are laid out on, in order
    head: int  # nginx, or the one frontend / router
    bench: int  # the benchmark client
    infra: int  # etcd and NATS
    dedicated: tuple[str, ...] = ()  # the roles that asked for a node: infra, frontend, client

    @property
    def offset(self) -> int:
        """Rank of the first worker node: worker layout rank r runs on `offset + r`."""
        return self.workers[0]


def dedicated_roles(config: RecipeConfig) -> tuple[str, ...]:
    """The roles that asked for a node of their own, in srtctl's order."""
    wanted = (
        ("infra", config.infra.etcd_nats_dedicated_node),
        ("frontend", bool(config.frontend and config.frontend.dedicated_node)),
        ("client", config.benchmark.client_dedicated_node),
    )
    return tuple(role for role, asked in wanted if asked)


def job_nodes(worker_nodes: int, roles: tuple[str, ...], *, colocate: bool) -> JobNodes:
    """The allocation for `worker_nodes` worker nodes plus the nodes `roles` reserve (none:
    the head, client and infra on the first worker node)."""
    if colocate and roles:  # one node for every dedicated role: the last if the client has one
        total = worker_nodes + 1
        shared = total - 1 if "client" in roles else 0
        reserved = dict.fromkeys(roles, shared)
        first = 0 if "client" in roles else 1
    else:  # infra, then the frontend, from the front; the client from the end
        front = [role for role in roles if role != "client"]
        total = worker_nodes + len(roles)
        reserved = {role: rank for rank, role in enumerate(front)}
        if "client" in roles:
            reserved["client"] = total - 1
        first = len(front)
    workers = tuple(range(first, first + worker_nodes))
    head = reserved.get("frontend", workers[0])
    return JobNodes(
        total=total,
        workers=workers,
        head=head,
        bench=reserved.get("client", head),
        infra=reserved.get("infra", head),
        dedicated=roles,
    )


def check_dedicated(config: RecipeConfig, *, fail: Fail, named: Named) -> None:
    """srtctl's `_validate_dedicated_node_placement`: a node reserved for the frontend or the
    client while a placement sends it elsewhere would sit idle, so it is refused."""
    pairs = (
        ("frontend", "dedicated_node", "orchestrator_placement", config.frontend),
        ("benchmark", "client_dedicated_node", "client_placement", config.benchmark),
    )
    for section, dedicated, where, block in pairs:
        placed = getattr(block, where) if block is not None else "head"
        if block is not None and getattr(block, dedicated) and placed != "head":
            raise fail(
                f"{named(section, dedicated)} reserves a node that "
                f"{named(section, where)} {placed} leaves unused",
                (section, where),
                f"drop {named(section, where)}, or the dedicated node",
            )


def placed_rank(
    workers: list[RolePlan], placement: str, head: int, *, field: tuple[str, ...], fail: Fail
) -> int:
    """The node a `head | first_decode | last_decode` placement names (srtctl's
    `placed_node`: the first / last decode worker's first node, by worker index)."""
    if placement == "head":
        return head
    if placement not in PLACEMENTS:
        raise fail(
            f"{'.'.join(field)} {placement!r} is not a placement",
            field,
            f"use one of {', '.join(PLACEMENTS)}",
        )
    decode = sorted((r for r in workers if r.kind is RoleKind.DECODE), key=lambda r: r.index)
    nodes = list(dict.fromkeys(role.node_ranks[0] for role in decode))
    if not nodes:
        raise fail(
            f"{'.'.join(field)} is {placement}, but the variant has no decode workers",
            field,
            "use `head`, or give the variant decode workers",
        )
    return nodes[0] if placement == "first_decode" else nodes[-1]


def client_rank(config: RecipeConfig, workers: list[RolePlan], job: JobNodes, fail: Fail) -> int:
    """The benchmark client's node (srtctl's `_benchmark_node`): its own node or the head,
    or the last decode worker's node with `client_placement: last_decode`."""
    placement = config.benchmark.client_placement
    if placement == "head":
        return job.bench
    field = ("benchmark", "client_placement")
    return placed_rank(workers, placement, job.head, field=field, fail=fail)


def het_nodes(
    config: RecipeConfig,
    profile: ClusterProfile | None,
    job: JobNodes,
    *,
    fail: Fail,
    named: Named,
) -> list[int]:
    """Node counts of the heterogeneous job's components (group 0, group 1), or [] for one
    homogeneous job."""
    res = config.resources
    written = res.het_jobs is not None
    if not (res.het_jobs if written else bool(profile and profile.use_het_jobs)):
        return []
    field = named("resources", "het_jobs")
    source = field if written else "the cluster's use_het_jobs"
    path = ("resources", "het_jobs") if written else ("resources",)
    prefill_nodes = named("resources", "prefill_nodes")
    decode_nodes = named("resources", "decode_nodes")
    refusals = (
        (
            not res.disaggregated,
            "which needs a disaggregated layout",
            f"set {prefill_nodes} and {decode_nodes}, or {field}: false",
        ),
        (
            (res.prefill_nodes or 0) < 1 or (res.decode_nodes or 0) < 1,
            f"which needs {prefill_nodes} >= 1 and {decode_nodes} >= 1 (one component per side)",
            f"give each side its own nodes, or set {field}: false",
        ),
        (
            config.backend.type != "sglang",
            "which srt-slurm runs only for the sglang backend "
            f"(this recipe's is {config.backend.type})",
            f"set {field}: false",
        ),
        (
            "frontend" in job.dedicated or "client" in job.dedicated,
            "in which no node is reserved for the frontend or the benchmark client",
            f"drop the dedicated frontend/client node, or set {field}: false",
        ),
    )
    for refused, why, hint in refusals:
        if refused:
            raise fail(f"{source} asks for a heterogeneous Slurm job, {why}", path, hint)
    prefill = job.offset + (res.prefill_nodes or 0)
    decode = res.decode_nodes or 0
    if prefill + decode != job.total:  # the layout places decode after the prefill nodes
        raise fail(
            f"the heterogeneous job's components ({prefill} + {decode} nodes) do not add "
            f"up to the job's {job.total} nodes",
            path,
            None,
        )
    return [prefill, decode]
