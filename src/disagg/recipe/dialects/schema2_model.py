"""The `schema: 2` recipe layout of srt-slurm 2.x, typed: validated before translation, so an
unknown key is reported against schema 2's own key set. Sections that differ from the
internal ones are derived from them, so a field added there is not forgotten here.
"""

# No `from __future__ import annotations`: pydantic would evaluate each annotation string.

from collections.abc import Mapping
from functools import cache
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union

from pydantic import Field, create_model
from pydantic.fields import FieldInfo

from disagg.model_defaults import empty_dict, empty_list
from disagg.recipe import job_sections as job
from disagg.recipe.backend_section import (
    ENGINE_COMMON,
    ENGINE_KNOBS,
    ENGINES,
    BackendSection,
    EngineArgs,
    EnvMap,
    Scalar,
)
from disagg.recipe.benchmark_section import BenchmarkSection
from disagg.recipe.schema import DynamoSection, FrontendSection, ModelSection
from disagg.recipe.section_base import Section, WhenSet, omitted

# srt-slurm 2.x's engine types in its schema's order, then any other registered engine.
ENGINE_TYPES = tuple(
    dict.fromkeys(("atom", "sglang", "tilert", "trtllm", "vllm", "mocker", *ENGINES))
)
if TYPE_CHECKING:
    EngineType = str
else:
    EngineType = Literal[ENGINE_TYPES]


def _derive(
    name: str,
    base: type[Section],
    *,
    drop: frozenset[str] | tuple[str, ...] = (),
    add: dict[str, Any] | None = None,
) -> type[Section]:
    """A section with `base`'s fields minus `drop`, plus `add` ({name: (type, default)})."""
    fields: dict[str, Any] = {
        key: (info.annotation, info) for key, info in base.model_fields.items() if key not in drop
    }
    for key, (annotation, default) in (add or {}).items():
        fields[key] = (annotation, default if isinstance(default, FieldInfo) else Field(default))
    return create_model(name, __base__=Section, __doc__=base.__doc__, **fields)


class Placement(Section):
    """Where the frontend or the benchmark client runs: head, first_decode, last_decode,
    dedicated."""

    node: str = "head"


class Resources2(Section):
    """Cluster facts and allocation knobs; the worker topology is `roles:`."""

    gpu_type: str | None = None
    gpus_per_node: int | None = Field(default=None, ge=1)
    spread_workers: bool = False
    het_jobs: bool | None = None


@cache
def engine_model(kind: str) -> type[Section]:
    """`engine: {type: <kind>, ...}`: that engine's own knobs only (`ENGINE_KNOBS`)."""
    keep = ENGINE_KNOBS[kind] | ENGINE_COMMON
    return _derive(
        f"Engine2{kind.capitalize()}",
        BackendSection,
        drop=frozenset(BackendSection.model_fields) - keep,
        add={"type": (Literal[kind], ...)},
    )


@cache
def _any_engine() -> Any:
    """What `engine:` may be: a bare engine name, or one engine's map told apart by `type`."""
    models = tuple(engine_model(kind) for kind in ENGINE_TYPES)
    tagged = Annotated[Union[models], Field(discriminator="type")]  # type: ignore[valid-type]  # noqa: UP007
    return EngineType | tagged | None


def _named_engine(value: Any) -> Any:
    """A bare engine name, or a map validated by its own engine's model (made on demand);
    NotImplemented for anything else, which the union of every engine's model words."""
    if value is None or (isinstance(value, str) and value in ENGINE_TYPES):
        return value
    if isinstance(value, Mapping) and value.get("type") in ENGINE_TYPES:
        return engine_model(value["type"]).model_validate(value)
    return NotImplemented


# `engine:`: only the named engine's model is built (the union of all cost more than the
# rest of the engine checks); a value that fails is validated by the union, which words it.
Engine2 = Annotated[EngineType | Section | None, WhenSet(whole=_any_engine, first=_named_engine)]


class Role2(Section):
    """One worker role: `roles.prefill`, `roles.decode` or `roles.agg`."""

    nodes: int | Literal["colocate"] | None = None
    workers: int | None = Field(default=None, ge=0)
    gpus: int | None = Field(default=None, ge=1)
    srun_options: dict[str, Scalar] = Field(default_factory=empty_dict)
    env: EnvMap = Field(default_factory=empty_dict)
    args: EngineArgs = Field(default_factory=empty_dict)
    extra_args: list[str] = Field(default_factory=empty_list)
    engine: Engine2 = None
    container: str | None = None
    kv_events: bool | dict[str, Any] | None = None
    sidecar: bool | None = None
    critical: bool = True


class Roles2(Section):
    prefill: Role2 | None = None
    decode: Role2 | None = None
    agg: Role2 | None = None


Frontend2 = _derive(
    "Frontend2",
    FrontendSection,
    drop=("orchestrator_placement", "dedicated_node"),
    add={"placement": (Placement | None, None)},
)
Benchmark2 = _derive(
    "Benchmark2",
    BenchmarkSection,
    drop=("client_placement", "client_dedicated_node"),
    add={"placement": (Placement | None, None)},
)
Dynamo2 = _derive("Dynamo2", DynamoSection, drop=("version", "hash", "wheel", "cargo_patches"))


class Schema2Recipe(Section):
    """One resolved variant of a `schema: 2` recipe."""

    name: str
    model: ModelSection
    resources: Resources2
    slurm: job.SlurmSection | None = None
    engine: Engine2 = None
    roles: Roles2 = omitted()
    frontend: Frontend2 | None = None  # type: ignore[valid-type]
    dynamo: Dynamo2 | None = None  # type: ignore[valid-type]
    benchmark: Benchmark2 | None = None  # type: ignore[valid-type]
    profiling: Annotated[job.ProfilingSection | None, WhenSet()] = None
    output: Annotated[job.OutputSection | None, WhenSet()] = None
    health_check: Annotated[job.HealthCheckSection | None, WhenSet()] = None
    observability: Annotated[job.ObservabilitySection | None, WhenSet()] = None
    telemetry: Annotated[job.TelemetrySection | None, WhenSet()] = None
    environment: EnvMap = Field(default_factory=empty_dict)
    container_mounts: dict[str, str] = Field(default_factory=empty_dict)
    extra_mount: list[str] | None = None
    srun_options: dict[str, Scalar] = Field(default_factory=empty_dict)
    sbatch_directives: dict[str, Scalar] = Field(default_factory=empty_dict)
    enable_config_dump: bool = True
    setup_script: str | None = None
    host_setup: Annotated[job.HostSetupSection | None, WhenSet()] = None
    services: Annotated[list[job.ServiceSection], WhenSet()] = Field(default_factory=empty_list)
    post_eval: Annotated[job.PostEvalSection | None, WhenSet()] = None
    identity: Annotated[job.IdentitySection | None, WhenSet()] = None
    reporting: Annotated[job.ReportingSection | None, WhenSet()] = None
