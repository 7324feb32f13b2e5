"""Executor registry: `make_launcher("local" | "slurm", plan, run_dir)`.

The orchestrator knows launchers only through this factory. An executor module
registers itself with `register(kind, factory)` when imported; modules listed in
`_MODULES` are imported on first use so that `disagg.job` stays light to start.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path

from disagg.errors import DisaggError
from disagg.launch.base import RoleLauncher
from disagg.plan.model import Plan

LauncherFactory = Callable[[Plan, Path], RoleLauncher]

_FACTORIES: dict[str, LauncherFactory] = {}
_MODULES = {"slurm": "disagg.launch.srun"}


def register(kind: str, factory: LauncherFactory) -> None:
    _FACTORIES[kind] = factory


def _local(plan: Plan, run_dir: Path) -> RoleLauncher:
    from disagg.launch.local import LocalLauncher

    return LocalLauncher(nodes=plan.nodes)


register("local", _local)


def executor_kinds() -> list[str]:
    return sorted({*_FACTORIES, *_MODULES})


def make_launcher(kind: str, plan: Plan, run_dir: Path) -> RoleLauncher:
    if kind not in _FACTORIES and kind in _MODULES:
        try:
            importlib.import_module(_MODULES[kind])
        except ImportError as exc:
            raise DisaggError(f"executor {kind!r} is not available: {exc}") from exc
    factory = _FACTORIES.get(kind)
    if factory is None:
        raise DisaggError(
            f"unknown executor {kind!r}", hint=f"choose one of: {', '.join(executor_kinds())}"
        )
    return factory(plan, run_dir)
