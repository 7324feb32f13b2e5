"""A fixed-batch predicted point, run through the simulated engine's own scheduler.

What `aiconfigurator cli estimate --estimate-mode disagg` states for one configuration
(prefill batch 1, a decode batch of B) is what a predicted run measures when B requests
decode together from start to end and each prompt is prefilled alone: this runs that
point on the virtual clock, so the checks against AIConfigurator take seconds.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from disagg.engines.sim.args import EngineArgs, Mode
from disagg.engines.sim.scheduler import SimRequest, Stream
from disagg.predict.target import PredictTarget
from disagg.predict.timing import PredictedTiming, kv_capacity
from disagg.predict.virtual import Clock, Sink, Timed, Worker


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
