"""Every message about a schema-2 file names the field as that file wrote it, at its line."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from disagg.errors import DisaggError, UnsupportedRecipe
from disagg.plan.placement import place
from disagg.recipe.lint import lint_paths
from disagg.recipe.variants import load_variants

from .recipe_helpers import MINIMAL
from .test_schema2 import SCHEMA2

Write = Callable[..., Path]

# SCHEMA2 plus fields the plan does not carry out, each written the schema-2 way.
UNHONOURED = (
    SCHEMA2.replace(
        "    workers: 1\n    args:\n      tp-size: 8\n  decode:",
        "    workers: 1\n    args:\n      tp-size: 8\n      port: 3000\n  decode:",
    ).replace(
        "  decode:\n    nodes: 1\n    workers: 1\n",
        "  decode:\n    nodes: 1\n    workers: 1\n    extra_args: [--verbose]\n",
    )
    + "services:\n  - name: nats\n    type: nats\n    options:\n      max_payload_mb: 64\n"
)


def _line_of(text: str, needle: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if needle in line)


def test_plan_lists_ignored_fields_by_their_schema2_names(write: Write) -> None:
    [variant] = load_variants(write(UNHONOURED))
    fields = [item["field"] for item in place(variant).ignored]
    assert "services[0].options.max_payload_mb" in fields
    assert "roles.decode.extra_args" in fields
    assert "roles.prefill.args.port" in fields
    assert not [f for f in fields if f.startswith(("backend.", "infra.", "role_overrides."))]


def test_lint_names_schema2_fields_at_their_lines(write: Write) -> None:
    path = write(UNHONOURED)
    report = lint_paths([path])
    by_field = {f.message.split(" is ")[0]: f for f in report.findings}
    expected = {
        "services[0].options.max_payload_mb": "max_payload_mb: 64",
        "roles.decode.extra_args": "extra_args: [--verbose]",
        "roles.prefill.args.port": "port: 3000",
    }
    for field, line in expected.items():
        finding = by_field[field]
        where = finding.locations[0]
        assert where.line is not None
        # the key, or the value on the line below it for a block map
        assert where.line in (_line_of(UNHONOURED, line), _line_of(UNHONOURED, line) - 1)
    internal = ("backend.", "infra.", "role_overrides", "resources.prefill")
    assert not [f.message for f in report.findings if any(n in f.message for n in internal)]


def test_a_layout_error_names_the_role_field(write: Write) -> None:
    text = SCHEMA2.replace("  prefill:\n    nodes: 1\n", "  prefill:\n")
    [variant] = load_variants(write(text))
    with pytest.raises(DisaggError) as caught:
        place(variant)
    assert caught.value.message.startswith("roles.prefill.nodes is not set")
    assert caught.value.location is not None
    prefill = _line_of(text, "  prefill:")
    assert caught.value.location.line in (prefill, prefill + 1)  # the key or its map


def test_an_engine_behind_a_router_that_cannot_drive_it_is_refused_in_schema2_words(
    write: Write,
) -> None:
    """Every engine type is built now; TileRT behind the SGLang router is refused, its
    frontend named as schema 2 spells it (`sglang-router`, not the internal `sglang`)."""
    text = SCHEMA2.replace("engine: sglang\n", "engine: tilert\n")
    [variant] = load_variants(write(text))
    with pytest.raises(UnsupportedRecipe) as caught:
        place(variant)
    message = caught.value.message
    assert message.startswith("unsupported: a TileRT prefill worker behind frontend type ")
    assert "frontend type sglang-router (" in message
    assert "`frontend.type: tilert-router`" in message
    assert "backend" not in message
    assert caught.value.location is not None


def _aggregated(frontend: str) -> str:
    text = SCHEMA2.replace(
        SCHEMA2[SCHEMA2.index("roles:") : SCHEMA2.index("benchmark:")],
        "roles:\n  agg:\n    nodes: 1\n    workers: 1\n    args:\n      tp-size: 8\n",
    )
    text = text.replace("  type: sglang-router\n", f"  type: {frontend}\n")
    return text


def test_schema2_sglang_is_the_direct_worker_and_sglang_router_the_router(write: Write) -> None:
    [direct] = load_variants(write(_aggregated("sglang"), "direct.yaml"))
    [router] = load_variants(write(_aggregated("sglang-router"), "router.yaml"))
    direct_plan, router_plan = place(direct), place(router)
    assert direct_plan.frontend == "sglang (direct)"
    assert direct_plan.serving_role == "aggregated-0"
    assert "router" not in [role.name for role in direct_plan.roles]
    assert router_plan.frontend != "sglang (direct)"
    assert "router" in [role.name for role in router_plan.roles]


def test_a_schema2_vllm_direct_frontend_over_sglang_is_named_as_written(write: Write) -> None:
    [variant] = load_variants(write(_aggregated("vllm")))
    with pytest.raises(DisaggError) as caught:
        place(variant)
    assert "frontend type vllm serves a vllm worker directly" in caught.value.message
    assert "-direct" not in caught.value.message


@pytest.mark.parametrize("spelling", ["sglang-direct", "vllm-direct"])
def test_internal_frontend_spellings_are_not_recipe_spellings(write: Write, spelling: str) -> None:
    with pytest.raises(DisaggError) as caught:
        load_variants(write(_aggregated(spelling)))
    assert f"unknown frontend type '{spelling}'" in caught.value.message
    assert caught.value.hint is not None and "schema 2 spells" in caught.value.hint


def test_v1_sglang_is_the_router_and_its_direct_spelling_is_refused(write: Write) -> None:
    [variant] = load_variants(write(MINIMAL, "v1.yaml"))
    assert "router" in [role.name for role in place(variant).roles]
    direct = MINIMAL.replace("  type: sglang\n", "  type: sglang-direct\n")
    with pytest.raises(DisaggError) as caught:
        load_variants(write(direct, "direct.yaml"))
    assert (
        caught.value.hint is not None and "v1's `sglang` is the sglang-router" in caught.value.hint
    )


def test_a_layout_lint_finding_names_the_role_fields(write: Write) -> None:
    text = SCHEMA2.replace("    nodes: 1\n    workers: 1\n", "    nodes: 1\n    workers: 3\n", 1)
    report = lint_paths([write(text)])
    [finding] = [f for f in report.findings if f.rule == "DA006"]
    assert finding.message.startswith("prefill: 3 workers cannot split 1 node(s) x 8 GPUs")
    assert finding.hint == "make roles.prefill.workers divide 8, or set roles.prefill.gpus"
    assert finding.locations[0].line == _line_of(text, "workers: 3")
