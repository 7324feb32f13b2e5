"""Fields srt-slurm defines that a plan does not carry out: refused or listed, never dropped."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from disagg.errors import DisaggError, UnsupportedRecipe
from disagg.plan.placement import place
from disagg.recipe.variants import load_variants

from .recipe_helpers import MINIMAL, invoke

Write = Callable[..., Path]


def test_v1_fields_load_and_ignored_ones_are_listed_in_the_plan(write: Write) -> None:
    text = MINIMAL + (
        "infra:\n  nats_max_payload_mb: 64\n"
        "telemetry:\n  enabled: true\n"
        "observability:\n  enabled: true\n"
        "frontend:\n  nginx_session_affinity: true\n"
    )
    [variant] = load_variants(write(text))
    plan = place(variant)
    # The last `frontend:` block names no type: Dynamo's, whose NATS takes the payload limit
    # (see tests/frontends/test_discovery_plans.py), so it is not listed.
    fields = [item["field"] for item in plan.ignored]
    assert fields == ["telemetry.enabled", "observability.enabled"]
    assert all(item["action"] == "ignored" and item["why"] for item in plan.ignored)
    code, out, _ = invoke("plan", str(write(text, "r.yaml")), "--json")
    assert code == 0
    assert json.loads(out)["variants"][0]["ignored"] == plan.ignored
    code, out, _ = invoke("plan", str(write(text, "r.yaml")))
    assert "ignored" in out and "no power telemetry is collected" in out


def test_a_mooncake_store_without_the_master_is_bad_input(write: Write) -> None:
    """srt-slurm's store is wired to the job's managed master: without one it has none."""
    text = MINIMAL + "services:\n  - name: store\n    type: mooncake-store\n"
    [variant] = load_variants(write(text))
    with pytest.raises(DisaggError, match="a mooncake-store needs the job's Mooncake master"):
        place(variant)


SIDECAR = "services:\n  - name: umbp\n    type: generic\n    command: [umbp-server]\n"


def test_a_critical_generic_service_is_started_and_fails_the_run_when_it_dies(
    write: Write,
) -> None:
    # srt-slurm 2.x (docs/schema-reference.md, ServiceConfig): `critical: true` makes the
    # service's crash fail the run, like a worker dying. disagg starts the service (it was
    # refused before generic services ran) and marks its role critical.
    [variant] = load_variants(write(MINIMAL + SIDECAR + "    critical: true\n"))
    plan = place(variant)
    role = plan.role("service_umbp")
    assert role.critical is True and role.argv == ["umbp-server"]
    assert not [i for i in plan.ignored if i["field"].startswith("services.umbp")]


def test_a_terminal_service_is_refused_not_dropped(write: Write) -> None:
    # `terminal: true` makes the service the job's run (no benchmark); disagg always
    # measures its benchmark, so the variant is refused by that field's name.
    [variant] = load_variants(write(MINIMAL + SIDECAR + "    terminal: true\n"))
    with pytest.raises(UnsupportedRecipe) as caught:
        place(variant)
    assert str(caught.value.message).startswith("unsupported: services.umbp.terminal (")
    assert caught.value.location is not None and caught.value.location.line is not None


@pytest.mark.parametrize("flag", ["critical", "terminal"])
def test_a_kind_not_started_that_the_run_depends_on_is_refused(write: Write, flag: str) -> None:
    # A kind no module starts (here `ray`): without it the workers would run against a
    # service that is not there.
    text = MINIMAL + SIDECAR.replace("type: generic", "type: ray") + f"    {flag}: true\n"
    [variant] = load_variants(write(text))
    with pytest.raises(UnsupportedRecipe) as caught:
        place(variant)
    assert str(caught.value.message).startswith("unsupported: services.umbp (")
    assert f"{flag}: true" in caught.value.message


def test_a_sidecar_generic_service_is_started_and_not_critical(write: Write) -> None:
    # a generic service is not critical by default (srt-slurm: "a dead sidecar costs its
    # own log, not the run")
    plan = place(load_variants(write(MINIMAL + SIDECAR))[0])
    assert plan.role("service_umbp").critical is False
    assert not [i for i in plan.ignored if i["field"] == "services.umbp"]
