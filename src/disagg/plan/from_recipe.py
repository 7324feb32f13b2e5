"""RECIPE[:SELECTOR] + an optional cluster profile -> plans: the one way every command plans.

`disagg plan`, `stage`, `run` and `submit` all go through `plans_for`, so a profile
given by name or path, alias resolution and "selects nothing" errors behave the same
everywhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from disagg.cluster import ClusterProfile, load_profile
from disagg.errors import DisaggError
from disagg.plan.model import Plan

PROFILE_DIRS = (Path("clusters"), Path("examples/clusters"), Path("~/.config/disagg/clusters"))
DEFAULT_RUN_ROOT = Path("runs")


def find_profile(cluster: str | Path) -> Path:
    """A cluster profile by path, or by name in ./clusters, ./examples/clusters, ~/.config."""
    direct = Path(cluster).expanduser()
    if direct.is_file():
        return direct
    for directory in PROFILE_DIRS:
        for suffix in (".yaml", ".yml"):
            candidate = directory.expanduser() / f"{cluster}{suffix}"
            if candidate.is_file():
                return candidate
    searched = ", ".join(str(d) for d in PROFILE_DIRS)
    raise DisaggError(
        f"cluster profile {str(cluster)!r} not found",
        hint=f"pass a YAML path, or a name found as NAME.yaml in: {searched}",
    )


def load_cluster(cluster: str | Path | None) -> ClusterProfile | None:
    return load_profile(find_profile(cluster)) if cluster is not None else None


def plans_for(targets: Sequence[str], cluster: str | Path | None) -> list[Plan]:
    """One plan per selected variant of every target, in order."""
    from disagg.plan.placement import place
    from disagg.recipe.variants import load_variants

    profile = load_cluster(cluster)
    plans: list[Plan] = []
    for target in targets:
        placed = [place(variant, profile) for variant in load_variants(target)]
        if not placed:
            raise DisaggError(
                f"{target}: selects no variant", hint="list them with `disagg plan FILE`"
            )
        plans += placed
    return plans


def run_root(cluster: str | Path | None) -> Path:
    """Where new run directories go: the profile's `results_root`, else ./runs."""
    profile = load_cluster(cluster)
    if profile is not None and profile.results_root:
        return Path(profile.results_root).expanduser()
    return DEFAULT_RUN_ROOT
