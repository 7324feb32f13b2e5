"""Variant + cluster profile -> Plan: which role runs on which node and GPUs, with what command.

The workers are `disagg.plan.worker_roles`'s, laid out by `disagg.plan.node_layout`; this
module puts the frontend adapter's roles, the services and the benchmark adapter's points
around them. The in-process bench sits on node rank 0, in the orchestrator.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from disagg.cluster import ClusterProfile, resolve_container, resolve_model
from disagg.engines import registry
from disagg.errors import DisaggError, UnsupportedRecipe
from disagg.frontends import FrontendContext, FrontendRoles, frontend_for
from disagg.frontends.mooncake import before_workers, check_wired, mooncake_plane, with_worker_env
from disagg.plan import kv_events, profiling, role_engines, setup_script
from disagg.plan.compat import rows as compat_rows
from disagg.plan.container_paths import check_container_paths, translate_roles
from disagg.plan.containers import Containers
from disagg.plan.engine_checks import EngineChecks
from disagg.plan.ignored_fields import bench_completed_ignored, ignored_fields
from disagg.plan.job_nodes import (
    JobNodes,
    check_dedicated,
    client_rank,
    dedicated_roles,
    het_nodes,
    job_nodes,
)
from disagg.plan.job_plan import host_setup_plan, slurm_plan
from disagg.plan.launcher_env import JobAddresses, with_launcher_env
from disagg.plan.limits import LimitsPlan, limits_plan, limits_problem
from disagg.plan.model import BenchPlan, GpuVendor, Plan, RoleKind, RolePlan, StagingPlan
from disagg.plan.node_layout import Colocation, NodeLayout, PlacedWorker
from disagg.plan.stage_list import staging_plan
from disagg.plan.worker_roles import WorkerRoles
from disagg.recipe.schema import RecipeConfig
from disagg.recipe.variants import Variant, ensure_supported
from disagg.services import ServiceContext, discovery_env, service_plane, with_service_stages

if TYPE_CHECKING:
    from disagg.predict.mapping import PredictOptions


def place(
    variant: Variant, profile: ClusterProfile | None = None, predict: PredictOptions | None = None
) -> Plan:
    """The Plan for one variant; unsupported or inconsistent variants raise DisaggError.
    `predict` (`disagg run --predict`, or `backend.engine: predict`): every worker is the
    simulated engine timed by AIConfigurator's model."""
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
        if predict is not None or backend.engine == "predict":  # else nothing is predicted
            from disagg.predict.mapping import options_for

            predict = options_for(backend.engine, backend.predict, predict)
        self.predict = predict
        self.simulated = backend.engine == "sim" or predict is not None
        self.engine = "sim" if self.simulated else backend.type
        self.adapter = registry.adapter(backend.type)
        # Per-role settings as plain maps, in the shape the adapter reads; only what the
        # recipe wrote, so that an adapter can tell an unset field from its default.
        self.checks = EngineChecks(
            variant,
            self.adapter,
            self.config.backend_settings(exclude_unset=True),
            fail=self.fail,
            refuse=self.refuse,
        )
        self.ignored = self.checks.ignored  # settings not passed on: field -> why
        self.differs: list[str] = []  # ids of `disagg.plan.compat` rows this variant hits
        if predict is None and backend.predict is not None:
            self.ignored["backend.predict"] = "applies to predicted runs (--predict)"
        # A simulated plan reads no weights: its directory is kept as written.
        cwd = None if self.simulated else Path.cwd()
        self.model = resolve_model(self.config.model.path, profile, cwd=cwd)
        self.containers = Containers(
            self.config, profile, self.adapter, self.model, simulated=self.simulated, fail=self.fail
        )
        self.roles = WorkerRoles(self.checks, self.containers, predict)

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
        problem = limits_problem(self.config.limits, command=command)
        if problem is not None:
            raise self.fail(problem[1], ("limits", problem[0]), hint=problem[2])
        return limits_plan(self.config.limits, slurm_time_limit, command=command)

    def frontend(self, workers: list[RolePlan], nodes: JobNodes) -> FrontendRoles:
        """The frontend adapter of `frontend.type`: its services, roles and start order."""
        section = self.roles.frontend
        model = self.model
        local = model.kind == "path" and Path(model.value).expanduser().is_dir()
        context = FrontendContext(
            config=self.config,
            frontend=section,
            workers=workers,
            engine=self.engine,
            simulated=self.simulated,
            served_name=self.roles.served,
            fail=self.fail,
            model_dir=model.value if local else None,
            engine_router=self.roles.engine_router(workers),
            worker_inputs=dict(self.roles.inputs),
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

    def bench(self) -> BenchPlan:
        """The benchmark section through its `benchmark.type` adapter (disagg.workloads)."""
        from disagg.workloads import BenchInputs, adapter_for

        section = self.config.benchmark
        inputs = BenchInputs(
            section=section,
            model_name=self.roles.served,
            simulated=self.simulated,
            recipe_dir=self.variant.path.parent,
            fail=self.fail,
            resolve_container=lambda written: resolve_container(written, self.profile),
            mounts=self.containers.mounts,
            engine=self.config.backend.type,
            frontend=self.roles.frontend.type,
        )
        return adapter_for(section.type).plan(inputs)

    def kv_events(self, frontend: FrontendRoles) -> list[RolePlan]:
        """Workers with the KV-cache event publisher srtctl renders (`disagg.plan.kv_events`)."""
        setting = self.config.backend.kv_events_config
        if setting and self.simulated:  # the engine adapter honours it for real workers
            stand_in = frontend.simulator or "the simulated engine"
            self.ignored[kv_events.FIELD] = f"{stand_in} publishes no KV-cache events"
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
        return setup_script.in_stages(frontend.stages, name, frontend.frontend)

    def profile_posts(self, bench: BenchPlan, plan: Plan) -> BenchPlan:
        """The benchmark's profile start/stop POSTs (`disagg.workloads.profiling`)."""
        if not profiling.enabled(self.config.profiling):
            return bench
        from disagg.workloads import profiling as posts

        plan.profile_dirs = profiling.dirs(self.config.profiling, plan.roles)
        bench, rows, ignored = posts.planned(bench, plan, self.config, self.fail)
        self.differs += rows
        plan.ignored += ignored
        return bench

    def staging(self, workers: list[RolePlan]) -> StagingPlan:
        staging = staging_plan(
            self.containers,
            workers,
            lambda kind: self.adapter.draft_model(self.roles.role_args(kind)),
        )
        if not self.simulated and any(m.purpose != "extra" for m in staging.models):
            self.differs.append("staged-hf-model")
        return staging

    def plan(self) -> Plan:
        from disagg.workloads import adapter_for

        self.checks.engine_matches()
        bench = self.bench()  # benchmark refusals first, as before the engine's own
        self.checks.backend_knobs()
        profiling.check(
            self.config,
            lambda role: self.adapter.role_args(self.checks.backend, role),
            fail=self.fail,
            refuse=self.refuse,
        )
        gpn, placed, job, het = self.layout()
        workers = self.roles.roles(placed)
        self.differs += self.roles.differs
        frontend = self.serving(workers, job)
        roles = self.kv_events(frontend)
        bench = self.fronted_bench(bench, frontend)
        nodes = job.total
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
            predicted=self.roles.predicted,
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
            emulates=None if self.simulated else self.adapter.emulates(self.checks.backend),
            bench=bench,
            staging=self.staging(workers),
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

    def layout(self) -> tuple[int, list[PlacedWorker], JobNodes, list[int]]:
        """(GPUs per node, the workers on the job's node ranks, the job's nodes, the het job's
        sizes): srt-slurm's layout after the nodes dedicated roles reserve (`job_nodes`)."""
        backend = self.config.backend  # the packing knobs, of an engine that reads them
        colocation = Colocation(
            allowed=backend.allow_prefill_decode_colocation and self.adapter.colocates,
            across_nodes=backend.allow_prefill_decode_colocation_across_nodes,
        )
        layout = NodeLayout(
            self.config.resources,
            self.profile,
            named=self.named,
            fail=self.fail,
            colocation=colocation,
        )
        gpn = layout.gpus_per_node()
        placed, worker_nodes = layout.place_workers(gpn)
        check_dedicated(self.config, fail=self.fail, named=self.named)
        colocate = self.config.benchmark.colocate_with_frontend
        job = job_nodes(worker_nodes, dedicated_roles(self.config), colocate=colocate)
        het = het_nodes(self.config, self.profile, job, fail=self.fail, named=self.named)
        shifted = [(kind, i, [job.offset + r for r in rs], ids) for kind, i, rs, ids in placed]
        return gpn, shifted, job, het

    def serving(self, workers: list[RolePlan], job: JobNodes) -> FrontendRoles:
        """Every role in start order: the frontend's over the workers, the Mooncake master
        and the `services:` entries in their stages, srtctl's launcher environment, the
        recipe's profiling and setup script on the real workers."""
        check_wired(self.config, self.checks.backend, self.fail)
        mooncake = mooncake_plane(
            self.config, simulated=self.simulated, image=self.containers.image
        )
        workers = with_worker_env(workers, mooncake)
        frontend = self.frontend(workers, job)
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
                profiling.with_profiling(
                    with_launcher_env(stage, self.config, where),
                    self.config.profiling,
                    frontend=self.roles.frontend.type,
                    backend=self.config.backend.type,
                )
                for stage in frontend.stages
            ]
        frontend.stages = self.setup_script(frontend)
        return frontend

    def fronted_bench(self, bench: BenchPlan, frontend: FrontendRoles) -> BenchPlan:
        """The benchmark as the frontend takes it (prompt form, tokenizer), predict's time scale."""
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
        return bench.model_copy(update=update)
