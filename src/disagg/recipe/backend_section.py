"""The `backend` section (v1) / `engine` + `roles.<role>.args` (schema 2): the serving
engine, its per-mode flags and environments, and each engine's own knobs. Flag maps stay
open because their keys are the engines' own flags.
"""

# No `from __future__ import annotations`: pydantic would evaluate each annotation string.

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, create_model

from disagg.engines import registry
from disagg.model_defaults import empty_dict, empty_list
from disagg.recipe.section_base import Section

Scalar = str | int | float | bool
# An engine flag value: `true` -> `--flag`, list -> `--flag a b`, map -> JSON, null -> omitted.
EngineArg = str | int | float | bool | list[Any] | dict[str, Any] | None
EngineArgs = dict[str, EngineArg]
EnvMap = dict[str, Scalar]

# srt-slurm's engine types in its schema's order (messages list them so), then any other
# registered engine; `registry.names()` reads the engine modules' names, importing none.
SRT_SLURM_ENGINES = ("sglang", "trtllm", "vllm", "mocker", "atom", "tilert")
ENGINES = tuple(dict.fromkeys((*SRT_SLURM_ENGINES, *registry.names())))


class RoleArgs(Section):
    """Per-role engine flags (`backend.<engine>_config.{prefill,decode,aggregated}`)."""

    prefill: EngineArgs | None = None
    decode: EngineArgs | None = None
    aggregated: EngineArgs | None = None


KvEvents = bool | dict[str, Any] | None


class RoleKvEvents(Section):
    """`kv_events_config` per mode: `true` (default publisher) or `{publisher, topic}`."""

    prefill: KvEvents = None
    decode: KvEvents = None
    aggregated: KvEvents = None


class MooncakeKvStore(Section):
    """Mooncake KV store: a mooncake_master on the infra node, MOONCAKE_MASTER on workers."""

    container: str | None = None
    env: EnvMap = Field(default_factory=empty_dict)
    master_extra_args: list[str] = Field(default_factory=empty_list)
    store_config: dict[str, Any] | None = None


class PredictSettings(Section):
    """disagg's own: what a predicted run (`engine: predict`, `disagg run --predict`) assumes
    beyond the recipe; the command line's `--predict-*` options win over these."""

    accept_rate: float | None = Field(
        default=None, ge=0.0, le=1.0, description="chance each draft token is accepted"
    )
    time_scale: float | None = Field(
        default=None,
        gt=0.0,
        description="run this many times faster (below 1: slower); results stretched back",
    )
    model: str | None = Field(
        default=None, description="the model's org/name when model.path is an alias"
    )


if TYPE_CHECKING:
    BackendType = str
else:
    BackendType = Literal[ENGINES]


class BackendSection(Section):
    """The serving engine. `engine: sim` runs the simulated engine in place of `type`'s,
    told what that engine's settings ask for (parallel sizes, batch limits, ...)."""

    type: BackendType = "sglang"
    engine: Literal["sglang", "vllm", "trtllm", "sim", "predict"] | None = Field(
        default=None,
        description=(
            "`sim`: the simulated engine (no GPUs, no weights); `predict`: the simulated "
            "engine timed by AIConfigurator's model (docs/predict.md); unset: `type`'s engine"
        ),
    )
    predict: PredictSettings | None = None
    prefill_environment: EnvMap = Field(default_factory=empty_dict)
    decode_environment: EnvMap = Field(default_factory=empty_dict)
    aggregated_environment: EnvMap = Field(default_factory=empty_dict)
    # srt-slurm's engines' role sections; another registered engine's is added below
    sglang_config: RoleArgs | None = None
    trtllm_config: RoleArgs | None = None
    vllm_config: RoleArgs | None = None
    mocker_config: RoleArgs | None = None
    atom_config: RoleArgs | None = None
    tilert_config: RoleArgs | None = None
    prefill_extra_args: list[str] = Field(default_factory=empty_list)
    decode_extra_args: list[str] = Field(default_factory=empty_list)
    aggregated_extra_args: list[str] = Field(default_factory=empty_list)
    kv_events_config: bool | RoleKvEvents | None = None
    mooncake_kv_store: MooncakeKvStore | None = None
    gpu_type: str | None = Field(default=None, description="sglang: GPU type override")
    # trtllm
    publish_metrics: bool | None = None
    publish_events_and_metrics: bool | None = None
    sequential_node_start: int = Field(default=0, ge=0)
    numa_memory_bind: bool | Literal["local"] | None = None
    numa_cpu_bind: bool = False
    served_model_name: str | None = None
    # vllm
    connector: str | None = None
    set_cuda_visible_devices: bool = False
    set_visible_devices: bool = False
    allow_prefill_decode_colocation: bool = False
    allow_prefill_decode_colocation_across_nodes: bool = False
    dp_launch_mode: Literal["per_gpu", "per_node"] = "per_node"
    vllm_serve_binary: str | None = None
    failover: dict[str, Any] | None = None
    # atom
    mooncake_protocol: Literal["rdma", "tcp"] | None = None
    enable_kv_events: bool | None = None
    # tilert
    prefill_container: str | None = None
    model_profile: str | None = None
    weight_model_type: str | None = None
    weights_dir: str | None = None
    max_seq_len: int | None = None
    prefill_kv_cache_dtype: str | None = None
    transport: str | None = None
    with_mtp: bool | None = None
    speculative_tokens: int | None = None
    # mocker
    engine_type: str | None = None
    speedup_ratio: float | None = None
    decode_speedup_ratio: float | None = None
    num_gpu_blocks_override: int | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    block_size: int | None = None
    data_parallel_size: int | None = None
    num_workers: int | None = None
    startup_time: float | None = None
    kv_transfer_bandwidth: float | None = None
    kv_cache_dtype: str | None = None
    enable_prefix_caching: bool | None = None
    enable_chunked_prefill: bool | None = None
    preemption_mode: str | None = None


# Each engine's own engine-wide knobs (srt-slurm's per-engine backend classes), space-separated;
# schema 2 refuses one engine's knob written for another (`schema2.check_engine_knobs`).
_KNOBS = {
    "sglang": "gpu_type",
    "trtllm": "served_model_name publish_metrics publish_events_and_metrics "
    "sequential_node_start numa_memory_bind numa_cpu_bind",
    "vllm": "connector set_cuda_visible_devices set_visible_devices "
    "allow_prefill_decode_colocation allow_prefill_decode_colocation_across_nodes "
    "dp_launch_mode vllm_serve_binary failover",
    "atom": "connector mooncake_protocol enable_kv_events",
    "tilert": "served_model_name prefill_container model_profile weight_model_type "
    "weights_dir max_seq_len kv_cache_dtype prefill_kv_cache_dtype transport "
    "with_mtp speculative_tokens",
    "mocker": "engine_type speedup_ratio decode_speedup_ratio num_gpu_blocks_override "
    "max_num_seqs max_num_batched_tokens block_size data_parallel_size num_workers "
    "startup_time kv_transfer_bandwidth kv_cache_dtype enable_prefix_caching "
    "enable_chunked_prefill preemption_mode",
}
ENGINE_KNOBS = {engine: frozenset(_KNOBS.get(engine, "").split()) for engine in ENGINES}
if ENGINES != SRT_SLURM_ENGINES and not TYPE_CHECKING:  # another engine's role section
    BackendSection = create_model(
        "BackendSection",
        __base__=BackendSection,
        __doc__=BackendSection.__doc__,
        **{f"{name}_config": (RoleArgs | None, None) for name in ENGINES[len(SRT_SLURM_ENGINES) :]},
    )
# Keys every engine map takes: the engine and disagg's own `engine: sim`.
ENGINE_COMMON = frozenset({"type", "engine", "predict"})
