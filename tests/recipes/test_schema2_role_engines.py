"""Schema 2's engine per role (`roles.<role>.engine`).

What a user relies on (srt-slurm 2.x schema reference, `engine` and RoleConfig `engine`):
one top-level engine or an explicit engine on every role, never both, a clear error at
the line otherwise; every role naming the same engine runs as that engine; role engines
share no knobs; roles on engines that cannot hand KV to each other are refused naming
the pair.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from disagg.errors import DisaggError, UnsupportedRecipe
from disagg.plan.model import Plan
from disagg.plan.placement import place
from disagg.plan.show import render_plan
from disagg.recipe.variants import load_variants

Write = Callable[..., Path]

HEAD = """\
schema: 2
name: tiny
model: {path: hf:org/tiny, container: vllm-img, precision: bf16}
resources: {gpu_type: h100, gpus_per_node: 8}
frontend: {type: sglang-router, enable_multiple_frontends: false}
benchmark: {type: sa-bench, isl: 128, osl: 16, concurrencies: "1"}
"""
TOP = "engine: vllm\n"
PREFILL = (
    "  prefill:\n{engine}    nodes: 1\n    workers: 1\n    args: {{tensor-parallel-size: 8}}\n"
)
DECODE = "  decode:\n{engine}    nodes: 1\n    workers: 1\n    args: {{tensor-parallel-size: 8}}\n"


def recipe(top: str = "", prefill: str = "", decode: str = "") -> str:
    return (
        HEAD
        + top
        + "roles:\n"
        + PREFILL.format(engine=prefill and f"    engine: {prefill}\n")
        + DECODE.format(engine=decode and f"    engine: {decode}\n")
    )


def shown(plan: Plan) -> list[str]:
    """`disagg plan`'s lines for `plan`, without their colours."""
    return [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in render_plan(plan, 80)]


def _argv(plan_roles: list[object], name: str) -> list[str]:
    [role] = [r for r in plan_roles if getattr(r, "name", None) == name]
    return list(role.argv)  # type: ignore[attr-defined]


def test_a_role_engine_beside_the_top_level_engine_is_bad_input_at_its_line(
    write: Write,
) -> None:
    path = write(recipe(top=TOP, decode="vllm"))
    with pytest.raises(DisaggError) as caught:
        load_variants(path)
    assert not isinstance(caught.value, UnsupportedRecipe)
    assert "`roles.decode.engine` is written beside the top-level `engine`" in caught.value.message
    assert "never both" in caught.value.message
    assert str(caught.value.location).endswith(":14:5")  # the decode role's `engine:` key


def test_a_role_without_an_engine_beside_roles_with_one_is_bad_input_at_its_line(
    write: Write,
) -> None:
    path = write(recipe(prefill="vllm"))
    with pytest.raises(DisaggError) as caught:
        load_variants(path)
    assert "`roles.decode` names no engine while `roles.prefill.engine` does" in str(caught.value)
    assert str(caught.value.location).endswith(":13:3")


def test_every_role_naming_one_engine_plans_as_that_engine(write: Write) -> None:
    [per_role] = load_variants(write(recipe(prefill="vllm", decode="vllm")))
    [top] = load_variants(write(recipe(top=TOP)))
    plan, expected = place(per_role), place(top)
    assert plan.engine == plan.backend == "vllm" and plan.role_engines == {}
    for name in ("prefill-0", "decode-0"):
        assert _argv(plan.roles, name) == _argv(expected.roles, name)
    assert "engine       vllm, disaggregated" in shown(plan)


def test_knobs_written_alike_on_every_role_are_the_engines_knobs(write: Write) -> None:
    knob = "{type: vllm, connector: lmcache}"
    [variant] = load_variants(write(recipe(prefill=knob, decode=knob)))
    plan = place(variant)
    for name in ("prefill-0", "decode-0"):
        argv = _argv(plan.roles, name)
        assert "LMCacheConnectorV1" in argv[argv.index("--kv-transfer-config") + 1]


def test_a_knob_the_engine_takes_per_role_applies_to_that_role_only(write: Write) -> None:
    """Role engines share no knobs: vLLM's `connector` on the decode role's engine is the
    decode role's connector; the prefill keeps the default (nixl)."""
    path = write(recipe(prefill="vllm", decode="{type: vllm, connector: lmcache}"))
    [variant] = load_variants(path)
    plan = place(variant)
    decode, prefill = _argv(plan.roles, "decode-0"), _argv(plan.roles, "prefill-0")
    assert "LMCacheConnectorV1" in decode[decode.index("--kv-transfer-config") + 1]
    assert "NixlConnector" in prefill[prefill.index("--kv-transfer-config") + 1]


def test_a_knob_on_one_roles_engine_only_is_refused_where_the_engine_takes_it_once(
    write: Write,
) -> None:
    """An engine-wide knob with no per-role form cannot be kept from the other roles."""
    path = write(recipe(prefill="vllm", decode="{type: vllm, vllm_serve_binary: /opt/vllm}"))
    [variant] = load_variants(path)
    with pytest.raises(UnsupportedRecipe) as caught:
        place(variant)
    what = "roles.decode.engine.vllm_serve_binary (a knob on this role's engine only"
    assert caught.value.what.startswith(what), caught.value.what
    assert str(caught.value.location).endswith(":14:45")  # its value


@pytest.mark.parametrize(
    ("prefill", "decode", "shown"),
    [
        ("sglang", "vllm", "roles.prefill.engine sglang with decode engine vllm ("),
        ("tilert", "vllm", "roles.prefill.engine tilert with decode engine vllm ("),
        ("vllm", "sglang", "roles.prefill.engine vllm with decode engine sglang ("),
    ],
)
def test_roles_on_engines_with_no_kv_hand_over_are_refused_naming_the_pair(
    write: Write, prefill: str, decode: str, shown: str
) -> None:
    [variant] = load_variants(write(recipe(prefill=prefill, decode=decode)))
    with pytest.raises(UnsupportedRecipe) as caught:
        place(variant)
    assert f": unsupported: {shown}" in str(caught.value) and caught.value.what.startswith(shown)
    assert "no KV hand-over between these engines" in caught.value.what
    assert str(caught.value.location).endswith(":9:13")  # the prefill role's engine
