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


def test_every_engine_srt_slurm_defines_has_an_adapter() -> None:
    from disagg.recipe.dialects.schema2_model import ENGINE_TYPES

    assert set(ENGINE_TYPES) <= set(registry.names())


def test_an_engine_without_an_adapter_is_not_found() -> None:
    assert registry.get("no-such-engine") is None
    with pytest.raises(KeyError):
        registry.adapter("no-such-engine")
