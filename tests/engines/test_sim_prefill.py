"""How the simulated engine prefills long prompts: unchunked, chunked, and over pipeline stages.

Run on a virtual clock (the scheduler's steps applied back to back), so the times are the
timing model's own and the tests take milliseconds.
"""

from __future__ import annotations

import pytest

from disagg.engines.sim.args import parse_args
from disagg.engines.sim.scheduler import Event, SimRequest, Stream
from disagg.engines.sim.timing import TimingModel
from disagg.predict.virtual import Clock, Worker


class _Sink(Stream):
    def __init__(self) -> None:  # no event loop: the clock is virtual
        self.events = []

    def push(self, event: Event) -> None:
        self.events.append(event)


def _prefill(flags: list[str], prompts: list[int], stages: int = 1) -> tuple[list[float], int]:
    """(when each prompt was done, prefill passes) on an idle prefill worker."""
    timing = TimingModel(parse_args(["--disaggregation-mode", "prefill", *flags]))
    timing.prefill_stages = stages
    clock = Clock()
    worker = Worker(clock, timing)
    done: list[float] = []
    worker.scheduler.on_prefilled = lambda _req: done.append(clock.now)
    for i, tokens in enumerate(prompts):
        worker.scheduler.submit(SimRequest(i, tokens, 1, 1, _Sink()))
    worker.kick()
    clock.run()
    return done, worker.scheduler.stats.prefill_steps


def test_chunking_off_prefills_a_prompt_longer_than_max_prefill_tokens_whole() -> None:
    done, passes = _prefill(["--chunked-prefill-size", "-1"], [128_000])
    assert passes == 1 and len(done) == 1
    # max-prefill-tokens (16384) bounds only what joins the first prompt of a pass: two 10k
    # prompts fit neither beside it nor beside each other, so each takes a pass of its own
    done, passes = _prefill(["--chunked-prefill-size", "-1"], [128_000, 10_000, 10_000])
    assert passes == 3


def test_a_chunk_is_not_cut_by_max_prefill_tokens() -> None:
    """SGLang cuts a long prompt into chunks of chunked-prefill-size, even above the
    default max-prefill-tokens of 16384."""
    _, passes = _prefill(["--chunked-prefill-size", "32000"], [128_000])
    assert passes == 4


def test_pipeline_stages_overlap_the_chunks_of_one_prompt() -> None:
    flags = ["--chunked-prefill-size", "32000", "--sim-prefill-base-ms", "0"]
    [serial], _ = _prefill(flags, [128_000])
    [piped], _ = _prefill(flags, [128_000], stages=4)
    # four equal chunks through four stages: 4 + 3 stage-times of a chunk, not 4 x 4
    assert piped == pytest.approx(serial * 7 / 16)
    # unchunked, there is nothing to overlap: one prompt still takes its full time
    [whole], _ = _prefill(
        ["--chunked-prefill-size", "-1", "--sim-prefill-base-ms", "0"], [128_000], 4
    )
    assert whole == pytest.approx(serial)
