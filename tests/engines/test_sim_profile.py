"""SGLang's `/start_profile` and `/stop_profile` on the simulated worker, over real HTTP.

SGLang (`TokenizerManager.start_profile` / `stop_profile` and the scheduler's profiler):
a profile with `start_step` begins at that forward step and, with `num_steps`, ends
itself after them; starting while one runs, or stopping when none runs, answers HTTP 500
with the reason. The simulated worker answers the same way and counts what it got, so a
simulated run shows what a profiled benchmark sends.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from disagg.engines.sim.testing import Proc, http_get, post_json, start_worker, wait_ready

FAST = ["--sim-decode-base-ms", "1", "--sim-prefill-base-ms", "0.5"]
BODY = {"output_dir": "/logs/profiles/agg", "start_step": 0, "num_steps": 3, "activities": ["CPU"]}


@pytest.fixture
def worker(tmp_path: Path) -> Iterator[Proc]:
    proc = start_worker("aggregated-0", "aggregated", tmp_path, args=FAST)
    try:
        wait_ready(proc, "/health")
        yield proc
    finally:
        proc.stop()


def _stats(proc: Proc) -> dict[str, Any]:
    status, raw = http_get(proc.url + "/sim/stats")
    assert status == 200
    stats: dict[str, Any] = json.loads(raw)
    return stats


def _generate(proc: Proc, tokens: int) -> None:
    body = {"prompt": " tok tok", "max_tokens": tokens, "ignore_eos": True}
    status, _ = post_json(proc.url + "/v1/completions", body)
    assert status == 200


def test_a_profile_started_then_stopped_is_counted(worker: Proc) -> None:
    body = {**BODY, "start_step": 10_000}
    assert post_json(worker.url + "/start_profile", body) == (200, b"Start profiling.\n")
    assert _stats(worker)["profiling"] is True
    status, raw = post_json(worker.url + "/start_profile", body)  # one already runs
    assert status == 500 and b"already in progress" in raw
    status, _ = post_json(worker.url + "/stop_profile", {})
    assert status == 200
    stats = _stats(worker)
    assert (stats["profile_starts"], stats["profile_stops"], stats["profiling"]) == (1, 1, False)
    assert stats["profile_requests"] == [body, body]
    status, raw = post_json(worker.url + "/stop_profile", {})  # none runs now
    assert status == 500 and b"not in progress" in raw


def test_a_profile_ends_itself_after_its_steps(worker: Proc) -> None:
    assert post_json(worker.url + "/start_profile", BODY)[0] == 200
    _generate(worker, tokens=8)  # more forward steps than the profile's 3
    assert _stats(worker)["profiling"] is False
    status, raw = post_json(worker.url + "/stop_profile", {})
    assert status == 500 and b"Profiling is not in progress" in raw
    assert _stats(worker)["profile_stops"] == 0


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ({"start_step": "5"}, b"start_step must be int"),
        ({"num_steps": -1}, b"must not be negative"),
        ({"activities": ["GPUS"]}, b"unknown activities"),
        ({"output": "/tmp"}, b"unknown field 'output'"),
    ],
)
def test_a_body_sglang_would_not_take_is_a_400(
    worker: Proc, body: dict[str, Any], why: bytes
) -> None:
    status, raw = post_json(worker.url + "/start_profile", body)
    assert status == 400 and why in raw
    assert _stats(worker)["profile_starts"] == 0
