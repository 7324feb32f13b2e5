"""A full KV cache makes requests wait; a compressed run's measurements are stretched back."""

from __future__ import annotations

import asyncio

import pytest

from disagg.bench.records import RequestRecord
from disagg.engines.sim.args import parse_args
from disagg.engines.sim.scheduler import Scheduler, SimRequest, Stream
from disagg.engines.sim.timing import TimingModel
from disagg.predict.timescale import compress, stretch


def _request(index: int, stream: Stream, prompt: int = 100, out: int = 10) -> SimRequest:
    return SimRequest(index=index, prompt_tokens=prompt, max_tokens=out, stop_at=out, stream=stream)


def test_decode_admits_only_what_the_kv_cache_holds_and_the_rest_waits() -> None:
    async def scenario() -> tuple[int, int, int]:
        timing = TimingModel(parse_args(["--disaggregation-mode", "decode"]))
        timing.kv_capacity = 350  # three requests of 100 + 10 tokens, not four
        scheduler = Scheduler(timing)
        stream = Stream()
        for i in range(5):
            scheduler.submit_prefilled(_request(i, stream))
        scheduler._admit_ready()
        first = len(scheduler.running)
        while scheduler.running and len(scheduler.running) == first:
            step = scheduler._plan()
            assert step is not None
            step[1]()  # decode until the first three finish
            scheduler._admit_ready()
        return first, len(scheduler.running), len(scheduler.ready)

    admitted, after, waiting = asyncio.run(scenario())
    assert admitted == 3  # the fourth and fifth wait for KV
    assert (after, waiting) == (2, 0)  # the freed cache takes the two that waited


def test_without_a_kv_limit_everything_runs_up_to_the_batch_limit() -> None:
    async def scenario() -> int:
        scheduler = Scheduler(TimingModel(parse_args(["--disaggregation-mode", "decode"])))
        stream = Stream()
        for i in range(5):
            scheduler.submit_prefilled(_request(i, stream, prompt=10**6))
        scheduler._admit_ready()
        return len(scheduler.running)

    assert asyncio.run(scenario()) == 5


def test_a_compressed_schedule_and_its_records_are_stretched_back() -> None:
    assert compress([0.0, 2.0, 5.0], 10.0) == [0.0, 0.2, 0.5]
    rec = RequestRecord(index=0, input_len=8, requested_output_len=4)
    t0 = 100.0
    rec.ready, rec.send, rec.headers_at, rec.finished = 100.1, 100.1, 100.15, 100.4
    rec.ttft, rec.e2el, rec.itls = 0.05, 0.3, [0.1, 0.1, 0.05]
    stretch([rec], t0, 10.0)
    times = (rec.ready, rec.send, rec.headers_at, rec.finished, rec.ttft, rec.e2el)
    assert times == pytest.approx((101.0, 101.0, 101.5, 104.0, 0.5, 3.0))
    assert rec.itls == pytest.approx([1.0, 1.0, 0.5])
