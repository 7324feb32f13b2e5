"""Fields srt-slurm defines that a plan does not carry out: refused or listed, never dropped."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from disagg.errors import UnsupportedRecipe
from disagg.plan.placement import place
from disagg.recipe.variants import load_variants

from .recipe_helpers import MINIMAL, invoke

Write = Callable[..., Path]


def test_v1_fields_load_and_ignored_ones_are_listed_in_the_plan(write: Write) -> None:
    text = MINIMAL + (
        "infra:\n  nats_max_payload_mb: 64\n"
        "telemetry:\n  enabled: true\n"
        "profiling:\n  type: nsys\n"
        "frontend:\n  nginx_session_affinity: true\n"
    )
    [variant] = load_variants(write(text))
    plan = place(variant)
    # The last `frontend:` block names no type: Dynamo's, whose NATS takes the payload limit
    # (see tests/frontends/test_discovery_plans.py), so it is not listed.
    assert [item["field"] for item in plan.ignored] == ["profiling.type", "telemetry.enabled"]
    assert all(item["action"] == "ignored" and item["why"] for item in plan.ignored)
    code, out, _ = invoke("plan", str(write(text, "r.yaml")), "--json")
    assert code == 0
    assert json.loads(out)["variants"][0]["ignored"] == plan.ignored
    code, out, _ = invoke("plan", str(write(text, "r.yaml")))
    assert "ignored" in out and "no profiler wraps the workers" in out


def test_a_mooncake_store_service_is_refused_by_its_name(write: Write) -> None:
    """srt-slurm's standalone store command is not known here: refused, never dropped."""
    text = MINIMAL + "services:\n  - name: store\n    type: mooncake-store\n"
    [variant] = load_variants(write(text))
    refusal = r"unsupported: services.store \(a standalone Mooncake"
    with pytest.raises(UnsupportedRecipe, match=refusal):
        place(variant)


SIDECAR = "services:\n  - name: umbp\n    type: generic\n    command: [umbp-server]\n"


@pytest.mark.parametrize("flag", ["critical", "terminal"])
def test_a_service_the_run_depends_on_is_refused_not_dropped(write: Write, flag: str) -> None:
    # srt-slurm 2.x (docs/schema-reference.md, ServiceConfig): `critical: true` makes the
    # service's crash fail the run, like a worker dying ("set true for anything in the live
    # request path"); `terminal: true` makes the service the job's run. Without it the
    # workers would run against a service that is not there.
    text = MINIMAL + SIDECAR + f"    {flag}: true\n"
    [variant] = load_variants(write(text))
    with pytest.raises(UnsupportedRecipe) as caught:
        place(variant)
    assert str(caught.value.message).startswith("unsupported: services.umbp (")
    assert f"{flag}: true" in caught.value.message
    assert caught.value.location is not None and caught.value.location.line is not None


def test_a_sidecar_the_run_does_not_depend_on_is_listed_as_ignored(write: Write) -> None:
    # a generic service is not critical by default (srt-slurm: "a dead sidecar costs its
    # own log, not the run")
    [variant] = load_variants(write(MINIMAL + SIDECAR))
    plan = place(variant)
    [item] = [i for i in plan.ignored if i["field"] == "services.umbp"]
    assert item["action"] == "ignored"
