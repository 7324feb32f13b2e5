"""Engine adapters by the recipe's name for the engine (`backend.type`).

Adapters are imported on first use, so that commands which never plan a worker do not
pay for them. Adding an engine: one module with an `ADAPTER`, one line here.
"""

from __future__ import annotations

from importlib import import_module

from disagg.engines.base import EngineAdapter

_MODULES: dict[str, str] = {
    "sglang": "disagg.engines.sglang",
    "vllm": "disagg.engines.vllm",
    "trtllm": "disagg.engines.trtllm",
    "mocker": "disagg.engines.mocker",
    "atom": "disagg.engines.atom",
    "tilert": "disagg.engines.tilert",
}


def names() -> tuple[str, ...]:
    """Engines this project can plan, in registration order."""
    return tuple(_MODULES)


def get(name: str) -> EngineAdapter | None:
    """The adapter registered as `name`, or None when no adapter is."""
    module = _MODULES.get(name)
    if module is None:
        return None
    adapter = import_module(module).ADAPTER
    assert isinstance(adapter, EngineAdapter)
    return adapter


def adapter(name: str) -> EngineAdapter:
    """The adapter registered as `name`; KeyError for an engine that is not registered."""
    found = get(name)
    if found is None:
        raise KeyError(name)
    return found
