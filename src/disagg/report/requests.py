"""Per-request numbers of a point (its `.jsonl`): latency distributions and goodput.

The point JSON holds percentiles only. Goodput as vLLM's `--goodput ttft:50 tpot:20`: a
request is good when it meets every limit given; goodput is good requests per second.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from disagg.report.model import ResultPoint

MAX_SAMPLES = 200_000  # ITLs kept per point for its distribution (an even stride beyond)


@dataclass(frozen=True)
class Requests:
    """Successful requests' latencies in ms (ITLs pooled over requests)."""

    ttft_ms: tuple[float, ...]
    itl_ms: tuple[float, ...]
    good: tuple[tuple[float, float | None, float], ...]  # (ttft, tpot, e2el) per request


def _thin(values: list[float]) -> tuple[float, ...]:
    if len(values) <= MAX_SAMPLES:
        return tuple(values)
    step = len(values) / MAX_SAMPLES
    return tuple(values[int(i * step)] for i in range(MAX_SAMPLES))


@lru_cache(maxsize=512)
def _read(path: Path) -> Requests | None:
    try:
        handle = path.open(encoding="utf-8")
    except OSError:
        return None
    ttft: list[float] = []
    itl: list[float] = []
    per_request: list[tuple[float, float | None, float]] = []
    with handle:
        for line in handle:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if not isinstance(record, dict) or not record.get("success"):
                continue
            first, last = record.get("ttft_ms"), record.get("e2el_ms")
            if not isinstance(first, int | float) or not isinstance(last, int | float):
                continue
            tokens = record.get("output_len")
            per_token = (
                (last - first) / (tokens - 1) if isinstance(tokens, int) and tokens > 1 else None
            )
            ttft.append(float(first))
            per_request.append((float(first), per_token, float(last)))
            gaps = record.get("itls_ms")
            if isinstance(gaps, list):
                itl.extend(float(g) for g in gaps if isinstance(g, int | float))
    if not ttft:
        return None
    return Requests(tuple(ttft), _thin(itl), tuple(per_request))


def requests_of(point: ResultPoint) -> Requests | None:
    """The point's successful requests, None when it has no records (e.g. a custom benchmark)."""
    return _read(point.path.with_suffix(".jsonl"))  # written beside the result


@dataclass(frozen=True)
class BoxStats:
    """A box plot's numbers: quartiles, and whiskers at p1/p99."""

    low: float
    q1: float
    median: float
    q3: float
    high: float


def box(values: Sequence[float]) -> BoxStats | None:
    if not values:
        return None
    p1, q1, med, q3, p99 = np.percentile(np.asarray(values, dtype=float), [1, 25, 50, 75, 99])
    return BoxStats(float(p1), float(q1), float(med), float(q3), float(p99))


@dataclass(frozen=True)
class Goodput:
    good: int
    total: int
    per_s: float | None  # good requests per second of the point's duration

    @property
    def share(self) -> float:
        return self.good / self.total if self.total else 0.0


def goodput(point: ResultPoint, slo: Mapping[str, float]) -> Goodput | None:
    """Requests that met every limit, None without limits or without records."""
    if not slo:
        return None
    records = requests_of(point)
    if records is None:
        return None
    good = 0
    for ttft, tpot, e2el in records.good:
        ok = ttft <= slo.get("ttft", float("inf")) and e2el <= slo.get("e2el", float("inf"))
        if "tpot" in slo:
            ok = ok and tpot is not None and tpot <= slo["tpot"]
        good += ok
    duration = point.metric("duration")
    per_s = good / duration if duration else None
    return Goodput(good, len(records.good), per_s)
