"""The `benchmark` section: which load runs against the frontend, and its points."""

# No `from __future__ import annotations`: pydantic would evaluate each annotation string.

from typing import Any, Literal

from pydantic import Field

from disagg.model_defaults import empty_dict
from disagg.recipe.backend_section import EnvMap
from disagg.recipe.limits import (
    MAX_CONCURRENCY,
    MAX_POINT_REQUESTS,
    MAX_SEQUENCE_TOKENS,
    load_bound_problem,
)
from disagg.recipe.section_base import Section

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


class BenchmarkSweep(Section):
    mode: Literal["zip", "grid"] = "zip"
    parameters: dict[str, list[Any]] = Field(default_factory=empty_dict)


class BenchmarkSection(Section):
    """The load. `sa-bench` and `custom` run here; the accuracy and trace types are typed
    so that their recipes load, and are reported unsupported when planned."""

    type: BenchmarkType = "manual"
    isl: int | None = Field(default=None, ge=1, le=MAX_SEQUENCE_TOKENS)
    osl: int | None = Field(default=None, ge=1, le=MAX_SEQUENCE_TOKENS)
    concurrencies: str | int | list[int | str] | None = Field(
        default=None, description='"1x2x4" or a list of integers'
    )
    req_rate: str | int | float | None = Field(default="inf", description='requests/s or "inf"')
    random_range_ratio: float | None = Field(default=None, ge=0, le=1)
    use_chat_template: bool | None = None
    num_prompts: int | None = Field(
        default=None, ge=1, le=MAX_POINT_REQUESTS, description="prompts per point"
    )
    num_prompts_mult: int | None = Field(default=None, ge=1)
    num_warmup_mult: int | None = Field(default=None, ge=0)
    custom_tokenizer: str | None = None
    tokenizer_mode: str | None = None
    command: str | None = Field(default=None, description="`type: custom`: shell command")
    env: EnvMap | None = Field(default=None, description="`type: custom`: extra environment")
    expect_results: bool | None = Field(
        default=None,
        description="`type: custom`: false when the command writes no point files (disagg's own)",
    )
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
    aiperf_args: dict[str, Any] = Field(default_factory=empty_dict)
    aiperf_server_metrics: bool | None = None
    export_node_metrics: bool = False
    stream_output: bool = False
    agentperf_client_dir: str | None = None
    agentperf_config: str | None = None


def concurrency_points(raw: Any) -> list[int]:
    """`benchmark.concurrencies` (`"1x4x16"`, `4`, `[1, 4]`, `["16x128", 4]`) as integers, or a
    ValueError naming the first bad item: the plan and the linter both read it through here."""
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
            problem = load_bound_problem("concurrency", value, MAX_CONCURRENCY)
            if problem is not None:
                raise ValueError(problem)
            points.append(value)
    return points
