"""Engine adapters are found by the recipe's name for the engine, and only by it."""

from __future__ import annotations

import pytest

from disagg.engines import registry
from disagg.engines.base import EngineAdapter


@pytest.mark.parametrize("name", registry.names())
def test_each_registered_adapter_answers_to_its_own_name(name: str) -> None:
    adapter = registry.adapter(name)
    assert isinstance(adapter, EngineAdapter) and adapter.name == name
    assert adapter.config_section == f"{name}_config"


def test_an_engine_without_an_adapter_is_not_found() -> None:
    assert registry.get("tilert") is None  # an srt-slurm engine without an adapter here
    with pytest.raises(KeyError):
        registry.adapter("no-such-engine")
