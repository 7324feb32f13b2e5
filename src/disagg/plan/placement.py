"""Variant + cluster profile -> Plan: which role runs on which node and GPUs, with what command.

Workers are laid out on nodes by `disagg.plan.node_layout` (srt-slurm's layout), after
the nodes dedicated roles reserve (`disagg.plan.job_nodes`); this module asks the engine
adapter for each worker's command (its verdicts on the settings: `disagg.plan.engine_checks`),
the frontend adapter for its services and roles (placed by `disagg.frontends.topology`),
and the benchmark adapter for its points. Images and mounts are `disagg.plan.containers`,
what is staged `disagg.plan.stage_list`, what is ignored `disagg.plan.ignored_fields`. The
in-process bench sits on node rank 0, in the orchestrator.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from functools import cached_property
from pathlib import Path
from typing import Any

from disagg.cluster import ClusterProfile, ModelRef, resolve_container, resolve_model
from disagg.engines import registry
from disagg.engines.base import WorkerCommand
from disagg.engines.worker import WorkerSpec
from disagg.errors import DisaggError, UnsupportedRecipe
from disagg.frontends import FrontendContext, FrontendRoles, frontend_for
from disagg.frontends.mooncake import (
    before_workers,
    check_wired,
    mooncake_plane,
    with_worker_env,
)
from disagg.plan import kv_events, profiling, role_engines, setup_script
from disagg.plan.compat import rows as compat_rows
from disagg.plan.container_paths import check_container_paths, translate_roles
from disagg.plan.containers import Containers
from disagg.plan.engine_checks import EngineChecks
from disagg.plan.het_job import het_nodes
from disagg.plan.host_setup import host_setup_plan
from disagg.plan.ignored_fields import bench_completed_ignored, ignored_fields
from disagg.plan.job_nodes import (
    JobNodes,
    check_dedicated,
    client_rank,
    dedicated_roles,
    job_nodes,
)
from disagg.plan.job_plan import env_text, slurm_plan
from disagg.plan.launcher_env import JobAddresses, with_launcher_env
from disagg.plan.limits import (
    LimitsPlan,
    client_limit_problem,
    limits_plan,
    serving_gap_problem,
)
from disagg.plan.model import (
    BenchPlan,
    GpuVendor,
    HealthPlan,
    MpiPlan,
    ParallelPlan,
    Plan,
    RoleKind,
    RolePlan,
    StagingPlan,
)
from disagg.plan.node_env import fill_node_fields
from disagg.plan.node_layout import Colocation, NodeLayout, PlacedWorker
from disagg.plan.profiling_checks import check as check_profiling
from disagg.plan.role_images import role_srun_options
from disagg.plan.served_name import served_model_name
from disagg.plan.stage_list import staging_plan
from disagg.plan.worker_kinds import adapter_role
from disagg.predict.mapping import (
    PredictOptions,
    Unmappable,
    WorkerInputs,
    options_for,
    target_for,
)
from disagg.recipe.schema import FrontendSection, RecipeConfig
from disagg.recipe.variants import Variant, ensure_supported
from disagg.services import ServiceContext, discovery_env, service_plane, with_service_stages

SIM_HEALTH_DEADLINE_S = 60.0
ENGINE_ROUTER_HEALTH_DEADLINE_S = 120.0


def place(
    variant: Variant, profile: ClusterProfile | None = None, predict: PredictOptions | None = None
) -> Plan:
    """The Plan for one variant; unsupported or inconsistent variants raise DisaggError.

    `predict`: every worker is the simulated engine timed by AIConfigurator's model
    (`disagg run --predict`); a recipe's `backend.engine: predict` asks the same.
    """
    ensure_supported(variant)
    return _Placer(variant, profile, predict).plan()


class _Placer:
    def __init__(
        self,
        variant: Variant,
        profile: ClusterProfile | None,
        predict: PredictOptions | None = None,
    ) -> None:
        self.variant = variant
        self.config: RecipeConfig = variant.config
        self.profile = profile
        backend = self.config.backend
        predict = options_for(backend.engine, backend.predict, predict)
        self.predict = predict
        self.predicted: dict[str, Any] | None = None  # the label and assumptions, once placed
        self.simulated = backend.engine == "sim" or predict is not None
        self.engine = "sim" if self.simulated else backend.type
        # Worker name -> (settings, spec) the engine adapter was asked with (see `workers`).
        self.worker_inputs: dict[str, tuple[Mapping[str, Any], WorkerSpec]] = {}
        self.adapter = registry.adapter(backend.type)
        # Per-role settings as plain maps, in the shape the adapter reads; only what the
        # recipe wrote, so that an adapter can tell an unset field from its default.
        self.backend = self.config.backend_settings(exclude_unset=True)
        self.checks = EngineChecks(
            variant, self.adapter, self.backend, fail=self.fail, refuse=self.refuse
        )
        self.ignored = self.checks.ignored  # settings not passed on: field -> why
        self.differs: list[str] = []  # ids of `disagg.plan.compat` rows this variant hits
        self.model: ModelRef | None = None  # `model.path` resolved (set first by `plan`)
        if predict is None and backend.predict is not None:
            self.ignored["backend.predict"] = "applies to predicted runs (--predict)"

    def colocation(self) -> Colocation:
        """vLLM's prefill/decode packing knobs; every other engine has none (srtctl asks
        only a `VLLMProtocol` backend)."""
        backend = self.config.backend
        if backend.type != "vllm":
            return Colocation()
        return Colocation(
            allowed=backend.allow_prefill_decode_colocation,
            across_nodes=backend.allow_prefill_decode_colocation_across_nodes,
        )

    def named(self, *path: str) -> str:
        """A field as this variant's file spells it (`resources.prefill_nodes` in v1,
        `roles.prefill.nodes` in schema 2), for messages."""
        return self.variant.written_field(path)

    def fail(self, message: str, path: tuple[str, ...], hint: str | None = None) -> DisaggError:
        return DisaggError(
            f"{message} (variant {self.variant.name})" if self.variant.name != "base" else message,
            location=self.variant.locate(path),
            hint=hint,
        )

    def refuse(self, what: str, path: tuple[str, ...]) -> UnsupportedRecipe:
        """`unsupported: <what>` at `path`, naming the variant as `fail` does."""
        where = "" if self.variant.name == "base" else f" in variant {self.variant.name}"
        return UnsupportedRecipe(f"{what}{where}", location=self.variant.locate(path))

    def limits(self, slurm_time_limit: str | None, *, command: bool = False) -> LimitsPlan:
        problem = serving_gap_problem(self.config.limits)
        if problem is not None:
            raise self.fail(problem[0], ("limits", "serving_gap"), hint=problem[1])
        client = client_limit_problem(self.config.limits) if command else None
        if client is not None:
            raise self.fail(client[1], ("limits", client[0]), hint=client[2])
        return limits_plan(self.config.limits, slurm_time_limit, command=command)

    @cached_property
    def containers(self) -> Containers:
        """The job's images and mounts (`disagg.plan.containers`), once the model is known."""
        assert self.model is not None, "plan() resolves the model first"
        return Containers(
            self.config,
            self.profile,
            self.adapter,
            self.model,
            simulated=self.simulated,
            fail=self.fail,
        )

    # ---------------------------------------------------------------- roles

    def role_args(self, kind: RoleKind) -> Mapping[str, Any]:
        backend = role_engines.with_role_knobs(self.config, kind, self.backend)
        return self.adapter.role_args(backend, adapter_role(kind))

    def role_env(self, kind: RoleKind) -> dict[str, str]:
        """The profile's worker env, then the role's own and the recipe's `environment`
        over it (srtctl sets the mode's env first, then the recipe's: cli/mixins/
        worker_stage.py `start_worker`), with `{node}` / `{node_id}` filled per node."""
        backend = self.config.backend
        per_kind = {
            RoleKind.PREFILL: backend.prefill_environment,
            RoleKind.DECODE: backend.decode_environment,
            RoleKind.AGGREGATED: backend.aggregated_environment,
        }[kind]
        env = self.profile.worker_env() if self.profile else {}
        for path, values in (
            (("backend", f"{kind.value}_environment"), per_kind),
            (("environment",), self.config.environment),
        ):
            for key, value in values.items():
                env[key] = self.node_env(env_text(value), (*path, key))
        return env

    def node_env(self, value: str, path: tuple[str, ...]) -> str:
        try:
            return fill_node_fields(value)
        except ValueError as exc:
            raise self.fail(
                f"{self.variant.written_name('.'.join(path))} {value!r} cannot be filled as "
                f"srtctl fills {{node}} and {{node_id}} ({exc})",
                path,
                "write a literal brace as {{ or }}",
            ) from None

    def worker_health(self) -> HealthPlan:
        check = self.config.health_check
        if check is not None:
            deadline = float(check.max_attempts * check.interval_seconds)
        else:
            deadline = SIM_HEALTH_DEADLINE_S if self.simulated else self.adapter.health_deadline_s
        path = "/health" if self.simulated else self.adapter.health_path
        return HealthPlan(path=path, deadline_s=deadline, interval_s=0.2 if self.simulated else 1.0)

    @cached_property
    def served(self) -> str:
        """The one model name every worker serves, the frontend routes and the load
        generator sends (see `disagg.plan.served_name`)."""
        assert self.model is not None, "plan() resolves the model first"
        written = [
            self.adapter.served_model_name(self.role_args(kind))
            for kind in (RoleKind.PREFILL, RoleKind.AGGREGATED, RoleKind.DECODE)
        ]
        return served_model_name(self.model, written, self.config.backend.served_model_name)

    def one_served_name(self, args: Mapping[str, Any]) -> Mapping[str, Any]:
        """A role's settings with its own served-model-name (if written) set to the one
        name, as srtctl replaces each role's with it."""
        found = self.adapter.flags.find(args, "served_model_name")
        if found is None or found[1] == self.served:
            return args
        return {**args, found[0]: self.served}

    def workers(self, placed: list[PlacedWorker]) -> list[RolePlan]:
        served = self.served
        roles = []
        for kind, index, ranks, ids in placed:
            args = self.one_served_name(self.role_args(kind))
            self.checks.mode(kind, args)
            own_engine = role_engines.own_engine(self.config, kind)
            spec = WorkerSpec(
                role=adapter_role(kind),
                served_name=served,
                nnodes=len(ranks),
                gpus_per_node=len(ids),
                ib_devices=tuple(self.profile.rdma_devices) if self.profile else (),
                simulated=self.simulated,
                # the section's default (dynamo) when the recipe has none, as `frontend` uses
                frontend=(self.config.frontend or FrontendSection()).type,
                gpu_type=self.config.resources.gpu_type,
                schema2=self.variant.dialect == "schema2",
                backend=own_engine[1] if own_engine else self.backend,
                engine=own_engine[0] if own_engine else None,
            )
            self.checks.supported(kind, args, spec)
            self.checks.note_ignored(kind, args)
            name = f"{kind.value}-{index}"
            own = self.containers.role_image(kind)
            seen = self.containers.worker_args(kind, name, args, own or self.containers.image)
            if not self.adapter.rank_processes(args, spec):
                roles.append(self.worker_role(kind, index, name, ranks, ids, args, seen, spec, own))
                continue
            # one process per GPU, node by node (srt-slurm's per-GPU DP launch)
            pairs = [(rank, gpu) for rank in ranks for gpu in sorted(ids)]
            for dp_rank, (rank, gpu) in enumerate(pairs):
                one = replace(spec, nnodes=1, gpus_per_node=1, dp_rank=dp_rank, dp_head=name)
                process = name if dp_rank == 0 else f"{name}-dp{dp_rank}"
                roles.append(
                    self.worker_role(kind, index, process, [rank], [gpu], args, seen, one, own)
                )
        return roles

    def worker_role(
        self,
        kind: RoleKind,
        index: int,
        name: str,
        ranks: list[int],
        ids: list[int],
        args: Mapping[str, Any],
        seen: Mapping[str, Any],
        spec: WorkerSpec,
        own: str | None,
    ) -> RolePlan:
        """One worker process as a role: the engine adapter's command for `spec`, in the role's
        own image `own` when it names one."""
        command = self.adapter.command(seen, spec)
        self.differs += command.differs
        path = ".".join(self.adapter.args_path(adapter_role(kind)))
        for item in command.ignored:
            self.ignored.setdefault(f"{path}.{item.key}", item.reason)
        if self.predict is not None:
            command.argv += self.predict_argv(kind, args)
        self.worker_inputs[name] = (seen, spec)
        par = self.adapter.worker_parallelism(args, spec)
        reading = self.adapter.sim_reading(args)
        return RolePlan(
            name=name,
            kind=kind,
            index=index,
            node_ranks=ranks,
            gpus_per_node=len(ids),
            gpu_ids=ids,
            ports=command.ports,
            argv=command.argv,
            node_argv=command.node_argv,
            files=command.files,
            mpi=_mpi_plan(command),
            parallel=ParallelPlan(
                tp=par.tp,
                dp=par.dp,
                ep=par.ep,
                pp=par.pp,
                dp_attention=par.dp_attention,
                gpus=par.gpus,
            ),
            speculative=reading.speculative_algorithm,
            env={
                key: value
                for key, value in {**self.role_env(kind), **command.env}.items()
                if key not in command.unset_env
            },
            health=self.worker_health(),
            container_image=own or self.containers.worker_image(command, self.containers.image),
            srun_options=role_srun_options(self.config, kind),
        )

    def engine_router(self, workers: list[RolePlan]) -> RolePlan | None:
        """The engine's own router for real prefill/decode workers, when its KV hand-over
        needs one (TRT-LLM's `trtllm-serve disaggregated`)."""
        prefill = [r.name for r in workers if r.kind is RoleKind.PREFILL]
        decode = [r.name for r in workers if r.kind is RoleKind.DECODE]
        if not prefill or self.simulated:
            return None
        section = (self.config.frontend or FrontendSection()).model_dump(exclude_none=True)
        own = self.adapter.pd_router(prefill, decode, section)
        if own is None:
            return None
        return RolePlan(
            name="router",
            kind=RoleKind.ROUTER,
            node_ranks=[0],
            ports=own.ports,
            argv=own.argv,
            env=own.env,
            files=own.files,
            mpi=_mpi_plan(own),
            health=HealthPlan(path="/health", deadline_s=ENGINE_ROUTER_HEALTH_DEADLINE_S),
        )

    def predict_argv(self, kind: RoleKind, args: Mapping[str, Any]) -> list[str]:
        """The predicted worker's `--predict-*` flags; what cannot be mapped is refused."""
        assert self.predict is not None and self.model is not None
        model, served = self.model, self.served
        local = model.kind == "path" and Path(model.value).expanduser().is_dir()
        inputs = WorkerInputs(
            engine=self.config.backend.type,
            args=args,
            reading=self.adapter.sim_reading(args),
            gpu_type=self.config.resources.gpu_type,
            precision=self.config.model.precision,
            model_names=(*filter(None, [self.predict.model]), served, model.value, model.written),
            model_dir=str(Path(model.value).expanduser()) if local else None,
        )
        try:
            target = target_for(inputs, self.predict, self.adapter.args_path(adapter_role(kind)))
        except Unmappable as exc:
            raise self.refuse(exc.what, exc.path) from None
        self.predicted = target.summary()
        return target.argv()

    def frontend(self, workers: list[RolePlan], model: ModelRef, nodes: JobNodes) -> FrontendRoles:
        """The frontend adapter of `frontend.type`: its services, roles and start order."""
        section = self.config.frontend or FrontendSection()
        local = model.kind == "path" and Path(model.value).expanduser().is_dir()
        context = FrontendContext(
            config=self.config,
            frontend=section,
            workers=workers,
            engine=self.engine,
            simulated=self.simulated,
            served_name=self.served,
            fail=self.fail,
            model_dir=model.value if local else None,
            engine_router=self.engine_router(workers),
            worker_inputs=dict(self.worker_inputs),
            nodes=nodes,
            refuse=self.refuse,
            image=self.containers.image,
        )
        if self.predict is not None and section.type == "dynamo":
            # Predicted workers are disagg's simulated engine (SGLang's protocol), not
            # Dynamo's mocker: the SGLang PD router fronts them. That is a different part
            # from the one the recipe names, so it is a difference the plan states, not a
            # setting it ignores.
            planned = frontend_for("sglang-router").plan(context)
            planned.differs = ["predict-frontend", *planned.differs]
            return planned
        return frontend_for(section.type).plan(context)

    # ---------------------------------------------------------------- bench

    def bench(self) -> BenchPlan:
        """The benchmark section through its `benchmark.type` adapter (disagg.workloads)."""
        from disagg.workloads import BenchInputs, adapter_for

        section = self.config.benchmark
        inputs = BenchInputs(
            section=section,
            model_name=self.served,
            simulated=self.simulated,
            recipe_dir=self.variant.path.parent,
            fail=self.fail,
            resolve_container=lambda written: resolve_container(written, self.profile),
            mounts=self.containers.mounts,
            engine=self.config.backend.type,
            frontend=(self.config.frontend or FrontendSection()).type,
        )
        return adapter_for(section.type).plan(inputs)

    def kv_events(self, frontend: FrontendRoles) -> list[RolePlan]:
        """Workers with the KV-cache event publisher `backend.kv_events_config` asks for, as
        srtctl renders it for SGLang and vLLM under any frontend (`disagg.plan.kv_events`)."""
        setting = self.config.backend.kv_events_config
        if setting and self.simulated:  # the engine adapter honours it for real workers
            stand_in = frontend.simulator or "the simulated engine"
            self.ignored[kv_events.FIELD] = f"{stand_in} publishes no KV-cache events"
        if self.engine not in kv_events.ENGINES or not setting:
            return frontend.roles
        return kv_events.with_publishers(frontend.roles, setting, self.engine)

    def bench_role(self, role: RolePlan, workers: list[RolePlan], job: JobNodes) -> RolePlan:
        """A recipe's own command runs on the client's node; the in-process load generator
        runs in the orchestrator on node 0 whatever the recipe says, which the plan names."""
        rank = client_rank(self.config, workers, job, self.fail)
        if role.argv:
            return role.model_copy(update={"node_ranks": [rank]})
        if rank != role.node_ranks[0]:
            self.differs.append("client-node")
        return role

    def setup_script(self, frontend: FrontendRoles) -> list[list[RolePlan]]:
        """The recipe's `setup_script` before every real worker and Dynamo frontend, in their
        containers (`disagg.plan.setup_script`); a simulated run has no container to set up."""
        name = self.config.setup_script
        if not name:
            return frontend.stages
        if self.simulated:
            self.ignored["setup_script"] = "simulated workers run in no container to set up"
            return frontend.stages
        self.differs.append(setup_script.COMPAT_ROW)
        return [
            [
                setup_script.with_setup_script(role, name)
                if setup_script.takes_setup_script(role, frontend.frontend)
                else role
                for role in stage
            ]
            for stage in frontend.stages
        ]

    def profiled(self, roles: list[RolePlan]) -> list[RolePlan]:
        """Real workers with the recipe's `profiling:` (`disagg.plan.profiling`)."""
        return profiling.with_profiling(
            roles,
            self.config.profiling,
            frontend=(self.config.frontend or FrontendSection()).type,
            backend=self.config.backend.type,
        )

    def profile_posts(self, bench: BenchPlan, plan: Plan) -> BenchPlan:
        """The benchmark's profile start/stop POSTs (`disagg.workloads.profiling`)."""
        from disagg.workloads import profiling as posts

        if not profiling.enabled(self.config.profiling):
            return bench
        plan.profile_dirs = profiling.dirs(self.config.profiling, plan.roles)
        bench, rows, ignored = posts.planned(bench, plan, self.config, self.fail)
        self.differs += rows
        plan.ignored += ignored
        return bench

    def staging(self, model: ModelRef, workers: list[RolePlan]) -> StagingPlan:
        staging = staging_plan(
            self.config,
            self.profile,
            model,
            workers,
            draft_of=lambda kind: self.adapter.draft_model(self.role_args(kind)),
            images=self.containers.written(workers),
            pyxis=self.containers.pyxis,
            simulated=self.simulated,
            config_section=self.adapter.config_section,
            fail=self.fail,
        )
        if not self.simulated and any(m.purpose != "extra" for m in staging.models):
            self.differs.append("staged-hf-model")
        return staging

    # ---------------------------------------------------------------- all

    def plan(self) -> Plan:
        # A simulated plan reads no weights: its directory is kept as written.
        cwd = None if self.simulated else Path.cwd()
        model = resolve_model(self.config.model.path, self.profile, cwd=cwd)
        self.model = model
        from disagg.workloads import adapter_for

        self.checks.engine_matches()
        bench = self.bench()  # benchmark refusals first, as before the engine's own
        self.checks.backend_knobs()
        check_profiling(
            self.config,
            lambda role: self.adapter.role_args(self.backend, role),
            fail=self.fail,
            refuse=self.refuse,
        )
        layout = NodeLayout(
            self.config.resources,
            self.profile,
            named=self.named,
            fail=self.fail,
            colocation=self.colocation(),
        )
        gpn = layout.gpus_per_node()
        placed, worker_nodes = layout.place_workers(gpn)
        check_dedicated(self.config, fail=self.fail, named=self.named)
        roles_wanting_nodes = dedicated_roles(self.config)
        colocate = self.config.benchmark.colocate_with_frontend
        job = job_nodes(worker_nodes, roles_wanting_nodes, colocate=colocate)
        het = het_nodes(self.config, self.profile, job, fail=self.fail, named=self.named)
        shifted = [(kind, i, [job.offset + r for r in rs], ids) for kind, i, rs, ids in placed]
        workers = self.workers(shifted)
        check_wired(self.config, self.backend, self.fail)
        mooncake = mooncake_plane(
            self.config, simulated=self.simulated, image=self.containers.image
        )
        workers = with_worker_env(workers, mooncake)
        frontend = self.frontend(workers, model, job)
        frontend.stages = before_workers(frontend.stages, mooncake)
        frontend.honoured |= mooncake.honoured
        if mooncake.services:
            self.differs.append("mooncake-ports")
        services = service_plane(
            ServiceContext(
                config=self.config,
                workers=workers,
                job=job,
                image=None if self.simulated else self.containers.image,
                discovery_env=discovery_env(frontend.roles),
                master=mooncake.services[0] if mooncake.services else None,
                fail=self.fail,
            )
        )
        frontend.stages = with_service_stages(frontend.stages, services)
        self.differs += services.differs
        if not self.simulated:  # srtctl's launcher environment on every real worker
            where = JobAddresses(
                head_rank=job.head,
                infra_rank=job.infra,
                fixed_planes=frontend.frontend != "dynamo",
            )
            frontend.stages = [
                self.profiled(with_launcher_env(stage, self.config, where))
                for stage in frontend.stages
            ]
        frontend.stages = self.setup_script(frontend)
        nodes = job.total
        roles = self.kv_events(frontend)
        # The frontend decides which prompt form its API takes, and may bring a tokenizer.
        update: dict[str, object] = {"prompt_format": frontend.prompt_format}
        if frontend.tokenizer is not None:
            update["tokenizer"] = frontend.tokenizer
        if self.predict is not None:
            if bench.trace is not None and self.predict.time_scale != 1.0:
                raise self.refuse(
                    "--predict-time-scale with a trace replay (its timestamps are not "
                    "compressed); predict it at time scale 1",
                    ("benchmark", "type"),
                )
            update["time_scale"] = self.predict.time_scale
        bench = bench.model_copy(update=update)
        slurm = slurm_plan(
            self.config,
            self.profile,
            nodes,
            gpn,
            image=self.containers.image,
            mounts=self.containers.mounts,
            pyxis=self.containers.pyxis,
            het_nodes=het,
        )
        prefill = sum(r.total_gpus for r in workers if r.kind is RoleKind.PREFILL)
        decode = sum(r.total_gpus for r in workers if r.kind is not RoleKind.PREFILL)
        plan = Plan(
            name=self.config.name,
            selector=self.variant.selector,
            recipe_file=self.variant.file,
            variant=self.variant.name,
            engine=self.engine,
            role_engines=role_engines.shown(self.config),
            backend=self.config.backend.type,
            simulated=self.simulated,
            predicted=self.predicted,
            gpu_vendor=self.profile.gpu_vendor if self.profile else GpuVendor.NVIDIA,
            nodes=nodes,
            gpus_per_node=gpn,
            prefill_gpus=prefill,
            decode_gpus=decode,
            disaggregated=self.config.resources.disaggregated,
            roles=roles,
            frontend=frontend.frontend,
            stages=[[role.name for role in stage] for stage in frontend.stages],
            serving_role=frontend.serving_role,
            simulator=frontend.simulator,
            emulates=None if self.simulated else self.adapter.emulates(self.backend),
            bench=bench,
            staging=self.staging(model, workers),
            slurm=slurm,
            limits=self.limits(slurm.time_limit, command=bench.command is not None),
            config=self.variant.raw,
            ignored=ignored_fields(
                self.variant,
                placement=self.ignored,
                frontend=frontend,
                profile=self.profile,
                bench=bench,
            ),
        )
        # A recipe's own host_setup replaces the cluster's default (srt-slurm's rule).
        setup = self.config.host_setup
        if setup is None and self.profile is not None:
            setup = self.profile.host_setup
        plan.host_setup = host_setup_plan(setup, workers, nodes)
        plan.setup_script = None if self.simulated else self.config.setup_script
        bench_adapter = adapter_for(bench.type)
        completed = bench_adapter.complete(plan)
        plan.ignored += bench_completed_ignored(self.variant, plan.bench, completed)
        plan.bench = self.profile_posts(completed, plan)
        plan.roles.append(self.bench_role(bench_adapter.bench_role(plan), workers, job))
        served = [*self.differs, *frontend.differs, *bench_adapter.differs_for(plan.bench)]
        if any(role.ports for role in plan.roles):
            served += ["ports", "listen-address"]
        plan.differs = compat_rows(served)
        check_container_paths(plan, model_location=self.variant.locate(("model", "path")))
        translate_roles(plan, skip=frozenset(role.name for role in workers))
        return plan


def _mpi_plan(command: WorkerCommand) -> MpiPlan | None:
    """The MPI step an engine's command asks for, if it asks for one."""
    if not command.mpi_tasks_per_node:
        return None
    return MpiPlan(
        tasks_per_node=command.mpi_tasks_per_node, srun_options=dict(command.mpi_srun_options)
    )
