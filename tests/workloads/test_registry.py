"""The benchmark table names each adapter by the types the adapter says it runs."""

from __future__ import annotations

from importlib import import_module

import pytest

from disagg.errors import UnsupportedRecipe
from disagg.workloads.registry import _ADAPTERS, adapter_for, known_types, refusal


@pytest.mark.parametrize("kind", known_types())
def test_each_listed_type_is_run_by_its_adapter(kind: str) -> None:
    adapter = adapter_for(kind)
    assert kind in adapter.types
    assert refusal(kind) is None
    assert adapter_for(kind) is adapter


def test_every_type_an_adapter_runs_is_listed() -> None:
    for module, name in set(_ADAPTERS.values()):
        for kind in getattr(import_module(module), name).types:
            assert _ADAPTERS.get(kind) == (module, name), kind


def test_a_type_not_run_here_is_refused_with_why() -> None:
    with pytest.raises(UnsupportedRecipe, match="benchmark type mlperf"):
        adapter_for("mlperf")
