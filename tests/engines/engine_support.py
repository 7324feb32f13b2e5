"""Small recipes for engine tests, and the command lines a plan's workers turn into."""

from __future__ import annotations

import shlex
from pathlib import Path

from disagg.launch.bindings import build_bindings, port_field, render_task
from disagg.plan.model import Plan, RoleKind, RolePlan
from disagg.plan.placement import place
from disagg.recipe.variants import load_variants

# A schema-2 recipe of the tiny model on 8-GPU nodes: its head (then frontend, engine and
# roles) and its sa-bench tail.
TINY_HEAD = """\
schema: 2
name: {name}
model:
  path: hf:org/tiny
  container: vllm
  precision: bf16
resources:
  gpu_type: h100
  gpus_per_node: 8
"""
SA_BENCH = """\
benchmark:
  type: sa-bench
  isl: 128
  osl: 16
  concurrencies: "1x2"
"""
WORKER_KINDS = (RoleKind.PREFILL, RoleKind.DECODE, RoleKind.AGGREGATED)
MODEL_PATH = "/models/org--model"
PYTHON = "/opt/disagg/.venv/bin/python"
JOB_ID = "4242"


def plan_text(tmp_path: Path, text: str) -> Plan:
    path = tmp_path / "recipe.yaml"
    path.write_text(text)
    [variant] = load_variants(path)
    return place(variant)


# The frontend that runs each engine's own server as these tests render it: `frontend.type`
# defaults to dynamo, whose workers are the engines' Dynamo modules (tests/frontends).
OWN_SERVER_FRONTEND = {"vllm": "smg", "trtllm": "trtllm_serve"}


def recipe(
    engine: str, roles: str, *, resources: str, backend: str = "", frontend: str | None = None
) -> str:
    """A recipe of `engine` with the given `<engine>_config` roles block (indented 4),
    fronted by `frontend` (default: the one that runs the engine's own server)."""
    chosen = frontend or OWN_SERVER_FRONTEND.get(engine)
    front = f"frontend: {{type: {chosen}}}\n" if chosen else ""
    return (
        "name: t\n"
        "model: {path: hf:org/model, container: img, precision: bf16}\n"
        f"resources:\n  gpu_type: h100\n{resources}"
        f"backend:\n  type: {engine}\n{backend}  {engine}_config:\n{roles}"
        f"{front}"
        "benchmark: {type: sa-bench, isl: 128, osl: 16, concurrencies: '1'}\n"
    )


def worker_tasks(plan: Plan) -> list[tuple[RolePlan, int, list[str], dict[str, str]]]:
    """(role, node rank, argv, env) of every worker and router task as its node would start
    it, with fixed addresses (10.0.0.N for node rank N-1) and ports (30000 + 10 x role + j)."""
    ports = {
        role.name: {port_field(p): 30000 + 10 * i + j for j, p in enumerate(role.ports)}
        for i, role in enumerate(plan.roles)
    }
    bindings = build_bindings(
        plan,
        addresses=[f"10.0.0.{i + 1}" for i in range(plan.nodes)],
        ports=ports,
        model_path=MODEL_PATH,
        draft_path="/models/draft",
        run_dir=Path("/runs/r"),
        python=PYTHON,
    )
    bindings["run"]["job_id"] = JOB_ID  # the same on every run (else the test's own pid)
    tasks = []
    for role in plan.roles:
        if role.kind not in WORKER_KINDS and role.kind is not RoleKind.ROUTER:
            continue
        for rank in role.launch_ranks:
            argv, env = render_task(plan, role, rank, bindings)
            tasks.append((role, rank, argv, env))
    return tasks


def task_lines(plan: Plan) -> str:
    """Every worker task as its node would start it: `role[node]: ENV=... argv`."""
    lines = []
    for role, rank, argv, env in worker_tasks(plan):
        shown = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(env.items()))
        step = f" (mpi {role.nnodes}x{role.mpi.tasks_per_node})" if role.mpi else ""
        line = f"{role.name}[{rank}]{step}: {shown} {shlex.join(argv)}"
        lines.append(line.replace(":  ", ": "))
    return "\n".join(lines) + "\n"
