"""Where a vLLM worker's data-parallel ranks run: srt-slurm's two Dynamo layouts, and a
multi-node `vllm serve` worker's.

`dp_launch_mode: per_node` (the default, `VLLMProtocol._dp_per_node_endpoints_to_processes`):
when a TP x PP replica fits a node, every node runs its own replicas with
`--data-parallel-hybrid-lb`, so that each node's Dynamo runtime registers with the
frontend; when a replica spans nodes, the nodes meet at the head with the others
`--headless`. `per_gpu` (deprecated, `endpoints_to_processes`): one process per GPU, each
its own role with its global rank, all meeting at rank 0 and sharing its block of NIXL
ports.
"""

from __future__ import annotations

from dataclasses import dataclass

from disagg.engines.worker import WorkerSpec

DYNAMO = "dynamo"  # `frontend.type` whose workers are `python -m dynamo.vllm`
PER_NODE, PER_GPU = "per_node", "per_gpu"  # `backend.dp_launch_mode`


@dataclass(frozen=True)
class DpShape:
    """What a worker's flags say about its parallelism (read by the vLLM adapter)."""

    dp: int
    tp: int
    pp: int
    dp_written: bool  # `data-parallel-size` set at all (srt-slurm's `_is_dp_mode`: 1 counts)
    headless: str | None  # the recipe's own spelling of `headless: true`, if it sets it

    @property
    def replica(self) -> int:
        """GPUs of one data-parallel replica: TP x PP."""
        return self.tp * self.pp


def launch_mode(spec: WorkerSpec) -> str:
    return str(spec.backend.get("dp_launch_mode") or PER_NODE)


def layout(shape: DpShape, spec: WorkerSpec) -> str | None:
    """The srt-slurm DP layout of a Dynamo worker that writes `data-parallel-size`."""
    if spec.frontend != DYNAMO or not shape.dp_written:
        return None
    return PER_GPU if launch_mode(spec) == PER_GPU else PER_NODE


def problem(shape: DpShape, spec: WorkerSpec) -> tuple[str, str] | None:
    """What the worker's DP layout cannot run, as srt-slurm refuses it or fails at start."""
    dp, replica, local = shape.dp, shape.replica, spec.gpus_per_node
    total = local * spec.nnodes
    if layout(shape, spec) == PER_GPU:
        if replica != 1:
            key = "tensor-parallel-size" if shape.tp > 1 else "pipeline-parallel-size"
            return key, (
                f"tensor-parallel-size x pipeline-parallel-size {replica} with "
                "backend.dp_launch_mode per_gpu (each data-parallel rank runs on one GPU; "
                "per_node runs replicas of several GPUs)"
            )
        if dp != total:
            return "data-parallel-size", (
                f"data-parallel-size {dp} with backend.dp_launch_mode per_gpu on a worker "
                f"of {total} GPUs (one rank per GPU: they must be equal)"
            )
        return None
    if shape.headless is not None:
        return shape.headless, (
            "headless with data-parallel-size under Dynamo (the plan derives the headless "
            "ranks from the DP x TP x PP layout, as srt-slurm's per_node launch does)"
        )
    if dp * replica != total:
        return "data-parallel-size", (
            f"data-parallel-size {dp} x tensor-parallel-size x pipeline-parallel-size "
            f"{replica} = {dp * replica} GPUs, but the worker has {total}"
        )
    if replica > local and replica % local:
        return "tensor-parallel-size", (
            f"a TP x PP replica of {replica} GPUs over nodes of {local} GPUs each "
            "(it must fill whole nodes)"
        )
    if replica <= local and local % replica:
        return "tensor-parallel-size", (
            f"TP x PP replicas of {replica} GPUs on nodes of {local} GPUs each "
            "(they must divide a node)"
        )
    return None


def per_node_flags(shape: DpShape, spec: WorkerSpec) -> list[list[str]]:
    """Each node's data-parallel flags in srt-slurm's per-node layout (head node first)."""
    local = spec.gpus_per_node
    meet = ["--data-parallel-address", "${self.host}"]
    meet += ["--data-parallel-rpc-port", "${self.dp_rpc_port}"]
    if shape.replica > local:  # a replica spans nodes: one rendezvous, headless off the head
        return [[*ranks, *meet] for ranks in node_ranks(spec, master_port=False)]
    count = local // shape.replica
    return [
        [
            "--data-parallel-size-local",
            str(count),
            "--data-parallel-start-rank",
            str(rank * count),
            *meet,
            "--data-parallel-hybrid-lb",
        ]
        for rank in range(spec.nnodes)
    ]


def serve_flags(dp: int, spec: WorkerSpec) -> list[list[str]]:
    """Each node's flags of a `vllm serve` worker behind a router: its share of the DP
    ranks, `--headless` off the head; without DP, tensor/pipeline ranks over the nodes."""
    if not spec.multi_node:
        return [["--data-parallel-rpc-port", "${self.dp_rpc_port}"] if dp > 1 else []]
    if dp <= 1:
        return node_ranks(spec, master_port=True)
    local = dp // spec.nnodes
    shared = ["--data-parallel-size-local", str(local), "--data-parallel-address", "${self.host}"]
    shared += ["--data-parallel-rpc-port", "${self.dp_rpc_port}"]
    rest = [
        [*shared, "--headless", "--data-parallel-start-rank", str(rank * local)]
        for rank in range(1, spec.nnodes)
    ]
    return [shared, *rest]


def rank_flags(spec: WorkerSpec) -> list[str]:
    """One per-GPU process's flags: its global rank, meeting at rank 0's address and port."""
    head = spec.dp_head
    return [
        "--data-parallel-rank",
        str(spec.dp_rank),
        "--data-parallel-address",
        f"${{{head}.host}}",
        "--data-parallel-rpc-port",
        f"${{{head}.dp_rpc_port}}",
    ]


def node_ranks(spec: WorkerSpec, *, master_port: bool) -> list[list[str]]:
    """Tensor/pipeline ranks over the worker's nodes, `--headless` off the head node."""
    nodes = []
    for rank in range(spec.nnodes):
        ranks = ["--master-addr", "${self.host}", "--nnodes", str(spec.nnodes)]
        ranks += ["--node-rank", str(rank)]
        if master_port:
            ranks += ["--master-port", "${self.dist_init_port}"]
        nodes.append(ranks if rank == 0 else [*ranks, "--headless"])
    return nodes
