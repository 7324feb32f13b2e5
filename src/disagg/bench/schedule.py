"""Absolute-time arrival schedules, so that a request rate does not drift.

Offsets are cumulative from the window start: request i is due at `t0 + offsets[i]`
however late earlier sends were, which is what keeps the offered rate honest when
the client or the server falls behind (lag shows up as client queue time instead).
Gamma inter-arrival times with shape `burstiness` and mean `1/rate` (shape 1 is a
Poisson process; below 1 is burstier, above 1 is smoother), as in vLLM's benchmark.
"""

from __future__ import annotations

import random
from typing import Literal

from disagg.errors import DisaggError

Arrival = Literal["constant", "poisson", "gamma"]


def arrival_offsets(
    count: int, rate: float, arrival: Arrival, *, burstiness: float = 1.0, seed: int = 0
) -> list[float]:
    """Send times in seconds after the window start; the first request goes at 0."""
    if rate <= 0:
        raise DisaggError(
            f"request rate must be positive, got {rate:g}",
            hint="omit it to run at a fixed concurrency",
        )
    if arrival == "gamma" and burstiness <= 0:
        raise DisaggError(f"burstiness must be positive, got {burstiness:g}")
    rng = random.Random(seed)
    shape = 1.0 if arrival == "poisson" else burstiness
    offsets = [0.0] * count
    now = 0.0
    for i in range(1, count):
        if arrival == "constant":
            now = i / rate
        else:
            now += rng.gammavariate(shape, 1.0 / (rate * shape))
        offsets[i] = now
    return offsets
