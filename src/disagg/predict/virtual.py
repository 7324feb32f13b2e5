"""Predicted workers run on a virtual clock: a whole benchmark point in seconds of CPU.

The simulated engine's own `Scheduler`s are driven by a discrete-event loop instead of
timers; hand-overs take the prefill worker's KV transfer time. This is what a predicted
run measures, less the frontend's and the client's own latency
(`benchmarks/predict_accuracy.py`). A fixed-batch point (prefill batch 1, B requests
decoding together from start to end) is what `aiconfigurator cli estimate` states for one
configuration, so the checks against AIConfigurator take seconds.
"""

from __future__ import annotations

import functools
import heapq
import itertools
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from disagg.engines.sim.args import EngineArgs, Mode, parse_args
from disagg.engines.sim.command import SIM_PREFIX
from disagg.engines.sim.scheduler import Event, Scheduler, SimRequest, Stream
from disagg.engines.sim.timing import TimingModel
from disagg.predict.target import PredictTarget
from disagg.predict.timing import PredictedTiming, kv_capacity


class Clock:
    """A virtual clock with a queue of callbacks due at given times."""

    def __init__(self) -> None:
        self.now = 0.0
        self._queue: list[tuple[float, int, Callable[[], None]]] = []
        self._order = itertools.count()

    def at(self, when: float, callback: Callable[[], None]) -> None:
        heapq.heappush(self._queue, (when, next(self._order), callback))

    def later(self, delay: float, callback: Callable[[], None]) -> None:
        self.at(self.now + delay, callback)

    def run(self) -> None:
        while self._queue:
            self.now, _, callback = heapq.heappop(self._queue)
            callback()


class Timed(Stream):
    """One request's stream: when its first token and its last token came, on the clock."""

    def __init__(self, clock: Clock, sent: float, on_done: Callable[[Timed], None]) -> None:
        # no super().__init__: the base class waits on an event loop, this one never waits
        self.events = []
        self.clock = clock
        self.sent = sent
        self.first: float | None = None
        self.finished: float | None = None
        self.tokens = 0
        self._on_done = on_done

    def push(self, event: Event) -> None:
        if self.first is None:
            self.first = self.clock.now
        self.tokens += event.tokens
        if event.finish is not None:
            self.finished = self.clock.now
            self._on_done(self)


class Sink(Stream):
    """A stream nothing reads (a prefill worker's, whose first token the decode side sends)."""

    def __init__(self) -> None:
        self.events = []

    def push(self, event: Event) -> None:
        pass


class Worker:
    """One worker's scheduler (predicted or simulated timing), stepping on the clock."""

    def __init__(self, clock: Clock, timing: TimingModel) -> None:
        self.clock = clock
        self.timing = timing
        self.scheduler = Scheduler(timing)
        self.scheduler.later = self._later
        self.scheduler.clock = lambda: clock.now
        self.stepping = False
        self.link_free_at = 0.0  # a prefill worker's KV hand-overs go one after another

    def _later(self, delay: float, callback: Callable[[], None]) -> None:
        def run() -> None:
            callback()
            self.kick()

        self.clock.later(delay, run)

    def kick(self) -> None:
        """Start the next step if the worker is idle and has work (the scheduler loop)."""
        if self.stepping:
            return
        self.scheduler._admit_ready()
        step = self.scheduler._plan()
        if step is None:
            return
        duration, apply = step
        self.stepping = True

        def done() -> None:
            apply()
            self.stepping = False
            self.kick()

        self.clock.later(duration, done)


@dataclass(frozen=True)
class Workload:
    """A closed loop of `concurrency` requests in flight until `requests` are sent."""

    isl: int
    osl: int
    requests: int
    concurrency: int | None  # None: every request at once


@dataclass
class Outcome:
    """What the load generator would have measured, on the model's clock (seconds)."""

    ttft: list[float] = field(default_factory=list)
    tpot: list[float] = field(default_factory=list)
    end: float = 0.0  # the clock starts at 0 with the first request

    @property
    def mean_ttft(self) -> float:
        return statistics.fmean(self.ttft)

    @property
    def mean_tpot(self) -> float:
        return statistics.fmean(self.tpot) if self.tpot else 0.0

    @property
    def per_user(self) -> float:
        """Output tokens per second one user sees over its whole request (trtllm-bench's
        'per user output throughput'): tokens over end-to-end latency, averaged."""
        return statistics.fmean(n / (end - sent) for sent, end, n in self._spans if end > sent)

    def steady_throughput(self, isl: int, concurrency: int) -> float:
        """Total tokens per second of a closed loop of `concurrency` requests in flight, by
        Little's law over the requests after the first round (those sent as others ended):
        in flight x tokens per request / mean end-to-end time. A run of two rounds then
        stands for one of many, without the first round's all-at-once start."""
        later = sorted(self._spans)[concurrency:]
        if not later:  # a single round: the whole run's throughput
            return sum(isl + n for _, _, n in self._spans) / max(self.end, 1e-12)
        e2e = statistics.fmean(end - sent for sent, end, _ in later)
        tokens = statistics.fmean(isl + n for _, _, n in later)
        return concurrency * tokens / e2e

    _spans: list[tuple[float, float, int]] = field(default_factory=list)  # sent, end, tokens


class Run:
    """Aggregated workers (`prefill` empty) or prefill and decode workers, one workload."""

    def __init__(
        self,
        workers: Sequence[tuple[EngineArgs, PredictTarget]],
        *,
        decode: Sequence[tuple[EngineArgs, PredictTarget]] = (),
    ) -> None:
        self.clock = Clock()
        self.front = [Worker(self.clock, PredictedTiming(a, t)) for a, t in workers]
        self.back = [Worker(self.clock, PredictedTiming(a, t)) for a, t in decode]
        if self.back:
            for worker in self.front:
                worker.scheduler.on_prefilled = functools.partial(self._handed, worker)
        self._front_turn = itertools.cycle(self.front)
        self._back_turn = itertools.cycle(self.back)
        self._pending: dict[int, tuple[SimRequest, Worker]] = {}
        self.outcome = Outcome()
        self._sent = 0
        self._workload: Workload | None = None

    def run(self, workload: Workload) -> Outcome:
        self._workload = workload
        first = workload.requests if workload.concurrency is None else workload.concurrency
        for _ in range(min(first, workload.requests)):
            self._send()
        self.clock.run()
        return self.outcome

    def _send(self) -> None:
        assert self._workload is not None
        w = self._workload
        index = self._sent
        self._sent += 1
        stream = Timed(self.clock, self.clock.now, self._done)
        worker = next(self._front_turn)
        if self.back:
            self._pending[index] = (
                SimRequest(0, w.isl, w.osl, w.osl, stream, room=index),
                next(self._back_turn),
            )
            worker.scheduler.submit(SimRequest(0, w.isl, 1, 1, Sink(), room=index))
        else:
            worker.scheduler.submit(SimRequest(0, w.isl, w.osl, w.osl, stream))
        worker.kick()

    def _handed(self, source: Worker, req: SimRequest) -> None:
        """A prompt left its prefill worker: its KV goes over that worker's link (one
        hand-over after another), then the decode worker takes the request."""
        assert req.room is not None
        decode_req, target = self._pending.pop(req.room)
        transfer = source.timing.kv_transfer_us_per_token * req.prompt_tokens * 1e-6
        start = max(self.clock.now, source.link_free_at)
        source.link_free_at = start + transfer

        def arrive() -> None:
            target.scheduler.submit_prefilled(decode_req)
            target.kick()

        self.clock.at(start + transfer, arrive)

    def _done(self, stream: Timed) -> None:
        assert stream.first is not None and stream.finished is not None and self._workload
        o = self.outcome
        w = self._workload
        o.ttft.append(stream.first - stream.sent)
        if stream.tokens > 1:
            o.tpot.append((stream.finished - stream.first) / (stream.tokens - 1))
        o._spans.append((stream.sent, stream.finished, stream.tokens))
        o.end = max(o.end, stream.finished)
        if w.concurrency is not None and self._sent < w.requests:
            self._send()


def worker_args(argv: Sequence[str]) -> tuple[EngineArgs, PredictTarget]:
    """A predicted role's engine args and target from its planned command line (the
    placeholders a run binds, ports and addresses, do not shape the timing)."""
    words = list(argv[len(SIM_PREFIX) :] if tuple(argv[:4]) == SIM_PREFIX else argv)
    bound = []
    for i, word in enumerate(words):
        if word.startswith("${"):
            word = "0" if i and words[i - 1] == "--node-rank" else "1"
        bound.append(word)
    args = parse_args(bound)
    if args.predict is None:
        raise ValueError("not a predicted worker's command (no --predict-model)")
    # the virtual clock runs at the model's own speed, whatever the run's time scale
    target = replace(args.predict, time_scale=1.0)
    return replace(args, predict=target), target


@dataclass(frozen=True)
class FixedPoint:
    """Predicted latencies of one configuration, in ms."""

    prefill_ms: float  # one prompt's prefill passes
    transfer_ms: float  # its KV hand-over to the decode worker
    tpot_ms: float  # mean time per output token after the first, over the decode batch
    batch: int  # the decode batch (every attention rank's share together)
    kv_capacity: int  # the decode worker's KV cache, tokens

    @property
    def ttft_ms(self) -> float:
        return self.prefill_ms + self.transfer_ms


def engine_args(
    target: PredictTarget, mode: Mode, *, running: int, chunk: int = 16384
) -> EngineArgs:
    """A predicted worker's engine args, as its command line would give them."""
    return EngineArgs(
        mode=mode,
        max_running_requests=running,
        chunked_prefill_size=chunk,
        max_prefill_tokens=chunk,
        speculative_algorithm="predicted" if target.nextn else None,
        speculative_num_steps=target.nextn,
        predict=target,
    )


def _request(index: int, isl: int, osl: int, stream: Stream) -> SimRequest:
    return SimRequest(index=index, prompt_tokens=isl, max_tokens=osl, stop_at=osl, stream=stream)


def prefill_point(target: PredictTarget, isl: int, chunk: int = 16384) -> tuple[float, float]:
    """(prefill ms, KV hand-over ms) of one prompt of `isl` tokens, in chunks of `chunk`
    tokens, on an idle prefill worker."""
    clock = Clock()
    args = engine_args(target, "prefill", running=1, chunk=chunk)
    worker = Worker(clock, PredictedTiming(args, target))
    done: list[float] = []
    worker.scheduler.on_prefilled = lambda _req: done.append(clock.now)
    worker.scheduler.submit(_request(0, isl, 1, Sink()))
    worker.kick()
    clock.run()
    assert done, "the prefill worker stopped with a prompt left"
    transfer = worker.timing.kv_transfer_us_per_token * isl * 1e-3
    return done[0] * 1e3, transfer


def decode_point(target: PredictTarget, batch: int, isl: int, osl: int) -> float:
    """Mean TPOT (ms) of `batch` requests that decode together from their first token on."""
    clock = Clock()
    worker = Worker(clock, PredictedTiming(engine_args(target, "decode", running=batch), target))
    finished: list[Timed] = []
    for i in range(batch):
        worker.scheduler.submit_prefilled(_request(i, isl, osl, Timed(clock, 0.0, finished.append)))
    worker.scheduler._admit_ready()
    if len(worker.scheduler.running) < batch:
        raise ValueError(
            f"a decode batch of {batch} x {isl + osl} tokens does not fit the predicted KV "
            f"cache of {worker.timing.kv_capacity} tokens"
        )
    worker.kick()
    clock.run()
    return statistics.fmean((s.finished or 0.0) / (osl - 1) for s in finished) * 1e3


def fixed_batch_point(
    prefill: PredictTarget, decode: PredictTarget, *, batch: int, isl: int, osl: int
) -> FixedPoint:
    """The predicted TTFT and TPOT of a 1P1D configuration at decode batch `batch`."""
    prefill_ms, transfer_ms = prefill_point(prefill, isl)
    tpot = decode_point(decode, batch, isl, osl)
    return FixedPoint(
        prefill_ms=prefill_ms,
        transfer_ms=transfer_ms,
        tpot_ms=tpot,
        batch=batch,
        kv_capacity=kv_capacity(decode)[0],
    )
