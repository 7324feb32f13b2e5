"""One timer-driven continuous-batching loop per simulated worker.

Every step advances every running request at once (one timer per step, not one
sleep per token per request), which is what lets one process carry thousands of
streams. Steps are scheduled on absolute deadlines so that timer jitter and the
CPU time spent emitting chunks do not slow the simulated GPU down.

Policy (like SGLang's default): when requests wait for prefill and the running
batch has room, run a prefill pass over up to one chunk of prompt tokens (decode
pauses); otherwise run one decode step over the whole running batch. With chunking
off (`chunked-prefill-size -1`) a prompt is prefilled whole, however long:
`max-prefill-tokens` only bounds what joins the first prompt in a pass, as in SGLang.

A pipeline-parallel worker (`timing.prefill_stages` > 1) overlaps prefill passes across
its stages: the next chunk (of the same prompt or another) enters the first stage once
the previous one has left it, so a pass occupies the worker for its duration / stages,
and a prompt is done when its last chunk has drained through the remaining stages.
"""

from __future__ import annotations

import asyncio
import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from disagg.engines.sim.timing import TimingModel

Later = Callable[[float, Callable[[], None]], None]

# Timer oversleep and the CPU time of emitting a step's chunks are absorbed: the next
# step starts at the previous step's deadline, not "now", so simulated time does not
# drift. A lag beyond this (a stall) is dropped rather than caught up in a burst.
_MAX_CATCH_UP_S = 0.05


class Stream:
    """Where one HTTP handler receives its requests' events: a list plus one wake-up future."""

    __slots__ = ("_loop", "_waiter", "events")

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._waiter: asyncio.Future[None] | None = None
        self.events: list[Event] = []

    def push(self, event: Event) -> None:
        self.events.append(event)
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    async def take(self) -> list[Event]:
        """Every event since the last call; waits until there is at least one."""
        if not self.events:
            self._waiter = self._loop.create_future()
            await self._waiter
        events, self.events = self.events, []
        return events


@dataclass(slots=True)
class Event:
    """`tokens` new output tokens for choice `index`; `finish` set on the last one."""

    index: int
    tokens: int
    finish: str | None = None


@dataclass(slots=True, eq=False)
class SimRequest:
    """One sequence inside the engine."""

    index: int
    prompt_tokens: int
    max_tokens: int  # the request's limit ("length")
    stop_at: int  # where the pseudo-random EOS falls ("stop"), >= 1
    stream: Stream
    remaining_prefill: int = 0
    generated: int = 0
    unsent: int = 0
    cancelled: bool = False
    done: bool = False
    room: int | None = None

    @property
    def target(self) -> int:
        return min(self.max_tokens, self.stop_at)

    @property
    def finish_reason(self) -> str:
        return "length" if self.max_tokens <= self.stop_at else "stop"


@dataclass
class Stats:
    """Counters exposed on `/sim/stats`: how much work this worker actually did."""

    requests: int = 0
    prompt_tokens: int = 0
    output_tokens: int = 0
    prefill_steps: int = 0
    decode_steps: int = 0
    slowed_steps: int = 0  # steps that slept SGLang's `/slow_down` forward_sleep_time
    busy_s: float = 0.0
    max_batch: int = 0
    first_step_at: float | None = None  # loop time the first step started
    last_step_at: float = 0.0  # loop time the last step ended
    extra: dict[str, int] = field(default_factory=dict)


class Scheduler:
    """Continuous batching for one worker; `mode` decides which phases it runs."""

    def __init__(
        self,
        timing: TimingModel,
        *,
        on_prefilled: Callable[[SimRequest], None] | None = None,
    ) -> None:
        self.timing = timing
        self.args = timing.args
        self.mode = timing.args.mode
        self.limit = timing.args.running_limit
        self.on_prefilled = on_prefilled
        self.waiting: deque[SimRequest] = deque()  # need prefill
        self.ready: deque[SimRequest] = deque()  # decode mode: KV arrived, waiting for a slot
        self.running: list[SimRequest] = []
        self.kv_tokens = 0
        self.kv_reserved = 0  # what running requests will hold by their end (KV admission)
        self.draining = 0  # prompts whose last chunk is still in later pipeline stages
        self.stats = Stats()
        self._rng = random.Random(timing.args.sim.seed)
        self._wake = asyncio.Event()
        self._interval = max(1, timing.args.stream_interval)
        # SGLang's `/slow_down`: every forward step sleeps this much longer until cleared
        self.forward_sleep_s: float | None = None
        # How a pipeline's drain is waited for: the event loop's timer, or a virtual clock's.
        self.later: Later = _call_later

    # -- entry points -------------------------------------------------------------

    def submit(self, req: SimRequest) -> None:
        """A new request that needs prefill (aggregated and prefill workers)."""
        req.remaining_prefill = max(1, req.prompt_tokens)
        self.stats.requests += 1
        self.stats.prompt_tokens += req.prompt_tokens
        self.waiting.append(req)
        self._wake.set()

    def submit_prefilled(self, req: SimRequest) -> None:
        """A request whose KV arrived from a prefill worker (decode workers)."""
        self.stats.requests += 1
        self.stats.prompt_tokens += req.prompt_tokens
        self.ready.append(req)
        self._wake.set()

    @property
    def queued(self) -> int:
        return len(self.waiting) + len(self.ready)

    # -- the loop -----------------------------------------------------------------

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        t_next = loop.time()
        while True:
            self._admit_ready()
            step = self._plan()
            if step is None:
                self._wake.clear()
                await self._wake.wait()
                t_next = loop.time()
                continue
            duration, apply = step
            if self.forward_sleep_s:
                duration += self.forward_sleep_s
                self.stats.slowed_steps += 1
            now = loop.time()
            start = max(t_next, now - _MAX_CATCH_UP_S)
            end = start + duration
            if self.stats.first_step_at is None:
                self.stats.first_step_at = now
            delay = end - now
            if delay > 0:
                await asyncio.sleep(delay)
            self.stats.busy_s += duration
            apply()
            t_next = end
            self.stats.last_step_at = loop.time()

    def _plan(self) -> tuple[float, Callable[[], None]] | None:
        if self.waiting and self.mode != "decode":
            batch = self._prefill_batch()
            if batch:
                chunks = [(take, req.prompt_tokens - req.remaining_prefill) for req, take in batch]
                duration = self.timing.prefill_batch_time(chunks)
                busy = duration / max(1, self.timing.prefill_stages)
                return busy, lambda: self._apply_prefill(batch, duration - busy)
        if self.running:
            duration = self.timing.decode_step_time(len(self.running), self.kv_tokens)
            return duration, self._apply_decode
        return None

    # -- prefill ------------------------------------------------------------------

    def _prefill_batch(self) -> list[tuple[SimRequest, int]]:
        """What one prefill pass takes, as SGLang's prefill adder does: the first prompt
        always goes, cut to one chunk (whole when chunking is off); the next ones join
        while the chunk and `max-prefill-tokens` have room, the last of them cut to fit."""
        while self.waiting and self.waiting[0].cancelled:
            self.waiting.popleft()
        chunk = self.args.chunked_prefill_size
        chunk_left = chunk if chunk > 0 else 1 << 62
        input_left = self.args.max_prefill_tokens
        room = self.limit - len(self.running) if self.mode == "aggregated" else len(self.waiting)
        batch: list[tuple[SimRequest, int]] = []
        reserved = self.kv_reserved
        for req in self.waiting:
            if len(batch) >= room or chunk_left <= 0:
                break
            if req.cancelled:
                continue
            need = req.remaining_prefill
            if batch and need > input_left:
                break
            if self.mode == "aggregated":
                if not self._kv_fits(reserved, req):
                    break
                reserved += self._kv_need(req)
            take = min(need, chunk_left)
            batch.append((req, take))
            chunk_left -= take
            input_left -= take
            if take < need:
                break  # a cut prompt ends the pass
        return batch

    def _apply_prefill(self, batch: list[tuple[SimRequest, int]], drain: float = 0.0) -> None:
        self.stats.prefill_steps += 1
        for req, take in batch:
            req.remaining_prefill -= take
        keep: deque[SimRequest] = deque()
        for req in self.waiting:
            if req.cancelled:
                continue
            if req.remaining_prefill > 0:
                keep.append(req)
                continue
            if drain > 0:  # its last chunk still passes through the later pipeline stages
                self.draining += 1
                self.later(drain, lambda r=req: self._drained(r))  # type: ignore[misc]
            else:
                self._prefilled(req)
        self.waiting = keep

    def _drained(self, req: SimRequest) -> None:
        self.draining -= 1
        if not req.cancelled:
            self._prefilled(req)
        self._wake.set()

    def _prefilled(self, req: SimRequest) -> None:
        """A prompt's prefill is complete: its first token exists."""
        self._first_token(req)
        if self.mode == "prefill":
            self._finish(req)
            if self.on_prefilled is not None:
                self.on_prefilled(req)
        elif not req.done:
            self.running.append(req)
            self.kv_tokens += req.prompt_tokens + 1
            self.kv_reserved += self._kv_need(req)

    # -- decode -------------------------------------------------------------------

    def _kv_need(self, req: SimRequest) -> int:
        """KV tokens a request holds by its end (reserved on admission, so none is evicted)."""
        return req.prompt_tokens + req.target

    def _kv_fits(self, used: int, req: SimRequest) -> bool:
        """Whether `req` fits beside `used` tokens; a request alone always runs."""
        capacity = self.timing.kv_capacity
        return capacity is None or used == 0 or used + self._kv_need(req) <= capacity

    def _admit_ready(self) -> None:
        while self.ready and len(self.running) < self.limit:
            req = self.ready[0]
            if req.cancelled:
                self.ready.popleft()
                continue
            if not self._kv_fits(self.kv_reserved, req):
                break  # the KV cache is full: it waits until running requests finish
            self.ready.popleft()
            self._first_token(req)  # computed by the prefill worker, sent with the KV
            if not req.done:
                self.running.append(req)
                self.kv_tokens += req.prompt_tokens + 1
                self.kv_reserved += self._kv_need(req)

    def _first_token(self, req: SimRequest) -> None:
        req.generated = 1
        self.stats.output_tokens += 1
        if req.target <= 1:
            req.done = True
            req.stream.push(Event(req.index, 1, req.finish_reason))
        else:
            req.stream.push(Event(req.index, 1))

    def _finish(self, req: SimRequest) -> None:
        if not req.done:
            req.done = True
            req.stream.push(Event(req.index, req.unsent, req.finish_reason))
            req.unsent = 0

    def _apply_decode(self) -> None:
        stats = self.stats
        stats.decode_steps += 1
        if len(self.running) > stats.max_batch:
            stats.max_batch = len(self.running)
        speculative = self.timing.draft_steps > 0
        rng = self._rng
        interval = self._interval
        survivors: list[SimRequest] = []
        kv_delta = 0
        released = 0
        produced = 0
        for req in self.running:
            if req.cancelled:
                kv_delta -= req.prompt_tokens + req.generated
                released += self._kv_need(req)
                continue
            step = self.timing.tokens_this_step(rng) if speculative else 1
            step = min(step, req.target - req.generated)
            req.generated += step
            produced += step
            kv_delta += step
            if req.generated >= req.target:
                req.done = True
                req.stream.push(Event(req.index, req.unsent + step, req.finish_reason))
                req.unsent = 0
                kv_delta -= req.prompt_tokens + req.generated
                released += self._kv_need(req)
                continue
            req.unsent += step
            if req.unsent >= interval:
                req.stream.push(Event(req.index, req.unsent))
                req.unsent = 0
            survivors.append(req)
        self.running = survivors
        self.kv_tokens += kv_delta
        self.kv_reserved -= released
        stats.output_tokens += produced


def _call_later(delay: float, callback: Callable[[], None]) -> None:
    asyncio.get_running_loop().call_later(delay, callback)
