"""Recipe sections about the job around the engines, typed as srt-slurm types them (v1.0.68
plus `schema: 2`) so every recipe loads; which a plan honours is `honoured`'s call."""

# No `from __future__ import annotations`: pydantic would evaluate each annotation string.

import math
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, ConfigDict, Field

from disagg.model_defaults import empty_dict, empty_list
from disagg.recipe.section_base import Section


class SlurmSection(Section):
    account: str | None = None
    partition: str | None = None
    time_limit: str | None = Field(default=None, description="HH:MM:SS or D-HH:MM:SS")


def _infinity_is_no_limit(value: Any) -> Any:
    """`.inf` for an optional limit means no limit, as null does (JSON has no infinity, so
    plan.json could not carry it)."""
    return None if isinstance(value, float) and value == math.inf else value


def _finite(value: int | float) -> int | float:
    if not math.isfinite(value):
        raise ValueError(
            "must be a finite number of seconds (this limit always applies; "
            "give a large number to make it loose)"
        )
    return value


OptionalSeconds = Annotated[int | float | None, BeforeValidator(_infinity_is_no_limit)]
Seconds = Annotated[int | float, AfterValidator(_finite)]


class LimitsSection(Section):
    """disagg's own: how long a run may wait on engines that stop making progress (seconds),
    so a hung worker fails the run with its name instead of holding it to Slurm's limit."""

    request_timeout: Seconds = Field(
        default=900, gt=0, description="longest one request may go without a generated token"
    )
    stall_timeout: OptionalSeconds = Field(
        default=300, gt=0, description="longest a point may go with no request progressing"
    )
    point_timeout: OptionalSeconds = Field(
        default=None, gt=0, description="longest one point may take, warm-up included"
    )
    run_timeout: OptionalSeconds = Field(
        default=None, gt=0, description="longest the whole run may take, start-up included"
    )
    liveness_timeout: Seconds = Field(
        default=30, gt=0, description="longest a started role may fail its health check"
    )
    liveness_interval: Seconds = Field(
        default=2, gt=0, description="seconds between health checks of started roles"
    )
    serving_gap: Seconds = Field(
        default=5,
        gt=0,
        description="longest a role may go without a healthy answer during a point and the "
        "point still count; longer, and the point is measured once more",
    )


class InfraSection(Section):
    """v1 `infra` (schema 2: `services` entries of type etcd / nats)."""

    etcd_nats_dedicated_node: bool = False
    nats_max_payload_mb: int | None = Field(default=None, ge=1)


class HealthCheckSection(Section):
    """Worker start-up deadline: max_attempts x interval_seconds."""

    max_attempts: int = Field(default=180, ge=1)
    interval_seconds: int | float = Field(default=10, gt=0)
    fatal_log_markers: bool = True
    extra_fatal_log_patterns: list[str] = Field(default_factory=empty_list)


class ProfilingPhase(Section):
    start_step: int | None = None
    stop_step: int | None = None
    capture_scope: Literal["selected", "all"] = "all"
    worker_index: int = 0
    worker_rank: int = 0


class ProfilingSection(Section):
    type: Literal["none", "nsys", "nsys-time", "torch"] = "none"
    extra_nsys_args: list[str] | None = None
    nsys_trace: str | None = None
    trace_fork_before_exec: bool | None = None
    capture_range_end: str | None = None
    nsys_library_paths: list[str] | None = None
    prefill: ProfilingPhase | None = None
    decode: ProfilingPhase | None = None
    aggregated: ProfilingPhase | None = None
    delay_secs: int | None = None
    duration_secs: int | None = None
    benchmark_duration_secs: int = 300


class IdentityContainer(Section):
    image: str | None = None


class IdentityModel(Section):
    repo: str | None = None
    revision: str | None = None


class IdentitySection(Section):
    """Provenance recorded with results (which image, frameworks and model revision)."""

    container: IdentityContainer | None = None
    frameworks: dict[str, str] = Field(default_factory=empty_dict)
    model: IdentityModel | None = None


class ExporterSection(Section):
    """A metrics exporter deployed on worker nodes (dcgm, node, process exporters)."""

    container_image: str
    port: int
    command: str | None = None
    binary: str | None = None


class Tachometer(Section):
    enabled: bool | None = None
    binary_path: str = "tachometer-scraper"
    default_frequency: float | None = Field(default=None, description="v1: scrapes per second")
    collect_interval_ms: int | None = Field(default=None, description="2.x: ms between scrapes")
    sync_interval_secs: int = 120
    shutdown_grace_secs: float | None = None
    compaction_threads: int = 4
    storage_subdir: str = "tachometer"
    extra_metadata: dict[str, str] = Field(default_factory=empty_dict)
    default_exporters: bool = True
    default_gpu_exporter: ExporterSection | None = None
    dcgm_exporter: ExporterSection | None = None
    node_exporter: ExporterSection | None = None
    process_exporter: ExporterSection | None = None


class NsysObservability(Section):
    enabled: bool = True
    capture_window: Literal["measured_workload", "including_startup"] = "measured_workload"
    report_timeout_secs: int = 1800
    nvtx_injection_path: str | None = None
    cpu_sampling: Literal["system-wide", "process-tree", "none"] = "system-wide"


class ObservabilitySection(Section):
    enabled: bool = False
    enable_otel: bool = False
    otel_endpoint: str | None = None
    scrape_metrics: bool | None = None
    scrape_interval_seconds: float = 1.0
    scrape_output: str = "raw_prometheus.jsonl"
    build_dashboard: bool | None = None
    tachometer: Tachometer | None = None
    nsys: NsysObservability | None = None


class CpuPowerExporter(Section):
    port: int = 9405
    source: str = "auto"


class CpuPower(Section):
    enabled: bool = False
    source: Literal["auto", "acpi", "dcgm"] = "auto"
    sample_interval_seconds: float = 0.1
    startup_timeout_seconds: float = 30.0
    required: bool = False
    storage_subdir: str = "cpu_power"


class TelemetrySection(Section):
    """DCGM power telemetry over the measurement windows."""

    enabled: bool = False
    # Named by InferenceX's recipes (newer than srt-slurm v1.0.68); no telemetry runs here.
    provider: Literal["dcgm-power"] | None = Field(
        default=None, description="the power collector: dcgm-power (the only one)"
    )
    dcgm_exporter: ExporterSection | None = None
    default_frequency: float | None = Field(default=None, description="v1: seconds per sample")
    collect_interval_ms: int | None = Field(default=None, description="2.x: ms per sample")
    storage_subdir: str = "power"
    required: bool = False
    clock_sync_check: bool = True
    startup_timeout_seconds: float = 30.0
    request_timeout_seconds: float = 2.0
    collector_join_timeout_seconds: float | None = None
    cpu_power_exporter: CpuPowerExporter | None = None
    cpu_power: CpuPower | None = None


class ReportingStatus(Section):
    model_config = ConfigDict(populate_by_name=True)  # merged onto Section's

    endpoint: str | None = None
    endpoints: list[str] | None = None
    token_env: str | None = None
    logging_stream_interval: float | None = Field(default=None, alias="logging-stream-interval")


class AiAnalysis(Section):
    enabled: bool = False
    openrouter_api_key: str | None = None
    gh_token: str | None = None
    repos_to_search: list[str] | None = None
    pr_search_days: int = 14
    prompt: str | None = None


class S3Upload(Section):
    bucket: str
    prefix: str | None = None
    region: str | None = None
    endpoint_url: str | None = None
    access_key_id: str | None = None
    secret_access_key: str | None = None
    exclude: list[str] | None = None
    archive: list[str] | None = None


class ReportingSection(Section):
    status: ReportingStatus | None = None
    ai_analysis: AiAnalysis | None = None
    s3: S3Upload | None = None


class OutputSection(Section):
    log_dir: str | None = Field(default=None, description="log directory template")


class HostSetupSection(Section):
    """2.x: commands run on each node's bare host before workers start."""

    commands: list[str] = Field(default_factory=empty_list)
    teardown: list[str] = Field(default_factory=empty_list)
    nodes: Literal["all", "workers"] = "all"
    ignore_failure: bool = False
    timeout_seconds: int = 300


class PostEvalSection(Section):
    """2.x: how the post-benchmark accuracy evaluation is dispatched."""

    passthrough_env: list[str] = Field(default_factory=empty_list)
    command: list[str] | None = None


class SourceRef(Section):
    """A git repository at an immutable ref."""

    git: str
    rev: str
    path: str | None = None
    sha: str | None = None


class ServicePlacement(Section):
    node: str = "head"
    pool: str | None = None
    per: Literal["node", "worker"] = "node"


class TcpProbe(Section):
    port: int


class HttpProbe(Section):
    port: int
    path: str = "/health"
    status: int = 200


class LogProbe(Section):
    pattern: str


class ServiceReadiness(Section):
    port: int | None = None
    tcp: TcpProbe | None = None
    http: HttpProbe | None = None
    log: LogProbe | None = None
    timeout_seconds: int = 120
    interval_seconds: int = 2


class ServiceMetrics(Section):
    port: int
    path: str = "/metrics"
    nodes: str = "all"
    name: str | None = None


class ServiceSection(Section):
    """One `services:` entry: a process next to the job (etcd, nats, mooncake, a sidecar)."""

    name: str
    type: str = "generic"
    command: list[str] | None = None
    args: list[str] = Field(default_factory=empty_list)
    container: str | None = None
    env: dict[str, str] = Field(default_factory=empty_dict)
    source: SourceRef | None = None
    build_command: list[str] | None = None
    placement: ServicePlacement | None = None
    nodes: int | None = Field(default=None, ge=1)
    start: Literal["after_frontend", "before_workers"] | None = None
    readiness: ServiceReadiness | None = None
    inherit_discovery_env: bool = True
    critical: bool | None = None
    terminal: bool = False
    preamble: str | None = None
    cpus_per_task: int | None = None
    cpu_bind: str | None = None
    srun_options: dict[str, str] = Field(default_factory=empty_dict)
    build_timeout_seconds: int = 1800
    enabled: bool = True
    external: str | None = None
    options: dict[str, Any] = Field(default_factory=empty_dict)
    metrics: list[ServiceMetrics] | ServiceMetrics = Field(default_factory=empty_list)


class DynamoSource(Section):
    """Which Dynamo to install (2.x): exactly one of git+rev, pypi, or wheel."""

    git: str | None = None
    rev: str | None = None
    sha: str | None = None
    patches: list[str] | None = None
    pypi: str | None = None
    wheel: str | None = None
