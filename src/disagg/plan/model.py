"""The plan data model: everything a job needs, written once to `RUN_DIR/plan.json`.

The orchestrator (`python -m disagg.job RUN_DIR`) reads nothing else: no environment
variables, no `--export` lists, no command-line strings that something re-splits.
Values only known inside the allocation (node addresses, ports, staged model paths)
appear in `argv`/`env` as `${role.field}` placeholders; see `disagg.plan.templates`.
"""

# No `from __future__ import annotations` here: pydantic would compile and evaluate
# each field's annotation string when the class is made, a cost every command pays.

from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from disagg.model_defaults import empty_dict, empty_list
from disagg.plan.limits import LimitsPlan

PLAN_SCHEMA_VERSION = 1
PLAN_FILE = "plan.json"


class _Strict(BaseModel):
    # Validators built on first use, as one piece with the plan that holds them.
    model_config = ConfigDict(extra="forbid", defer_build=True)


class GpuVendor(StrEnum):
    NVIDIA = "nvidia"
    AMD = "amd"

    @property
    def visible_devices_vars(self) -> tuple[str, ...]:
        """Environment variables that pin a process to a GPU subset on this vendor."""
        if self is GpuVendor.AMD:
            return ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")
        return ("CUDA_VISIBLE_DEVICES",)


class RoleKind(StrEnum):
    PREFILL = "prefill"
    DECODE = "decode"
    AGGREGATED = "aggregated"
    ROUTER = "router"  # the frontend: a router (smg, sglang-router) or Dynamo's frontend
    SERVICE = "service"  # what a frontend needs first: etcd, NATS, nginx
    BENCH = "bench"


WORKER_KINDS = (RoleKind.PREFILL, RoleKind.DECODE, RoleKind.AGGREGATED)


class HealthPlan(_Strict):
    """How the orchestrator decides a role is up: a GET that answers 200 before the deadline."""

    path: str = "/health"
    deadline_s: float = 600.0
    interval_s: float = 0.2
    # When set, a 200 counts only if the body contains this text (e.g. a model name in
    # Dynamo's `/v1/models`: the frontend answers 200 before any worker has registered).
    expect: str | None = None
    # The role's port the GET goes to (`system`: a Dynamo worker's system status server).
    port: str = "http"
    # A body holding `expect` counts whatever the status: Dynamo's system server answers
    # 503 `notready` while listing each endpoint's own state (`"generate":"ready"`).
    any_status: bool = False


class ReadinessPlan(_Strict):
    """A service's readiness gate (srt-slurm's `readiness:`), checked on each of its nodes:
    every probe set must pass there before the next stage starts."""

    # A port number, or the name of one of the role's own ports (`http`: `${self.http_port}`).
    tcp_port: int | str | None = None  # ready when the port accepts a connection on the node
    http_port: int | str | None = None  # ready when GET node:port{http_path} answers http_status
    http_path: str = "/health"
    http_status: int = 200
    log_pattern: str | None = None  # ready when a line of the node's log matches (a regex)
    timeout_s: float = 120.0  # per node, as srtctl waits
    interval_s: float = 2.0


class ParallelPlan(_Strict):
    """A worker's parallel layout as its engine adapter reads the recipe (what it runs)."""

    tp: int = 1
    dp: int = 1
    ep: int = 1
    pp: int = 1
    dp_attention: bool = False
    gpus: int = 1  # GPUs the engine uses: tp x pp, times dp unless the ranks are shared


class HostSetupPlan(_Strict):
    """`host_setup`: shell commands run on each listed node's bare host (outside any
    container) before any role starts, and `teardown` after every role has stopped."""

    commands: list[str] = Field(default_factory=empty_list)  # joined with `&&`, as srtctl does
    teardown: list[str] = Field(default_factory=empty_list)
    node_ranks: list[int]
    ignore_failure: bool = False  # a failing node is logged, and the run goes on
    timeout_s: float = 300.0  # per node, for the commands and again for teardown


class MpiPlan(_Strict):
    """A worker started as one MPI step across all its nodes, one rank per GPU (TRT-LLM over
    several nodes), instead of one task per node."""

    tasks_per_node: int
    mpi: str = "pmix"  # srun --mpi
    # srun options of this step, over the cluster's (`--key=value`; "" for a bare `--key`):
    # the engine's own launch needs (TRT-LLM: `cpu-bind=verbose,none`, `oversubscribe`).
    srun_options: dict[str, str] = Field(default_factory=empty_dict)


class RolePlan(_Strict):
    """One process group. `argv` runs once per node in `node_ranks` (multi-node workers).

    `node_ranks` index the allocation's node list (0 = the first node, where the
    orchestrator runs). `gpu_ids` are the GPU indexes used on each of those nodes.
    `ports` names the ports the role needs (`http`, `bootstrap`, `dist_init`; `nixl*8`:
    8 consecutive ports named by the first); the orchestrator picks the numbers at run
    time with a bind probe.
    """

    name: str  # "prefill-0", "decode-1", "aggregated-0", "router", "bench"
    kind: RoleKind
    index: int = 0
    node_ranks: list[int]
    gpus_per_node: int = 0
    gpu_ids: list[int] = Field(default_factory=empty_list)
    ports: list[str] = Field(default_factory=empty_list)
    argv: list[str] = Field(default_factory=empty_list)  # empty for the in-process bench role
    # One argv per node of a multi-node worker whose nodes run different commands (the
    # head node first); empty: `argv` on every node.
    node_argv: list[list[str]] = Field(default_factory=empty_list)
    # Files the orchestrator writes into the run directory (relative path -> text, with
    # `${...}` placeholders bound) before the role starts: configs an engine reads.
    files: dict[str, str] = Field(default_factory=empty_dict)
    env: dict[str, str] = Field(default_factory=empty_dict)
    health: HealthPlan | None = None
    container_image: str | None = None
    # srun options of this role's steps over the job's (schema 2's `roles.<role>.srun_options`:
    # `--key=value`; "" for a bare `--key`).
    srun_options: dict[str, str] = Field(default_factory=empty_dict)
    parallel: ParallelPlan | None = None  # workers only
    mpi: MpiPlan | None = None  # one MPI step over `node_ranks`, started from the head node
    speculative: str | None = None  # workers: the speculative decoding method, if any
    # False for a sidecar service: a task of it that ends is logged, and the run goes on.
    critical: bool = True
    readiness: ReadinessPlan | None = None  # services: the recipe's own readiness gate

    @property
    def nnodes(self) -> int:
        return len(self.node_ranks)

    @property
    def launch_ranks(self) -> list[int]:
        """The node ranks a task is started on: each node, or the head node of an MPI step."""
        return self.node_ranks[:1] if self.mpi is not None else self.node_ranks

    def argv_on(self, index: int) -> list[str]:
        """The argv of this role's `index`-th node (0 = its head node)."""
        return self.node_argv[index] if self.node_argv else self.argv

    @property
    def total_gpus(self) -> int:
        return self.gpus_per_node * len(self.node_ranks)


class PointPlan(_Strict):
    """One measured load level."""

    concurrency: int | None = None
    request_rate: float | None = None  # requests/s; None = as fast as concurrency allows
    num_prompts: int
    warmup_requests: int = 0
    label: str | None = None  # a point that is not a load level (a trace replay): its key

    @property
    def key(self) -> str:
        """Stable identifier used in result file names and for resume."""
        if self.label is not None:
            return self.label
        if self.request_rate is not None:
            rate = f"rate{self.request_rate:g}"
            return f"{rate}_conc{self.concurrency}" if self.concurrency else rate
        return f"conc{self.concurrency}" if self.concurrency else "concinf"


class TracePlan(_Strict):
    """A timestamped request trace to replay (Mooncake trace format, one JSON object a line)."""

    path: str  # as resolved at plan time (a mount's host side); read inside the job
    written: str | None = None  # `benchmark.trace_file` as the recipe gives it
    # On the cluster, not on the planning machine: read and checked only inside the job,
    # before any role starts; until then the points' `num_prompts` and isl/osl are 0.
    at_run_time: bool = False
    block_tokens: int = 512  # tokens each `hash_ids` entry stands for (Mooncake's block size)
    speedup: float = 1.0  # >1 replays faster than recorded


class SlowDownPlan(_Strict):
    """sa-bench's SGLang `/slow_down` around each measured window (srtctl's
    `benchmark.slow_down_*`): after the point's warm-up, POST `{"forward_sleep_time":
    sleep_s}` to every target, then `{"forward_sleep_time": null}` after `wait_s`
    seconds or when the point ends, whichever comes first."""

    sleep_s: float = Field(gt=0)  # seconds each forward step of a target sleeps
    wait_s: float = Field(gt=0)  # seconds until the slow-down is cleared
    # `${decode-0.url}/slow_down`-style templates: one per decode worker's leader
    urls: list[str] = Field(default_factory=empty_list)


class ProfileTarget(_Strict):
    """One worker leader the benchmark starts and stops a profile on (srtctl's
    `profiling.sh`: `start_profile_on_worker` / `stop_profile_on_worker`)."""

    role: str  # the worker role (`prefill-0`)
    mode: Literal["prefill", "decode", "agg"]
    # `${prefill-0.url}/start_profile` (SGLang's router), or the worker's system port's
    # `/engine/start_profile` (Dynamo); bound at run time
    start_url: str
    stop_url: str
    output_dir: str  # where the worker writes its trace, as the worker sees the run directory
    start_step: int
    num_steps: int


class ProfilingPlan(_Strict):
    """The recipe's `profiling:` on the benchmark side: before the first point measured, POST
    `{"output_dir", "start_step", "num_steps", "activities"}` to every target; after the
    last (or when the sweep ends early), POST `{}` to each stop URL
    (`disagg.workloads.profiling`)."""

    type: Literal["nsys", "torch"]
    activities: list[str]  # torch: ["CPU", "GPU"]; nsys: ["CUDA_PROFILER"]
    targets: list[ProfileTarget] = Field(default_factory=empty_list)


class BenchCommand(_Strict):
    """`benchmark.type: custom`: the recipe's own client, run in the bench role.

    `argv` is `bash -lc COMMAND`; the bench role carries the environment (the recipe's
    `benchmark.env` plus the documented contract variables, see docs/benchmarks.md).
    """

    argv: list[str]
    results_dir: str  # `${run.dir}/...`: where the command is asked to write result files
    env: dict[str, str] = Field(default_factory=empty_dict)  # benchmark.env as written
    # sa-bench-style load fields the recipe set (REQ_RATE, NUM_PROMPTS_MULT, ...), for the command
    load_env: dict[str, str] = Field(default_factory=empty_dict)
    container_image: str | None = None  # benchmark.container_image, else the job's image
    # benchmark.expect_results: a command that ends well but wrote no point file fails the run
    expects_results: bool = True
    # An accuracy evaluation (gsm8k, gpqa): the score file it wrote is its one result,
    # judged by `disagg.workloads.accuracy` instead of as load points.
    accuracy: str | None = None
    # Where an evaluation disagg runs itself reads its data set (GSM8K on vLLM), for display.
    dataset: str | None = None
    # benchmark.aiperf_server_metrics: the command gets the workers' /metrics URLs
    # (AIPERF_SERVER_METRICS_URLS) for AIPerf's server-metrics scrape.
    server_metrics: bool = False


class BenchPlan(_Strict):
    """The load generator's settings shared by every point of the run."""

    endpoint: Literal["completions", "chat"] = "completions"
    # Chosen by the frontend adapter: smg and the sglang-router accept only text
    # prompts (token-id lists get HTTP 400/422); Dynamo's frontend takes both.
    prompt_format: Literal["text", "token_ids"] = "text"
    model_name: str
    isl: int
    osl: int
    # As sa-bench and InferenceX (and so the recipe corpus): lengths are uniform in
    # [ratio * isl, isl]; 1.0 means every request has exactly isl/osl tokens.
    random_range_ratio: float = Field(default=1.0, ge=0.0, le=1.0)
    ignore_eos: bool = True
    use_chat_template: bool = False
    tokenizer: str | None = None  # path or `${model.path}`; needed for chat templates
    arrival: Literal["constant", "poisson", "gamma"] = "poisson"
    burstiness: float = 1.0
    max_failure_ratio: float = 0.01
    slo: dict[str, float] = Field(default_factory=empty_dict)  # ttft/tpot/e2el in ms
    seed: int = 0
    points: list[PointPlan]  # empty for a command benchmark: its results name their points
    type: str = "sa-bench"  # benchmark.type; picks the adapter in disagg.workloads
    concurrencies: list[int] = Field(default_factory=empty_list)  # as written, for command clients
    command: BenchCommand | None = None  # benchmark.type == custom
    trace: TracePlan | None = None  # trace replay types
    slow_down: SlowDownPlan | None = None  # sa-bench `benchmark.slow_down_*`
    profiling: ProfilingPlan | None = None  # the recipe's `profiling:`, on the benchmark side
    ignored: dict[str, str] = Field(default_factory=empty_dict)  # benchmark.<field> -> why
    # Predicted runs whose engines run this many times faster than modelled: arrival
    # offsets are compressed and every measured time is stretched back by it.
    time_scale: float = Field(default=1.0, ge=1.0)


class ModelToStage(_Strict):
    """A model repo the job must find complete before any role starts."""

    repo_id: str
    revision: str = "main"
    purpose: Literal["main", "draft", "extra"] = "main"


class ContainerToStage(_Strict):
    """A squashfs image the job needs, and how to make it when it does not exist yet.

    `import_command` is an argv template: `{image}` is the source reference,
    `{output}` the temporary file to write (never the final path).
    """

    squashfs: str
    image: str
    import_command: list[str] = Field(
        default_factory=lambda: ["enroot", "import", "--output", "{output}", "{image}"]
    )


class StagingPlan(_Strict):
    """Where models live. `local_path` set means the main model is a directory, not a repo."""

    models: list[ModelToStage] = Field(default_factory=empty_list)
    hf_cache: str | None = None  # HF_HOME-style root; `hub/` is the canonical layout below it
    legacy_roots: list[str] = Field(default_factory=empty_list)
    local_path: str | None = None
    allow_download: bool = True
    skip: bool = False  # the simulated engine needs no weights: listed for display, not staged
    containers: list[ContainerToStage] = Field(default_factory=empty_list)


class SlurmPlan(_Strict):
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
        first = 0
        for group, count in enumerate(self.het_nodes):
            if node_rank < first + count:
                return group
            first += count
        return None


class Plan(_Strict):
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
