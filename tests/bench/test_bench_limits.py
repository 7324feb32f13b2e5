"""A point never waits on a server that stopped making progress, and a bad warm-up fails it."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest

from stream_server import ServerConfig, serve_in_subprocess

from .support import measure, plan

HTTP = pytest.mark.parametrize("http", ["fast", "aiohttp"])


def requests_seen(url: str) -> int:
    with urllib.request.urlopen(url + "/stats", timeout=5) as resp:
        return int(json.loads(resp.read())["requests"])


@pytest.mark.timeout(60)
@HTTP
def test_keep_alive_bytes_do_not_hold_a_request_past_its_timeout(http: str, out: Path) -> None:
    # the server answers 200 and then only sends SSE comments, more often than the timeout
    with serve_in_subprocess(ServerConfig(keepalive_ms=100)) as url:
        run = measure(url, plan(num_prompts=4, concurrency=4), out, timeout_s=1.0, http=http)
    r = run.result
    assert not run.valid and r["failed"] == 4
    assert all(e == "timeout: no progress for 1 s" for e in r["errors"]), r["errors"]


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("http", "workers"), [("fast", 1), ("aiohttp", 1), ("fast", 2)])
def test_a_point_without_progress_stops_at_the_stall_timeout(
    http: str, workers: int, out: Path
) -> None:
    # the request timeout (30 s) would hold 8 streams for 60 requests: 8 minutes
    with serve_in_subprocess(ServerConfig(keepalive_ms=100)) as url:
        run = measure(
            url,
            plan(num_prompts=60, concurrency=8),
            out,
            http=http,
            workers=workers,
            stall_timeout_s=0.5,
        )
    r = run.result
    assert not run.valid
    assert run.reason == "stalled: no request made progress for 0.5 s"
    assert r["completed"] == 0
    assert sum(e == "not sent: the point was stopped" for e in r["errors"]) == 60 - 8


@pytest.mark.timeout(60)
@pytest.mark.parametrize("workers", [1, 2])
def test_a_failed_warm_up_fails_the_point_and_nothing_is_measured(workers: int, out: Path) -> None:
    with serve_in_subprocess(ServerConfig(fail_first=1, fail_status=503, fail_every=10**9)) as url:
        run = measure(url, plan(num_prompts=16, warmup=4), out, workers=workers)
        seen = requests_seen(url)
    assert not run.valid
    assert run.reason is not None
    assert run.reason.startswith("1 of 4 warm-up request(s) failed; first error: HTTP 503")
    assert seen == 4  # the measured window never started
    assert set(run.result["errors"]) == {"not sent: the warm-up failed"}


@pytest.mark.timeout(60)
def test_a_point_ends_at_its_time_limit(out: Path) -> None:
    # 64 requests of 5 s at concurrency 4 would take 80 s
    with serve_in_subprocess(ServerConfig(ttft_ms=50, itl_ms=50)) as url:
        run = measure(url, plan(num_prompts=64, concurrency=4, osl=100), out, point_timeout_s=1.0)
    assert not run.valid
    assert run.reason == "the point's time limit was reached before it finished"
    assert run.result["completed"] < 64


@pytest.mark.timeout(60)
def test_the_plans_request_timeout_reaches_the_client(out: Path) -> None:
    from disagg.bench.runner import GpuCounts, PointDriver
    from disagg.plan.limits import LimitsPlan

    bench = plan(num_prompts=4, concurrency=4)
    with serve_in_subprocess(ServerConfig(keepalive_ms=100)) as url:
        outcome = PointDriver()(
            base_url=url,
            bench=bench,
            point=bench.points[0],
            out_dir=out,
            gpus=GpuCounts(prefill=1, decode=1),
            run_name="t",
            simulated=True,
            disaggregated=True,
            quiet=True,
            limits=LimitsPlan(request_timeout_s=1.0, stall_timeout_s=None),
        )
    assert not outcome.valid
    assert "timeout: no progress for 1 s" in (outcome.reason or "")
