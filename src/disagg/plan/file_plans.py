"""One recipe file loaded, expanded, typed and every variant placed, each stage once.

`disagg plan` and lint's DA013 ask the same questions of the same text; inside
`with shared():` they share one `FilePlans` per (text, file, profile). Outside it every call
starts afresh: a plan also reads the disk, which may have changed since.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import KW_ONLY, dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from disagg.errors import DisaggError

if TYPE_CHECKING:
    from disagg.cluster import ClusterProfile
    from disagg.plan.model import Plan
    from disagg.recipe.load import LoadedYaml
    from disagg.recipe.variants import Variant

_shared: dict[tuple[str, str, int], FilePlans] | None = None


@dataclass(eq=False)
class FilePlans:
    """The outcome of each stage of planning one file's text, computed on first use."""

    text: str
    file: str  # as shown in messages and locations
    _: KW_ONLY
    pattern: str | None = None
    profile: ClusterProfile | None = None

    @cached_property
    def loaded(self) -> LoadedYaml | DisaggError:
        """The parsed file with positions, or why it cannot be read as YAML."""
        from disagg.recipe.load import parse_yaml

        try:
            return parse_yaml(self.text, file=self.file)
        except DisaggError as exc:
            return exc

    @cached_property
    def is_cluster_config(self) -> bool:
        """An srt-slurm cluster config (`srtslurm.yaml`) is not a recipe."""
        from disagg.cluster_srtslurm import is_srtslurm_config

        loaded = self.loaded
        data = None if isinstance(loaded, DisaggError) else loaded.data
        return isinstance(data, dict) and is_srtslurm_config(data)

    @cached_property
    def variants(self) -> list[Variant] | DisaggError:
        """The selected variants, typed; or the first error of loading, expanding, typing."""
        from disagg.recipe.variants import variants_of

        loaded = self.loaded
        if isinstance(loaded, DisaggError):
            return loaded
        try:
            return variants_of(loaded, self.pattern)
        except DisaggError as exc:
            return exc

    @cached_property
    def placed(self) -> list[tuple[Variant, Plan | DisaggError]]:
        """Each variant with its plan, or with why it cannot be planned (`UnsupportedRecipe`
        for what this project cannot run, any other DisaggError for bad input)."""
        from disagg.plan.placement import place

        variants = self.variants
        if isinstance(variants, DisaggError):
            return []
        outcomes: list[tuple[Variant, Plan | DisaggError]] = []
        for variant in variants:
            try:
                outcomes.append((variant, place(variant, self.profile)))
            except DisaggError as exc:
                outcomes.append((variant, exc))
        return outcomes


def file_plans(text: str, file: str, profile: ClusterProfile | None = None) -> FilePlans:
    """The `FilePlans` of every variant of `text` placed on `profile` (None: no cluster
    profile); inside `shared()`, the one already made for this text, file name and profile
    object, if any (the entry holds the profile, so its id is not reused while kept)."""
    if _shared is None:
        return FilePlans(text, file, profile=profile)
    key = (text, file, id(profile))
    if key not in _shared:
        _shared[key] = FilePlans(text, file, profile=profile)
    return _shared[key]


@contextmanager
def shared() -> Iterator[None]:
    """Within this block, a file planned once (by plan or lint) is not planned again."""
    global _shared
    outer = _shared
    _shared = {} if outer is None else outer
    try:
        yield
    finally:
        _shared = outer
