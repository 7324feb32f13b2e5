"""How a simulated worker streams tokens to thousands of clients without drowning its loop.

With N streams running, each gets a chunk at most every N x `--sim-stream-budget-us` of
wall time (the first token and the last at once); a few streams get every token as it
comes. Driven here by hand: steps applied at chosen loop times.
"""

from __future__ import annotations

from disagg.engines.sim.args import parse_args
from disagg.engines.sim.scheduler import Event, Scheduler, SimRequest, Stream
from disagg.engines.sim.timing import TimingModel


class _Chunks(Stream):
    def __init__(self) -> None:  # no event loop: the test applies the steps itself
        self.events = []

    def push(self, event: Event) -> None:
        self.events.append(event)


def _decode(streams: int, tokens: int, step_s: float) -> list[_Chunks]:
    """`streams` requests of `tokens` tokens decoding together, one step every `step_s`."""
    scheduler = Scheduler(TimingModel(parse_args(["--disaggregation-mode", "decode"])))
    sinks = [_Chunks() for _ in range(streams)]
    for i, sink in enumerate(sinks):
        scheduler.submit_prefilled(SimRequest(i, 100, tokens, tokens, sink))
    scheduler._admit_ready()
    while scheduler.running:
        step = scheduler._plan()
        assert step is not None
        scheduler.now += step_s
        step[1]()
    return sinks


def test_many_streams_get_a_chunk_per_budget_not_per_step_and_every_token() -> None:
    # 100 streams x 500 us: a chunk every 50 ms, steps every 10 ms, 200 tokens (2 s)
    sinks = _decode(100, 200, 0.010)
    for sink in sinks:
        assert sum(e.tokens for e in sink.events) == 200
        assert sink.events[0].tokens == 1  # the first token goes at once
        assert sink.events[-1].finish == "length"
        # 2 s of tokens in 50 ms chunks: about 40, not 200
        assert 35 <= len(sink.events) <= 45


def test_a_few_streams_get_every_token_as_it_comes() -> None:
    for sink in _decode(4, 50, 0.010):
        assert [e.tokens for e in sink.events] == [1] * 50


def test_a_cancelled_stream_leaves_the_batch_at_the_next_step() -> None:
    """A client that goes away frees its batch slot and KV at once, not when another
    request happens to finish (a few streams: each streamed every step)."""
    scheduler = Scheduler(TimingModel(parse_args(["--disaggregation-mode", "decode"])))
    requests = [SimRequest(i, 100, 50, 50, _Chunks()) for i in range(3)]
    for request in requests:
        scheduler.submit_prefilled(request)
    scheduler._admit_ready()
    requests[1].cancelled = True
    step = scheduler._plan()
    assert step is not None
    step[1]()
    assert scheduler.running == [requests[0], requests[2]]
    # the two left running hold their prompts and the tokens they have, nothing more
    assert scheduler.kv_tokens == 2 * (100 + 2)
