"""Recorded-file comparison and the srun lines a plan turns into, shared by golden tests.

After an intended change, regenerate the recorded files and review the diff:

    DISAGG_UPDATE_GOLDEN=1 .venv/bin/pytest tests/slurm/test_golden.py tests/mi355x
"""

from __future__ import annotations

import difflib
import os
import shlex
from pathlib import Path

import pytest

from disagg.launch.bindings import build_bindings, render_task
from disagg.launch.srun import srun_argv, step_name
from disagg.plan.model import Plan

GOLDEN = Path(__file__).parent / "golden"
RUN_DIR = Path("/shared/runs/sim 1p2d/base-20250101T000000Z")
NODES = ["gpu-a01", "gpu-a02", "gpu-b17"]
PYTHON = "/opt/disagg/.venv/bin/python"  # recorded files must not depend on this checkout


def check_golden(name: str, text: str, *, directory: Path = GOLDEN) -> None:
    path = directory / name
    if os.environ.get("DISAGG_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    recorded = path.read_text()
    if recorded != text:
        diff = "".join(
            difflib.unified_diff(
                recorded.splitlines(True), text.splitlines(True), str(path), "rendered"
            )
        )
        pytest.fail(f"{name} differs from the recorded file:\n{diff}")


def srun_lines(
    plan: Plan,
    *,
    nodes: list[str] = NODES,
    run_dir: Path = RUN_DIR,
    model_path: str = "sim/tiny-model",
    draft_path: str = "",
    python: str = PYTHON,
) -> str:
    """What the orchestrator would start for every task, with fixed ports and addresses."""
    ports = {
        role.name: {f"{p}_port": 30000 + 10 * i + j for j, p in enumerate(role.ports)}
        for i, role in enumerate(plan.roles)
    }
    bindings = build_bindings(
        plan,
        addresses=[f"10.0.0.{i + 1}" for i in range(len(nodes))],
        ports=ports,
        model_path=model_path,
        draft_path=draft_path,
        run_dir=run_dir,
        python=python,
        names=nodes,
    )
    lines = []
    for role in plan.roles:
        if not role.argv:
            continue
        for rank in role.launch_ranks:  # an MPI role is one step from its head node
            argv, env = render_task(plan, role, rank, bindings)
            cmd = srun_argv(
                job_id="4242",
                node=nodes[rank],
                name=step_name(role.name, rank),
                argv=argv,
                env=env,
                slurm=plan.slurm,
                container_image=role.container_image,
                container_env=list(env),
                mpi=role.mpi,
                mpi_nodes=[nodes[r] for r in role.node_ranks] if role.mpi else (),
                run_dir=run_dir,
                het_group=plan.slurm.het_group(rank),
                role_options=role.srun_options,
            )
            lines.append(shlex.join(cmd))
    return "\n".join(lines) + "\n"
