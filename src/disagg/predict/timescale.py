"""Time-compressed predicted runs: what the load generator measured, stretched back.

A predicted engine may run `scale` times faster than the model says (each step sleeps
its duration / scale) so that a sweep of long outputs takes minutes, not hours. The
load generator then sends on a schedule compressed by the same factor and every time
it measured is stretched by it afterwards. What is not modelled is stretched too: the
frontend's and the HTTP client's own latency count `scale` times (docs/predict.md).
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
