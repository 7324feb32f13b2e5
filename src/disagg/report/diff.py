"""What differs between the runs' resolved configs: one row per setting whose value is not
the same in every run (a setting missing from a run counts as a difference).

Configs are flattened to dotted paths (`backend.sglang_config.decode.tp-size`); lists
are compared whole. The report shows this instead of asking readers to diff YAML.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from disagg.report.model import RunResults

MISSING = "—"
MAX_ROWS = 300


def flatten(config: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in config.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out |= flatten(value, path + ".")
        else:
            out[path] = value if isinstance(value, str) else json.dumps(value, default=str)
    return out


@dataclass(frozen=True)
class DiffRow:
    path: str
    values: list[str]  # one per run, MISSING where the run does not set it


def config_diff(runs: Sequence[RunResults]) -> tuple[list[RunResults], list[DiffRow]]:
    """The runs that have a config, and the settings that differ between them."""
    with_config = [run for run in runs if run.config is not None]
    if len(with_config) < 2:
        return with_config, []
    flat = [flatten(run.config or {}) for run in with_config]
    paths = sorted({path for config in flat for path in config})
    rows = []
    for path in paths:
        values = [config.get(path, MISSING) for config in flat]
        if len(set(values)) > 1:
            rows.append(DiffRow(path, values))
    return with_config, rows[:MAX_ROWS]
