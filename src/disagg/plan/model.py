"""The plan data model: everything a job needs, written once to `RUN_DIR/plan.json`.

The orchestrator (`python -m disagg.job RUN_DIR`) reads nothing else: no environment
variables, no `--export` lists, no command-line strings that something re-splits.
Values only known inside the allocation (node addresses, ports, staged model paths)
appear in `argv`/`env` as `${role.field}` placeholders; see `disagg.plan.templates`.
"""

# No `from __future__ import annotations` here: pydantic would compile and evaluate
# each field's annotation string when the class is made, a cost every command pays.

from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from disagg.model_defaults import empty_dict, empty_list
from disagg.plan.bench_model import (
    BenchCommand,
    BenchPlan,
    PointPlan,
    ProfileTarget,
    ProfilingPlan,
    SlowDownPlan,
    TracePlan,
)
from disagg.plan.limits import LimitsPlan
from disagg.plan.role_model import (
    WORKER_KINDS,
    GpuVendor,
    HealthPlan,
    HostSetupPlan,
    MpiPlan,
    ParallelPlan,
    ReadinessPlan,
    RoleKind,
    RolePlan,
    Strict,
)

# The plan's parts, importable from here as one model.
__all__ = [
    "PLAN_FILE",
    "WORKER_KINDS",
    "BenchCommand",
    "BenchPlan",
    "ContainerToStage",
    "GpuVendor",
    "HealthPlan",
    "HostSetupPlan",
    "ModelToStage",
    "MpiPlan",
    "ParallelPlan",
    "Plan",
    "PointPlan",
    "ProfileTarget",
    "ProfilingPlan",
    "ReadinessPlan",
    "RoleKind",
    "RolePlan",
    "SlowDownPlan",
    "SlurmPlan",
    "StagingPlan",
    "TracePlan",
]

PLAN_SCHEMA_VERSION = 1
PLAN_FILE = "plan.json"


class ModelToStage(Strict):
    """A model repo the job must find complete before any role starts."""

    repo_id: str
    revision: str = "main"
    purpose: Literal["main", "draft", "extra"] = "main"


class ContainerToStage(Strict):
    """A squashfs image the job needs, and how to make it when it does not exist yet:
    `import_command` is an argv template, `{image}` the source reference and `{output}` the
    temporary file to write (never the final path)."""

    squashfs: str
    image: str
    import_command: list[str] = Field(
        default_factory=lambda: ["enroot", "import", "--output", "{output}", "{image}"]
    )


class StagingPlan(Strict):
    """Where models live. `local_path` set means the main model is a directory, not a repo."""

    models: list[ModelToStage] = Field(default_factory=empty_list)
    hf_cache: str | None = None  # HF_HOME-style root; `hub/` is the canonical layout below it
    legacy_roots: list[str] = Field(default_factory=empty_list)
    local_path: str | None = None
    allow_download: bool = True
    skip: bool = False  # the simulated engine needs no weights: listed for display, not staged
    containers: list[ContainerToStage] = Field(default_factory=empty_list)


class SlurmPlan(Strict):
    """What `job.sbatch` asks for. Rendered by the Slurm executor, ignored by the local one."""

    job_name: str
    nodes: int
    gpus_per_node: int
    gpu_directive: Literal["gres", "gpus-per-node", "none"] = "gres"
    partition: str | None = None
    account: str | None = None
    time_limit: str | None = None
    exclusive: bool = True
    segment: int | None = None  # `#SBATCH --segment=N`: N nodes on one network segment
    directives: dict[str, str] = Field(default_factory=empty_dict)  # extra `#SBATCH --key=value`
    srun_options: dict[str, str] = Field(default_factory=empty_dict)
    container_image: str | None = None  # pyxis image (squashfs path or registry ref)
    container_mounts: dict[str, str] = Field(default_factory=empty_dict)  # host -> container
    pyxis: bool = False  # srun gets --container-* flags for roles with an image only when set
    secret_env: list[str] = Field(default_factory=empty_list)  # names only, never values
    # A Slurm heterogeneous job (srtctl's `resources.het_jobs`): the node count of each
    # component, group 0 (prefill, and a dedicated infra node) then group 1 (decode);
    # empty for one homogeneous job. Node ranks run through the groups in this order.
    het_nodes: list[int] = Field(default_factory=empty_list)

    def het_group(self, node_rank: int) -> int | None:
        """The component a node rank belongs to (`srun --het-group`), None if not het."""
        for group, count in enumerate(self.het_nodes):
            node_rank -= count
            if node_rank < 0:
                return group
        return None


class Plan(Strict):
    """A variant placed on nodes. Pure data; `plan.json` in the run directory."""

    schema_version: int = PLAN_SCHEMA_VERSION
    name: str  # the recipe's `name`
    selector: str  # `file.yaml:override_x` — where this variant came from
    recipe_file: str
    variant: str  # `base`, `override_x`, `zip_override_x[2]`
    engine: str  # what runs: the registered engine's name, or `sim` when simulated
    backend: str = "sglang"  # the engine the recipe names (`backend.type`)
    # Roles that run an engine of their own (schema 2's `roles.<role>.engine`) through the
    # `engine` adapter: role -> that engine (TileRT's prefill: `vllm`). Empty: one engine.
    role_engines: dict[str, str] = Field(default_factory=empty_dict)
    simulated: bool
    # Set when AIConfigurator's model times the simulated workers (`disagg run --predict`):
    # {label, accept_rate, accept_source, time_scale}; the label goes on every result.
    predicted: dict[str, Any] | None = None
    gpu_vendor: GpuVendor = GpuVendor.NVIDIA
    nodes: int
    gpus_per_node: int
    prefill_gpus: int
    decode_gpus: int  # for aggregated variants: all worker GPUs
    disaggregated: bool
    roles: list[RolePlan]
    # The frontend that runs (`smg`, `sglang-router`, `dynamo`) and how its roles start:
    # each stage's roles are launched, then health-gated, before the next stage starts.
    # Empty: workers first, then every other role (plans written before stages existed).
    frontend: str = "sglang-router"
    stages: list[list[str]] = Field(default_factory=empty_list)
    serving_role: str | None = None  # where load goes; None: the first router, else a worker
    simulator: str | None = None  # what stands in for GPU workers: `disagg sim-engine`, ...
    # The engine an emulating engine (Dynamo's mocker) emulates: `vllm`, `sglang`, `trtllm`.
    emulates: str | None = None
    bench: BenchPlan
    staging: StagingPlan
    slurm: SlurmPlan
    limits: LimitsPlan = Field(default_factory=LimitsPlan)  # after start-up
    config: dict[str, Any]  # the resolved variant config, for reports
    # Recipe fields set but not carried out, each with why: {field, action, why}.
    ignored: list[dict[str, str]] = Field(default_factory=empty_list)
    # Where this job deliberately differs from what srt-slurm's srtctl renders for the same
    # recipe: {id, srtctl, disagg, why}, rows of `disagg.plan.compat` (docs/compat.md).
    differs: list[dict[str, str]] = Field(default_factory=empty_list)
    host_setup: HostSetupPlan | None = None  # run before the first stage starts
    # The recipe's `setup_script` (a name in the configs directory): run in each worker's
    # and Dynamo frontend's container before its program (`disagg.plan.setup_script`).
    setup_script: str | None = None
    # Directories under the run directory made before any role starts: `profiles/<mode>`
    # of a profiled job, where its workers write their traces (`disagg.plan.profiling`).
    profile_dirs: list[str] = Field(default_factory=empty_list)

    @property
    def total_gpus(self) -> int:
        return self.prefill_gpus + self.decode_gpus

    def role(self, name: str) -> RolePlan:
        for role in self.roles:
            if role.name == name:
                return role
        raise KeyError(name)

    def roles_of(self, kind: RoleKind) -> list[RolePlan]:
        return [role for role in self.roles if role.kind is kind]

    @property
    def secrets(self) -> list[str]:
        """Dotted paths of the literal secret values this plan carries (see disagg.redact)."""
        from disagg.redact import literal_secrets

        data = self.model_dump(mode="json")
        return [".".join(str(part) for part in path) for path in literal_secrets(data)]

    def launch_stages(self) -> list[list[RolePlan]]:
        """Roles with a command, in start order: the plan's stages, else workers then the rest."""
        runnable = [role for role in self.roles if role.argv]
        if self.stages:
            by_name = {role.name: role for role in runnable}
            return [[by_name[name] for name in stage if name in by_name] for stage in self.stages]
        workers = [r for r in runnable if r.kind in WORKER_KINDS]
        others = [r for r in runnable if r.kind not in (*WORKER_KINDS, RoleKind.BENCH)]
        return [stage for stage in (workers, others) if stage]

    def write(self, run_dir: Path) -> Path:
        """Write plan.json; a plan holding a literal secret, and its run directory, are made
        readable by the owner only (the job needs the value; nobody else may read it)."""
        import os

        from disagg.atomic import write_text

        path = run_dir / PLAN_FILE
        secret = bool(self.secrets)
        write_text(path, self.model_dump_json(indent=2) + "\n", mode=0o600 if secret else None)
        if secret:
            os.chmod(run_dir, 0o700)
        return path

    @classmethod
    def read(cls, run_dir: Path) -> "Plan":
        """`RUN_DIR/plan.json`; a missing, unreadable or invalid one is a DisaggError (exit 2)."""
        from disagg.errors import DisaggError
        from disagg.probe import probe, shortened

        if not probe(run_dir).is_dir:
            raise DisaggError(f"{shortened(run_dir)}: not a directory", hint="pass a run directory")
        path = run_dir / PLAN_FILE
        if not path.is_file():
            raise DisaggError(
                f"{run_dir}: not a run directory (no plan.json)",
                hint="create one with `disagg run` or `disagg submit`",
            )
        return cls.read_file(path)

    @classmethod
    def read_file(cls, path: Path) -> "Plan":
        """One plan JSON file; errors name the file and the field (or JSON position)."""
        from pydantic import ValidationError

        from disagg.errors import DisaggError, SourceLocation
        from disagg.probe import MAX_PLAN_BYTES, read_limited

        try:
            text = read_limited(path, what="plan", limit=MAX_PLAN_BYTES).decode()
        except UnicodeDecodeError as exc:
            raise DisaggError(f"{path}: cannot read: {exc}") from None
        try:
            return cls.model_validate_json(text)
        except ValidationError as exc:
            first = exc.errors()[0]
            if first["type"] == "json_invalid":
                line, col = _json_position(text)
                raise DisaggError(
                    f"not valid JSON: {first['msg']}",
                    location=SourceLocation(str(path), line, col),
                    hint="plan.json is written by disagg; re-create the run",
                ) from None
            where = ".".join(str(part) for part in first["loc"]) or "top level"
            more = f" ({exc.error_count()} problems)" if exc.error_count() > 1 else ""
            raise DisaggError(
                f"{path}: not a plan this version understands: {where}: {first['msg']}{more}",
                hint="plan.json is written by disagg; re-create the run rather than editing it",
            ) from None


def _json_position(text: str) -> tuple[int | None, int | None]:
    import json

    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return exc.lineno, exc.colno
    return None, None
