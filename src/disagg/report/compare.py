"""Runs side by side: when several runs share a variant, each point's headline metrics
against the first of them (the baseline), as a relative change in percent.

Runs share a variant when their plans have the same selector (or, without a plan,
the same run name). Points match by load level (`conc64`, `rate8`), never by position.
A predicted run (`disagg run --predict`) is compared against a measured run of the same
variant whatever the order given: its change is the prediction's error.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from disagg.report.axes import YMetric
from disagg.report.model import ResultPoint, RunResults

# Latencies compared by their result field: (field, label); lower is better.
LATENCIES = (
    ("median_ttft_ms", "Median TTFT (ms)"),
    ("p99_ttft_ms", "P99 TTFT (ms)"),
    ("median_tpot_ms", "Median TPOT (ms)"),
    ("p99_tpot_ms", "P99 TPOT (ms)"),
)


@dataclass(frozen=True)
class CompareMetric:
    name: str
    label: str
    higher_is_better: bool
    value: Callable[[ResultPoint], float | None]


def compare_metrics(y_metric: YMetric) -> tuple[CompareMetric, ...]:
    def field(name: str) -> Callable[[ResultPoint], float | None]:
        return lambda point: point.metric(name)

    return (
        CompareMetric(f"y:{y_metric.value}", y_metric.label, True, y_metric.of),
        CompareMetric(
            "tokens_per_s_per_user", "Output tokens/s per user", True, lambda p: p.interactivity
        ),
        CompareMetric("request_throughput", "Requests/s", True, field("request_throughput")),
        *(CompareMetric(name, label, False, field(name)) for name, label in LATENCIES),
    )


@dataclass(frozen=True)
class Change:
    """One metric of one point: the baseline run's value, another run's, and the change."""

    variant: str
    point: str
    metric: str
    label: str
    higher_is_better: bool
    baseline_run: str
    baseline: float | None
    run: str
    value: float | None
    baseline_name: str = ""  # run directory names, for compact side-by-side tables
    run_name: str = ""
    run_predicted: str | None = None  # the label when `run` is a prediction of the baseline

    @property
    def change_pct(self) -> float | None:
        """(value - baseline) / baseline in percent; None without both values or at baseline 0."""
        if self.baseline is None or self.value is None or self.baseline == 0:
            return None
        return (self.value - self.baseline) / abs(self.baseline) * 100.0

    @property
    def improved(self) -> bool | None:
        change = self.change_pct
        if change is None or change == 0:
            return None
        return change > 0 if self.higher_is_better else change < 0


def shared_variants(runs: Sequence[RunResults]) -> dict[str, list[RunResults]]:
    """Variants measured by more than one run, each with its runs in the order given."""
    groups: dict[str, list[RunResults]] = {}
    for run in runs:
        groups.setdefault(run.variant, []).append(run)
    # Measured runs first (stable otherwise): a prediction's error is against a measurement.
    return {
        variant: sorted(group, key=lambda run: run.predicted is not None)
        for variant, group in groups.items()
        if len(group) > 1
    }


def compare(runs: Sequence[RunResults], y_metric: YMetric) -> list[Change]:
    """Every later run of a shared variant against the first, point by point, metric by metric."""
    metrics = compare_metrics(y_metric)
    changes: list[Change] = []
    for variant, (baseline, *others) in shared_variants(runs).items():
        base_points = {point.key: point for point in baseline.points}
        for other in others:
            other_points = {point.key: point for point in other.points}
            keys = [key for key in base_points if key in other_points]
            keys.sort(key=lambda key: base_points[key].sort_key)
            changes += [
                Change(
                    variant=variant,
                    point=key,
                    metric=metric.name,
                    label=metric.label,
                    higher_is_better=metric.higher_is_better,
                    baseline_run=baseline.label or baseline.name,
                    baseline=metric.value(base_points[key]),
                    run=other.label or other.name,
                    value=metric.value(other_points[key]),
                    baseline_name=baseline.name,
                    run_name=other.name,
                    run_predicted=other.predicted if not baseline.predicted else None,
                )
                for key in keys
                for metric in metrics
            ]
    return changes
