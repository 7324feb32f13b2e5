"""Time-compressed predicted runs: what the load generator measured, stretched back.

A predicted engine may run `scale` times faster than the model says, and the load
generator sends on a schedule compressed by the same factor; every time it measured is
stretched back afterwards, the frontend's and client's own latency too (docs/predict.md).
"""

from __future__ import annotations

from collections.abc import Sequence

from disagg.bench.records import RequestRecord


def compress(offsets: Sequence[float], scale: float) -> list[float]:
    """Arrival offsets on the compressed clock."""
    return [offset / scale for offset in offsets]


def stretch(records: Sequence[RequestRecord], t0: float, scale: float) -> None:
    """Every time of every record, as if the run had gone at the model's speed (in place)."""
    if scale == 1.0:
        return
    for rec in records:
        for name in ("ready", "send", "headers_at", "finished"):
            value = getattr(rec, name)
            if value:
                setattr(rec, name, t0 + (value - t0) * scale)
        rec.ttft *= scale
        rec.e2el *= scale
        rec.itls = [gap * scale for gap in rec.itls]
