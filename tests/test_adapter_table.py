"""An adapter module registers itself: dropped into its package, it is found by name."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from disagg.adapter_table import AdapterTable, scan


@pytest.fixture
def package(tmp_path: Path) -> Iterator[str]:
    """A package `plugins_<n>` with two adapters, a helper and a private module."""
    name = f"plugins_{tmp_path.name.replace('-', '_')}"
    folder = tmp_path / name
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "plain.py").write_text(
        '"""An adapter known by its module name."""\n\nADAPTER = {"name": "plain"}\n'
    )
    (folder / "aliased.py").write_text(
        '"""An adapter with names of its own."""\n\nTYPES = ("first-name", "second")\n\n\n'
        "class Aliased(dict):\n    pass\n\n\nADAPTER = Aliased\n"
    )
    (folder / "helper.py").write_text("raise AssertionError('a helper is never imported')\n")
    (folder / "_private.py").write_text("ADAPTER = None\n")
    sys.path.insert(0, str(tmp_path))
    try:
        yield name
    finally:
        sys.path.remove(str(tmp_path))
        for module in [m for m in sys.modules if m == name or m.startswith(f"{name}.")]:
            del sys.modules[module]


def test_a_module_with_an_adapter_answers_to_its_name_or_its_types(package: str) -> None:
    found = scan(package)
    assert found == {
        "first-name": (f"{package}.aliased", "ADAPTER"),
        "second": (f"{package}.aliased", "ADAPTER"),
        "plain": (f"{package}.plain", "ADAPTER"),
    }
    assert not any(m.startswith(f"{package}.") for m in sys.modules)  # nothing imported


def test_an_adapter_is_imported_and_made_once_when_first_named(package: str) -> None:
    table: AdapterTable[dict[str, str]] = AdapterTable(dict, package=package)
    assert table.names() == ("first-name", "second", "plain")
    assert "helper" not in table and table.get("helper") is None
    assert "_private" not in table and "aliased" not in table  # names it does not register
    assert f"{package}.plain" not in sys.modules
    first = table.get("first-name")
    assert isinstance(first, dict) and table.get("second") is first  # a class, made once
    assert f"{package}.plain" not in sys.modules  # only the named adapter was imported
    assert table.get("plain") == {"name": "plain"}


_PLAN = """
import json, sys
from disagg.plan.placement import place
from disagg.recipe.variants import load_variants
[variant] = load_variants(sys.argv[1])
place(variant)
print(json.dumps(sorted(sys.modules)))
"""
RECIPE = """\
name: tiny
model: {path: /models/tiny, container: img, precision: bf16}
resources: {gpu_type: h100, gpus_per_node: 8, agg_nodes: 1, agg_workers: 1}
backend: {type: vllm, vllm_config: {aggregated: {tensor-parallel-size: 8}}}
frontend: {type: sglang-router}
benchmark: {type: sa-bench, isl: 128, osl: 16, concurrencies: "1"}
"""


def test_a_plan_imports_only_the_adapters_it_uses(tmp_path: Path) -> None:
    """Registries stay lazy: every command's start-up pays for its own adapters only."""
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(RECIPE)
    done = subprocess.run(
        [sys.executable, "-c", _PLAN, str(recipe)], capture_output=True, text=True, check=True
    )
    modules = set(json.loads(done.stdout))
    engines = {"atom", "mocker", "sglang", "tilert", "trtllm", "vllm"}
    assert {m for m in modules if m.rpartition(".")[2] in engines and ".engines." in m} == {
        "disagg.engines.vllm"
    }
    frontends = {"atomesh", "direct", "dynamo", "smg", "tilert_router", "trtllm_serve"}
    found = {m.rpartition(".")[2] for m in modules if m.startswith("disagg.frontends.")}
    assert found & (frontends | {"vllm_router"}) == {"smg"}
    kinds = {"disagg.services.generic", "disagg.services.mooncake_store"}
    assert not kinds & modules  # a recipe without `services:` entries loads no service kind
