"""Executor by name: `make_launcher("local" | "slurm", plan, run_dir)`.

Each executor module is imported on first use, so that `disagg.job` stays light to start.
"""

from __future__ import annotations

from pathlib import Path

from disagg.errors import DisaggError
from disagg.launch.executor import RoleLauncher
from disagg.plan.model import Plan

EXECUTORS = ("local", "slurm")


def make_launcher(kind: str, plan: Plan, run_dir: Path) -> RoleLauncher:
    if kind == "local":
        from disagg.launch.local import LocalLauncher

        return LocalLauncher(nodes=plan.nodes)
    if kind == "slurm":
        from disagg.launch.srun import SrunLauncher

        return SrunLauncher.from_environment(plan.slurm, run_dir=run_dir)
    raise DisaggError(f"unknown executor {kind!r}", hint=f"choose one of: {', '.join(EXECUTORS)}")
