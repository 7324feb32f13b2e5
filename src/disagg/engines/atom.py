"""ATOM (AMD's engine for ROCm GPUs) behind the engine seam: `atom.entrypoints.openai_server`.

Flags are ATOM's own CLI, keys as written (`--kv_cache_dtype`), group sizes short (`-tp`).
The plan owns the model, served name, API address and the internal `--port` (8006 by
default, which two workers on one node would share). Tensor parallelism spans a worker's
GPUs unless the role sets it (ATOM's recipes don't). Prefill/decode workers hand KV over
through Mooncake on a handshake port of their own, behind ATOM's router (atomesh).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any, ClassVar

from disagg.engines.base import (
    EngineAdapter,
    FlagTable,
    WorkerCommand,
    listen_host,
    render_args,
    staged_draft,
)
from disagg.engines.worker import Parallelism, SimReading, WorkerSpec

ATOM_MODULE = "atom.entrypoints.openai_server"
FLAGS = FlagTable(
    {
        "tp": ("tensor-parallel-size", "tp"),
        "dp": ("data-parallel-size", "dp"),
        "pp": ("pipeline-parallel-size", "pp"),
        "dp_attention": ("enable-dp-attention",),
        "expert_parallel": ("enable-expert-parallel",),
        "served_model_name": ("served-model-name",),
        "max_running_requests": ("max-num-seqs",),
        "chunk_size": ("max-num-batched-tokens",),
        "context_length": ("max-model-len",),
        "cuda_graph_sizes": ("cudagraph-capture-sizes",),
        "speculative": ("method",),
        "speculative_steps": ("num-speculative-tokens",),
        "draft_model": ("draft-model",),
        "kv_transfer_config": ("kv-transfer-config",),
    },
    paths=frozenset({"draft-model", "chat-template"}),
)
# Flags the plan sets itself, dropped from the recipe's settings.
PLACEMENT_FLAGS = frozenset({"model", "host", "server-port", "port"})
_SHORT = frozenset({"tp", "dp", "pp", "pcp", "dcp"})  # ATOM's single-dash group sizes
DEFAULT_CONNECTOR = "mooncake"
ATOMESH = "atomesh"  # the frontend type of ATOM's own router
_ROLES = {"prefill": "kv_producer", "decode": "kv_consumer"}


def kv_transfer_json(mode: str, connector: str, protocol: str | None) -> str:
    """`--kv-transfer-config` of a prefill/decode worker; the ports are placeholders bound to
    bare numbers (ATOM adds rank offsets to the handshake port)."""
    parts = [f'"kv_role":"{_ROLES[mode]}"', f'"kv_connector":"{connector}"']
    parts += ['"handshake_port":${self.handshake_port}', '"http_port":${self.http_port}']
    if protocol:
        parts.append(f'"protocol":"{protocol}"')
    return "{" + ",".join(parts) + "}"


class Atom(EngineAdapter):
    name: ClassVar[str] = "atom"
    flags: ClassVar[FlagTable] = FLAGS
    placement_keys: ClassVar[frozenset[str]] = PLACEMENT_FLAGS
    backend_fields: ClassVar[frozenset[str]] = frozenset({"connector", "mooncake_protocol"})
    health_deadline_s: ClassVar[float] = 1800.0  # large MoE checkpoints load for a long while

    def worker_parallelism(self, args: Mapping[str, Any], spec: WorkerSpec) -> Parallelism:
        """Without a written tensor-parallel size, a worker's ranks span all its GPUs."""
        par = self.parallelism(args)
        if FLAGS.find(args, "tp") is not None:
            return par
        gpus = max(1, spec.gpus_per_node * spec.nnodes)
        tp = max(1, gpus // (par.pp * (1 if par.dp_attention else par.dp)))
        expert = FLAGS.value(args, "expert_parallel") is True
        return replace(par, tp=tp, ep=tp * par.dp if expert else 1)

    def sim_reading(self, args: Mapping[str, Any]) -> SimReading:
        sizes = FLAGS.value(args, "cuda_graph_sizes")
        return replace(super().sim_reading(args), cuda_graph_max_bs=_largest(sizes))

    def unsupported(self, args: Mapping[str, Any], spec: WorkerSpec) -> tuple[str, str] | None:
        if spec.simulated:
            return None
        if spec.multi_node:
            return "tensor-parallel-size", "an ATOM worker over several nodes"
        if spec.mode is not None:
            connector = str(spec.backend.get("connector") or DEFAULT_CONNECTOR)
            if connector != DEFAULT_CONNECTOR:
                return "connector", f"backend.connector {connector} (ATOM's is mooncake)"
            if spec.frontend == ATOMESH:
                return None
            return "kv-transfer-config", (
                f"an ATOM {spec.mode} worker behind frontend type {spec.frontend}: its KV "
                "hand-over needs ATOM's own router (`frontend.type: atomesh`)"
            )
        return None

    def engine_flags(self, args: Mapping[str, Any], spec: WorkerSpec) -> list[str]:
        kept: dict[str, Any] = {}
        for key, value in args.items():
            name = FLAGS.normalise(key)
            if name in PLACEMENT_FLAGS or name == "kv-transfer-config":
                continue
            kept[str(key)] = staged_draft(value) if name == "draft-model" else value
        if FLAGS.find(args, "served_model_name") is None:
            kept["served-model-name"] = spec.served_name
        if FLAGS.find(args, "tp") is None:
            kept["tensor-parallel-size"] = self.worker_parallelism(args, spec).tp
        own = FLAGS.value(args, "kv_transfer_config")
        if spec.mode is not None:
            connector = str(spec.backend.get("connector") or DEFAULT_CONNECTOR)
            protocol = spec.backend.get("mooncake_protocol")
            kept["kv-transfer-config"] = kv_transfer_json(
                spec.mode, connector, str(protocol) if protocol else None
            )
        elif own is not None:
            kept["kv-transfer-config"] = own
        return render_args(kept, flag=lambda key: f"-{key}" if key in _SHORT else f"--{key}")

    def worker(self, args: Mapping[str, Any], spec: WorkerSpec) -> WorkerCommand:
        argv = ["python3", "-m", ATOM_MODULE, "--model", "${model.path}"]
        argv += self.engine_flags(args, spec)
        argv += ["--host", listen_host(args), "--server-port", "${self.http_port}"]
        argv += ["--port", "${self.engine_port}"]
        ports = ["http", "engine"]
        env: dict[str, str] = {}
        if spec.mode is not None:
            ports.append("handshake")
            if spec.backend.get("mooncake_protocol") == "tcp":
                env["MC_TCP_ENABLE_CONNECTION_POOL"] = "true"
        return WorkerCommand(argv=argv, ports=ports, env=env)


def _largest(sizes: Any) -> int | None:
    """The largest CUDA-graph batch of `cudagraph-capture-sizes` (`"[1,2,4]"` or a list)."""
    if isinstance(sizes, str):
        sizes = [part.strip() for part in sizes.strip("[] ").split(",") if part.strip()]
    if not isinstance(sizes, list):
        return None
    return max((int(s) for s in sizes if str(s).isdigit()), default=None)


ADAPTER = Atom()
