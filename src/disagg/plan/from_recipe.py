"""RECIPE[:SELECTOR] + an optional cluster profile -> plans: the one way every command plans.

`disagg plan`, `stage`, `run` and `submit` all go through `plans_for`, so a profile
given by name or path, alias resolution and "selects nothing" errors behave the same
everywhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from disagg.cluster import ClusterProfile, load_profile
from disagg.errors import DisaggError, UnsupportedRecipe
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
    """The profile named, else an `srtslurm.yaml` found where srt-slurm finds it, else None."""
    if cluster is not None:
        return load_profile(find_profile(cluster))
    from disagg.cluster_srtslurm import find_config

    found = find_config()
    return load_profile(found) if found is not None else None


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


@dataclass
class Planned:
    """Every selected variant either planned or set aside with its one-line reason."""

    plans: list[Plan] = field(default_factory=list)
    unsupported: list[tuple[str, UnsupportedRecipe]] = field(default_factory=list)


def plan_all(targets: Sequence[str], cluster: str | Path | None) -> Planned:
    """Like `plans_for`, but a variant this project cannot run does not stop the others.

    For `disagg plan` over many files (a corpus, a directory): bad input still stops
    everything, an unsupported backend or benchmark only sets that variant aside.
    """
    from disagg.plan.placement import place
    from disagg.recipe.variants import load_variants

    profile = load_cluster(cluster)
    planned = Planned()
    for target in targets:
        variants = load_variants(target)
        if not variants:
            raise DisaggError(
                f"{target}: selects no variant", hint="list them with `disagg plan FILE`"
            )
        for variant in variants:
            try:
                planned.plans.append(place(variant, profile))
            except UnsupportedRecipe as exc:
                planned.unsupported.append((variant.selector, exc))
    return planned


def run_root(cluster: str | Path | None) -> Path:
    """Where new run directories go: the profile's `results_root`, else ./runs."""
    profile = load_cluster(cluster)
    if profile is not None and profile.results_root:
        return Path(profile.results_root).expanduser()
    return DEFAULT_RUN_ROOT
