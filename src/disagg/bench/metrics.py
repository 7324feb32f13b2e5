"""Metrics of a measured window, with vLLM's definitions and field names.

TTFT = first content event - send; TPOT = (E2EL - TTFT) / (output tokens - 1);
ITL = gaps between content events (all requests pooled); E2EL = last content event
- send. Throughputs are over the measured window: from its scheduled start to the
end of its last request. Percentiles interpolate linearly between closest ranks
(numpy's default, which vLLM uses); std is the population standard deviation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import accumulate
from typing import Any

from disagg.bench.records import RequestRecord
from disagg.errors import DisaggError

PERCENTILES = (90.0, 95.0, 99.0)
SLO_KEYS = ("ttft", "tpot", "e2el")


def parse_slo(items: str | Sequence[str] | None, *, flag: str = "--goodput") -> dict[str, float]:
    """SLO limits in ms from `ttft:50 tpot:20`, `ttft=50,tpot=20` or several such items.

    One reader for `disagg bench --goodput/--slo` and `disagg report --goodput/--slo`
    (vLLM writes `KEY:MS`, srt-slurm `KEY=MS`); bad input is exit 2 naming `flag`.
    """
    texts = [items] if isinstance(items, str) else list(items or [])
    limits: dict[str, float] = {}
    for part in (p for text in texts for p in text.replace(",", " ").split()):
        key, sep, value = part.replace("=", ":", 1).partition(":")
        key = key.strip().lower()
        try:
            number = float(value)
        except ValueError:
            number = -1.0
        if not sep or key not in SLO_KEYS or number <= 0:
            raise DisaggError(
                f"{flag} {part!r}: expected KEY:MS with KEY one of {', '.join(SLO_KEYS)}",
                hint=f"e.g. {flag} ttft:500 {flag} tpot:50 (positive milliseconds)",
            )
        limits[key] = number
    return limits


def percentile(ordered: Sequence[float], q: float) -> float:
    """The q-th percentile of already sorted values, linear interpolation."""
    if not ordered:
        return 0.0
    pos = (len(ordered) - 1) * q / 100.0
    low = math.floor(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def summarize(values_ms: Sequence[float], name: str) -> dict[str, float]:
    """`mean_<name>_ms`, `median_...`, `std_...`, `p90/p95/p99_...` (0.0 when empty, as vLLM)."""
    ordered = sorted(values_ms)
    n = len(ordered)
    mean = sum(ordered) / n if n else 0.0
    var = sum((x - mean) ** 2 for x in ordered) / n if n else 0.0
    out = {
        f"mean_{name}_ms": mean,
        f"median_{name}_ms": percentile(ordered, 50.0),
        f"std_{name}_ms": math.sqrt(var),
    }
    for q in PERCENTILES:
        out[f"p{q:g}_{name}_ms"] = percentile(ordered, q)
    return out


def tpot_s(rec: RequestRecord) -> float:
    """Time per output token after the first; 0 for single-token outputs (vLLM)."""
    if rec.output_len > 1:
        return (rec.e2el - rec.ttft) / (rec.output_len - 1)
    return 0.0


def is_good(rec: RequestRecord, slo_ms: dict[str, float]) -> bool:
    """A successful request within every given SLO (milliseconds)."""
    checks = {"ttft": rec.ttft, "tpot": tpot_s(rec), "e2el": rec.e2el}
    return all(checks[k] * 1000.0 <= limit for k, limit in slo_ms.items())


def max_concurrency_seen(records: Sequence[RequestRecord]) -> int:
    """Most requests in flight at once, from send and finish times."""
    events = sorted(
        event for rec in records if rec.send for event in ((rec.send, 1), (rec.finished, -1))
    )
    return max([0, *accumulate(step for _, step in events)])


def compute(
    records: Sequence[RequestRecord], t0: float, slo_ms: dict[str, float] | None = None
) -> dict[str, Any]:
    """vLLM's metric block for a window that started at monotonic time `t0`."""
    ok = [r for r in records if r.success]
    finished = [r.finished for r in records if r.send]
    duration = max(finished) - t0 if finished else 0.0
    total_in = sum(r.input_len for r in ok)
    total_out = sum(r.output_len for r in ok)
    per_s = (lambda x: x / duration) if duration > 0 else (lambda x: 0.0)
    good = sum(1 for r in ok if is_good(r, slo_ms)) if slo_ms else None
    out: dict[str, Any] = {
        "duration": duration,
        "completed": len(ok),
        "failed": len(records) - len(ok),
        "total_input_tokens": total_in,
        "total_output_tokens": total_out,
        "request_throughput": per_s(len(ok)),
        "request_goodput": per_s(good) if good is not None else None,
        "output_throughput": per_s(total_out),
        "total_token_throughput": per_s(total_in + total_out),
        "max_concurrent_requests": max_concurrency_seen(records),
    }
    out.update(summarize([r.ttft * 1000.0 for r in ok], "ttft"))
    out.update(summarize([tpot_s(r) * 1000.0 for r in ok if r.output_len > 1], "tpot"))
    out.update(summarize([x * 1000.0 for r in ok for x in r.itls], "itl"))
    out.update(summarize([r.e2el * 1000.0 for r in ok], "e2el"))
    queue = summarize([r.queue_time * 1000.0 for r in records if r.send], "client_queue")
    queue["max_client_queue_ms"] = max(
        (r.queue_time * 1000.0 for r in records if r.send), default=0.0
    )
    out.update(queue)
    return out
