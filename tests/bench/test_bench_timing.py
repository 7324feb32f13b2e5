"""Reported latencies are consistent with a server whose token times are known.

The server writes token i of each response at arrival + 50 ms + i * 10 ms, so no
request can see its first token sooner than 50 ms or its last sooner than 200 ms,
whatever the machine's load: those bounds, every token counted as its own event and
the order of the schedule are asserted here. How close the numbers come to the
truth is a speed claim that depends on the machine: `benchmarks/client.py` measures
and prints it (the errors against the truth, per client and concurrency).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from stream_server import ServerConfig, serve_in_subprocess

from .support import measure, plan

TTFT_MS, ITL_MS, OSL = 50.0, 10.0, 16
TRUE_E2EL_MS = TTFT_MS + (OSL - 1) * ITL_MS


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("concurrency", "workers", "http"),
    [
        (4, 1, "fast"),
        (4, 1, "aiohttp"),
        (256, 1, "fast"),
        (64, 2, "fast"),
    ],
)
def test_latencies_respect_the_server_schedule(
    concurrency: int, workers: int, http: str, out: Path
) -> None:
    with serve_in_subprocess(ServerConfig(ttft_ms=TTFT_MS, itl_ms=ITL_MS)) as url:
        # warm-up opens every connection; three waves spread the streams' phases apart
        bench = plan(
            concurrency=concurrency, num_prompts=3 * concurrency, osl=OSL, warmup=concurrency
        )
        run = measure(url, bench, out, workers=workers, http=http)
    r = run.result
    assert run.valid, r["invalid_reason"]
    assert r["completed"] == bench.points[0].num_prompts and r["failed"] == 0
    assert r["client_workers"] == workers
    # no token before its scheduled time (1 ms of slack for rounding); e2el = ttft + gaps
    assert min(r["ttfts"]) * 1000 >= TTFT_MS - 1
    e2els = [ttft + sum(gaps) for ttft, gaps in zip(r["ttfts"], r["itls"], strict=True)]
    assert min(e2els) * 1000 >= TRUE_E2EL_MS - 1
    assert r["median_ttft_ms"] <= r["median_e2el_ms"]
    # gaps are measured, not zero (a median ITL may be 0 on a loaded machine, where the
    # server's tokens for many streams land together: their lower bound is above)
    assert r["median_tpot_ms"] > 0 and r["mean_itl_ms"] > 0
    # every token is its own event: OSL - 1 gaps per request, none merged
    assert all(len(itls) == OSL - 1 for itls in r["itls"])
    assert r["output_lens"] == [OSL] * bench.points[0].num_prompts
    assert r["output_tokens_source"] == "usage"


@pytest.mark.timeout(60)
def test_request_rate_follows_the_absolute_schedule(out: Path) -> None:
    with serve_in_subprocess(ServerConfig(ttft_ms=5, itl_ms=1)) as url:
        bench = plan(concurrency=None, request_rate=100.0, num_prompts=100, arrival="constant")
        run = measure(url, bench, out)
    r = run.result
    assert run.valid
    # 100 sends 10 ms apart: the last one is due 0.99 s after the first, so the window
    # can be no shorter, however fast the server answers
    assert r["completed"] == 100
    assert r["duration"] >= 0.99
    assert r["median_client_queue_ms"] >= 0
