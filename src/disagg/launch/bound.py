"""Every process of a plan as it will start, bound without a cluster: `disagg plan --bound`.

What srtctl's dry run shows: each task's argv, environment, node and GPUs and its role's
files, filled the way the orchestrator fills them at launch, on nodes `node0..N-1` with
the allocator's ports from `PORT_BASE`; the run directory and job id stay for the job.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from disagg.errors import DisaggError
from disagg.launch.bindings import (
    Bindings,
    allocate_ports,
    build_bindings,
    render_task,
    write_role_files,
)
from disagg.plan.container_paths import in_container, translate
from disagg.plan.model import WORKER_KINDS, ModelToStage, Plan, RolePlan
from disagg.staging.checkpoint import repo_folder_name

PORT_BASE = 50000
RUN_DIR = "${run.dir}"  # left for the job to fill: the run directory is made at submit
JOB_ID = "${run.job_id}"  # the Slurm job id, known once the job is queued


class _Free:
    """Every port is free on every node: the numbers the allocator hands out first."""

    def port_is_free(self, node_rank: int, port: int) -> bool:
        return True


class BoundTask(BaseModel):
    """One task of a role: what its node starts."""

    model_config = ConfigDict(extra="forbid")

    node_rank: int
    node: str
    gpus: list[int] = Field(default_factory=list)
    argv: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    error: str | None = None  # why this task could not be bound (the plan is inconsistent)


class BoundRole(BaseModel):
    model_config = ConfigDict(extra="forbid")

    files: dict[str, str] = Field(default_factory=dict)  # run-dir relative path -> text
    tasks: list[BoundTask] = Field(default_factory=list)


class BoundPlan(BaseModel):
    """A plan's processes, bound; `plan.json`'s `bound` key under `disagg plan --bound`."""

    model_config = ConfigDict(extra="forbid")

    model_path: str  # `${model.path}` on the host
    draft_path: str
    model_inside: str | None = None  # the same as the first worker's container sees it
    draft_inside: str | None = None
    ports: dict[str, dict[str, int]]  # role -> port field -> number
    roles: dict[str, BoundRole]


def model_paths(plan: Plan) -> tuple[str, str]:
    """(main, draft) model locations on the host, as staging would hand them over."""
    staging = plan.staging

    def where(model: ModelToStage) -> str:
        if staging.skip:  # nothing is staged: the names themselves, as the job gives them
            return model.repo_id
        root = staging.hf_cache or "$HF_HOME"
        return f"{root}/hub/{repo_folder_name(model.repo_id)}/snapshots/{model.revision}"

    staged = {model.purpose: model for model in staging.models}
    main, draft = staged.get("main"), staged.get("draft")
    main_path = where(main) if main else plan.bench.model_name
    return staging.local_path or main_path, where(draft) if draft else ""


def bind_plan(plan: Plan) -> BoundPlan:
    """Every role's files and tasks of `plan`, bound on nodes `node0..N-1`."""
    count = max(plan.nodes, plan.slurm.nodes, 1)
    nodes = [f"node{rank}" for rank in range(count)]
    ports = allocate_ports(plan, _Free(), base=PORT_BASE)
    main, draft = model_paths(plan)
    bindings = build_bindings(
        plan,
        addresses=nodes,
        ports=ports,
        model_path=main,
        draft_path=draft,
        run_dir=Path("/"),
        names=nodes,
    )
    # the run directory and the job id are the job's own: left for it to fill
    bindings["run"].update({"dir": RUN_DIR, "job_id": JOB_ID})
    bound = BoundPlan(model_path=main, draft_path=draft, ports=ports, roles={})
    worker = next((role for role in plan.roles if role.kind in WORKER_KINDS), None)
    if worker is not None and in_container(plan, worker):
        bound.model_inside = translate(plan, worker, main) if main else None
        bound.draft_inside = translate(plan, worker, draft) if draft else None
    elif worker is not None:
        bound.model_inside, bound.draft_inside = main, draft or None
    for role in plan.roles:
        bound.roles[role.name] = BoundRole(
            files=_files(plan, role, bindings),
            tasks=[_task(plan, role, rank, bindings, nodes) for rank in role.launch_ranks]
            if role.argv
            else [],
        )
    return bound


def _files(plan: Plan, role: RolePlan, bindings: Bindings) -> dict[str, str]:
    if not role.files:
        return {}
    with tempfile.TemporaryDirectory() as tmp:
        written = write_role_files(plan, role, bindings, Path(tmp))
        return {str(path.relative_to(tmp)): path.read_text() for path in written}


def _task(plan: Plan, role: RolePlan, rank: int, bindings: Bindings, nodes: list[str]) -> BoundTask:
    task = BoundTask(node_rank=rank, node=nodes[rank], gpus=list(role.gpu_ids))
    try:
        task.argv, task.env = render_task(plan, role, rank, bindings)
    except DisaggError as exc:
        task.error = exc.message
    return task


def bound_lines(plan: Plan, bound: BoundPlan) -> list[str]:
    """The human view: each task on one line, `node GPUs role: ENV=... argv`, shell-quoted
    so that it pastes; the files written for a role after its tasks."""
    import shlex

    lines = [f"processes of {plan.selector} (nodes node0..N-1, ports from {PORT_BASE})"]
    for name, role in bound.roles.items():
        for task in role.tasks:
            gpus = ",".join(map(str, task.gpus)) or "-"
            head = f"  {task.node} gpus {gpus} {name}:"
            if task.error is not None:
                lines.append(f"{head} cannot be bound: {task.error}")
                continue
            env = " ".join(f"{key}={shlex.quote(value)}" for key, value in sorted(task.env.items()))
            lines.append(f"{head} {env} {shlex.join(task.argv)}".replace(":  ", ": "))
        for relative, text in role.files.items():
            lines.append(f"  {name} writes {RUN_DIR}/{relative}:")
            lines += [f"    {line}" for line in text.splitlines()]
    return lines
