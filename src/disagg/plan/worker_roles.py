"""A variant's worker roles: each worker's command, environment, health and layout, as its
engine adapter renders them on the nodes and GPUs `disagg.plan.node_layout` gives it.

The adapter's verdicts on the settings are `disagg.plan.engine_checks`; images and mounts
`disagg.plan.containers`; a predicted worker's timing flags `disagg.predict.mapping`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from functools import cached_property
from pathlib import Path
from string import Formatter
from typing import TYPE_CHECKING, Any, NamedTuple

from disagg.engines.base import WorkerCommand
from disagg.engines.worker import WorkerSpec
from disagg.plan import role_engines
from disagg.plan.containers import Containers
from disagg.plan.engine_checks import EngineChecks
from disagg.plan.job_plan import env_text
from disagg.plan.model import HealthPlan, MpiPlan, ParallelPlan, RoleKind, RolePlan
from disagg.plan.node_layout import PlacedWorker
from disagg.plan.role_images import ADAPTER_ROLES, role_srun_options
from disagg.plan.served_name import served_model_name
from disagg.recipe.schema import FrontendSection

if TYPE_CHECKING:
    from disagg.predict.mapping import PredictOptions

SIM_HEALTH_DEADLINE_S = 60.0
ENGINE_ROUTER_HEALTH_DEADLINE_S = 120.0
# srtctl formats worker environment values with `str.format_map` (`start_worker`); a node's
# values are known only inside the allocation, so a plan carries placeholders for them.
NODE_FIELDS = {"node": "${self.node}", "node_id": "${self.node_id}"}


class _Kind(NamedTuple):
    """What the workers of one kind and size share (see `WorkerRoles._kind`)."""

    args: Mapping[str, Any]  # as written
    seen: Mapping[str, Any]  # as the worker's container sees them
    spec: WorkerSpec
    own: str | None  # the kind's own image, if it names one


class _Rendered(NamedTuple):
    """An adapter's command for one spec, and what a role takes from it and the settings."""

    command: WorkerCommand
    parallel: ParallelPlan
    speculative: str | None
    env: dict[str, str]


class WorkerRoles:
    """The workers of one variant. What they hit on the way collects here: `inputs` (worker
    name -> the settings and spec its adapter was asked with), `differs` (compat rows),
    the checks' `ignored` and `predicted` (the label and assumptions of a predicted run)."""

    def __init__(
        self, checks: EngineChecks, containers: Containers, predict: PredictOptions | None
    ) -> None:
        self.checks = checks
        self.containers = containers
        self.predict = predict
        self.config = checks.config
        self.adapter = checks.adapter
        self.frontend = checks.config.frontend or FrontendSection()  # its defaults if none
        self.inputs: dict[str, tuple[Mapping[str, Any], WorkerSpec]] = {}
        self.differs: list[str] = []
        self.predicted: dict[str, Any] | None = None
        self._rendered: dict[tuple[Any, ...], _Rendered] = {}

    def role_args(self, kind: RoleKind) -> Mapping[str, Any]:
        backend = role_engines.with_role_knobs(self.config, kind, self.checks.backend)
        return self.adapter.role_args(backend, ADAPTER_ROLES[kind])

    @cached_property
    def served(self) -> str:
        """The one model name every worker serves, the frontend routes and the load
        generator sends (see `disagg.plan.served_name`)."""
        written = [
            self.adapter.served_model_name(self.role_args(kind))
            for kind in (RoleKind.PREFILL, RoleKind.AGGREGATED, RoleKind.DECODE)
        ]
        return served_model_name(
            self.containers.model, written, self.config.backend.served_model_name
        )

    def roles(self, placed: list[PlacedWorker]) -> list[RolePlan]:
        """Every worker process, in placement order."""
        roles = []
        # workers of one kind and size share their settings, spec and image: worked out once
        shared: dict[tuple[RoleKind, int, int], _Kind] = {}
        for kind, index, ranks, ids in placed:
            name = f"{kind.value}-{index}"
            size = (kind, len(ranks), len(ids))
            if size not in shared:
                shared[size] = self._kind(kind, name, len(ranks), len(ids))
            args, seen, spec, own = shared[size]
            if not self.adapter.rank_processes(args, spec):
                roles.append(self._role(kind, index, name, ranks, ids, args, seen, spec, own))
                continue
            # one process per GPU, node by node (srt-slurm's per-GPU DP launch)
            pairs = [(rank, gpu) for rank in ranks for gpu in sorted(ids)]
            for dp_rank, (rank, gpu) in enumerate(pairs):
                one = replace(spec, nnodes=1, gpus_per_node=1, dp_rank=dp_rank, dp_head=name)
                process = name if dp_rank == 0 else f"{name}-dp{dp_rank}"
                roles.append(self._role(kind, index, process, [rank], [gpu], args, seen, one, own))
        return roles

    def _kind(self, kind: RoleKind, name: str, nnodes: int, gpus_per_node: int) -> _Kind:
        """The settings, spec and image of a kind's workers of one size, checked (`name`, the
        first such worker, is the one a refusal names)."""
        args = self._one_served_name(self.role_args(kind))
        self.checks.mode(kind, args)
        own_engine = role_engines.own_engine(self.config, kind)
        spec = WorkerSpec(
            role=ADAPTER_ROLES[kind],
            served_name=self.served,
            nnodes=nnodes,
            gpus_per_node=gpus_per_node,
            ib_devices=tuple(self.containers.profile.rdma_devices)
            if self.containers.profile
            else (),
            simulated=self.containers.simulated,
            # the section's default (dynamo) when the recipe has none, as `frontend` uses
            frontend=self.frontend.type,
            gpu_type=self.config.resources.gpu_type,
            schema2=self.checks.variant.dialect == "schema2",
            backend=own_engine[1] if own_engine else self.checks.backend,
            engine=own_engine[0] if own_engine else None,
        )
        self.checks.supported(kind, args, spec)
        self.checks.note_ignored(kind, self.adapter.ignored(args, ADAPTER_ROLES[kind]))
        own = self.containers.role_image(kind)
        seen = self.containers.worker_args(kind, name, args, own or self.containers.image)
        return _Kind(args, seen, spec, own)

    def _one_served_name(self, args: Mapping[str, Any]) -> Mapping[str, Any]:
        """A role's settings with its own served-model-name (if written) set to the one
        name, as srtctl replaces each role's with it."""
        found = self.adapter.flags.find(args, "served_model_name")
        if found is None or found[1] == self.served:
            return args
        return {**args, found[0]: self.served}

    def _role(
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
        # the same for every worker of a kind and size: worked out for the first, in the order
        # a refusal of it was always found (command, prediction, parallelism, environment)
        key = (kind, spec.nnodes, spec.gpus_per_node, spec.dp_rank, spec.dp_head)
        rendered = self._rendered.get(key)
        command = rendered.command if rendered else self.adapter.command(seen, spec)
        self.differs += command.differs
        self.checks.note_ignored(kind, command.ignored)
        argv = command.argv
        if self.predict is not None:
            argv = [*argv, *self._predict_argv(kind, args)]
        self.inputs[name] = (seen, spec)
        if rendered is None:
            parallel = self.adapter.worker_parallelism(args, spec)
            env = {**self._env(kind), **command.env}
            rendered = self._rendered[key] = _Rendered(
                command,
                ParallelPlan.model_validate(parallel, from_attributes=True),
                self.adapter.sim_reading(args).speculative_algorithm,
                {var: value for var, value in env.items() if var not in command.unset_env},
            )
        return RolePlan(
            name=name,
            kind=kind,
            index=index,
            node_ranks=ranks,
            gpus_per_node=len(ids),
            gpu_ids=ids,
            ports=command.ports,
            argv=argv,
            node_argv=command.node_argv,
            files=command.files,
            mpi=mpi_plan(command),
            parallel=rendered.parallel,
            speculative=rendered.speculative,
            env=rendered.env,
            health=self._health(),
            container_image=own or self.containers.worker_image(command, self.containers.image),
            srun_options=role_srun_options(self.config, kind),
        )

    def _env(self, kind: RoleKind) -> dict[str, str]:
        """The profile's worker env, then the role's own and the recipe's `environment`
        over it (srtctl sets the mode's env first, then the recipe's: cli/mixins/
        worker_stage.py `start_worker`), with `{node}` / `{node_id}` filled per node."""
        backend = self.config.backend
        per_kind = {
            RoleKind.PREFILL: backend.prefill_environment,
            RoleKind.DECODE: backend.decode_environment,
            RoleKind.AGGREGATED: backend.aggregated_environment,
        }[kind]
        env = self.containers.profile.worker_env() if self.containers.profile else {}
        for path, values in (
            (("backend", f"{kind.value}_environment"), per_kind),
            (("environment",), self.config.environment),
        ):
            for key, value in values.items():
                text = env_text(value)
                try:
                    env[key] = fill_node_fields(text)
                except ValueError as exc:
                    field = (*path, key)
                    raise self.checks.fail(
                        f"{self.checks.variant.written_name('.'.join(field))} {text!r} cannot be "
                        f"filled as srtctl fills {{node}} and {{node_id}} ({exc})",
                        field,
                        "write a literal brace as {{ or }}",
                    ) from None
        return env

    def _health(self) -> HealthPlan:
        simulated = self.containers.simulated
        check = self.config.health_check
        if check is not None:
            deadline = float(check.max_attempts * check.interval_seconds)
        else:
            deadline = SIM_HEALTH_DEADLINE_S if simulated else self.adapter.health_deadline_s
        path = "/health" if simulated else self.adapter.health_path
        return HealthPlan(path=path, deadline_s=deadline, interval_s=0.2 if simulated else 1.0)

    def _predict_argv(self, kind: RoleKind, args: Mapping[str, Any]) -> list[str]:
        """The predicted worker's `--predict-*` flags; what cannot be mapped is refused."""
        from disagg.predict.mapping import Unmappable, WorkerInputs, target_for

        assert self.predict is not None
        model = self.containers.model
        local = model.kind == "path" and Path(model.value).expanduser().is_dir()
        names = (*filter(None, [self.predict.model]), self.served, model.value, model.written)
        inputs = WorkerInputs(
            engine=self.config.backend.type,
            args=args,
            reading=self.adapter.sim_reading(args),
            gpu_type=self.config.resources.gpu_type,
            precision=self.config.model.precision,
            model_names=names,
            model_dir=str(Path(model.value).expanduser()) if local else None,
        )
        try:
            target = target_for(inputs, self.predict, self.adapter.args_path(ADAPTER_ROLES[kind]))
        except Unmappable as exc:
            raise self.checks.refuse(exc.what, exc.path) from None
        self.predicted = target.summary()
        return target.argv()

    def engine_router(self, workers: list[RolePlan]) -> RolePlan | None:
        """The engine's own router for real prefill/decode workers, when its KV hand-over
        needs one (TRT-LLM's `trtllm-serve disaggregated`)."""
        prefill = [r.name for r in workers if r.kind is RoleKind.PREFILL]
        decode = [r.name for r in workers if r.kind is RoleKind.DECODE]
        if not prefill or self.containers.simulated:
            return None
        section = self.frontend.model_dump(exclude_none=True)
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
            mpi=mpi_plan(own),
            health=HealthPlan(path="/health", deadline_s=ENGINE_ROUTER_HEALTH_DEADLINE_S),
        )


class _Kept(dict[str, str]):
    """The node fields as placeholders; any other name kept as written, braces included."""

    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def fill_node_fields(value: str) -> str:
    """`value` as srtctl's formatting leaves it, with the node fields as placeholders; a
    ValueError (the reason) for a value that formatting would fail on, or a node field with
    a conversion or format spec, whose result depends on the node."""
    if "{" not in value and "}" not in value:
        return value
    try:
        for _text, field, spec, conversion in Formatter().parse(value):
            if field in NODE_FIELDS and (spec or conversion):
                raise ValueError(f"{{{field}}} with a format spec or conversion")
        return value.format_map(_Kept(NODE_FIELDS))
    except (ValueError, IndexError, KeyError, AttributeError, TypeError) as exc:
        raise ValueError(str(exc) or type(exc).__name__) from None


def mpi_plan(command: WorkerCommand) -> MpiPlan | None:
    """The MPI step an engine's command asks for, if it asks for one."""
    if not command.mpi_tasks_per_node:
        return None
    return MpiPlan(
        tasks_per_node=command.mpi_tasks_per_node, srun_options=dict(command.mpi_srun_options)
    )
