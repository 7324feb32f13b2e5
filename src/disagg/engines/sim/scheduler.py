"""One timer-driven continuous-batching loop per simulated worker.

Each step advances every running request at once and streams are paced
(`stream_budget_us`), so one process carries thousands of streams with its event loop
free. Policy (SGLang's default): a prefill pass when prompts wait and the batch has room,
else one decode step. A pipeline-parallel worker (`timing.prefill_stages` > 1) overlaps
prefill passes: a pass occupies it for its duration / stages, and a prompt is done once its
last chunk has drained.
"""

from __future__ import annotations

import asyncio
import random
from collections import deque
from collections.abc import Callable

from disagg.engines.sim.requests import Event, SimRequest, Stats, Stream
from disagg.engines.sim.timing import TimingModel

__all__ = ["Event", "Scheduler", "SimRequest", "Stats", "Stream"]

Later = Callable[[float, Callable[[], None]], None]

# Steps run on absolute deadlines, so timer jitter and emitting chunks do not slow the
# simulated GPU; a lag beyond this (a stall) is dropped rather than caught up in a burst.
_MAX_CATCH_UP_S = 0.05
# Streams are paced only once the gap between two chunks of a stream would exceed this:
# with the default budget of 500 us per stream, from 20 running streams on.
_PACING_FLOOR_S = 0.01


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
        self._budget_s = timing.args.sim.stream_budget_us * 1e-6
        self.now = 0.0  # the loop's time when a step is applied (streams are paced by it)
        self.step_no = 0  # decode steps applied
        self._due: dict[int, list[SimRequest]] = {}  # step -> requests that end at it
        self._paced: deque[SimRequest] = deque()  # running streams, oldest chunk first
        # SGLang's `/slow_down`: every forward step sleeps this much longer until cleared
        self.forward_sleep_s: float | None = None
        # How a pipeline's drain is waited for: the event loop's timer, or a virtual clock's.
        self.later: Later = _call_later
        self.clock: Callable[[], float] = _loop_time
        self._front_free = 0.0  # when the API server is done with the requests it has

    def submit(self, req: SimRequest) -> None:
        """A new request that needs prefill. Where the API server spends host time on each
        (`timing.request_s`), they reach the queue one span apart, as from its one thread."""
        req.remaining_prefill = max(1, req.prompt_tokens)
        self.stats.requests += 1
        self.stats.prompt_tokens += req.prompt_tokens
        if self.timing.request_s <= 0:
            self._queue(req)
            return
        now = self.clock()
        self._front_free = max(now, self._front_free) + self.timing.request_s
        self.later(self._front_free - now, lambda: self._queue(req))

    def _queue(self, req: SimRequest) -> None:
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
            self.now = loop.time()
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

    def _prefill_batch(self) -> list[tuple[SimRequest, int]]:
        """One prefill pass, as SGLang's prefill adder takes it: the first prompt always
        goes (cut to a chunk); the next join while the chunk and `max-prefill-tokens` have
        room, the last of them cut to fit."""
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
        # The pass took prompts from the head of the queue: pop what is done, never walking
        # a long queue whole.
        waiting = self.waiting
        while waiting and (waiting[0].cancelled or waiting[0].remaining_prefill <= 0):
            req = waiting.popleft()
            if req.cancelled:
                continue
            if drain > 0:  # its last chunk still passes through the later pipeline stages
                self.draining += 1
                self.later(drain, lambda r=req: self._drained(r))  # type: ignore[misc]
            else:
                self._prefilled(req)

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
            self._start_running(req)

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
                self._start_running(req)

    def _first_token(self, req: SimRequest) -> None:
        req.generated = req.reported = 1
        req.sent_at = self.now
        req.start_step = self.step_no
        self.stats.output_tokens += 1
        req.done = req.target <= 1
        req.stream.push(Event(req.index, 1, req.finish_reason if req.done else None))

    def _finish(self, req: SimRequest) -> None:
        if not req.done:
            req.done = True
            req.stream.push(Event(req.index, req.generated - req.reported, req.finish_reason))
            req.reported = req.generated

    def _start_running(self, req: SimRequest) -> None:
        """A request with its first token joins the decode batch."""
        self.running.append(req)
        self.kv_tokens += req.prompt_tokens + 1
        self.kv_reserved += self._kv_need(req)
        if self.timing.draft_steps <= 0:  # one token a step: its last step is known now
            self._due.setdefault(req.start_step + req.target - 1, []).append(req)
            self._paced.append(req)

    def _apply_decode(self) -> None:
        stats = self.stats
        stats.decode_steps += 1
        if len(self.running) > stats.max_batch:
            stats.max_batch = len(self.running)
        if self.timing.draft_steps > 0:
            self._apply_speculative_step()
            return
        self.step_no += 1
        # Each stream gets a chunk at most every `gap` seconds of wall time.
        gap = len(self.running) * self._budget_s
        active = len(self.running)
        ended = 0
        for req in self._due.pop(self.step_no, ()):  # the requests whose last token this is
            if not req.done:
                ended += self._end(req, req.target)
        if gap < _PACING_FLOOR_S:
            ended += self._stream_all()
        else:
            ended += self._stream_paced(gap)
        if ended:
            self.running = [r for r in self.running if not r.done]
        self.kv_tokens += active
        stats.output_tokens += active

    def _generated(self, req: SimRequest) -> int:
        """Tokens a (non-speculative) request has: one per decode step since admission."""
        return min(req.target, 1 + self.step_no - req.start_step)

    def _end(self, req: SimRequest, generated: int) -> int:
        """A running request leaves: its last chunk (finished) or nothing (cancelled)."""
        req.done = True
        if not req.cancelled:
            req.generated = generated
            req.stream.push(Event(req.index, generated - req.reported, req.finish_reason))
            req.reported = generated
        self.kv_tokens -= req.prompt_tokens + generated
        self.kv_reserved -= self._kv_need(req)
        return 1

    def _stream_all(self) -> int:
        """Few streams: each gets its tokens every `stream_interval` steps; returns how many
        cancelled requests left."""
        interval, ended = self._interval, 0
        for req in self.running:
            if req.done:
                continue
            generated = self._generated(req)
            if req.cancelled:
                ended += self._end(req, generated)
            elif generated - req.reported >= interval:
                req.stream.push(Event(req.index, generated - req.reported))
                req.reported = req.generated = generated
                req.sent_at = self.now
        self._paced = deque(r for r in self.running if not r.done)
        return ended

    def _stream_paced(self, gap: float) -> int:
        """Many streams: those whose last chunk is `gap` old get one, oldest first, so a step
        costs only the streams it sends to and those that end."""
        paced, now, ended = self._paced, self.now, 0
        while paced and now - paced[0].sent_at >= gap:
            req = paced.popleft()
            if req.done:
                continue
            generated = self._generated(req)
            if req.cancelled:
                ended += self._end(req, generated)
                continue
            if generated > req.reported:
                req.stream.push(Event(req.index, generated - req.reported))
                req.reported = req.generated = generated
            req.sent_at = now
            paced.append(req)
        return ended

    def _apply_speculative_step(self) -> None:
        """Every running request draws its accepted drafts: one pass over the batch."""
        rng = self._rng
        interval = self._interval
        now = self.now
        gap = len(self.running) * self._budget_s
        if gap < _PACING_FLOOR_S:
            gap = 0.0
        survivors: list[SimRequest] = []
        for req in self.running:
            if req.cancelled:
                self._end(req, req.generated)
                continue
            step = min(self.timing.tokens_this_step(rng), req.target - req.generated)
            self.kv_tokens += step
            self.stats.output_tokens += step
            if req.generated + step >= req.target:
                self._end(req, req.generated + step)
                continue
            req.generated += step
            if req.generated - req.reported >= interval and now - req.sent_at >= gap:
                req.stream.push(Event(req.index, req.generated - req.reported))
                req.reported = req.generated
                req.sent_at = now
            survivors.append(req)
        self.running = survivors


def _call_later(delay: float, callback: Callable[[], None]) -> None:
    asyncio.get_running_loop().call_later(delay, callback)


def _loop_time() -> float:
    return asyncio.get_running_loop().time()
