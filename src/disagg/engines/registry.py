"""Engine adapters by the recipe's name for the engine (`backend.type`).

An engine is the module `engines/<name>.py` with its `ADAPTER`: adding one is adding that
module. Adapters are imported on first use, so that commands which never plan a worker
do not pay for them.
"""

from __future__ import annotations

from disagg.adapter_table import AdapterTable
from disagg.engines.base import EngineAdapter

_TABLE: AdapterTable[EngineAdapter] = AdapterTable(EngineAdapter, package="disagg.engines")
names = _TABLE.names  # engines this project can plan, by name
get = _TABLE.get  # the adapter registered as a name, or None when none is


def adapter(name: str) -> EngineAdapter:
    """The adapter registered as `name`; KeyError for an engine that is not registered."""
    found = get(name)
    if found is None:
        raise KeyError(name)
    return found
