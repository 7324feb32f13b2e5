"""The typed recipe: every field srt-slurm v1.0.68 defines, plus `backend.engine`.

Both recipe dialects load into this one shape (schema 2 is translated into it by
`disagg.recipe.dialects`), so engines, frontends and benchmarks read one place.

Strict on purpose: unknown keys are errors (a typo must not silently fall back to a
default), and values are not coerced across types (`isl: "1k"` is an error, not a
guess). Engine and environment maps stay open maps because their keys are the
engines' own flags and variables. `disagg schema` prints `recipe_json_schema()` so
editors can complete and check recipes.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from disagg.recipe.job_sections import (
    DynamoSource,
    HealthCheckSection,
    HostSetupSection,
    IdentitySection,
    InfraSection,
    LimitsSection,
    ObservabilitySection,
    OutputSection,
    PostEvalSection,
    ProfilingSection,
    ReportingSection,
    Section,
    ServiceSection,
    SlurmSection,
    TelemetrySection,
)

Scalar = str | int | float | bool
# An engine flag value: `true` -> `--flag`, list -> `--flag a b`, map -> JSON, null -> omitted.
EngineArg = str | int | float | bool | list[Any] | dict[str, Any] | None
EngineArgs = dict[str, EngineArg]
EnvMap = dict[str, Scalar]

BackendType = Literal["sglang", "trtllm", "vllm", "mocker", "atom", "tilert"]
BenchmarkType = Literal[
    "sa-bench",
    "custom",
    "manual",
    "router",
    "mooncake-router",
    "trace-replay",
    "prefix-replay",
    "gsm8k",
    "gsm8k-bench",
    "gpqa",
    "mmlu",
    "longbenchv2",
    "aime",
    "aime25",
    "lm-eval",
    "mlperf",
    "agentic",
    "aiperf",
    "sglang-bench",
    "profiling",
]


class ModelSection(Section):
    """What to serve. `path` and `container` may be cluster-profile aliases or `hf:org/name`."""

    path: str = Field(description="model alias, local directory, `hf:org/name` or `org/name`")
    container: str = Field(description="container alias or image reference")
    precision: str = Field(description="informational: fp4, fp8, bf16, ...")
    revision: str | None = Field(default=None, description="revision to stage for a repo id")
    stage_extra: list[str] = Field(
        default_factory=list, description="further repo ids to stage (e.g. a tokenizer repo)"
    )
    stage_dir: str | None = Field(default=None, description="node-local directory to stage to")


class ResourcesSection(Section):
    """Worker counts and node counts; srt-slurm's meaning of each field."""

    gpu_type: str
    gpus_per_node: int | None = Field(default=None, ge=1)
    prefill_nodes: int | None = Field(default=None, ge=0)
    prefill_workers: int | None = Field(default=None, ge=0)
    decode_nodes: int | None = Field(
        default=None, ge=0, description="0 with decode_workers: decode shares the prefill nodes"
    )
    decode_workers: int | None = Field(default=None, ge=0)
    agg_nodes: int | None = Field(default=None, ge=0)
    agg_workers: int | None = Field(default=None, ge=0)
    gpus_per_prefill: int | None = Field(default=None, ge=1)
    gpus_per_decode: int | None = Field(default=None, ge=1)
    gpus_per_agg: int | None = Field(default=None, ge=1)
    prefill_critical: bool = True
    decode_critical: bool = True
    agg_critical: bool = True
    spread_workers: bool = Field(
        default=False, description="each partial-node worker on its own node"
    )
    het_jobs: bool | None = Field(default=None, description="Slurm heterogeneous job per side")

    @property
    def disaggregated(self) -> bool:
        return self.prefill_nodes is not None or self.decode_nodes is not None


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
    env: EnvMap = Field(default_factory=dict)
    master_extra_args: list[str] = Field(default_factory=list)
    store_config: dict[str, Any] | None = None


class BackendSection(Section):
    """The serving engine. `engine: sim` runs the simulated engine in place of `type`'s,
    told what that engine's settings ask for (parallel sizes, batch limits, ...)."""

    type: BackendType = "sglang"
    engine: Literal["sglang", "vllm", "trtllm", "sim"] | None = Field(
        default=None,
        description="`sim`: the simulated engine (no GPUs, no weights); unset: `type`'s engine",
    )
    prefill_environment: EnvMap = Field(default_factory=dict)
    decode_environment: EnvMap = Field(default_factory=dict)
    aggregated_environment: EnvMap = Field(default_factory=dict)
    sglang_config: RoleArgs | None = None
    trtllm_config: RoleArgs | None = None
    vllm_config: RoleArgs | None = None
    mocker_config: RoleArgs | None = None
    atom_config: RoleArgs | None = None
    tilert_config: RoleArgs | None = None
    prefill_extra_args: list[str] = Field(default_factory=list)
    decode_extra_args: list[str] = Field(default_factory=list)
    aggregated_extra_args: list[str] = Field(default_factory=list)
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


class FrontendSection(Section):
    """srt-slurm's frontend. This project always runs the sglang-router as the PD router;
    `args` are passed to it only when `type: sglang` (dynamo's flags mean nothing to it)."""

    type: str = Field(
        default="dynamo",
        description="v1: dynamo, sglang (the router), trtllm_serve; others are refused at plan",
    )
    package: Literal["smg", "sglang-router"] | None = Field(
        default=None,
        description="for sglang-router/smg types: `smg` (default) or `sglang-router` (0.3.2)",
    )
    enable_multiple_frontends: bool = True
    num_additional_frontends: int = Field(default=9, ge=0)
    nginx_container: str | None = None
    nginx_raise_ulimit: bool | None = None
    nginx_session_affinity: bool = False
    nginx_session_affinity_header: str = "X-Dynamo-Session-ID"
    nginx_keepalive_timeout: str = "600s"
    args: EngineArgs | None = None
    env: EnvMap | None = None
    ctx_router: dict[str, Any] | None = None
    gen_router: dict[str, Any] | None = None
    server_config_extra: dict[str, Any] | None = None
    orchestrator_placement: str = Field(default="head", description="head | first_decode")
    dedicated_node: bool = False
    worker_selection: dict[str, Any] | None = None
    container_image: str | None = None
    numa_bind: bool = False


class DynamoSection(Section):
    install: bool = True
    version: str | None = None
    hash: str | None = None
    top_of_tree: bool = False
    wheel: str | None = None
    request_plane: str | None = None
    event_plane: str | None = None
    cargo_patches: list[str] | None = None
    source: DynamoSource | None = Field(default=None, description="2.x: git+rev, pypi or wheel")
    sidecar: bool = False
    sidecar_port: int = 50051
    sidecar_binary: str | None = None
    sidecar_startup_timeout: int = 3600
    sidecar_context_length: int | None = None
    sidecar_args: list[str] = Field(default_factory=list)


class BenchmarkSweep(Section):
    mode: Literal["zip", "grid"] = "zip"
    parameters: dict[str, list[Any]] = Field(default_factory=dict)


class BenchmarkSection(Section):
    """The load. `sa-bench` and `custom` run here; the accuracy and trace types are typed
    so that their recipes load, and are reported unsupported when planned."""

    type: BenchmarkType = "manual"
    isl: int | None = Field(default=None, ge=1)
    osl: int | None = Field(default=None, ge=1)
    concurrencies: str | int | list[int | str] | None = Field(
        default=None, description='"1x2x4" or a list of integers'
    )
    req_rate: str | int | float | None = Field(default="inf", description='requests/s or "inf"')
    random_range_ratio: float | None = Field(default=None, ge=0, le=1)
    use_chat_template: bool | None = None
    num_prompts: int | None = Field(default=None, ge=1, description="prompts per point")
    num_prompts_mult: int | None = Field(default=None, ge=1)
    num_warmup_mult: int | None = Field(default=None, ge=0)
    custom_tokenizer: str | None = None
    tokenizer_mode: str | None = None
    command: str | None = Field(default=None, description="`type: custom`: shell command")
    env: EnvMap | None = Field(default=None, description="`type: custom`: extra environment")
    num_examples: int | None = None
    max_tokens: int | None = None
    repeat: int | None = None
    num_threads: int | None = None
    num_shots: int | None = None
    max_context_length: int | None = None
    categories: list[str] | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    num_requests: int | None = None
    concurrency: int | None = None
    prefix_ratios: list[float] | str | None = None
    mooncake_workload: str | None = None
    trace_file: str | None = None
    aiperf_package: str | None = None
    ttft_threshold_ms: int | float | None = None
    itl_threshold_ms: int | float | None = None
    slow_down_sleep_time: float | None = None
    slow_down_wait_time: float | None = None
    client_placement: str = Field(default="head", description="head | last_decode")
    client_dedicated_node: bool = False
    colocate_with_frontend: bool = True
    sweep: BenchmarkSweep | None = None
    dataset_name: str | None = None
    dataset_path: str | None = None
    reuse_http_connections: bool = False
    container_image: str | None = None
    aiperf_args: dict[str, Any] = Field(default_factory=dict)
    aiperf_server_metrics: bool | None = None
    export_node_metrics: bool = False
    stream_output: bool = False
    agentperf_client_dir: str | None = None
    agentperf_config: str | None = None


class RoleOverride(Section):
    """What schema 2 lets one role set for itself beyond engine args and env."""

    container: str | None = None
    srun_options: dict[str, Scalar] = Field(default_factory=dict)
    engine: str | None = Field(default=None, description="an engine other than the variant's")


class RecipeConfig(Section):
    """One resolved variant of a recipe."""

    name: str
    model: ModelSection
    resources: ResourcesSection
    backend: BackendSection = Field(default_factory=BackendSection)
    frontend: FrontendSection | None = Field(default_factory=FrontendSection)
    dynamo: DynamoSection = Field(default_factory=DynamoSection)
    benchmark: BenchmarkSection = Field(default_factory=BenchmarkSection)
    health_check: HealthCheckSection | None = None
    limits: LimitsSection = Field(
        default_factory=LimitsSection,
        description="disagg's own: request, stall, point, run and liveness time limits",
    )
    infra: InfraSection = Field(default_factory=InfraSection)
    slurm: SlurmSection = Field(default_factory=SlurmSection)
    sbatch_directives: dict[str, Scalar] = Field(default_factory=dict)
    srun_options: dict[str, Scalar] = Field(default_factory=dict)
    environment: EnvMap = Field(default_factory=dict)
    container_mounts: dict[str, str] = Field(
        default_factory=dict, description="host path -> container path"
    )
    extra_mount: list[str] = Field(default_factory=list, description='"host:container" pairs')
    setup_script: str | None = None
    enable_config_dump: bool = True
    identity: IdentitySection | None = None
    observability: ObservabilitySection | None = None
    profiling: ProfilingSection | None = None
    telemetry: TelemetrySection | None = None
    output: OutputSection | None = None
    reporting: ReportingSection | None = None
    host_setup: HostSetupSection | None = None
    post_eval: PostEvalSection | None = None
    services: list[ServiceSection] = Field(default_factory=list)
    role_overrides: dict[Literal["prefill", "decode", "agg"], RoleOverride] = Field(
        default_factory=dict, description="schema 2: a role's own image and srun options"
    )


def concurrency_points(raw: Any) -> list[int]:
    """`benchmark.concurrencies` as integers: `"1x4x16"`, `4`, `[1, 4]` or `["16x128", 4]`.

    Raises ValueError naming the first item that is not a positive integer; the plan
    and the linter both read the field through here, so they accept the same text.
    """
    items = raw if isinstance(raw, list) else [] if raw is None else [raw]
    points: list[int] = []
    for item in items:
        whole = isinstance(item, int) and not isinstance(item, bool)
        for part in [item] if whole else str(item).split("x"):
            try:
                value = int(part)
            except ValueError:
                raise ValueError(f"{item!r} is not an integer or NxMx... list") from None
            if value < 1:
                raise ValueError(f"{value} is below 1")
            points.append(value)
    return points


def recipe_json_schema() -> dict[str, Any]:
    """JSON Schema of one resolved variant."""
    return RecipeConfig.model_json_schema()


def recipe_file_json_schema() -> dict[str, Any]:
    """JSON Schema of a recipe file (what `disagg schema` prints): v1 or `schema: 2`, each a
    flat recipe or an override file whose `base` and variant blocks are partial recipes
    merged at load time."""
    from disagg.recipe.dialects.schema2_model import Schema2Recipe

    flat = recipe_json_schema()
    defs = flat.pop("$defs", {})
    defs["RecipeConfig"] = flat
    two = Schema2Recipe.model_json_schema()
    defs.update(two.pop("$defs", {}))
    marker = {"const": 2, "description": "srt-slurm 2.x recipe layout"}
    two["properties"] = {"schema": marker, **two["properties"]}
    two["required"] = ["schema", *two.get("required", [])]
    defs["Schema2Recipe"] = two
    block = {"type": ["object", "null"], "description": "partial recipe, merged onto `base`"}
    patterns = {
        "^override_": block,
        "^zip_override_": {
            **block,
            "description": "partial recipe whose list leaves are zipped into variants",
        },
        "^x-": {"description": "ignored; holds YAML anchors shared by several variants"},
    }
    override_file = {
        "type": "object",
        "required": ["base"],
        "properties": {"base": block},
        "patternProperties": patterns,
        "additionalProperties": False,
    }
    schema2_override_file = {
        **override_file,
        "required": ["schema", "base"],
        "properties": {"schema": marker, "base": block},
    }
    return {
        "title": "disagg recipe (srt-slurm v1 or schema 2)",
        "description": "A flat recipe, or `base:` plus `override_<name>:` / "
        "`zip_override_<name>:` blocks; `schema: 2` selects srt-slurm 2.x's layout. "
        "Top-level `x-` keys are ignored.",
        "anyOf": [
            {"$ref": "#/$defs/RecipeConfig"},
            override_file,
            {"$ref": "#/$defs/Schema2Recipe"},
            schema2_override_file,
        ],
        "$defs": defs,
    }
