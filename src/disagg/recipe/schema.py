"""The typed recipe: every field srt-slurm v1.0.68 defines, plus `backend.engine`; both
dialects load into it, so engines, frontends and benchmarks read one place.

Strict on purpose: a typo must not silently fall back to a default, and `isl: "1k"` is
an error, not a guess.
"""

# No `from __future__ import annotations`: pydantic would evaluate each annotation string.

from typing import Annotated, Any, Literal

from pydantic import Field

from disagg.model_defaults import empty_dict, empty_list
from disagg.recipe.backend_section import BackendSection, EngineArgs, EnvMap, Scalar
from disagg.recipe.benchmark_section import BenchmarkSection
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
    ServiceSection,
    SlurmSection,
    TelemetrySection,
)
from disagg.recipe.section_base import Section, WhenSet, omitted


class ModelSection(Section):
    """What to serve. `path` and `container` may be cluster-profile aliases or `hf:org/name`."""

    path: str = Field(
        description="`hf:org/name` (a hub repo), a cluster model alias, or a directory "
        "(`org/name` included, as srtctl reads it)"
    )
    container: str = Field(description="container alias or image reference")
    precision: str = Field(description="informational: fp4, fp8, bf16, ...")
    revision: str | None = Field(default=None, description="revision to stage for a repo id")
    stage_extra: list[str] = Field(
        default_factory=empty_list, description="further repo ids to stage (e.g. a tokenizer repo)"
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
    sidecar_args: list[str] = Field(default_factory=empty_list)


class RoleOverride(Section):
    """What schema 2 lets one role set for itself beyond engine args and env."""

    container: str | None = None
    srun_options: dict[str, Scalar] = Field(default_factory=empty_dict)
    engine: str | None = Field(default=None, description="an engine other than the variant's")
    knobs: dict[str, Any] = Field(
        default_factory=empty_dict, description="knobs of this role's engine only"
    )


RoleOverrides = dict[Literal["prefill", "decode", "agg"], RoleOverride]


class RecipeConfig(Section):
    """One resolved variant of a recipe."""

    name: str
    model: ModelSection
    resources: ResourcesSection
    backend: BackendSection = omitted()
    frontend: FrontendSection | None = omitted()
    dynamo: DynamoSection = omitted()
    benchmark: BenchmarkSection = omitted()
    health_check: Annotated[HealthCheckSection | None, WhenSet()] = None
    limits: LimitsSection = omitted(
        description="disagg's own: request, stall, point, run and liveness time limits"
    )
    infra: InfraSection = omitted()
    slurm: SlurmSection = omitted()
    sbatch_directives: dict[str, Scalar] = Field(default_factory=empty_dict)
    srun_options: dict[str, Scalar] = Field(default_factory=empty_dict)
    environment: EnvMap = Field(default_factory=empty_dict)
    container_mounts: dict[str, str] = Field(
        default_factory=empty_dict, description="host path -> container path"
    )
    extra_mount: list[str] = Field(default_factory=empty_list, description='"host:container" pairs')
    setup_script: str | None = None
    enable_config_dump: bool = True
    identity: Annotated[IdentitySection | None, WhenSet()] = None
    observability: Annotated[ObservabilitySection | None, WhenSet()] = None
    profiling: Annotated[ProfilingSection | None, WhenSet()] = None
    telemetry: Annotated[TelemetrySection | None, WhenSet()] = None
    output: Annotated[OutputSection | None, WhenSet()] = None
    reporting: Annotated[ReportingSection | None, WhenSet()] = None
    host_setup: Annotated[HostSetupSection | None, WhenSet()] = None
    post_eval: Annotated[PostEvalSection | None, WhenSet()] = None
    services: Annotated[list[ServiceSection], WhenSet()] = Field(default_factory=empty_list)
    role_overrides: Annotated[RoleOverrides, WhenSet()] = Field(
        default_factory=empty_dict, description="schema 2: a role's own image and srun options"
    )

    def backend_settings(
        self, *, exclude_unset: bool = False, exclude_none: bool = False
    ) -> dict[str, Any]:
        """`backend` as a plain map, dumped through this model's serializer (the section's
        own `model_dump()` would build another)."""
        dumped = self.model_dump(
            include={"backend"}, exclude_unset=exclude_unset, exclude_none=exclude_none
        )
        return dict(dumped.get("backend", {}))
