"""RECIPE[:SELECTOR] + an optional cluster profile -> plans: the one way every command plans.

`disagg plan`, `stage`, `run` and `submit` all go through `plans_for`, so a profile
given by name or path, alias resolution and "selects nothing" errors behave the same
everywhere.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from disagg.cluster import ClusterProfile, load_profile
from disagg.errors import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, DisaggError, UnsupportedRecipe
from disagg.plan.file_plans import FilePlans, file_plans
from disagg.plan.model import Plan

if TYPE_CHECKING:
    from disagg.predict.mapping import PredictOptions

PROFILE_DIRS = (Path("clusters"), Path("examples/clusters"), Path("~/.config/disagg/clusters"))
DEFAULT_RUN_ROOT = Path("runs")
OUTCOMES = ("planned", "unsupported")  # a selected variant's, counted by engine


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


def plans_for(
    targets: Sequence[str], cluster: str | Path | None, predict: PredictOptions | None = None
) -> list[Plan]:
    """One plan per selected variant of every target, in order (`predict`: `run --predict`)."""
    from disagg.plan.placement import place
    from disagg.recipe.variants import load_variants

    profile = load_cluster(cluster)
    plans: list[Plan] = []
    for target in targets:
        placed = [place(variant, profile, predict) for variant in load_variants(target)]
        if not placed:
            raise _selects_nothing(target)
        plans += placed
    return plans


def _selects_nothing(target: str) -> DisaggError:
    return DisaggError(f"{target}: selects no variant", hint="list them with `disagg plan FILE`")


@dataclass
class Planned:
    """Every selected variant planned or set aside with its one-line reason; every file that
    could not be read or typed, with its error. Counts by outcome and engine for the summary."""

    plans: list[Plan] = field(default_factory=list)
    unsupported: list[tuple[str, UnsupportedRecipe]] = field(default_factory=list)
    errors: list[tuple[str, DisaggError]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (file, why not a recipe)
    files: int = 0
    outcomes: Counter[tuple[str, str]] = field(default_factory=Counter)  # (outcome, engine)

    def summary(self) -> str:
        """`N file(s): P planned, U unsupported, B bad input; by engine: sglang 3 planned, ...`."""
        parts = [
            f"{len(self.plans)} variant(s) planned",
            f"{len(self.unsupported)} unsupported",
            f"{len(self.errors)} file(s) bad input",
        ]
        if self.skipped:
            parts.append(f"{len(self.skipped)} not a recipe")
        by_engine = []
        for engine in sorted({engine for _, engine in self.outcomes}):
            counts = {outcome: self.outcomes[(outcome, engine)] for outcome in OUTCOMES}
            shown = ", ".join(f"{n} {outcome}" for outcome, n in counts.items() if n)
            by_engine.append(f"{engine} {shown}")
        text = f"{self.files} file(s): " + ", ".join(parts)
        return f"{text}; by engine: {'; '.join(by_engine)}" if by_engine else text

    @property
    def exit_code(self) -> int:
        """0 all planned; 1 some unsupported; 2 any bad input, or nothing planned at all."""
        if self.errors or (self.unsupported and not self.plans):
            return EXIT_USAGE
        return EXIT_FINDINGS if self.unsupported else EXIT_OK


def expand_targets(targets: Sequence[str]) -> list[str]:
    """Each target as given; a directory becomes every *.yaml / *.yml below it, sorted."""
    out: list[str] = []
    for target in targets:
        path = Path(target)
        try:
            is_dir = path.is_dir()
        except OSError:  # a name too long to be a file; the loader says why
            is_dir = False
        if is_dir:
            found = sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml"))
            files = [str(p) for p in found if p.is_file()]
            out.extend(files or [target])  # an empty directory: the loader's error says so
        else:
            out.append(target)
    return out


def plan_all(targets: Sequence[str], cluster: str | Path | None) -> Planned:
    """Like `plans_for`, but nothing one file or variant does stops the others (`disagg plan`
    over a corpus): each outcome is recorded through `disagg.plan.file_plans`, which lint's
    DA013 reads too."""
    from disagg.recipe.load import display_path, read_text
    from disagg.recipe.selectors import parse_selector

    profile = load_cluster(cluster)
    planned = Planned()
    for target in expand_targets(targets):
        planned.files += 1
        try:
            selector = parse_selector(target)
            text = read_text(selector.path)
        except DisaggError as exc:
            planned.errors.append((target, exc))
            continue
        file = display_path(selector.path)
        if selector.pattern is None:
            outcomes = file_plans(text, file, profile)
        else:
            outcomes = FilePlans(text, file, pattern=selector.pattern, profile=profile)
        _record(planned, target, outcomes)
    return planned


def _record(planned: Planned, target: str, outcomes: FilePlans) -> None:
    """Add one file's outcomes to `planned`."""
    if outcomes.is_cluster_config:
        planned.skipped.append((target, "an srt-slurm cluster config (use --cluster)"))
        return
    variants = outcomes.variants
    if isinstance(variants, UnsupportedRecipe):
        planned.unsupported.append((target, variants))
        planned.outcomes[("unsupported", "?")] += 1
        return
    if isinstance(variants, DisaggError):
        planned.errors.append((target, variants))
        return
    if not variants:
        planned.errors.append((target, _selects_nothing(target)))
        return
    for variant, outcome in outcomes.placed:
        engine = variant.config.backend.type
        if isinstance(outcome, UnsupportedRecipe):
            planned.unsupported.append((variant.selector, outcome))
            planned.outcomes[("unsupported", engine)] += 1
        elif isinstance(outcome, DisaggError):
            planned.errors.append((variant.selector, outcome))
        else:
            planned.plans.append(outcome)
            planned.outcomes[("planned", engine)] += 1


def run_root(cluster: str | Path | None) -> Path:
    """Where new run directories go: the profile's `results_root`, else ./runs."""
    profile = load_cluster(cluster)
    if profile is not None and profile.results_root:
        return Path(profile.results_root).expanduser()
    return DEFAULT_RUN_ROOT
