"""Helpers for orchestrator tests: plans built in code, and checks that nothing is left running."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from disagg.launch.state import RunState
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

PY = sys.executable
SIM_RECIPE = Path(__file__).resolve().parents[2] / "examples" / "sim" / "1p1d.yaml"


def disagg(*args: str | Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`python -m disagg ARGS` in a subprocess: exit status, stdout and stderr as text."""
    return subprocess.run(
        [PY, "-m", "disagg", *map(str, args)], capture_output=True, text=True, timeout=timeout
    )


def make_plan(
    roles: list[RolePlan],
    *,
    points: Iterable[int] = (1,),
    num_prompts: int = 4,
    isl: int = 16,
    osl: int = 8,
    name: str = "t",
    disaggregated: bool = True,
    prefill_gpus: int = 1,
    decode_gpus: int = 1,
) -> Plan:
    return Plan(
        name=name,
        selector=f"{name}.yaml:base",
        recipe_file=f"{name}.yaml",
        variant="base",
        engine="sim",
        simulated=True,
        nodes=1,
        gpus_per_node=8,
        prefill_gpus=prefill_gpus,
        decode_gpus=decode_gpus,
        disaggregated=disaggregated,
        roles=roles,
        bench=BenchPlan(
            model_name="sim-model",
            isl=isl,
            osl=osl,
            points=[PointPlan(concurrency=c, num_prompts=num_prompts) for c in points],
        ),
        staging=StagingPlan(skip=True),
        slurm=SlurmPlan(job_name=name, nodes=1, gpus_per_node=8),
        config={},
    )


def python_role(
    name: str, code: str, *, deadline_s: float = 5.0, kind: RoleKind = RoleKind.AGGREGATED
) -> RolePlan:
    """A role running `python -c code` with an http port and a health check."""
    return RolePlan(
        name=name,
        kind=kind,
        node_ranks=[0],
        ports=["http"],
        argv=[PY, "-c", code],
        health=HealthPlan(path="/health", deadline_s=deadline_s, interval_s=0.05),
    )


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is gone for every purpose that matters here.
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_gone(pids: Iterable[int], timeout_s: float = 5.0) -> list[int]:
    """PIDs still running after `timeout_s`."""
    pending = list(pids)
    deadline = time.monotonic() + timeout_s
    while pending and time.monotonic() < deadline:
        pending = [pid for pid in pending if alive(pid)]
        if pending:
            time.sleep(0.05)
    return pending


def sim_worker(name: str, mode: str, *, extra: Iterable[str] = ()) -> RolePlan:
    """A simulated SGLang worker role, the way a plan renders it."""
    kind = {"prefill": RoleKind.PREFILL, "decode": RoleKind.DECODE}.get(mode, RoleKind.AGGREGATED)
    ports = ["http", "bootstrap"] if mode == "prefill" else ["http"]
    argv = [
        "${run.python}",
        "-m",
        "disagg.engines.sim",
        "--host",
        "127.0.0.1",
        "--port",
        "${self.http_port}",
        "--model-path",
        "${model.path}",
        "--served-model-name",
        "sim-model",
        "--disaggregation-mode",
        "null" if mode == "aggregated" else mode,
        *extra,
    ]
    if mode == "prefill":
        argv += ["--disaggregation-bootstrap-port", "${self.bootstrap_port}"]
    return RolePlan(
        name=name,
        kind=kind,
        index=int(name.rsplit("-", 1)[1]),
        node_ranks=[0],
        gpus_per_node=1,
        gpu_ids=[0],
        ports=ports,
        argv=argv,
        health=HealthPlan(path="/health", deadline_s=30, interval_s=0.05),
    )


def router_role(
    *,
    prefill: Sequence[str] = (),
    decode: Sequence[str] = (),
    aggregated: Sequence[str] = (),
    policy: str | None = None,
) -> RolePlan:
    """smg over the named workers; `policy` None is smg's default (cache_aware), as srtctl."""
    from disagg.frontends.smg import ROUTER_HEALTH_PATH, ROUTER_PORTS, router_argv

    return RolePlan(
        name="router",
        kind=RoleKind.ROUTER,
        node_ranks=[0],
        ports=list(ROUTER_PORTS),
        argv=router_argv(
            prefill=prefill, decode=decode, aggregated=aggregated, host="127.0.0.1", policy=policy
        ),
        health=HealthPlan(path=ROUTER_HEALTH_PATH, deadline_s=30, interval_s=0.05),
    )


def sim_pd_roles(
    prefill: int, decode: int, *, extra: Iterable[str] = (), policy: str | None = None
) -> list[RolePlan]:
    workers = [sim_worker(f"prefill-{i}", "prefill", extra=extra) for i in range(prefill)]
    workers += [sim_worker(f"decode-{i}", "decode", extra=extra) for i in range(decode)]
    router = router_role(
        prefill=[w.name for w in workers if w.kind is RoleKind.PREFILL],
        decode=[w.name for w in workers if w.kind is RoleKind.DECODE],
        policy=policy,
    )
    return [*workers, router]


def wait_for_phase(run_dir: Path, phase: str, proc: subprocess.Popen[bytes]) -> RunState:
    """Poll state.json until the run reaches `phase` (the test's own timeout bounds it)."""
    while True:
        assert proc.poll() is None, f"disagg run ended early with {proc.returncode}"
        try:
            state = RunState.read(run_dir)
        except ValueError:
            state = None
        if state is not None and state.phase.value == phase:
            return state
        time.sleep(0.1)


def start_run(out: Path) -> subprocess.Popen[bytes]:
    """`disagg run` of the simulated 1P1D example into `out`, in the background."""
    return subprocess.Popen(
        [PY, "-m", "disagg", "run", str(SIM_RECIPE), "--local", "--out", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
