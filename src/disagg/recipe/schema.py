"""The typed recipe: every field srt-slurm v1 recipes use, plus `backend.engine`.

Strict on purpose: unknown keys are errors (a typo must not silently fall back to a
default), and values are not coerced across types (`isl: "1k"` is an error, not a
guess). Engine and environment maps stay open maps because their keys are the
engines' own flags and variables. `disagg schema` prints `recipe_json_schema()` so
editors can complete and check recipes.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Scalar = str | int | float | bool
# An engine flag value: `true` -> `--flag`, list -> `--flag a b`, map -> JSON, null -> omitted.
EngineArg = str | int | float | bool | list[Any] | dict[str, Any] | None
EngineArgs = dict[str, EngineArg]
EnvMap = dict[str, Scalar]

BackendType = Literal["sglang", "trtllm", "vllm", "mocker"]
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
]


class Section(BaseModel):
    """Base of every recipe section: no unknown keys, no type coercion."""

    model_config = ConfigDict(extra="forbid", strict=True)


class ModelSection(Section):
    """What to serve. `path` and `container` may be cluster-profile aliases or `hf:org/name`."""

    path: str = Field(description="model alias, local directory, `hf:org/name` or `org/name`")
    container: str = Field(description="container alias or image reference")
    precision: str = Field(description="informational: fp4, fp8, bf16, ...")
    revision: str | None = Field(default=None, description="revision to stage for a repo id")
    stage_extra: list[str] = Field(
        default_factory=list, description="further repo ids to stage (e.g. a tokenizer repo)"
    )


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

    @property
    def disaggregated(self) -> bool:
        return self.prefill_nodes is not None or self.decode_nodes is not None


class RoleArgs(Section):
    """Per-role engine flags (`backend.<engine>_config.{prefill,decode,aggregated}`)."""

    prefill: EngineArgs | None = None
    decode: EngineArgs | None = None
    aggregated: EngineArgs | None = None


class RoleFlags(Section):
    prefill: bool | None = None
    decode: bool | None = None
    aggregated: bool | None = None


class BackendSection(Section):
    """The serving engine. `engine: sim` runs the simulated engine with the same SGLang flags."""

    type: BackendType = "sglang"
    engine: Literal["sglang", "sim"] = Field(
        default="sglang", description="`sim`: the simulated engine (no GPUs, no weights)"
    )
    prefill_environment: EnvMap = Field(default_factory=dict)
    decode_environment: EnvMap = Field(default_factory=dict)
    aggregated_environment: EnvMap = Field(default_factory=dict)
    sglang_config: RoleArgs | None = None
    trtllm_config: RoleArgs | None = None
    vllm_config: RoleArgs | None = None
    mocker_config: RoleArgs | None = None
    kv_events_config: RoleFlags | None = None
    connector: str | None = None
    engine_type: str | None = None
    speedup_ratio: float | None = None


class FrontendSection(Section):
    """srt-slurm's frontend. This project always runs the sglang-router as the PD router;
    `args` are passed to it only when `type: sglang` (dynamo's flags mean nothing to it)."""

    type: Literal["dynamo", "sglang", "trtllm_serve"] = "dynamo"
    enable_multiple_frontends: bool = True
    num_additional_frontends: int = Field(default=9, ge=0)
    nginx_container: str | None = None
    nginx_raise_ulimit: bool | None = None
    args: EngineArgs | None = None
    env: EnvMap | None = None


class DynamoSection(Section):
    install: bool = True
    version: str | None = None
    hash: str | None = None
    top_of_tree: bool = False
    wheel: str | None = None
    request_plane: str | None = None


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


class HealthCheckSection(Section):
    """Worker start-up deadline: max_attempts x interval_seconds."""

    max_attempts: int = Field(default=180, ge=1)
    interval_seconds: int | float = Field(default=10, gt=0)


class InfraSection(Section):
    etcd_nats_dedicated_node: bool = False


class SlurmSection(Section):
    account: str | None = None
    partition: str | None = None
    time_limit: str | None = Field(default=None, description="HH:MM:SS or D-HH:MM:SS")


class ProfilingPhase(Section):
    start_step: int | None = None
    stop_step: int | None = None


class ProfilingSection(Section):
    type: Literal["none", "nsys", "torch"] = "none"
    prefill: ProfilingPhase | None = None
    decode: ProfilingPhase | None = None
    aggregated: ProfilingPhase | None = None


class IdentityContainer(Section):
    image: str


class IdentityModel(Section):
    repo: str
    revision: str | None = None


class IdentitySection(Section):
    """Provenance recorded with results (which image, frameworks and model revision)."""

    container: IdentityContainer | None = None
    frameworks: dict[str, str] = Field(default_factory=dict)
    model: IdentityModel | None = None


class Tachometer(Section):
    enabled: bool = False


class ObservabilitySection(Section):
    enabled: bool = False
    scrape_metrics: bool = False
    tachometer: Tachometer | None = None


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
    """JSON Schema of a recipe file (what `disagg schema` prints): a flat recipe, or an
    override file whose `base` and variant blocks are partial recipes merged at load time."""
    flat = recipe_json_schema()
    defs = flat.pop("$defs", {})
    defs["RecipeConfig"] = flat
    block = {"type": ["object", "null"], "description": "partial recipe, merged onto `base`"}
    override_file = {
        "type": "object",
        "required": ["base"],
        "properties": {"base": block},
        "patternProperties": {
            "^override_": block,
            "^zip_override_": {
                **block,
                "description": "partial recipe whose list leaves are zipped into variants",
            },
            "^x-": {"description": "ignored; holds YAML anchors shared by several variants"},
        },
        "additionalProperties": False,
    }
    return {
        "title": "disagg recipe (srt-slurm v1 compatible)",
        "description": "A flat recipe, or `base:` plus `override_<name>:` / "
        "`zip_override_<name>:` blocks. Top-level `x-` keys are ignored.",
        "anyOf": [{"$ref": "#/$defs/RecipeConfig"}, override_file],
        "$defs": defs,
    }
