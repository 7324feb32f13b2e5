"""TensorRT-LLM behind the engine seam: `trtllm-serve` workers and their YAML configs.

A role's `backend.trtllm_config.<role>` map is TRT-LLM's own LLM API configuration, keys as
written, one YAML file per role (`trtllm/<role>.yaml`) given to `trtllm-serve --config`
with the parallel sizes repeated on the command line. Prefill/decode workers hand KV over
through the cache transceiver their YAML names (`backend: DEFAULT` when none: TRT-LLM needs
one), behind `trtllm-serve disaggregated` (`pd_router`) or Dynamo's `dynamo.trtllm`.

Every worker runs as srt-slurm v1.0.68 starts it (`TRTLLMProtocol.get_srun_config`): one
MPI step of a rank per GPU over all its nodes, each rank running `[numactl -m 0,1]
trtllm-llmapi-launch <command>`. Flags are srtctl's spellings (`--tensor_parallel_size`,
`--config`), which the releases the corpus pins take beside the older `--tp_size`/`-c`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, ClassVar

import yaml

from disagg.engines.base import EngineAdapter, FlagTable, WorkerCommand, listen_host, staged_draft
from disagg.engines.worker import Parallelism, SimReading, WorkerRole, WorkerSpec, as_int

FLAGS = FlagTable(
    {
        "tp": ("tensor_parallel_size",),
        "ep": ("moe_expert_parallel_size",),
        "pp": ("pipeline_parallel_size",),
        "dp_attention": ("enable_attention_dp",),
        "max_running_requests": ("max_batch_size",),
        "chunk_size": ("max_num_tokens",),
        "context_length": ("max_seq_len",),
        "speculative_config": ("speculative_config",),
        "draft_model": ("speculative_model_dir", "speculative_model"),
        "cache_transceiver": ("cache_transceiver_config",),
        "cuda_graph": ("cuda_graph_config",),
    },
    dashes=False,
    # Host files a worker reads (the draft model, also inside `speculative_config`).
    paths=frozenset(
        {
            "speculative_model_dir",
            "speculative_model",
            "speculative_config.speculative_model_dir",
            "tokenizer",
        }
    ),
)
# Written into the YAML as the plan decides, never taken from the recipe's map.
PLACEMENT_KEYS = frozenset({"host", "port", "model"})
# `trtllm-serve` flags besides the parallel sizes (srt-slurm's spellings, see the module text).
CONFIG_FLAG = "--config"
SERVED_NAME_FLAG = "--served_model_name"
LAUNCH_WRAPPER = "trtllm-llmapi-launch"
# srun options of a worker's MPI step (TRTLLMProtocol.get_srun_config): ranks keep TRT-LLM's
# CPU affinity and may outnumber the allocated CPUs.
WORKER_SRUN_OPTIONS = {"cpu-bind": "verbose,none", "oversubscribe": ""}
NUMACTL = ("numactl", "-m", "0,1")
# The expert load balancer's shared memory: one name per worker, so that workers sharing a
# node never open each other's (srt-slurm: `moe_shared_<uuid>`); the job id and the port.
EPLB_SHM_VAR = "TRTLLM_EPLB_SHM_NAME"
EPLB_SHM_NAME = "moe_shared_${run.job_id}_${self.http_port}"
# GPU types whose prefill/decode workers srt-slurm binds with NUMACTL by default.
NUMA_GPU_TYPES = frozenset({"gb200", "gb300", "vrnvl72"})
# srt-slurm's `frontend.*` fields of trtllm_serve that go into the router's YAML.
ROUTER_FIELDS = (("ctx_router", "context_servers"), ("gen_router", "generation_servers"))
DISAGG_FRONTEND = "trtllm_serve"
# Frontends of real prefill/decode workers: TRT-LLM's router and Dynamo's (over dynamo.trtllm).
PD_FRONTENDS = frozenset({DISAGG_FRONTEND, "dynamo"})
DISAGG_CONFIG = "trtllm/disagg.yaml"
DEFAULT_TRANSCEIVER = {"backend": "DEFAULT"}


def config_file(role: WorkerRole) -> str:
    """The role's YAML config, relative to the run directory."""
    return f"trtllm/{role}.yaml"


def _speculative(args: Mapping[str, Any]) -> Mapping[str, Any]:
    value = FLAGS.value(args, "speculative_config")
    return value if isinstance(value, Mapping) else {}


class TRTLLM(EngineAdapter):
    name: ClassVar[str] = "trtllm"
    flags: ClassVar[FlagTable] = FLAGS
    placement_keys: ClassVar[frozenset[str]] = PLACEMENT_KEYS
    honoured_keys: ClassVar[frozenset[str]] = frozenset()
    backend_fields: ClassVar[frozenset[str]] = frozenset(
        {"prefill_extra_args", "decode_extra_args", "aggregated_extra_args", "numa_memory_bind"}
    )

    def parallelism(self, args: Mapping[str, Any]) -> Parallelism:
        """Attention-DP spreads the attention layers over the TP ranks (no extra GPUs)."""
        tp, ep, pp = (FLAGS.size(args, s) for s in ("tp", "ep", "pp"))
        adp = FLAGS.value(args, "dp_attention") is True
        return Parallelism(
            tp=tp, dp=tp if adp else 1, ep=ep, pp=pp, dp_attention=adp, replicas_use_gpus=False
        )

    def draft_model(self, args: Mapping[str, Any]) -> str | None:
        model = _speculative(args).get("speculative_model_dir") or FLAGS.value(args, "draft_model")
        return model if isinstance(model, str) and model else None

    def sim_reading(self, args: Mapping[str, Any]) -> SimReading:
        """Batch limits bound each attention-DP rank (each runs its own scheduler): the
        simulated worker is told the worker's totals."""
        base = super().sim_reading(args)
        spec = _speculative(args)
        graphs = FLAGS.value(args, "cuda_graph")
        graph_max = None
        if isinstance(graphs, Mapping):
            sizes = graphs.get("batch_sizes")
            graph_max = as_int(graphs.get("max_batch_size"))
            if graph_max is None and isinstance(sizes, list):
                # only whole sizes count; a list of anything else reads as no limit
                graph_max = max((n for n in map(as_int, sizes) if n is not None), default=None)
        steps = as_int(spec.get("num_nextn_predict_layers")) or as_int(spec.get("max_draft_len"))
        ranks = base.parallel.dp if base.parallel.dp_attention else 1
        return replace(
            base.per_rank(ranks, graph_max),
            speculative_algorithm=str(spec["decoding_type"]) if spec.get("decoding_type") else None,
            speculative_num_steps=steps,
        )

    def engine_config(self, args: Mapping[str, Any], spec: WorkerSpec) -> dict[str, Any]:
        """The YAML the worker reads: the role's map, less placement, plus what its mode needs."""
        config: dict[str, Any] = {}
        for key, value in args.items():
            if key in PLACEMENT_KEYS:
                continue
            if key == "speculative_config" and isinstance(value, Mapping):
                draft = value.get("speculative_model_dir")
                staged = staged_draft(draft)
                if staged != draft:
                    value = {**value, "speculative_model_dir": staged}
            elif key in FLAGS.names("draft_model"):
                value = staged_draft(value)
            config[key] = value
        if spec.mode is not None and FLAGS.value(config, "cache_transceiver") is None:
            config["cache_transceiver_config"] = dict(DEFAULT_TRANSCEIVER)
        return config

    def engine_flags(self, args: Mapping[str, Any], spec: WorkerSpec) -> list[str]:
        """Parallel sizes as the role writes them and the YAML file; `python -m dynamo.trtllm`
        takes the same file as `--extra-engine-args`."""
        flags: list[str] = []
        for setting in ("tp", "ep", "pp"):  # as the role writes them, spelt as in its YAML
            hit = FLAGS.find(args, setting)
            if hit is not None and hit[1] is not None:
                flags += ["--" + FLAGS.names(setting)[0], str(hit[1])]
        return [*flags, CONFIG_FLAG, "${run.dir}/" + config_file(spec.role)]

    def unsupported(self, args: Mapping[str, Any], spec: WorkerSpec) -> tuple[str, str] | None:
        if spec.simulated:
            return None
        if spec.backend.get("numa_memory_bind") == "local":
            return "backend.numa_memory_bind", (
                "backend.numa_memory_bind local (binds each rank's memory to its GPU's NUMA "
                "node through numa_cpu_bind's per-GPU CPU discovery, which is not built here; "
                "true binds nodes 0,1)"
            )
        if spec.mode is not None and spec.frontend not in PD_FRONTENDS:
            return "cache_transceiver_config", (
                f"TRT-LLM {spec.mode} workers behind frontend {spec.frontend} (their KV "
                f"hand-over runs through `trtllm-serve disaggregated`: frontend.type "
                f"{DISAGG_FRONTEND}, or Dynamo's `dynamo.trtllm` workers: frontend.type dynamo)"
            )
        return None

    def pd_router(
        self, prefill: list[str], decode: list[str], frontend: Mapping[str, Any]
    ) -> WorkerCommand | None:
        config = disaggregated_config(prefill, decode, frontend)
        argv = ["trtllm-serve", "disaggregated", CONFIG_FLAG, "${run.dir}/" + DISAGG_CONFIG]
        argv += router_args(frontend.get("args"))
        env = {str(k): str(v) for k, v in (frontend.get("env") or {}).items()}
        # one MPI rank: tensorrt_llm wants an MPI launcher even for the router (srt-slurm
        # starts it with `srun --mpi=pmix`, TRTLLMServeFrontend.start_frontends)
        return WorkerCommand(
            argv=argv,
            ports=["http"],
            env=env,
            files={DISAGG_CONFIG: config},
            mpi_tasks_per_node=1,
        )

    def worker(self, args: Mapping[str, Any], spec: WorkerSpec) -> WorkerCommand:
        config = self.engine_config(args, spec)
        argv = ["trtllm-serve", "${model.path}", "--host", listen_host(args)]
        argv += ["--port", "${self.http_port}", *self.engine_flags(args, spec)]
        served = spec.backend.get("served_model_name")
        if served:  # srt-slurm 2.x's engine-wide name; v1 passes none
            argv += [SERVED_NAME_FLAG, str(served)]
        extra = spec.backend.get(f"{spec.role}_extra_args") or []
        argv += [str(word) for word in extra]
        return WorkerCommand(
            argv=[*launch_prefix(spec), *argv],
            ports=["http"],
            env={EPLB_SHM_VAR: EPLB_SHM_NAME},
            files={config_file(spec.role): yaml_text(config)},
            mpi_tasks_per_node=spec.gpus_per_node,
            mpi_srun_options=dict(WORKER_SRUN_OPTIONS),
        )


def launch_prefix(spec: WorkerSpec) -> list[str]:
    """What each MPI rank of a real worker runs its command under: `numactl -m 0,1` where
    srt-slurm binds the worker's memory, then `trtllm-llmapi-launch`."""
    written = spec.backend.get("numa_memory_bind")
    if written is None:  # srt-slurm's default: prefill and decode workers on these GPUs
        bind = spec.mode is not None and (spec.gpu_type or "") in NUMA_GPU_TYPES
    else:  # v1.0.68 forces prefill and decode workers; 2.x any worker
        bind = written is True and (spec.mode is not None or spec.schema2)
    return [*NUMACTL, LAUNCH_WRAPPER] if bind else [LAUNCH_WRAPPER]


def router_args(args: Mapping[str, Any] | None) -> list[str]:
    """`frontend.args` on the router's command as srt-slurm writes them: `--key value`, the
    key as written, `true` a bare flag, `false`/null left out."""
    words: list[str] = []
    for key, value in (args or {}).items():
        if value is True:
            words.append(f"--{key}")
        elif value is not False and value is not None:
            words += [f"--{key}", str(value)]
    return words


def disaggregated_config(
    context: Sequence[str], generation: Sequence[str], frontend: Mapping[str, Any]
) -> str:
    """`trtllm-serve disaggregated --config FILE`'s YAML: the workers' URLs (placeholders
    bound when the file is written) and where the router listens, with the recipe's
    `frontend` routers and extra keys merged as srt-slurm's `_build_ser` does."""

    def servers(names: Sequence[str]) -> dict[str, Any]:
        urls = [f"${{{name}.host}}:${{{name}.http_port}}" for name in names]
        return {"num_instances": len(names), "urls": urls}

    # The file is bound once per role, so the router's host is its (first) node's.
    config: dict[str, Any] = {
        "context_servers": servers(context),
        "generation_servers": servers(generation),
        "hostname": "${self.host}",
        "port": "${self.http_port}",
    }
    for field, key in ROUTER_FIELDS:
        router = frontend.get(field)
        if router:
            config[key]["router"] = dict(router)
    config.update(dict(frontend.get("server_config_extra") or {}))
    return yaml_text(config)


_TEXTS: dict[str, str] = {}  # repr(config) -> its YAML; bounded by _MAX_TEXTS
_MAX_TEXTS = 1024


def yaml_text(config: Mapping[str, Any]) -> str:
    """A config file's YAML in the order written, by libyaml's emitter when PyYAML has it.

    Variants mostly repeat their workers' configs (the corpus: 2,084 configs, 400 different),
    so each is written once per process; `repr` tells configs apart exactly.
    """
    key = repr(config)
    text = _TEXTS.get(key)
    if text is None:
        dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
        text = yaml.dump(config, Dumper=dumper, sort_keys=False)
        if len(_TEXTS) >= _MAX_TEXTS:
            _TEXTS.clear()
        _TEXTS[key] = text
    return text


ADAPTER = TRTLLM()
