"""The plan's roles: what each process group runs, where, and how it is judged up."""

# No `from __future__ import annotations` here: pydantic would compile and evaluate
# each field's annotation string when the class is made, a cost every command pays.

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from disagg.model_defaults import empty_dict, empty_list


class Strict(BaseModel):
    """The base of every plan model: no unknown fields; validators built on first use, as one
    piece with the plan that holds them."""

    model_config = ConfigDict(extra="forbid", defer_build=True)


class GpuVendor(StrEnum):
    NVIDIA = "nvidia"
    AMD = "amd"

    @property
    def visible_devices_vars(self) -> tuple[str, ...]:
        """Environment variables that pin a process to a GPU subset on this vendor."""
        if self is GpuVendor.AMD:
            return ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")
        return ("CUDA_VISIBLE_DEVICES",)


class RoleKind(StrEnum):
    PREFILL = "prefill"
    DECODE = "decode"
    AGGREGATED = "aggregated"
    ROUTER = "router"  # the frontend: a router (smg, sglang-router) or Dynamo's frontend
    SERVICE = "service"  # what a frontend needs first: etcd, NATS, nginx
    BENCH = "bench"


WORKER_KINDS = (RoleKind.PREFILL, RoleKind.DECODE, RoleKind.AGGREGATED)


class HealthPlan(Strict):
    """How the orchestrator decides a role is up: a GET that answers 200 before the deadline."""

    path: str = "/health"
    deadline_s: float = 600.0
    interval_s: float = 0.2
    # When set, a 200 counts only if the body contains this text (e.g. a model name in
    # Dynamo's `/v1/models`: the frontend answers 200 before any worker has registered).
    expect: str | None = None
    # The role's port the GET goes to (`system`: a Dynamo worker's system status server).
    port: str = "http"
    # A body holding `expect` counts whatever the status: Dynamo's system server answers
    # 503 `notready` while listing each endpoint's own state (`"generate":"ready"`).
    any_status: bool = False


class ReadinessPlan(Strict):
    """A service's readiness gate (srt-slurm's `readiness:`), checked on each of its nodes:
    every probe set must pass there before the next stage starts."""

    # A port number, or the name of one of the role's own ports (`http`: `${self.http_port}`).
    tcp_port: int | str | None = None  # ready when the port accepts a connection on the node
    http_port: int | str | None = None  # ready when GET node:port{http_path} answers http_status
    http_path: str = "/health"
    http_status: int = 200
    log_pattern: str | None = None  # ready when a line of the node's log matches (a regex)
    timeout_s: float = 120.0  # per node, as srtctl waits
    interval_s: float = 2.0


class ParallelPlan(Strict):
    """A worker's parallel layout as its engine adapter reads the recipe (what it runs).
    Frozen: the workers of one kind and size share one."""

    model_config = ConfigDict(frozen=True)  # merged onto Strict's

    tp: int = 1
    dp: int = 1
    ep: int = 1
    pp: int = 1
    dp_attention: bool = False
    gpus: int = 1  # GPUs the engine uses: tp x pp, times dp unless the ranks are shared


class HostSetupPlan(Strict):
    """`host_setup`: shell commands run on each listed node's bare host (outside any
    container) before any role starts, and `teardown` after every role has stopped."""

    commands: list[str] = Field(default_factory=empty_list)  # joined with `&&`, as srtctl does
    teardown: list[str] = Field(default_factory=empty_list)
    node_ranks: list[int]
    ignore_failure: bool = False  # a failing node is logged, and the run goes on
    timeout_s: float = 300.0  # per node, for the commands and again for teardown


class MpiPlan(Strict):
    """A worker started as one MPI step across all its nodes, one rank per GPU (TRT-LLM over
    several nodes), instead of one task per node."""

    tasks_per_node: int
    mpi: str = "pmix"  # srun --mpi
    # srun options of this step, over the cluster's (`--key=value`; "" for a bare `--key`):
    # the engine's own launch needs (TRT-LLM: `cpu-bind=verbose,none`, `oversubscribe`).
    srun_options: dict[str, str] = Field(default_factory=empty_dict)


class RolePlan(Strict):
    """One process group. `argv` runs once per node in `node_ranks` (multi-node workers),
    which index the allocation's node list (0 = the first node, where the orchestrator
    runs); `gpu_ids` are the GPU indexes used on each of those nodes. `ports` names the ports
    the role needs (`http`, `bootstrap`, `dist_init`; `nixl*8`: 8 consecutive ports named by
    the first); the orchestrator picks the numbers at run time with a bind probe."""

    name: str  # "prefill-0", "decode-1", "aggregated-0", "router", "bench"
    kind: RoleKind
    index: int = 0
    node_ranks: list[int]
    gpus_per_node: int = 0
    gpu_ids: list[int] = Field(default_factory=empty_list)
    ports: list[str] = Field(default_factory=empty_list)
    argv: list[str] = Field(default_factory=empty_list)  # empty for the in-process bench role
    # One argv per node of a multi-node worker whose nodes run different commands (the
    # head node first); empty: `argv` on every node.
    node_argv: list[list[str]] = Field(default_factory=empty_list)
    # Files the orchestrator writes into the run directory (relative path -> text, with
    # `${...}` placeholders bound) before the role starts: configs an engine reads.
    files: dict[str, str] = Field(default_factory=empty_dict)
    env: dict[str, str] = Field(default_factory=empty_dict)
    health: HealthPlan | None = None
    container_image: str | None = None
    # srun options of this role's steps over the job's (schema 2's `roles.<role>.srun_options`:
    # `--key=value`; "" for a bare `--key`).
    srun_options: dict[str, str] = Field(default_factory=empty_dict)
    parallel: ParallelPlan | None = None  # workers only
    mpi: MpiPlan | None = None  # one MPI step over `node_ranks`, started from the head node
    speculative: str | None = None  # workers: the speculative decoding method, if any
    # False for a sidecar service: a task of it that ends is logged, and the run goes on.
    critical: bool = True
    readiness: ReadinessPlan | None = None  # services: the recipe's own readiness gate

    @property
    def nnodes(self) -> int:
        return len(self.node_ranks)

    @property
    def launch_ranks(self) -> list[int]:
        """The node ranks a task is started on: each node, or the head node of an MPI step."""
        return self.node_ranks[:1] if self.mpi is not None else self.node_ranks

    def argv_on(self, index: int) -> list[str]:
        """The argv of this role's `index`-th node (0 = its head node)."""
        return self.node_argv[index] if self.node_argv else self.argv

    @property
    def total_gpus(self) -> int:
        return self.gpus_per_node * len(self.node_ranks)
