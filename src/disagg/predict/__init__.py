"""Predicted runs: the simulated engine timed by NVIDIA's AIConfigurator performance model.

`disagg run RECIPE --local --predict` (or `backend.engine: predict`) runs every worker as
the simulated engine, with each iteration's duration, the KV capacity and the KV hand-over
time taken from `aiconfigurator-core` for the recipe's own model, GPU, engine, precision
and parallelism (docs/predict.md). The package is optional (the `predict` group).
"""

from __future__ import annotations

from disagg.errors import DisaggError

PACKAGE = "aiconfigurator-core"
VERSION = "0.12.0"
INSTALL = "uv sync --group predict"


def installed_version() -> str | None:
    """The installed aiconfigurator-core's version, None when it cannot be imported."""
    try:
        import aiconfigurator_core  # noqa: F401
    except ImportError:
        return None
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(PACKAGE)
    except PackageNotFoundError:
        return None


def require() -> str:
    """The installed version, or a DisaggError naming the install command."""
    found = installed_version()
    if found is None:
        raise DisaggError(
            f"--predict needs {PACKAGE} {VERSION} (AIConfigurator's performance model), "
            "which is not installed",
            hint=f"install the optional group: `{INSTALL}` (or `pip install {PACKAGE}=={VERSION}`)",
        )
    if found != VERSION:
        raise DisaggError(
            f"--predict is built against {PACKAGE} {VERSION}, found {found}",
            hint=f"`{INSTALL}` installs the pinned version",
        )
    return found
