"""vLLM behind the engine seam: `vllm serve MODEL` workers (`python -m dynamo.vllm` under Dynamo).

Flags come from `backend.vllm_config.<role>` (SGLang's rendering); the plan owns the model
location, `--host`/`--port` and everything multi-node. KV transfer is `--kv-transfer-config`:
the role's own, else its `connector`, else `backend.connector` (srt-slurm's default: nixl);
a `vllm serve` prefill/decode worker behind a router hands KV over only through one, so one
without a connector is refused. A multi-node `vllm serve` worker shares its DP ranks out
over its nodes (`--headless` off the head), or without DP spans tensor/pipeline ranks over
them; under Dynamo a worker that writes `data-parallel-size` takes srt-slurm's DP layouts
(`disagg.engines.vllm_dp`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, ClassVar

from disagg.engines import vllm_dp as dp
from disagg.engines.base import (
    EngineAdapter,
    FlagTable,
    Ignored,
    WorkerCommand,
    listen_host,
    render_args,
    staged_draft,
)
from disagg.engines.vllm_dp import DYNAMO, PER_GPU, PER_NODE, DpShape
from disagg.engines.worker import SimReading, WorkerRole, WorkerSpec

FLAGS = FlagTable(
    {
        "tp": ("tensor-parallel-size",),
        "dp": ("data-parallel-size",),
        "pp": ("pipeline-parallel-size",),
        "expert_parallel": ("enable-expert-parallel",),
        "draft_model": ("speculative-model",),
        "speculative_config": ("speculative-config",),
        "served_model_name": ("served-model-name",),
        "max_running_requests": ("max-num-seqs",),
        "chunk_size": ("max-num-batched-tokens",),
        "cuda_graph_max_bs": ("max-cudagraph-capture-size",),
        "context_length": ("max-model-len",),
        "kv_transfer_config": ("kv-transfer-config",),
        "connector": ("connector",),
        "hybrid_lb": ("data-parallel-hybrid-lb",),
        "headless": ("headless",),
    },
    # Host files a worker reads; `speculative-config.model` is the draft inside its JSON.
    paths=frozenset(
        {
            "speculative-model",
            "speculative-config.model",
            "tokenizer",
            "hf-config-path",
            "ssl-keyfile",
            "ssl-certfile",
            "ssl-ca-certs",
        }
    ),
)
PLACEMENT_FLAGS = frozenset(
    {
        "model",
        "host",
        "port",
        "headless",
        "nnodes",
        "node-rank",
        "master-addr",
        "master-port",
        "data-parallel-address",
        "data-parallel-rpc-port",
        "data-parallel-size-local",
        "data-parallel-start-rank",
        "data-parallel-rank",
    }
)
# Consumed into --kv-transfer-config, never rendered as flags of their own.
_CONNECTOR_KEYS = frozenset({"connector", "kv-transfer-config"})
CONNECTORS: dict[str, dict[str, str]] = {
    "nixl": {"kv_connector": "NixlConnector", "kv_role": "kv_both"},
    "lmcache": {"kv_connector": "LMCacheConnectorV1", "kv_role": "kv_both"},
    "kvbm": {
        "kv_connector": "DynamoConnector",
        "kv_connector_module_path": "kvbm.vllm_integration.connector",
        "kv_role": "kv_both",
    },
}
DEFAULT_CONNECTOR = "nixl"
DIRECT = "vllm-direct"  # schema 2's `frontend.type: vllm`: the one worker serves the load
# Flags of the API server only, dropped on a direct worker's headless nodes, where vLLM
# refuses them (srt-slurm's `pop_vllm_api_server_flags`).
_API_SERVER_ONLY = frozenset({"api-server-count"})
DEVICE_IDS_ROW = "vllm-device-ids"  # the `disagg.plan.compat` row on GPU selection
PER_GPU_RANKS_ROW = "vllm-per-gpu-written-ranks"  # the row on rank flags a recipe writes
# Written rank flags srt-slurm's per-GPU layout passes on beside its own.
_RANK_FLAGS = frozenset(
    {
        "headless",
        "data-parallel-size-local",
        "data-parallel-start-rank",
        "data-parallel-address",
        "data-parallel-rank",
    }
)
# Derived by the plan under Dynamo's per-node DP layout, never taken from the recipe.
_DP_DERIVED = frozenset({"data-parallel-hybrid-lb"})
NO_CONNECTOR = ("null", "none", "")
KV_EVENTS_PORT = "kv_events"  # `--kv-events-config`'s endpoint and DYN_VLLM_KV_EVENT_PORT
# VLLM_PORT: the base vLLM scans up from for free ports, a block per process (srtctl's stride).
VLLM_PORT_BLOCK = "vllm*50"


def kv_transfer_config(written: Any) -> str | None:
    """`--kv-transfer-config` text for a shorthand, a map or raw JSON; None for no connector."""
    if written is None or written is False:
        return None
    if isinstance(written, Mapping):
        return json.dumps(dict(written))
    text = str(written).strip()
    if text.lower() in NO_CONNECTOR:
        return None
    preset = CONNECTORS.get(text.lower())
    return json.dumps(preset) if preset is not None else text


def _speculative(args: Mapping[str, Any]) -> dict[str, Any]:
    """`speculative-config` as a map (vLLM takes it as JSON text or, here, a YAML map)."""
    value = FLAGS.value(args, "speculative_config")
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return dict(value) if isinstance(value, Mapping) else {}


class VLLM(EngineAdapter):
    name: ClassVar[str] = "vllm"
    flags: ClassVar[FlagTable] = FLAGS
    placement_keys: ClassVar[frozenset[str]] = PLACEMENT_FLAGS
    # `kv_events_config`: plan.kv_events; the colocation knobs: plan.node_layout.
    backend_fields: ClassVar[frozenset[str]] = frozenset(
        {
            "connector",
            "vllm_serve_binary",
            "kv_events_config",
            "dp_launch_mode",
            "allow_prefill_decode_colocation",
            "allow_prefill_decode_colocation_across_nodes",
        }
    )
    colocates: ClassVar[bool] = True
    role_knobs: ClassVar[Mapping[str, str]] = {"connector": "connector"}

    def role_args(self, backend: Mapping[str, Any], role: WorkerRole) -> Mapping[str, Any]:
        """A prefill/decode role without a connector of its own (or a null one, as srtctl
        reads it) takes `backend.connector`."""
        args = dict(super().role_args(backend, role))
        own = [v for k, v in args.items() if FLAGS.normalise(k) in _CONNECTOR_KEYS]
        if role != "aggregated" and all(value is None for value in own):
            args["connector"] = backend.get("connector", DEFAULT_CONNECTOR)
        return args

    def draft_model(self, args: Mapping[str, Any]) -> str | None:
        model = _speculative(args).get("model") or FLAGS.value(args, "draft_model")
        return model if isinstance(model, str) and model else None

    def sim_reading(self, args: Mapping[str, Any]) -> SimReading:
        """Batch limits bound each data-parallel rank (each its own engine core and
        scheduler): the simulated worker, standing for all ranks, is told their totals."""
        base = super().sim_reading(args)
        spec = _speculative(args)
        steps = spec.get("num_speculative_tokens")
        return replace(
            base.per_rank(base.parallel.dp, base.cuda_graph_max_bs),
            speculative_algorithm=str(spec["method"]) if spec.get("method") else None,
            speculative_num_steps=steps if isinstance(steps, int) else None,
        )

    def kv_transfer(self, args: Mapping[str, Any], spec: WorkerSpec) -> str | None:
        """The worker's `--kv-transfer-config`: its own, else its connector, else (aggregated
        under Dynamo only, as srt-slurm's) `backend.connector`."""
        written = FLAGS.value(args, "kv_transfer_config")
        if written is None and spec.frontend != DIRECT:  # srt-slurm drops it there
            written = FLAGS.value(args, "connector")
        if written is None and spec.mode is None and spec.frontend == DYNAMO:
            written = spec.backend.get("connector", DEFAULT_CONNECTOR)
        return kv_transfer_config(written)

    def unsupported(self, args: Mapping[str, Any], spec: WorkerSpec) -> tuple[str, str] | None:
        served_pd = spec.mode is not None and spec.frontend != DYNAMO  # `vllm serve` P/D
        if served_pd and self.kv_transfer(args, spec) is None:
            return "connector", (
                f"a `vllm serve` {spec.mode} worker without a KV connector behind frontend "
                f"type {spec.frontend} (its router hands KV over through the connector only)"
            )
        shape = _shape(args)
        if dp.layout(shape, spec) is not None:
            return None if spec.simulated else dp.problem(shape, spec)
        routed = spec.frontend not in (DYNAMO, DIRECT)  # `vllm serve` behind a router
        if routed and dp.launch_mode(spec) == dp.PER_GPU and shape.dp_written:
            return "data-parallel-size", (
                f"backend.dp_launch_mode per_gpu behind frontend.type {spec.frontend} "
                "(its per-GPU ranks register with Dynamo, not as API servers a router "
                "reaches: frontend.type dynamo)"
            )
        # srt-slurm passes a written hybrid-lb through on Dynamo and direct workers; only
        # `vllm serve` behind a router has no API server on its headless nodes to balance.
        hybrid = FLAGS.find(args, "hybrid_lb") if spec.multi_node and routed else None
        if hybrid is not None and hybrid[1] is True:
            return hybrid[0], (
                "data-parallel-hybrid-lb on a multi-node `vllm serve` worker (one API server "
                "per node; Dynamo's frontend registers them: frontend.type dynamo)"
            )
        par = self.parallelism(args)
        # A direct worker leaves the ranks to vLLM's own multi-node serve (no per-node DP
        # flags), as srtctl renders it; the others split DP ranks evenly over their nodes.
        spread = spec.multi_node and spec.frontend != DIRECT
        if spread and par.dp > 1 and par.dp % spec.nnodes:
            what = f"data-parallel-size {par.dp} over {spec.nnodes} nodes (unequal ranks per node)"
            return "data-parallel-size", what
        return None

    def rank_processes(self, args: Mapping[str, Any], spec: WorkerSpec) -> bool:
        return dp.layout(_shape(args), spec) == PER_GPU

    def engine_flags(self, args: Mapping[str, Any], spec: WorkerSpec) -> list[str]:
        # Under Dynamo's per-node DP layout the plan derives hybrid load balancing itself.
        derived = _DP_DERIVED if dp.layout(_shape(args), spec) == PER_NODE else frozenset()
        kept: dict[str, Any] = {}
        for key, value in args.items():
            name = FLAGS.normalise(key)
            if name in PLACEMENT_FLAGS or name in _CONNECTOR_KEYS or name in derived:
                continue
            if name == "speculative-config":
                spec_map = _speculative(args)
                model = staged_draft(spec_map.get("model"))
                if model != spec_map.get("model"):
                    value = json.dumps({**spec_map, "model": model})
            elif name == "speculative-model":
                value = staged_draft(value)
            kept[name] = value
        kept.setdefault("served-model-name", spec.served_name)
        transfer = self.kv_transfer(args, spec)
        if transfer is not None:
            kept["kv-transfer-config"] = transfer
        return render_args(kept)

    def node_flags(self, args: Mapping[str, Any], spec: WorkerSpec) -> list[list[str]]:
        """The placement flags of each node (head first) that `vllm serve` and `python -m
        dynamo.vllm` alike add after `engine_flags`, besides the API address."""
        if spec.dp_rank is not None:  # one process of the per-GPU layout
            return [dp.rank_flags(spec)]
        shape = _shape(args)
        if dp.layout(shape, spec) == PER_NODE:
            return dp.per_node_flags(shape, spec)
        if spec.frontend == DIRECT and spec.multi_node:
            # vLLM's own multi-node serve, as srt-slurm's direct frontend renders it: every
            # node meets the head, DP ranks included; no rendezvous port of the plan's.
            return dp.node_ranks(spec, master_port=False)
        return dp.serve_flags(self.parallelism(args).dp, spec)

    def worker_ports(
        self, args: Mapping[str, Any], spec: WorkerSpec
    ) -> tuple[list[str], dict[str, str]]:
        """(ports, environment) of one worker process besides its flags.

        Every process gets a NIXL side channel, whatever its connector, as srtctl's do: at
        that port plus the DP rank, so the head holds a block and per-GPU ranks name rank 0's.
        A private `VLLM_PORT` keeps co-located workers from racing for one rendezvous port;
        a multi-node worker gets none (srtctl unsets it: its ranks would share the base)."""
        dp_size, rank = self.parallelism(args).dp, spec.dp_rank
        dp_mode = dp_size > 1 or dp.layout(_shape(args), spec) == PER_NODE
        ports = ["http"]
        if rank in (None, 0):
            ports.append(f"nixl*{dp_size}" if dp_size > 1 else "nixl")
        if rank == 0 or (rank is None and dp_mode):
            ports.append("dp_rpc")
        if spec.multi_node and not dp_mode:
            ports.append("dist_init")
        ports.append(KV_EVENTS_PORT)
        env = {
            "VLLM_NIXL_SIDE_CHANNEL_HOST": "${self.bind_host}",
            "VLLM_NIXL_SIDE_CHANNEL_PORT": f"${{{spec.dp_head}.nixl_port}}",
            "DYN_VLLM_KV_EVENT_PORT": "${self.kv_events_port}",
        }
        if not spec.multi_node:
            ports.append(VLLM_PORT_BLOCK)
            env["VLLM_PORT"] = "${self.vllm_port}"
        return ports, env

    def worker(self, args: Mapping[str, Any], spec: WorkerSpec) -> WorkerCommand:
        program = str(spec.backend.get("vllm_serve_binary") or "vllm")
        flags = [program, "serve", "${model.path}", *self.engine_flags(args, spec)]
        serve = ["--host", listen_host(args), "--port", "${self.http_port}"]
        ports, env = self.worker_ports(args, spec)
        placed = self.node_flags(args, spec)
        per_node = dp.layout(_shape(args), spec) == PER_NODE
        derived = [
            Ignored(str(key), "derived from the per-node data-parallel layout under Dynamo")
            for key in args
            if per_node and FLAGS.normalise(key) in _DP_DERIVED
        ]
        # srt-slurm selects GPUs with --device-ids unless told to mask them by environment
        masked = any(
            spec.backend.get(k) for k in ("set_cuda_visible_devices", "set_visible_devices")
        )
        differs = [] if masked else [DEVICE_IDS_ROW]
        if spec.dp_rank is not None and any(FLAGS.normalise(k) in _RANK_FLAGS for k in args):
            differs.append(PER_GPU_RANKS_ROW)
        command = WorkerCommand(
            flags + serve + placed[0], ports, env, differs=differs, ignored=derived
        )
        if not spec.multi_node:
            return command
        headless = flags
        if spec.frontend == DIRECT:
            api_less = {k: v for k, v in args.items() if FLAGS.normalise(k) not in _API_SERVER_ONLY}
            headless = [program, "serve", "${model.path}", *self.engine_flags(api_less, spec)]
        nodes = [flags + placed[0] + serve, *(headless + node for node in placed[1:])]
        return replace(command, argv=nodes[0], node_argv=nodes, unset_env=("VLLM_PORT",))


def _shape(args: Mapping[str, Any]) -> DpShape:
    """The worker's parallelism as the DP layouts read it."""
    headless = FLAGS.find(args, "headless")
    return DpShape(
        dp=FLAGS.size(args, "dp"),
        tp=FLAGS.size(args, "tp"),
        pp=FLAGS.size(args, "pp"),
        dp_written=FLAGS.value(args, "dp") is not None,
        headless=str(headless[0]) if headless and headless[1] is True else None,
    )


ADAPTER = VLLM()
