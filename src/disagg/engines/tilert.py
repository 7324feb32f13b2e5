"""TileRT behind the engine seam: a vLLM prefill handing its KV to TileRT's decode server.

srt-slurm 2.x's `tilert` engine (TileRT's README, Topology A): the prefill is `vllm serve`
with TileRT's KV connector, the knobs filling what the README sets (a role's own setting
wins); the decode is `tilert.pd_vllm.decode_server` with the knobs as flags, then the
role's own. A schema-2 prefill role of engine vllm is any vLLM prefill role, so its
`kv-transfer-config` must load TileRT's connector itself. The decode server serves no
OpenAI API, only TileRT's router: an aggregated TileRT worker is refused.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, ClassVar

from disagg.engines import vllm
from disagg.engines.base import EngineAdapter, FlagTable, WorkerCommand, render_args
from disagg.engines.worker import Parallelism, SimReading, WorkerSpec, as_int
from disagg.recipe.backend_section import ENGINE_KNOBS

DECODE_MODULE = "tilert.pd_vllm.decode_server"
ROUTER = "tilert-router"  # the frontend type of TileRT's router
CONNECTOR_MODULE = "tilert.pd_vllm.prefill_connector"
# Settings of either role (prefill: vLLM's spellings, decode: the decode server's).
FLAGS = FlagTable(
    {
        "tp": ("tensor-parallel-size",),
        "served_model_name": ("served-model-name",),
        "max_running_requests": ("max-num-seqs",),
        "chunk_size": ("max-num-batched-tokens",),
        "context_length": ("max-model-len", "max-seq-len"),
        "mtp": ("with-mtp",),
    },
)
# Flags the plan sets itself on either role.
PLACEMENT_FLAGS = frozenset({"host", "port", "ctrl-port", "http-port", "engine"})
# Decode-server flag for each engine knob, in the order TileRT's README writes them.
DECODE_KNOBS: tuple[tuple[str, str], ...] = (
    ("model_profile", "model"),
    ("weights_dir", "model-weights-dir"),
    ("max_seq_len", "max-seq-len"),
    ("kv_cache_dtype", "kv-cache-dtype"),
    ("transport", "transport"),
    ("with_mtp", "with-mtp"),
)
# All the engine's knobs but `weight_model_type`, which the plan lists as ignored.
KNOBS = ENGINE_KNOBS["tilert"] - {"weight_model_type"}


def connector_json(backend: Mapping[str, Any]) -> str:
    """The prefill's `--kv-transfer-config`: TileRT's connector with the knobs it reads (the
    router sends each request's decode address with the request)."""
    extra: dict[str, Any] = {}
    for knob, key in (
        ("model_profile", "tilert_model"),
        ("max_seq_len", "tilert_max_seq_len"),
        ("transport", "tilert_transport"),
    ):
        if backend.get(knob) is not None:
            extra[key] = backend[knob]
    config: dict[str, Any] = {
        "kv_connector": "TileRTConnector",
        "kv_connector_module_path": CONNECTOR_MODULE,
        "kv_role": "kv_producer",
    }
    if extra:
        config["kv_connector_extra_config"] = extra
    return json.dumps(config, separators=(",", ":"))


class TileRT(EngineAdapter):
    name: ClassVar[str] = "tilert"
    flags: ClassVar[FlagTable] = FLAGS
    placement_keys: ClassVar[frozenset[str]] = PLACEMENT_FLAGS
    honoured_keys: ClassVar[frozenset[str]] = frozenset()
    backend_fields: ClassVar[frozenset[str]] = KNOBS
    health_deadline_s: ClassVar[float] = 3600.0  # TileRT compiles its kernels at start-up

    def worker_parallelism(self, args: Mapping[str, Any], spec: WorkerSpec) -> Parallelism:
        """A decode server spans every GPU it is given (TileRT shards its weights per GPU)."""
        if _vllm_role(spec):
            return vllm.ADAPTER.worker_parallelism(vllm_role_args(args, spec), spec)
        if spec.mode == "decode" or FLAGS.find(args, "tp") is None:
            return Parallelism(tp=max(1, spec.gpus_per_node * spec.nnodes))
        return self.parallelism(args)

    def worker_reading(self, args: Mapping[str, Any], spec: WorkerSpec) -> SimReading:
        """Besides each role's GPUs: the decode server's MTP and the knobs' sequence limit."""
        backend = spec.backend
        reading = super().worker_reading(args, spec)
        if reading.context_length is None and as_int(backend.get("max_seq_len")) is not None:
            reading = replace(reading, context_length=as_int(backend["max_seq_len"]))
        mtp = FLAGS.value(args, "mtp") is True or bool(backend.get("with_mtp"))
        if spec.mode == "decode" and mtp:
            steps = as_int(args.get("num-mtp")) or as_int(backend.get("speculative_tokens")) or 1
            reading = replace(reading, speculative_algorithm="mtp", speculative_num_steps=steps)
        return reading

    def unsupported(self, args: Mapping[str, Any], spec: WorkerSpec) -> tuple[str, str] | None:
        if spec.mode is None:
            return "engine", (
                "an aggregated TileRT worker (TileRT decodes behind a vLLM prefill and "
                "serves no OpenAI API of its own)"
            )
        if spec.simulated:
            return None
        if spec.frontend != ROUTER:
            from disagg.recipe.dialects import V1_FRONTEND_TYPES_BACK
            from disagg.recipe.dialects.schema2 import FRONTEND_TYPES_BACK

            back = FRONTEND_TYPES_BACK if spec.schema2 else V1_FRONTEND_TYPES_BACK
            shown = back.get(spec.frontend, spec.frontend)
            return "engine", (
                f"a TileRT {spec.mode} worker behind frontend type {shown} (only "
                "TileRT's router drives its prefill-to-decode hand-over: "
                "`frontend.type: tilert-router`)"
            )
        if spec.multi_node:
            return "nodes", f"a TileRT {spec.mode} worker over several nodes"
        if _vllm_role(spec):
            own = vllm_role_args(args, spec)
            refused = vllm.ADAPTER.unsupported(own, spec)
            if refused is not None:
                return refused
            transfer = vllm.ADAPTER.kv_transfer(own, spec) or ""
            if "TileRTConnector" not in transfer:
                key = (vllm.FLAGS.find(own, "kv_transfer_config") or ("kv-transfer-config",))[0]
                field = ".".join((*self.args_path("prefill"), str(key)))
                return str(key), (
                    f"{field} (a vllm prefill role beside a tilert decode role with KV connector "
                    f"{_connector_name(transfer)}; only TileRT's connector hands its KV to the "
                    "decode server: `kv-transfer-config` with kv_connector TileRTConnector, "
                    f"kv_connector_module_path {CONNECTOR_MODULE})"
                )
        return None

    def prefill_args(self, args: Mapping[str, Any], spec: WorkerSpec) -> dict[str, Any]:
        """The prefill's vLLM settings: the knobs' defaults, then the role's own (a vllm
        prefill role's own alone)."""
        if _vllm_role(spec):
            return vllm_role_args(args, spec)
        backend = spec.backend
        derived: dict[str, Any] = {
            "tensor-parallel-size": self.worker_parallelism(args, spec).tp,
            "return-tokens-as-token-ids": True,
        }
        if backend.get("prefill_kv_cache_dtype") is not None:
            derived["kv-cache-dtype"] = backend["prefill_kv_cache_dtype"]
        if backend.get("with_mtp"):
            tokens = as_int(backend.get("speculative_tokens")) or 1
            derived["speculative-config"] = json.dumps(
                {"method": "mtp", "num_speculative_tokens": tokens}
            )
        derived["kv-transfer-config"] = connector_json(backend)
        written = {FLAGS.normalise(str(k)) for k in args}
        kept = {k: v for k, v in derived.items() if k not in written}
        return {**dict(args), **kept}

    def decode_args(self, args: Mapping[str, Any], spec: WorkerSpec) -> dict[str, Any]:
        """The decode server's settings: the knobs, then the role's own as written."""
        backend = spec.backend
        kept = {flag: backend[k] for k, flag in DECODE_KNOBS if backend.get(k) is not None}
        for key, value in args.items():
            name = FLAGS.normalise(str(key))
            if name not in PLACEMENT_FLAGS:
                kept[name] = value
        return kept

    def engine_flags(self, args: Mapping[str, Any], spec: WorkerSpec) -> list[str]:
        if spec.mode == "prefill":
            return vllm.ADAPTER.engine_flags(self.prefill_args(args, spec), spec)
        return render_args(self.decode_args(args, spec))

    def worker(self, args: Mapping[str, Any], spec: WorkerSpec) -> WorkerCommand:
        image = None if _vllm_role(spec) else spec.backend.get("prefill_container")
        if spec.mode == "prefill":
            command = vllm.ADAPTER.worker(self.prefill_args(args, spec), spec)
            command.container = str(image) if image else None
            return command
        argv = ["python3", "-m", DECODE_MODULE, "--engine", "tilert"]
        argv += self.engine_flags(args, spec)
        argv += ["--ctrl-port", "${self.ctrl_port}", "--http-port", "${self.http_port}"]
        return WorkerCommand(argv=argv, ports=["http", "ctrl"])


def _vllm_role(spec: WorkerSpec) -> bool:
    """The prefill written as a role of engine vllm (`roles.prefill.engine: vllm`)."""
    return spec.mode == "prefill" and spec.engine == "vllm"


def vllm_role_args(args: Mapping[str, Any], spec: WorkerSpec) -> dict[str, Any]:
    """A vllm prefill role's settings as the vLLM adapter reads them with its own knobs
    (`spec.backend`): `connector` added when it names none."""
    backend = {**spec.backend, vllm.ADAPTER.config_section: {"prefill": dict(args)}}
    return dict(vllm.ADAPTER.role_args(backend, "prefill"))


def _connector_name(transfer: str) -> str:
    """The `kv_connector` a `--kv-transfer-config` text names, for messages."""
    try:
        found = json.loads(transfer).get("kv_connector") if transfer else None
    except (ValueError, AttributeError):
        found = None
    return str(found) if found else "none"


ADAPTER = TileRT()
