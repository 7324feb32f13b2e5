"""A phase of a point: every request sent on its schedule (a fixed number of streams, or
arrival times), ended early by a stop, the point's time limit or a stall.

Apart from `bench.client`, which says how one request is sent and read.
"""

from __future__ import annotations

import asyncio
import contextlib
import resource
from collections.abc import Callable, Sequence
from time import monotonic

from disagg.bench.client import Client, Counters
from disagg.bench.records import RequestRecord, RequestSpec

STOP_POLL_S = 0.1


def records_for(specs: Sequence[RequestSpec]) -> list[RequestRecord]:
    """An empty record per request; lazily built requests give their lengths unbuilt."""
    lengths = getattr(specs, "lengths", None)
    if lengths is not None:
        return [RequestRecord(index, isl, osl) for index, isl, osl in lengths()]
    return [RequestRecord(s.index, s.input_len, s.output_len) for s in specs]


async def run_phase(
    client: Client,
    specs: Sequence[RequestSpec],
    offsets: list[float] | None,
    t0: float,
    stop: Callable[[], bool],
    counters: Counters,
) -> list[RequestRecord]:
    """Run requests from absolute time `t0` (monotonic): fixed concurrency, or a schedule.

    With `offsets`, request i is due at `t0 + offsets[i]`, in flight capped by
    `load.concurrency` if set; without, `load.concurrency` streams each send their next
    request when the previous one ends. A stop, the point's deadline or its stall timeout
    (the reason in `counters.cut`) ends the phase early; unsent requests fail.
    """
    load = client.load
    records = records_for(specs)
    if not specs:
        return records
    if offsets is None:
        main = _fixed_concurrency(client, load.concurrency, specs, records, t0, counters)
    else:
        main = _scheduled(client, load.concurrency, specs, records, offsets, t0, counters)
    task = asyncio.ensure_future(main)
    while not task.done():
        await asyncio.wait({task}, timeout=STOP_POLL_S)
        if task.done():
            break
        cut = None if stop() else _limit_reached(client, t0)
        if cut is not None or stop():
            counters.cut = cut
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            break
    if not task.cancelled():
        task.result()  # the exception the schedule raised, if any
    for rec in records:
        if rec.send == 0.0 and rec.error is None:
            rec.error = "not sent: the point was stopped"
    return records


def _limit_reached(client: Client, t0: float) -> str | None:
    """Why the phase must end now (the point's deadline, or a stall), or None."""
    load = client.load
    now = monotonic()
    if load.deadline is not None and now >= load.deadline:
        return "the point's time limit was reached before it finished"
    stall = load.stall_timeout_s
    if stall is not None and client.inflight and now - max(t0, client.progress_at()) > stall:
        return f"stalled: no request made progress for {stall:g} s"
    return None


async def _sleep_until(when: float) -> None:
    """Sleep until monotonic time `when`, never less: an event loop's timer may fire up to a
    millisecond early (uvloop keeps its clock in whole milliseconds), so sleep what is left."""
    while (delay := when - monotonic()) > 0:
        await asyncio.sleep(delay)


async def _fixed_concurrency(
    client: Client,
    concurrency: int | None,
    specs: Sequence[RequestSpec],
    records: list[RequestRecord],
    t0: float,
    counters: Counters,
) -> None:
    position = 0
    total = len(specs)

    async def stream() -> None:
        nonlocal position
        ready = t0
        while position < total:
            i = position
            position += 1
            rec = records[i]
            rec.ready = ready
            await client.send(specs[i], rec, counters)
            ready = monotonic()

    await _sleep_until(t0)
    streams = min(concurrency or total, total)
    tasks = [asyncio.ensure_future(stream()) for _ in range(streams)]
    try:
        await asyncio.gather(*tasks)
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _scheduled(
    client: Client,
    concurrency: int | None,
    specs: Sequence[RequestSpec],
    records: list[RequestRecord],
    offsets: list[float],
    t0: float,
    counters: Counters,
) -> None:
    cap = asyncio.Semaphore(concurrency) if concurrency else None
    tasks: set[asyncio.Task[None]] = set()

    async def one(i: int, spec: RequestSpec) -> None:
        try:
            await client.send(spec, records[i], counters)
        finally:
            if cap is not None:
                cap.release()

    try:
        for i, offset in enumerate(offsets):
            spec = specs[i]  # a lazily built body is made before its send time, not after
            due = t0 + offset
            await _sleep_until(due)
            rec = records[i]
            if cap is not None:
                waited = cap.locked()
                await cap.acquire()
                rec.ready = monotonic() if waited else due
            else:
                rec.ready = due
            task = asyncio.ensure_future(one(i, spec))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        if tasks:
            await asyncio.gather(*tasks)
    finally:
        for t in list(tasks):
            t.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)


def cpu_seconds() -> float:
    """CPU (user + system) this process has used so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def new_loop() -> asyncio.AbstractEventLoop:
    """A uvloop loop when present (it roughly halves the client's CPU per request)."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
    return loop
