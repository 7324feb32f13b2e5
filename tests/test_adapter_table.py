"""An adapter module registers itself: dropped into its package, it is found by name."""

from __future__ import annotations

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
    assert f"{package}.plain" not in sys.modules
    first = table.get("first-name")
    assert isinstance(first, dict) and table.get("second") is first  # a class, made once
    assert f"{package}.plain" not in sys.modules  # only the named adapter was imported
    assert table.get("plain") == {"name": "plain"}
