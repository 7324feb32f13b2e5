"""The engine seam: what placement, lint, staging and the simulator ask of an engine.

One adapter per engine: the module `engines/<backend.type>.py` with its `ADAPTER`. An
adapter owns everything engine-specific, its one flag table included: nothing outside an
adapter spells an engine flag.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, ClassVar

from disagg.engines.sim.command import sim_worker_argv
from disagg.engines.worker import (
    Parallelism,
    SimReading,
    WorkerRole,
    WorkerSpec,
    as_int,
)

# Where a Dynamo worker dumps its resolved configuration, as srtctl has dynamo.sglang and
# dynamo.vllm do: the run directory, mounted where srtctl mounts its log directory.
CONFIG_DUMP = ["--dump-config-to", "${run.dir}/${self.node}_config.json"]
CONFIG_DUMP_ROW = "config-dump-path"


@lru_cache(maxsize=4096)
def _spelled(keys: tuple[Any, ...], dashes: bool) -> Mapping[str, Any]:
    """Each key of a role's settings by its canonical spelling (the last one wins): worked
    out once per map's keys, not once per lookup (placement and lint ask a dozen each)."""
    return {_canonical(key, dashes): key for key in keys}


def _canonical(key: Any, dashes: bool) -> str:
    return str(key).replace("_", "-") if dashes else str(key)


@dataclass(frozen=True)
class FlagTable:
    """Every spelling an engine accepts for each setting the plan or simulator reads.

    `dashes`: `tp_size` and `tp-size` are one key (SGLang, vLLM; TRT-LLM's YAML keys are
    taken as written). `paths`: canonical keys whose value is a host file or directory a
    containerised role must reach through a mount (`key.sub`: a path inside a map value or
    its JSON text); cache and output directories may stay inside the container.
    """

    spellings: Mapping[str, tuple[str, ...]]
    dashes: bool = True
    paths: frozenset[str] = frozenset()

    def normalise(self, key: str) -> str:
        return _canonical(key, self.dashes)

    def find(self, args: Mapping[str, Any], setting: str) -> tuple[str, Any] | None:
        """(key as written, value) of the first spelling of `setting` present in `args`."""
        names = self.spellings.get(setting, ())
        if not names or not args:
            return None
        written = _spelled(tuple(args), self.dashes)
        for name in names:
            if name in written:
                return written[name], args[written[name]]
        return None

    def value(self, args: Mapping[str, Any], setting: str) -> Any:
        hit = self.find(args, setting)
        return hit[1] if hit else None

    def size(self, args: Mapping[str, Any], setting: str) -> int:
        """A positive integer setting (a parallel size), 1 when unset or not an integer."""
        value = as_int(self.value(args, setting))
        return value if value is not None and value >= 1 else 1

    def names(self, setting: str) -> tuple[str, ...]:
        return self.spellings.get(setting, ())

    def is_path(self, key: str) -> bool:
        """Whether the written `key`'s value is a host path (the path kind)."""
        return self.normalise(key) in self.paths

    def path_fields(self, key: str) -> tuple[str, ...]:
        """Fields of the written `key`'s map value that are host paths (`key.sub` entries)."""
        prefix = self.normalise(key) + "."
        return tuple(sorted(p[len(prefix) :] for p in self.paths if p.startswith(prefix)))


@dataclass(frozen=True)
class Ignored:
    """A role setting the plan does not pass on as written, and why (shown by plan and lint)."""

    key: str  # as written in the role's settings
    reason: str


@dataclass
class WorkerCommand:
    """How to start one worker: what the plan writes into its RolePlan."""

    argv: list[str]
    ports: list[str]
    env: dict[str, str] = field(default_factory=dict)
    # One argv per node, head first, where nodes run different commands (vLLM's --headless).
    node_argv: list[list[str]] = field(default_factory=list)
    # Text files the worker reads, relative to the run directory (TRT-LLM's YAML).
    files: dict[str, str] = field(default_factory=dict)
    # Set: one MPI step (srun --mpi) with this many ranks on each node instead of one task
    # per node, with its own srun options (`--key=value`, "" for a bare `--key`).
    mpi_tasks_per_node: int | None = None
    mpi_srun_options: dict[str, str] = field(default_factory=dict)
    # Ids of `disagg.plan.compat` rows: where this worker differs from srtctl's on purpose.
    differs: list[str] = field(default_factory=list)
    # The image when not the job's (TileRT's `prefill_container`).
    container: str | None = None
    # Settings not passed on as written that depend on the spec (its frontend, ...).
    ignored: list[Ignored] = field(default_factory=list)
    # Variables cleared for this worker, the recipe's own included (srtctl's env_to_unset).
    unset_env: tuple[str, ...] = ()


class EngineAdapter(ABC):
    """One engine behind the seam. Subclasses are stateless; one instance is registered."""

    name: ClassVar[str]  # `backend.type`
    flags: ClassVar[FlagTable]
    health_path: ClassVar[str] = "/health"
    health_deadline_s: ClassVar[float] = 600.0
    # Keys the plan sets itself (placement, model location); dropped from recipe args.
    placement_keys: ClassVar[frozenset[str]] = frozenset()
    # Placement keys whose written value the plan still honours (`host`: listen address).
    honoured_keys: ClassVar[frozenset[str]] = frozenset({"host"})
    placement_reason: ClassVar[str] = "set by the plan (placement, ports or the staged model)"
    # Engine-wide `backend.*` knobs this adapter carries out (see `backend_fields`).
    backend_fields: ClassVar[frozenset[str]] = frozenset()
    # Knob -> the role's key: schema 2's knob on one role's engine sets it for that role only.
    role_knobs: ClassVar[Mapping[str, str]] = {}
    # False: GPU workers emulated on none (Dynamo's mocker); no layout need fit the GPUs.
    uses_gpus: ClassVar[bool] = True
    # Whether the `allow_prefill_decode_colocation` knobs apply (srtctl: VLLMProtocol only).
    colocates: ClassVar[bool] = False
    # False: workers run from disagg's own environment (the mocker), not `model.container`.
    in_image: ClassVar[bool] = True

    @property
    def config_section(self) -> str:
        """The v1 recipe's `backend.<section>` holding per-role settings."""
        return f"{self.name}_config"

    def args_path(self, role: WorkerRole) -> tuple[str, ...]:
        """Where a role's settings are written in a resolved variant (for messages)."""
        return ("backend", self.config_section, role)

    def role_args(self, backend: Mapping[str, Any], role: WorkerRole) -> Mapping[str, Any]:
        """A role's settings from the recipe's `backend` map (typed or raw), `{}` if none."""
        section = backend.get(self.config_section)
        args = section.get(role) if isinstance(section, Mapping) else None
        return args if isinstance(args, Mapping) else {}

    def parallelism(self, args: Mapping[str, Any]) -> Parallelism:
        """The settings' layout; expert parallelism on (vLLM's, ATOM's switch) makes every
        rank an expert rank."""
        table = self.flags
        tp, dp = table.size(args, "tp"), table.size(args, "dp")
        expert = table.value(args, "expert_parallel") is True
        return Parallelism(
            tp=tp,
            dp=dp,
            ep=tp * dp if expert else table.size(args, "ep"),
            pp=table.size(args, "pp"),
            dp_attention=table.value(args, "dp_attention") is True,
        )

    def worker_parallelism(self, args: Mapping[str, Any], spec: WorkerSpec) -> Parallelism:
        """The layout of one placed worker (for engines that size it from its GPUs)."""
        return self.parallelism(args)

    def emulates(self, backend: Mapping[str, Any]) -> str | None:
        """The engine whose behaviour this one emulates, for an engine that emulates one."""
        return None

    def draft_model(self, args: Mapping[str, Any]) -> str | None:
        """The draft/speculative model the role names (repo id or path), if any."""
        value = self.flags.value(args, "draft_model")
        return value if isinstance(value, str) and value else None

    def served_model_name(self, args: Mapping[str, Any]) -> str | None:
        value = self.flags.value(args, "served_model_name")
        return str(value) if value is not None else None

    def written_mode(self, args: Mapping[str, Any]) -> tuple[str, Any] | None:
        """(key, value) of a prefill/decode mode the recipe wrote itself, if the engine has one."""
        return self.flags.find(args, "mode")

    def ignored(self, args: Mapping[str, Any], role: WorkerRole) -> list[Ignored]:
        """Settings the plan replaces with its own values (placement, model location, ports)."""
        return [
            Ignored(str(key), self.placement_reason)
            for key in args
            if self.flags.normalise(key) in self.placement_keys - self.honoured_keys
        ]

    def unsupported(self, args: Mapping[str, Any], spec: WorkerSpec) -> tuple[str, str] | None:
        """(key, what) when this worker cannot run as written: the plan refuses it up front."""
        return None

    def rank_processes(self, args: Mapping[str, Any], spec: WorkerSpec) -> bool:
        """Whether the worker runs a process per GPU, each its own role asked for its command
        with `spec.dp_rank` set (vLLM's `dp_launch_mode: per_gpu`)."""
        return False

    def pd_router(
        self, prefill: list[str], decode: list[str], frontend: Mapping[str, Any]
    ) -> WorkerCommand | None:
        """The engine's own router for real prefill/decode workers, when its KV hand-over
        needs one (TRT-LLM's); `frontend`: the recipe's section as written."""
        return None

    def command(self, args: Mapping[str, Any], spec: WorkerSpec) -> WorkerCommand:
        """The worker's command: the real engine's, or the simulated engine's reading of it."""
        return self.simulated_worker(args, spec) if spec.simulated else self.worker(args, spec)

    def simulated_worker(self, args: Mapping[str, Any], spec: WorkerSpec) -> WorkerCommand:
        """The simulated engine, told what this engine would run (`worker_reading`)."""
        served = self.served_model_name(args) or spec.served_name
        argv = sim_worker_argv(
            self.worker_reading(args, spec), spec, served_name=served, host=listen_host(args)
        )
        return WorkerCommand(argv=argv, ports=bootstrap_ports(spec))

    def worker_reading(self, args: Mapping[str, Any], spec: WorkerSpec) -> SimReading:
        """`sim_reading` of one placed worker, on the GPUs it is given (`worker_parallelism`)."""
        return replace(self.sim_reading(args), parallel=self.worker_parallelism(args, spec))

    @abstractmethod
    def engine_flags(self, args: Mapping[str, Any], spec: WorkerSpec) -> list[str]:
        """The role's flags without program, model or placement: what a frontend running the
        engine under its own module (`python -m dynamo.<engine>`) reuses."""

    @abstractmethod
    def worker(self, args: Mapping[str, Any], spec: WorkerSpec) -> WorkerCommand:
        """The real engine's command, with plan `${...}` placeholders."""

    def sim_reading(self, args: Mapping[str, Any]) -> SimReading:
        table = self.flags
        return SimReading(
            parallel=self.parallelism(args),
            max_running_requests=as_int(table.value(args, "max_running_requests")),
            chunked_prefill_size=as_int(table.value(args, "chunk_size")),
            max_prefill_tokens=as_int(table.value(args, "max_prefill_tokens")),
            cuda_graph_max_bs=as_int(table.value(args, "cuda_graph_max_bs")),
            speculative_algorithm=_text_or_none(table.value(args, "speculative")),
            speculative_num_steps=as_int(table.value(args, "speculative_steps")),
            context_length=as_int(table.value(args, "context_length")),
        )


def render_args(args: Mapping[str, Any], flag: Callable[[str], str] | None = None) -> list[str]:
    """Settings -> flags, in the recipe's order (DESIGN.md): `key: value` -> `--key value`
    (`tp_size` -> `--tp-size`, or as `flag` spells a key), `true` -> `--key`, `false` and
    `null` omitted, a list -> `--key v1 v2 ...` (an empty one omitted), a map -> JSON."""
    out: list[str] = []
    for key, value in args.items():
        name = flag(str(key)) if flag else "--" + str(key).replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            out.append(name)
        elif isinstance(value, list):
            if value:
                out += [name, *(_text(item) for item in value)]
        else:
            out += [name, _text(value)]
    return out


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Mapping | list):
        return json.dumps(value)
    return str(value)


def staged_draft(value: Any) -> Any:
    """A draft model named by repo id as its staged copy (`${model.draft}`), else `value`."""
    from disagg.cluster import is_repo_id  # not at the top: the simulator reads flag tables

    return "${model.draft}" if isinstance(value, str) and is_repo_id(value) else value


def listen_host(args: Mapping[str, Any]) -> str:
    """The address a worker listens on: its node's own, not every interface, unless the
    role's `host` asks for another (e.g. 0.0.0.0)."""
    written = args.get("host")
    return "${self.bind_host}" if written is None else str(written)


def bootstrap_ports(spec: WorkerSpec) -> list[str]:
    """Ports of a worker speaking SGLang's PD protocol (SGLang, the simulated engine)."""
    ports = ["http"]
    if spec.mode == "prefill":
        ports.append("bootstrap")
    if spec.multi_node:
        ports.append("dist_init")
    return ports


def _text_or_none(value: Any) -> str | None:
    return str(value) if value not in (None, False, "") else None
