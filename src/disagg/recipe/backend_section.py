"""The `backend` section (v1) / `engine` + `roles.<role>.args` (schema 2): the serving
engine, its per-mode flags and environments, and each engine's own knobs.

Engine flag maps stay open maps because their keys are the engines' own flags.
"""

# No `from __future__ import annotations` here: pydantic would compile and evaluate
# each field's annotation string when the class is made, a cost every command pays.

from typing import Any, Literal

from pydantic import Field

from disagg.model_defaults import empty_dict, empty_list
from disagg.recipe.section_base import Section

Scalar = str | int | float | bool
# An engine flag value: `true` -> `--flag`, list -> `--flag a b`, map -> JSON, null -> omitted.
EngineArg = str | int | float | bool | list[Any] | dict[str, Any] | None
EngineArgs = dict[str, EngineArg]
EnvMap = dict[str, Scalar]

BackendType = Literal["sglang", "trtllm", "vllm", "mocker", "atom", "tilert"]


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


class RoleExtraArgs(Section):
    prefill: list[str] | None = None
    decode: list[str] | None = None
    aggregated: list[str] | None = None


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


# Each engine's own engine-wide knobs: srt-slurm's per-engine backend classes (schema 2
# writes them under `engine:` beside `type`; v1 flat under `backend`). A knob of one
# engine written for another is refused in schema 2 (`dialects.schema2.check_engine_knobs`).
ENGINE_KNOBS: dict[str, frozenset[str]] = {
    "sglang": frozenset({"gpu_type"}),
    "trtllm": frozenset(
        {
            "served_model_name",
            "publish_metrics",
            "publish_events_and_metrics",
            "sequential_node_start",
            "numa_memory_bind",
            "numa_cpu_bind",
        }
    ),
    "vllm": frozenset(
        {
            "connector",
            "set_cuda_visible_devices",
            "set_visible_devices",
            "allow_prefill_decode_colocation",
            "allow_prefill_decode_colocation_across_nodes",
            "dp_launch_mode",
            "vllm_serve_binary",
            "failover",
        }
    ),
    "atom": frozenset({"connector", "mooncake_protocol", "enable_kv_events"}),
    "tilert": frozenset(
        {
            "served_model_name",
            "prefill_container",
            "model_profile",
            "weight_model_type",
            "weights_dir",
            "max_seq_len",
            "kv_cache_dtype",
            "prefill_kv_cache_dtype",
            "transport",
            "with_mtp",
            "speculative_tokens",
        }
    ),
    "mocker": frozenset(
        {
            "engine_type",
            "speedup_ratio",
            "decode_speedup_ratio",
            "num_gpu_blocks_override",
            "max_num_seqs",
            "max_num_batched_tokens",
            "block_size",
            "data_parallel_size",
            "num_workers",
            "startup_time",
            "kv_transfer_bandwidth",
            "kv_cache_dtype",
            "enable_prefix_caching",
            "enable_chunked_prefill",
            "preemption_mode",
        }
    ),
}
# Keys every engine map takes: the engine and disagg's own `engine: sim`.
ENGINE_COMMON = frozenset({"type", "engine", "predict"})
