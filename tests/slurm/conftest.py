"""Fixtures for the Slurm tests: the local cluster started by scripts/slurm-up, and plans.

Tests marked `slurm` use the `slurm_cluster` fixture from tests/conftest.py.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from disagg.plan.model import (
    BenchPlan,
    HealthPlan,
    Plan,
    PointPlan,
    RoleKind,
    RolePlan,
    SlurmPlan,
    StagingPlan,
)

REPO = Path(__file__).resolve().parents[2]


def job_state(job_id: str) -> str:
    """The job's state; QUERY_FAILED where scontrol got no answer (slurmctld busy on a loaded
    machine), which callers poll through, and UNKNOWN where Slurm no longer knows the job."""
    done = subprocess.run(
        ["scontrol", "-o", "show", "job", job_id], capture_output=True, text=True, check=False
    )
    for word in done.stdout.split():
        if word.startswith("JobState="):
            return word.split("=", 1)[1]
    return "UNKNOWN" if "Invalid job id" in done.stderr else "QUERY_FAILED"


def wait_job_end(job_id: str, timeout_s: float = 120.0) -> str:
    """Poll until the job left the running states; returns its final state."""
    deadline = time.monotonic() + timeout_s
    state = job_state(job_id)
    while state in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "QUERY_FAILED"):
        if time.monotonic() > deadline:
            subprocess.run(["scancel", job_id], check=False)
            raise AssertionError(f"job {job_id} still {state} after {timeout_s} s")
        time.sleep(0.2)
        state = job_state(job_id)
    return state


def job_steps(job_id: str) -> list[str]:
    out = subprocess.run(
        ["squeue", "-h", "-s", "-j", job_id, "-o", "%i"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    return out.split()


def one_p_two_d_plan(
    *,
    name: str = "sim-1p2d",
    nodes: int = 3,
    slurm: SlurmPlan | None = None,
    argv_prefix: list[str] | None = None,
) -> Plan:
    """A 1P2D plan built in code: prefill on node 0, a decode worker on each other node."""
    python = argv_prefix or [sys.executable, "-m", "disagg"]

    def worker(kind: RoleKind, index: int, rank: int, gpus: list[int]) -> RolePlan:
        mode = kind.value
        return RolePlan(
            name=f"{mode}-{index}",
            kind=kind,
            index=index,
            node_ranks=[rank],
            gpus_per_node=len(gpus),
            gpu_ids=gpus,
            ports=["http", "bootstrap"] if kind is RoleKind.PREFILL else ["http"],
            argv=[
                *python,
                "sim-engine",
                "--host",
                "${self.bind_host}",
                "--port",
                "${self.http_port}",
                "--disaggregation-mode",
                mode,
                "--served-model-name",
                "sim/tiny-model",
                "--tp-size",
                str(len(gpus)),
            ],
            env={"MODEL_REPOS": "sim/tiny-model,sim/draft", "PYTHONUNBUFFERED": "1"},
            health=HealthPlan(deadline_s=60.0),
        )

    roles = [
        worker(RoleKind.PREFILL, 0, 0, [0, 1]),
        worker(RoleKind.DECODE, 0, 1 % nodes, [0, 1]),
        worker(RoleKind.DECODE, 1, 2 % nodes, [2, 3]),
        RolePlan(
            name="router",
            kind=RoleKind.ROUTER,
            node_ranks=[0],
            ports=["http"],
            argv=["sglang-router", "--port", "${self.http_port}"],
            health=HealthPlan(deadline_s=60.0),
        ),
        RolePlan(name="bench", kind=RoleKind.BENCH, node_ranks=[0]),
    ]
    return Plan(
        name=name,
        selector=f"{name}.yaml:base",
        recipe_file=f"{name}.yaml",
        variant="base",
        engine="sim",
        simulated=True,
        nodes=nodes,
        gpus_per_node=8,
        prefill_gpus=2,
        decode_gpus=4,
        disaggregated=True,
        roles=roles,
        bench=BenchPlan(
            model_name="sim/tiny-model",
            isl=64,
            osl=16,
            points=[PointPlan(concurrency=c, num_prompts=4 * c) for c in (1, 2)],
        ),
        staging=StagingPlan(skip=True),
        slurm=slurm or SlurmPlan(job_name=name, nodes=nodes, gpus_per_node=8, partition="debug"),
        config={},
    )
