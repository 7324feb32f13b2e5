"""Workers onto nodes and GPUs, as srt-slurm lays them out (srtctl's `allocate_endpoints`).

Prefill workers first, then decode workers from the next node the prefill workers leave
untouched (or, with `decode_nodes: 0`, on the GPUs they leave free). A worker needing at
least a node's GPUs spans whole nodes; smaller ones share a node on disjoint GPUs.
Kept apart from `disagg.plan.placement`: it is pure arithmetic over `resources`.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass, field

from disagg.cluster import ClusterProfile
from disagg.errors import Fail
from disagg.plan.job_nodes import Named
from disagg.plan.model import RoleKind
from disagg.recipe.schema import ResourcesSection

# One placed worker: (kind, index within its kind, node ranks, GPU ids on each node).
PlacedWorker = tuple[RoleKind, int, list[int], list[int]]


@dataclass(frozen=True)
class WorkerGroup:
    """Workers of one kind: how many, GPUs each, and the nodes they may use."""

    kind: RoleKind
    workers: int
    gpus_each: int
    nodes: int | None  # declared nodes; None = share the previous group's nodes
    field: str  # resources field that sets the node count, for messages


@dataclass(eq=False)
class GpuCursor:
    """Walks GPUs node by node, handing out whole nodes or GPU subsets."""

    gpn: int
    spread: bool  # a partial-node worker leaves the rest of its node idle
    node: int = 0
    gpu: int = 0

    def next_node(self) -> None:
        """Move to the start of the next node unless already at a node's start."""
        if self.gpu:
            self.node += 1
            self.gpu = 0

    def take(self, gpus: int) -> tuple[list[int], list[int]]:
        """(node ranks, gpu ids on each) for one worker of `gpus` GPUs."""
        if gpus >= self.gpn:
            self.next_node()
            span = gpus // self.gpn
            ranks = list(range(self.node, self.node + span))
            self.node += span
            return ranks, list(range(self.gpn))
        if self.gpu + gpus > self.gpn:
            self.next_node()
        ids = list(range(self.gpu, self.gpu + gpus))
        rank = self.node
        self.gpu += gpus
        if self.gpu == self.gpn or self.spread:
            self.next_node()
        return [rank], ids

    @property
    def used_nodes(self) -> int:
        return self.node + (1 if self.gpu else 0)


@dataclass(frozen=True)
class Colocation:
    """vLLM's prefill/decode packing, as srt-slurm v1.0.68 decides it
    (`VLLMProtocol.should_colocate_prefill_decode` in backends/vllm.py) and sizes the job
    (`SrtConfig.total_nodes` in core/schema.py: the workers' GPUs over GPUs per node)."""

    allowed: bool = False  # backend.allow_prefill_decode_colocation (vLLM only)
    across_nodes: bool = False  # backend.allow_prefill_decode_colocation_across_nodes

    def applies(self, groups: list[WorkerGroup], gpus_per_node: int) -> bool:
        kinds = {group.kind for group in groups if group.workers > 0}
        if not self.allowed or not {RoleKind.PREFILL, RoleKind.DECODE} <= kinds:
            return False
        return total_gpus(groups) <= gpus_per_node or self.across_nodes


def total_gpus(groups: list[WorkerGroup]) -> int:
    return sum(group.workers * group.gpus_each for group in groups)


@dataclass(eq=False)
class NodeLayout:
    """The `resources` section of one variant, laid out on nodes of a cluster."""

    resources: ResourcesSection
    profile: ClusterProfile | None
    _: KW_ONLY
    named: Named
    fail: Fail
    colocation: Colocation = field(default_factory=Colocation)

    def gpus_per_node(self) -> int:
        """The recipe's GPUs per node, else the cluster profile's."""
        gpn = self.resources.gpus_per_node
        if gpn is None and self.profile is not None:
            gpn = self.profile.gpus_per_node
        if gpn is None:
            raise self.fail(
                "GPUs per node unknown",
                ("resources",),
                "set resources.gpus_per_node or gpus_per_node in the cluster profile",
            )
        return gpn

    def groups(self, gpn: int) -> list[WorkerGroup]:
        res = self.resources
        if res.disaggregated:
            prefill = res.prefill_workers or 0
            decode = res.decode_workers or 0
            if prefill < 1 or decode < 1:
                raise self.fail(
                    f"a disaggregated variant needs {self.named('resources', 'prefill_workers')}"
                    f" >= 1 and {self.named('resources', 'decode_workers')} >= 1",
                    ("resources",),
                    f"or use {self.named('resources', 'agg_nodes')}/"
                    f"{self.named('resources', 'agg_workers')} for an aggregated variant",
                )
            if res.prefill_nodes is None:
                raise self.fail(
                    f"{self.named('resources', 'prefill_nodes')} is not set",
                    ("resources", "prefill_nodes"),
                    "set how many nodes the prefill workers use",
                )
            gpp = res.gpus_per_prefill or split_gpus(res.prefill_nodes, gpn, prefill)
            if res.gpus_per_decode:
                gpd = res.gpus_per_decode
            elif not res.decode_nodes:  # 0 (or unset): decode shares the prefill nodes
                gpd = gpp
            else:
                gpd = split_gpus(res.decode_nodes, gpn, decode)
            return [
                WorkerGroup(RoleKind.PREFILL, prefill, gpp, res.prefill_nodes, "prefill_nodes"),
                WorkerGroup(RoleKind.DECODE, decode, gpd, res.decode_nodes or None, "decode_nodes"),
            ]
        workers = res.agg_workers if res.agg_workers is not None else 1
        if workers < 1:
            raise self.fail(
                f"{self.named('resources', 'agg_workers')} must be at least 1",
                ("resources", "agg_workers"),
                None,
            )
        nodes = res.agg_nodes if res.agg_nodes is not None else 1
        gpa = res.gpus_per_agg or split_gpus(nodes, gpn, workers)
        return [WorkerGroup(RoleKind.AGGREGATED, workers, gpa, nodes, "agg_nodes")]

    def place_workers(self, gpn: int) -> tuple[list[PlacedWorker], int]:
        """(kind, index, node ranks, gpu ids) per worker, and the number of nodes."""
        groups = self.groups(gpn)
        for group in groups:
            if group.gpus_each > gpn and group.gpus_each % gpn:
                raise self.fail(
                    f"{group.kind.value} workers need {group.gpus_each} GPUs each, more than "
                    f"one node ({gpn}) but not a whole number of nodes",
                    ("resources",),
                    "a worker either fits in one node or spans whole nodes",
                )
        if self.colocation.applies(groups, gpn):
            return self.packed(groups, gpn)
        cursor = GpuCursor(gpn, self.resources.spread_workers)
        placed: list[PlacedWorker] = []
        end = 0  # one past the last declared node so far
        for group in groups:
            # own nodes: the next node nobody holds, as srtctl's `allocate_endpoints` walks
            # on (prefill workers that pack onto fewer nodes than declared leave the rest
            # of the job's nodes at its end idle, not between prefill and decode)
            first = cursor.used_nodes if group.nodes is not None else end
            if group.nodes is not None:
                cursor.node, cursor.gpu = first, 0
            for index in range(group.workers):
                ranks, ids = cursor.take(group.gpus_each)
                placed.append((group.kind, index, ranks, ids))
            if group.nodes is not None:
                end += group.nodes
                if cursor.used_nodes > end:
                    raise self.fail(
                        f"{group.workers} {group.kind.value} worker(s) x {group.gpus_each} GPUs "
                        f"need {cursor.used_nodes - first} node(s) of {gpn} GPUs, but "
                        f"{self.named('resources', group.field)} is {group.nodes}",
                        ("resources", group.field),
                        "raise the node count, or lower the workers or GPUs per worker",
                    )
            elif cursor.used_nodes > end:
                raise self.fail(
                    f"{group.workers} {group.kind.value} worker(s) x {group.gpus_each} GPUs do "
                    f"not fit on the GPUs left free on the other workers' {end} node(s)",
                    ("resources", group.field),
                    f"give them their own nodes with {self.named('resources', group.field)} >= 1",
                )
        return placed, max(end, 1)

    def packed(self, groups: list[WorkerGroup], gpn: int) -> tuple[list[PlacedWorker], int]:
        """Colocated prefill and decode: one walk over the GPUs, prefill first, on as many
        nodes as the workers' GPUs fill (srtctl's `allocate_endpoints` with
        `allow_prefill_decode_colocation`; the declared node counts only size workers)."""
        nodes = -(-total_gpus(groups) // gpn)
        cursor = GpuCursor(gpn, self.resources.spread_workers)
        placed: list[PlacedWorker] = []
        for group in groups:
            for index in range(group.workers):
                if group.gpus_each >= gpn and cursor.gpu:
                    # srtctl hands a whole-node worker the node a smaller one started on
                    raise self.fail(
                        f"{group.kind.value} worker {index} needs whole nodes but would start "
                        f"on a node whose GPUs {list(range(cursor.gpu))} another worker holds "
                        "(srt-slurm's colocated packing places it on the same GPUs)",
                        ("backend", "allow_prefill_decode_colocation_across_nodes"),
                        "give prefill and decode workers sizes that fill whole nodes, or "
                        "drop the colocation",
                    )
                ranks, ids = cursor.take(group.gpus_each)
                placed.append((group.kind, index, ranks, ids))
        if cursor.used_nodes > nodes:
            raise self.fail(
                f"colocated workers ({' + '.join(f'{g.workers} x {g.gpus_each}' for g in groups)}"
                f" GPUs) need {cursor.used_nodes} node(s) of {gpn} GPUs packed in order, but "
                f"srt-slurm allocates {nodes} (their GPUs over GPUs per node)",
                ("backend", "allow_prefill_decode_colocation"),
                "use worker sizes that pack without gaps, or drop the colocation",
            )
        return placed, nodes


def split_gpus(nodes: int, gpus_per_node: int, workers: int) -> int:
    """srt-slurm's default GPUs per worker: the group's GPUs shared evenly (at least 1)."""
    if nodes <= 0:
        return gpus_per_node
    return max((nodes * gpus_per_node) // workers, 1)
