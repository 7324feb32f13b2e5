"""`Plan.ignored`: every recipe field and cluster setting the job does not carry out, with
why, each named as the recipe file spells it.
"""

from __future__ import annotations

from collections.abc import Mapping

from disagg.cluster import ClusterProfile
from disagg.frontends import FrontendRoles
from disagg.plan.model import BenchPlan
from disagg.recipe.honoured import unhonoured
from disagg.recipe.variants import Variant


def ignored_fields(
    variant: Variant,
    *,
    placement: Mapping[str, str],
    frontend: FrontendRoles,
    profile: ClusterProfile | None,
    bench: BenchPlan,
) -> list[dict[str, str]]:
    """The plan's ignored list before the benchmark adapter saw the workers."""
    entries = [
        *(
            found.to_json()
            for found in unhonoured(variant.raw)
            if found.field not in frontend.honoured
        ),
        *(_entry(field, why) for field, why in placement.items()),
        *frontend.ignored,
        *(
            _entry(f"cluster.{key}", why)
            for key, why in (profile.ignored_settings if profile else {}).items()
        ),
        *(_entry(f"benchmark.{name}", why) for name, why in bench.ignored.items()),
    ]
    return [
        {**item, "field": variant.written_name(item["field"])}
        for item in entries
        if item["action"] == "ignored"
    ]


def bench_completed_ignored(
    variant: Variant, planned: BenchPlan, completed: BenchPlan
) -> list[dict[str, str]]:
    """What the benchmark adapter finds ignored once it sees the workers, beyond what it
    said when planned."""
    return [
        {**_entry(f"benchmark.{name}", why), "field": variant.written_name(f"benchmark.{name}")}
        for name, why in completed.ignored.items()
        if name not in planned.ignored
    ]


def _entry(field: str, why: str) -> dict[str, str]:
    return {"field": field, "action": "ignored", "why": why}
