"""SGLang behind the engine seam: `python3 -m sglang.launch_server` workers.

The plan owns the flags that depend on placement and the model location. `--nccl-port`:
SGLang's default probes for a free port at start, which workers starting together on one
node can race for; srt-slurm pins one per worker process, and so does the plan.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from disagg.engines.base import (
    CONFIG_DUMP,
    CONFIG_DUMP_ROW,
    EngineAdapter,
    FlagTable,
    WorkerCommand,
    bootstrap_ports,
    listen_host,
    render_args,
    staged_draft,
)
from disagg.engines.sim.command import SIM_PREFIX
from disagg.engines.worker import WorkerSpec

SGLANG_MODULE = "sglang.launch_server"
NCCL_PORT = "nccl"  # the port name behind `--nccl-port ${self.nccl_port}`

FLAGS = FlagTable(
    {
        "tp": ("tensor-parallel-size", "tp-size", "tp"),
        "dp": ("data-parallel-size", "dp-size", "dp"),
        "ep": ("expert-parallel-size", "ep-size", "ep"),
        "pp": ("pipeline-parallel-size", "pp-size", "pp"),
        "dp_attention": ("enable-dp-attention",),
        "draft_model": ("speculative-draft-model-path", "speculative-draft-model"),
        "served_model_name": ("served-model-name",),
        "mode": ("disaggregation-mode",),
        "max_running_requests": ("max-running-requests",),
        "chunk_size": ("chunked-prefill-size",),
        "max_prefill_tokens": ("max-prefill-tokens",),
        "cuda_graph_max_bs": ("cuda-graph-max-bs",),
        "speculative": ("speculative-algorithm",),
        "speculative_steps": ("speculative-num-steps",),
        "context_length": ("context-length",),
    },
    # Host files a worker reads. `deepep-config` also takes JSON text, which is no path;
    # `chat-template` is left out: it often names a template shipped in the image.
    paths=frozenset(
        {
            "speculative-draft-model-path",
            "speculative-draft-model",
            "speculative-token-map",
            "tokenizer-path",
            "deepep-config",
            "init-expert-location",
            "decrypted-config-file",
            "decrypted-draft-config-file",
        }
    ),
)
# Flags the plan sets itself (every spelling SGLang accepts), dropped from recipe args.
PLACEMENT_FLAGS = frozenset(
    {
        "host",
        "port",
        "model",
        "model-path",
        "nnodes",
        "node-rank",
        "dist-init-addr",
        "disaggregation-bootstrap-port",
        "nccl-port",
    }
)
DRAFT_FLAGS = FLAGS.names("draft_model")


def _kept(args: Mapping[str, Any], mode: str | None, served_name: str) -> dict[str, Any]:
    """The recipe's settings less the placement flags, plus the ones the worker's mode needs."""
    kept: dict[str, Any] = {}
    for key, value in args.items():
        name = FLAGS.normalise(key)
        if name not in PLACEMENT_FLAGS:  # `host` included: see `listen_host`
            kept[name] = staged_draft(value) if name in DRAFT_FLAGS else value
    if mode is not None:
        kept["disaggregation-mode"] = mode
    kept.setdefault("served-model-name", served_name)
    return kept


def worker_args(
    args: Mapping[str, Any],
    *,
    disaggregation_mode: str | None,
    served_name: str,
    multi_node: bool,
    ib_devices: list[str] | tuple[str, ...] | None = None,
) -> list[str]:
    """The full flag list of one worker: recipe flags, then the ones the plan owns.

    The cluster's RDMA devices go to `--disaggregation-ib-device` unless the recipe names
    some: the KV transfer backend (MoRI, Mooncake, NIXL) reads them there, not from NCCL's.
    """
    kept = _kept(args, disaggregation_mode, served_name)
    if ib_devices and disaggregation_mode is not None:
        kept.setdefault("disaggregation-ib-device", ",".join(ib_devices))
    argv = ["--model-path", "${model.path}", *render_args(kept)]
    host = listen_host(args)
    argv += ["--host", host, "--port", "${self.http_port}", "--nccl-port", "${self.nccl_port}"]
    if disaggregation_mode == "prefill":
        argv += ["--disaggregation-bootstrap-port", "${self.bootstrap_port}"]
    if multi_node:
        argv += ["--dist-init-addr", "${self.addr}", "--nnodes", "${self.nnodes}"]
        argv += ["--node-rank", "${self.node_rank}"]
    return argv


class SGLang(EngineAdapter):
    """SGLang workers; the simulated engine takes exactly the same flags."""

    name: ClassVar[str] = "sglang"
    flags: ClassVar[FlagTable] = FLAGS
    placement_keys: ClassVar[frozenset[str]] = PLACEMENT_FLAGS
    # The plan adds each worker's KV event publisher (disagg.plan.kv_events).
    backend_fields: ClassVar[frozenset[str]] = frozenset({"kv_events_config"})

    def engine_flags(self, args: Mapping[str, Any], spec: WorkerSpec) -> list[str]:
        return render_args(_kept(args, spec.mode, spec.served_name))

    def _argv(self, prefix: list[str], args: Mapping[str, Any], spec: WorkerSpec) -> WorkerCommand:
        flags = worker_args(
            args,
            disaggregation_mode=spec.mode,
            served_name=spec.served_name,
            multi_node=spec.multi_node,
            ib_devices=spec.ib_devices,
        )
        return WorkerCommand(argv=prefix + flags, ports=[*bootstrap_ports(spec), NCCL_PORT])

    def worker(self, args: Mapping[str, Any], spec: WorkerSpec) -> WorkerCommand:
        command = self._argv(["python3", "-m", SGLANG_MODULE], args, spec)
        if spec.frontend == "dynamo":  # srtctl dumps the config of dynamo.sglang only
            command.argv += CONFIG_DUMP
            command.differs.append(CONFIG_DUMP_ROW)
        return command

    def simulated_worker(self, args: Mapping[str, Any], spec: WorkerSpec) -> WorkerCommand:
        """The simulated engine reads SGLang's own flags: the same argv as a real worker."""
        return self._argv(list(SIM_PREFIX), args, spec)


ADAPTER = SGLang()
