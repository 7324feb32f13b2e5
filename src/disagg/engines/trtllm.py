"""TensorRT-LLM behind the engine seam: `trtllm-serve` workers and their YAML configs.

A role's `backend.trtllm_config.<role>` map is TRT-LLM's own engine configuration
(LLM API options): it is written as one YAML file per role into the run directory
(`trtllm/<role>.yaml`) and given to `trtllm-serve --extra_llm_api_options`; the
parallel sizes are repeated on the command line, as `trtllm-serve` expects. Keys are
taken as written (TRT-LLM's YAML keys are snake_case, no dash spellings).

Prefill/decode workers exchange KV through the cache transceiver named in their YAML
(`cache_transceiver_config`; `backend: DEFAULT` when the recipe sets none, which
TRT-LLM needs to serve a context or generation role). The router in front of them is
`trtllm-serve disaggregated -c trtllm/disagg.yaml`, whose context/generation server
lists `disaggregated_config` writes (see `frontend.type: trtllm_serve`), or Dynamo's
frontend over `python -m dynamo.trtllm` workers reading the same YAML
(`frontend.type: dynamo`, frontends/dynamo_workers.py).

On one node `trtllm-serve` starts its own ranks. A worker spanning nodes is one MPI
step of a rank per GPU (`srun --mpi=pmix --ntasks-per-node=G` from the Slurm
executor), each rank wrapped in `trtllm-llmapi-launch`; the local executor refuses it.

No TRT-LLM runs on this machine: golden files and the simulated engine stand in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import yaml

from disagg.engines.base import (
    EngineAdapter,
    FlagTable,
    Parallelism,
    SimReading,
    WorkerCommand,
    WorkerRole,
    WorkerSpec,
    as_int,
    listen_host,
)

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
# Command-line spelling of the parallel sizes `trtllm-serve` is given besides the YAML.
_CLI_SIZES = (
    ("--tp_size", "tp"),
    ("--ep_size", "ep"),
    ("--pp_size", "pp"),
)
LAUNCH_WRAPPER = "trtllm-llmapi-launch"
DISAGG_FRONTEND = "trtllm_serve"
# Frontends that can front real prefill/decode workers: TRT-LLM's own router, and Dynamo's
# frontend over `python -m dynamo.trtllm` workers (it routes prefill -> decode itself).
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
    label: ClassVar[str] = "TensorRT-LLM"
    flags: ClassVar[FlagTable] = FLAGS
    placement_keys: ClassVar[frozenset[str]] = PLACEMENT_KEYS
    honoured_keys: ClassVar[frozenset[str]] = frozenset()
    backend_fields: ClassVar[frozenset[str]] = frozenset(
        {"prefill_extra_args", "decode_extra_args", "aggregated_extra_args"}
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

    def served_model_name(self, args: Mapping[str, Any]) -> str | None:
        return None  # TRT-LLM's YAML has no such key

    def sim_reading(self, args: Mapping[str, Any]) -> SimReading:
        base = super().sim_reading(args)
        spec = _speculative(args)
        graphs = FLAGS.value(args, "cuda_graph")
        graph_max = None
        if isinstance(graphs, Mapping):
            sizes = graphs.get("batch_sizes")
            graph_max = as_int(graphs.get("max_batch_size"))
            if graph_max is None and isinstance(sizes, list):
                # only whole sizes count; a list of anything else reads as no limit
                whole = [n for n in map(as_int, sizes) if n is not None]
                graph_max = max(whole, default=None)
        steps = as_int(spec.get("num_nextn_predict_layers")) or as_int(spec.get("max_draft_len"))
        return SimReading(
            parallel=base.parallel,
            max_running_requests=base.max_running_requests,
            chunked_prefill_size=base.chunked_prefill_size,
            cuda_graph_max_bs=graph_max,
            context_length=base.context_length,
            speculative_algorithm=str(spec["decoding_type"]) if spec.get("decoding_type") else None,
            speculative_num_steps=steps,
        )

    def engine_config(self, args: Mapping[str, Any], spec: WorkerSpec) -> dict[str, Any]:
        """The YAML the worker reads: the role's map, less placement, plus what its mode needs."""
        from disagg.cluster import is_repo_id

        config: dict[str, Any] = {}
        for key, value in args.items():
            if key in PLACEMENT_KEYS:
                continue
            if key == "speculative_config" and isinstance(value, Mapping):
                draft = value.get("speculative_model_dir")
                if isinstance(draft, str) and is_repo_id(draft):
                    value = {**value, "speculative_model_dir": "${model.draft}"}
            elif key in FLAGS.names("draft_model") and isinstance(value, str) and is_repo_id(value):
                value = "${model.draft}"
            config[key] = value
        if spec.mode is not None and FLAGS.value(config, "cache_transceiver") is None:
            config["cache_transceiver_config"] = dict(DEFAULT_TRANSCEIVER)
        return config

    def engine_flags(self, args: Mapping[str, Any], spec: WorkerSpec) -> list[str]:
        """Parallel sizes and the YAML file; `python -m dynamo.trtllm` takes the same file
        as `--extra-engine-args`."""
        par = self.parallelism(args)
        sizes = {"tp": par.tp, "ep": par.ep, "pp": par.pp}
        flags: list[str] = []
        for flag, setting in _CLI_SIZES:
            if FLAGS.find(args, setting) is not None:
                flags += [flag, str(sizes[setting])]
        return [*flags, "--extra_llm_api_options", "${run.dir}/" + config_file(spec.role)]

    def unsupported(self, args: Mapping[str, Any], spec: WorkerSpec) -> tuple[str, str] | None:
        if spec.simulated:
            return None
        if spec.mode is not None and spec.frontend not in PD_FRONTENDS:
            return "cache_transceiver_config", (
                f"TRT-LLM {spec.mode} workers behind frontend {spec.frontend} (their KV "
                f"hand-over runs through `trtllm-serve disaggregated`: frontend.type "
                f"{DISAGG_FRONTEND}, or Dynamo's `dynamo.trtllm` workers: frontend.type dynamo)"
            )
        return None

    def pd_router(self, prefill: list[str], decode: list[str]) -> WorkerCommand | None:
        # The file is bound once per role, so the router's host is its (first) node's.
        config = disaggregated_config(
            prefill, decode, host="${self.host}", port="${self.http_port}"
        )
        argv = ["trtllm-serve", "disaggregated", "-c", "${run.dir}/" + DISAGG_CONFIG]
        return WorkerCommand(argv=argv, ports=["http"], files={DISAGG_CONFIG: config})

    def worker(self, args: Mapping[str, Any], spec: WorkerSpec) -> WorkerCommand:
        config = self.engine_config(args, spec)
        argv = ["trtllm-serve", "${model.path}", "--host", listen_host(args)]
        argv += ["--port", "${self.http_port}", "--served_model_name", spec.served_name]
        extra = spec.backend.get(f"{spec.role}_extra_args") or []
        argv += [*self.engine_flags(args, spec), *(str(word) for word in extra)]
        if spec.multi_node:
            argv = [LAUNCH_WRAPPER, *argv]
        return WorkerCommand(
            argv=argv,
            ports=["http"],
            files={config_file(spec.role): yaml_text(config)},
            mpi_tasks_per_node=spec.gpus_per_node if spec.multi_node else None,
        )


def disaggregated_config(
    context: Sequence[str], generation: Sequence[str], *, host: str, port: str
) -> str:
    """`trtllm-serve disaggregated -c FILE`'s YAML: where it listens and its server lists.

    `context`/`generation` are worker role names; their URLs are plan placeholders the
    orchestrator binds when it writes the file.
    """

    def servers(names: Sequence[str]) -> dict[str, Any]:
        urls = [f"${{{name}.host}}:${{{name}.http_port}}" for name in names]
        return {"num_instances": len(names), "urls": urls}

    config = {
        "hostname": host,
        "port": port,
        "backend": "pytorch",
        "context_servers": servers(context),
        "generation_servers": servers(generation),
    }
    return yaml_text(config)


_TEXTS: dict[str, str] = {}  # repr(config) -> its YAML; bounded by _MAX_TEXTS
_MAX_TEXTS = 1024


def yaml_text(config: Mapping[str, Any]) -> str:
    """A config file's YAML in the order written, by libyaml's emitter when PyYAML has it.

    PyYAML's representer still walks every value in Python, and the variants of one
    recipe mostly repeat their workers' configs (the shared corpus: 2,084 configs, 400
    different), so each different config is written once per process; `repr` tells
    configs apart exactly (types, key order, values).
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
