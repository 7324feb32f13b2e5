"""Predicted runs: the simulated engine timed by NVIDIA's AIConfigurator performance model.

Every worker runs as the simulated engine, with step durations, KV capacity and KV
hand-over time from `aiconfigurator-core` for the recipe's own model, GPU, engine,
precision and parallelism (docs/predict.md). The package is optional (the `predict` group).
"""

from __future__ import annotations

from disagg.errors import DisaggError

PACKAGE = "aiconfigurator-core"
VERSION = "0.12.0"
INSTALL = "uv sync --group predict"


def require() -> str:
    """The installed version, or a DisaggError naming the install command."""
    from importlib.metadata import version

    try:
        import aiconfigurator_core  # noqa: F401

        found = version(PACKAGE)
    except ImportError:  # importlib's PackageNotFoundError is one too
        raise DisaggError(
            f"--predict needs {PACKAGE} {VERSION} (AIConfigurator's performance model), "
            "which is not installed",
            hint=f"install the optional group: `{INSTALL}` (or `pip install {PACKAGE}=={VERSION}`)",
        ) from None
    if found != VERSION:
        raise DisaggError(
            f"--predict is built against {PACKAGE} {VERSION}, found {found}",
            hint=f"`{INSTALL}` installs the pinned version",
        )
    return found
