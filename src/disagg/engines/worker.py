"""One worker as the plan decides it (`WorkerSpec`) and as its engine reads its settings
(`Parallelism`, `SimReading`): what the engine adapters, the simulated engine's command
and the plan share, below all of them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

Mode = Literal["prefill", "decode"]
# A worker role as resources and per-role settings name it.
WorkerRole = Literal["prefill", "decode", "aggregated"]
WORKER_ROLES: tuple[WorkerRole, ...] = ("prefill", "decode", "aggregated")


def as_int(value: Any) -> int | None:
    """A setting's value when it is an integer (YAML's `true` is not one)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class Parallelism:
    """A worker's parallel layout as its engine reads its settings.

    `replicas_use_gpus`: whether data-parallel ranks add GPUs (SGLang and vLLM without
    attention-DP) or share the tensor-parallel ranks (attention-DP, TRT-LLM).
    """

    tp: int = 1
    dp: int = 1
    ep: int = 1
    pp: int = 1
    dp_attention: bool = False
    replicas_use_gpus: bool = True

    @property
    def gpus(self) -> int:
        """GPUs one worker's engine uses."""
        replicas = self.dp if self.replicas_use_gpus and not self.dp_attention else 1
        return self.tp * self.pp * replicas


@dataclass(frozen=True)
class SimReading:
    """What the simulated engine needs to know about one worker, read by its adapter."""

    parallel: Parallelism
    max_running_requests: int | None = None
    chunked_prefill_size: int | None = None
    max_prefill_tokens: int | None = None
    cuda_graph_max_bs: int | None = None
    speculative_algorithm: str | None = None
    speculative_num_steps: int | None = None
    context_length: int | None = None

    def per_rank(self, ranks: int, graph_max: int | None) -> SimReading:
        """The worker's totals where its batch limits bound each of `ranks` schedulers
        (TRT-LLM's attention-DP ranks, vLLM's engine cores): each limit times the ranks,
        one token budget per step (no separate cap on the prefill part)."""

        def times(limit: int | None) -> int | None:
            return None if limit is None else limit * ranks

        return replace(
            self,
            max_running_requests=times(self.max_running_requests),
            chunked_prefill_size=times(self.chunked_prefill_size),
            max_prefill_tokens=times(self.chunked_prefill_size),
            cuda_graph_max_bs=times(graph_max),
        )


@dataclass(frozen=True)
class WorkerSpec:
    """What the plan has decided about one worker when it asks for its command."""

    role: WorkerRole
    served_name: str
    nnodes: int = 1
    gpus_per_node: int = 1  # GPUs the worker has on each of its nodes
    ib_devices: tuple[str, ...] = ()
    simulated: bool = False
    frontend: str = "sglang"  # the recipe's `frontend.type`
    gpu_type: str | None = None  # the recipe's `resources.gpu_type` (TRT-LLM's numactl default)
    schema2: bool = False  # written in srt-slurm 2.x's schema (its defaults where they differ)
    # The recipe's `backend` map as written, for the engine-wide knobs an adapter honours.
    backend: Mapping[str, Any] = field(default_factory=dict)
    # Schema 2's `roles.<role>.engine` when it is not the variant's (a pair the variant's
    # adapter runs, TileRT's vllm prefill); `backend` then holds that role's own knobs only.
    engine: str | None = None
    # One process of a worker launched a process per GPU (`rank_processes`): its global
    # data-parallel rank, and the role of rank 0, whose address and ports the ranks share.
    dp_rank: int | None = None
    dp_head: str = "self"

    @property
    def mode(self) -> Mode | None:
        return None if self.role == "aggregated" else self.role

    @property
    def multi_node(self) -> bool:
        return self.nnodes > 1
