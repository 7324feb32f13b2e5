"""What a report is made of: valid points grouped by run.

Free of plotting imports, so callers can use loaded results without matplotlib or plotly.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True, order=True)
class Workload:
    """(model, ISL, OSL): the unit of comparison; one chart each."""

    model: str | None
    isl: int | None
    osl: int | None

    @property
    def title(self) -> str:
        parts = [short_model(self.model)] if self.model else []
        if self.isl is not None:
            parts.append(f"ISL {self.isl}")
        if self.osl is not None:
            parts.append(f"OSL {self.osl}")
        return " · ".join(parts) or "unknown workload"

    def order(self) -> tuple[str, int, int]:
        """Charts in (model, ISL, OSL) order, unknown parts first."""
        return (self.model or "", self.isl or 0, self.osl or 0)


def short_model(model: str | None) -> str:
    """`deepseek-ai/DeepSeek-R1` -> `DeepSeek-R1` (the repo name people say)."""
    return model.rstrip("/").rsplit("/", 1)[-1] if model else ""


def predicted_label(setup: Mapping[str, Any]) -> str | None:
    """`predicted (aiconfigurator-core ...)` when AIConfigurator's model timed the run."""
    label = setup.get("predicted")
    return str(label) if label else None


@dataclass(frozen=True)
class ResultPoint:
    """One valid measured point; `metrics` holds every numeric field of the result JSON."""

    path: Path
    run_name: str
    conc: int | None
    request_rate: float | None
    isl: int | None
    osl: int | None
    prefill_gpus: int
    decode_gpus: int
    simulated: bool
    metrics: Mapping[str, float]
    point_key: str | None = None  # the load generator's `point` (PointPlan.key), when written
    model: str | None = None  # the result's `model_id`
    setup: Mapping[str, Any] = field(default_factory=dict)  # its non-null setup fields

    @property
    def predicted(self) -> str | None:
        return predicted_label(self.setup)

    @property
    def workload(self) -> Workload:
        """What the point measured: charts and frontiers never mix workloads."""
        return Workload(self.model, self.isl, self.osl)

    @property
    def total_gpus(self) -> int:
        return self.prefill_gpus + self.decode_gpus

    @property
    def key(self) -> str:
        """The load level, as the result file names spell it (`conc64`, `rate8_conc64`)."""
        if self.point_key:
            return self.point_key
        if self.request_rate is not None and math.isfinite(self.request_rate):
            rate = f"rate{self.request_rate:g}"
            return f"{rate}_conc{self.conc}" if self.conc else rate
        return f"conc{self.conc}" if self.conc is not None else self.path.stem

    @property
    def sort_key(self) -> tuple[float, float]:
        rate = self.request_rate if self.request_rate is not None else math.inf
        return (float(self.conc) if self.conc is not None else math.inf, rate)

    def metric(self, name: str) -> float | None:
        value = self.metrics.get(name)
        return value if value is not None and math.isfinite(value) else None

    @property
    def interactivity(self) -> float | None:
        """Tokens/s per user: InferenceX's `median_intvty`, i.e. 1000 / median TPOT (ms)."""
        value = self.metric("median_intvty")
        if value is not None and value > 0:
            return value
        tpot = self.metric("median_tpot_ms")
        return 1000.0 / tpot if tpot is not None and tpot > 0 else None


@dataclass(frozen=True)
class SkippedResult:
    """A result file left out of the report, and why (invalid point, unreadable file)."""

    path: Path
    reason: str


@dataclass
class RunResults:
    """One run directory: its plan's identity and resolved config, its valid points."""

    run_dir: Path
    name: str
    selector: str | None
    simulated: bool
    config: dict[str, Any] | None
    points: list[ResultPoint] = field(default_factory=list)
    skipped: list[SkippedResult] = field(default_factory=list)
    label: str = ""  # unique display name, set when several runs are reported together
    # InferenceX setup fields (`disagg.bench.identity.SETUP_FIELDS`): hw, framework, ...
    setup: dict[str, Any] = field(default_factory=dict)
    # the engine flags of one worker of each kind (`prefill`, `decode`, `aggregated`)
    worker_flags: dict[str, str] = field(default_factory=dict)

    @property
    def predicted(self) -> str | None:
        return predicted_label(self.setup)

    @property
    def workloads(self) -> list[Workload]:
        return sorted({point.workload for point in self.points}, key=Workload.order)

    @property
    def variant(self) -> str:
        """What identifies the variant across runs: the plan's selector, else the run name."""
        return self.selector or self.name

    @property
    def short_variant(self) -> str:
        """The selector with the recipe's directories dropped: `file.yaml:override_x`."""
        if self.selector is None:
            return self.name
        file, sep, rest = self.selector.partition(":")
        return f"{Path(file).name}{sep}{rest}"
