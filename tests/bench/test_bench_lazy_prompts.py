"""A point of many requests does not hold every request body at once: bodies past
`EAGER_BYTES` are built one by one, the same bytes as if built ahead."""

from __future__ import annotations

import json
import pickle
import tracemalloc
from pathlib import Path

import pytest

from disagg.bench import prompts
from disagg.bench.phase import records_for
from disagg.bench.prompts import LazySpecs, PromptFactory, PromptSettings
from stream_server import ServerConfig, serve_in_subprocess

from .support import measure, plan

FEW_MB = 4 * 2**20


def test_a_million_long_requests_are_built_lazily_in_flat_memory() -> None:
    factory = PromptFactory(PromptSettings(model="m", isl=8000, osl=100, range_ratio=0.5))
    tracemalloc.start()
    try:
        specs = factory.build(1_000_000)  # 48 GB of bodies if built ahead
        first = [specs[i] for i in range(0, 200, 7)]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert isinstance(specs, LazySpecs) and len(specs) == 1_000_000
    assert peak < FEW_MB
    for spec in first:
        body = json.loads(spec.body)
        assert len(body["prompt"]) == spec.input_len and 4000 <= spec.input_len <= 8000


def test_lazy_and_ahead_of_time_requests_are_the_same_bytes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = PromptSettings(model="m", isl=64, osl=8, range_ratio=0.3, seed=3)
    ahead = PromptFactory(settings).build(40, seed_offset=1)
    monkeypatch.setattr(prompts, "EAGER_BYTES", 0)
    lazy = PromptFactory(settings).build(40, seed_offset=1)
    assert isinstance(lazy, LazySpecs) and not isinstance(ahead, LazySpecs)
    assert list(lazy) == list(ahead)
    assert list(lazy[1::3]) == list(ahead[1::3])  # a worker's share
    assert list(pickle.loads(pickle.dumps(lazy[2::5]))) == list(ahead[2::5])
    assert [(r.index, r.input_len, r.requested_output_len) for r in records_for(lazy)] == [
        (s.index, s.input_len, s.output_len) for s in ahead
    ]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("workers", [1, 2])
def test_a_lazily_built_point_measures_like_any_other(
    workers: int, out: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(prompts, "EAGER_BYTES", 0)
    with serve_in_subprocess(ServerConfig()) as url:
        run = measure(url, plan(concurrency=4, num_prompts=24, warmup=4), out, workers=workers)
    assert run.valid, run.result["invalid_reason"]
    assert run.result["completed"] == 24
