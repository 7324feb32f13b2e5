"""Run a `Load` in this process or spread over worker processes, and merge the records.

Above a few hundred streams one event loop is the measurement's bottleneck, so the load
is split round-robin over `spawn`ed worker processes (safe under the orchestrator's
threads), each with its own loop and connection pool. The parent picks absolute start
times on CLOCK_MONOTONIC (shared by every process) so all start the warm-up and the
window together.
"""

from __future__ import annotations

import asyncio
import math
import multiprocessing
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection, wait
from time import monotonic
from typing import Any

from disagg.bench.client import Counters, Load, open_client, raise_fd_limit
from disagg.bench.phase import cpu_seconds, new_loop, records_for, run_phase
from disagg.bench.records import RequestRecord
from disagg.errors import EXIT_FINDINGS, DisaggError

STREAMS_PER_WORKER = 256
START_MARGIN_S = 0.05  # time between announcing a start time and that time
ProgressFn = Callable[[int, int], None]  # (done, failed)


class WorkerFailure(DisaggError):
    """A worker process of the generator died: the measurement cannot be trusted."""

    exit_code = EXIT_FINDINGS


@dataclass
class Execution:
    """Merged records of the measured window and what the generator itself cost."""

    records: list[RequestRecord]
    t0: float  # the measured window's scheduled start (monotonic)
    cpu_s: float  # client CPU (all its processes) during the measured window
    workers: int
    stopped: bool = False
    cut: str | None = None  # why it ended early or never ran: warm-up failed, stall, deadline


WARMUP_FAILED = "not sent: the warm-up failed"
# Called between the warm-up and the measured window; a returned reason skips the
# window (its requests are recorded as not sent) and becomes the point's cut.
BeforeWindow = Callable[[], str | None]


WarmupTally = tuple[int, int, str | None, str | None]  # failed, total, first error, cut


def tally_warmup(records: list[RequestRecord], cut: str | None) -> WarmupTally:
    failed = [r for r in records if r.error]
    return len(failed), len(records), failed[0].error if failed else None, cut


def warmup_failure(tallies: list[WarmupTally]) -> str | None:
    """Why a warm-up makes the point invalid: any failed request, or a limit that cut it.

    A server that cannot answer the warm-up is not measured (its numbers would describe
    a broken server); the measured requests are then recorded as not sent.
    """
    cut = next((t[3] for t in tallies if t[3] is not None), None)
    if cut is not None:
        return f"warm-up: {cut}"
    failed, total = sum(t[0] for t in tallies), sum(t[1] for t in tallies)
    if failed:
        first = next(t[2] for t in tallies if t[2] is not None)
        return f"{failed} of {total} warm-up request(s) failed; first error: {first}"
    return None


def _unsent(load: Load) -> list[RequestRecord]:
    records = records_for(load.requests)
    for rec in records:
        rec.error = WARMUP_FAILED
    return records


def auto_workers(load: Load) -> int:
    """1 (in-process) up to 256 streams, then one process per 256 streams, at most the CPUs.

    An uncapped rate point has no stream count: its rate stands in for it (requests
    lasting about a second keep `rate` of them in flight).
    """
    streams = load.concurrency or 0
    if streams == 0 and load.offsets and len(load.offsets) > 1 and load.offsets[-1] > 0:
        streams = math.ceil(len(load.offsets) / load.offsets[-1])
    wanted = math.ceil(streams / STREAMS_PER_WORKER) if streams > STREAMS_PER_WORKER else 1
    return max(1, min(wanted, os.cpu_count() or 1))


def execute(
    load: Load,
    *,
    workers: int = 0,
    stop: threading.Event | None = None,
    progress: ProgressFn | None = None,
    point_timeout_s: float | None = None,
    before_window: BeforeWindow | None = None,
) -> Execution:
    """Warm up, then measure. `workers` 0 = automatic; 1 = in this process.

    `point_timeout_s` bounds the whole point, warm-up included; a failed warm-up or a
    reason `before_window` returns skips the measured window.
    """
    if load.deadline is None and point_timeout_s is not None:
        load = replace(load, deadline=monotonic() + point_timeout_s)
    count = workers or auto_workers(load)
    count = max(1, min(count, load.concurrency or count, len(load.requests) or 1))
    if count == 1:
        flag = stop.is_set if stop is not None else (lambda: False)
        with asyncio.Runner(loop_factory=new_loop) as runner:
            return runner.run(_run_local(load, flag, progress, before_window))
    return _multi_process(load, count, stop, progress, before_window)


async def _run_local(
    load: Load,
    stop: Callable[[], bool],
    progress: ProgressFn | None,
    before_window: BeforeWindow | None,
) -> Execution:
    raise_fd_limit()
    counters = Counters()

    async def report() -> None:
        while True:
            await asyncio.sleep(0.25)
            if progress is not None:
                progress(counters.done, counters.failed)

    reporter = asyncio.ensure_future(report())
    try:
        async with open_client(load) as client:
            warm = Counters()
            warmed = await run_phase(client, load.warmup, None, monotonic(), stop, warm)
            failure = None if stop() else warmup_failure([tally_warmup(warmed, warm.cut)])
            if failure is None and before_window is not None and not stop():
                failure = await asyncio.to_thread(before_window)
            cpu0 = cpu_seconds()
            t0 = monotonic() + 0.01
            if failure is None:
                records = await run_phase(client, load.requests, load.offsets, t0, stop, counters)
            else:
                records = _unsent(load)
            cpu = cpu_seconds() - cpu0
    finally:
        reporter.cancel()
    if progress is not None:
        progress(counters.done, counters.failed)
    cut = failure or counters.cut
    return Execution(records=records, t0=t0, cpu_s=cpu, workers=1, stopped=stop(), cut=cut)


def _split(load: Load, parts: int) -> list[Load]:
    """Round-robin shares: request i goes to worker i % parts, with its scheduled offset."""
    shares = []
    for k in range(parts):
        conc = None
        if load.concurrency:
            conc = load.concurrency // parts + (1 if k < load.concurrency % parts else 0)
        shares.append(
            replace(
                load,
                requests=load.requests[k::parts],
                warmup=load.warmup[k::parts],
                offsets=load.offsets[k::parts] if load.offsets is not None else None,
                concurrency=conc,
            )
        )
    return shares


def _worker_main(conn: Connection, load: Load, stop: Any, shared: Any, slot: int) -> None:
    """Entry point of one worker process: obey `warmup`/`measure` start times from the parent."""

    async def main() -> None:
        raise_fd_limit()
        counters = Counters()
        flag = stop.is_set

        async def report() -> None:
            while True:
                shared[2 * slot] = counters.done
                shared[2 * slot + 1] = counters.failed
                await asyncio.sleep(0.2)

        async with open_client(load) as client:
            conn.send(("ready",))
            kind, start = conn.recv()  # blocking is fine: nothing else runs yet
            if kind == "warmup":
                warm = Counters()
                warmed = await run_phase(client, load.warmup, None, start, flag, warm)
                conn.send(("warm", tally_warmup(warmed, warm.cut)))
                kind, start = conn.recv()
            if kind == "skip":  # a worker's warm-up failed: nobody measures
                conn.send(("records", _unsent(load), 0.0, None))
                return
            if kind != "measure":
                return
            reporter = asyncio.ensure_future(report())
            cpu0 = cpu_seconds()
            records = await run_phase(client, load.requests, load.offsets, start, flag, counters)
            cpu = cpu_seconds() - cpu0
            reporter.cancel()
            shared[2 * slot] = counters.done
            shared[2 * slot + 1] = counters.failed
            conn.send(("records", records, cpu, counters.cut))

    try:
        with asyncio.Runner(loop_factory=new_loop) as runner:
            runner.run(main())
    except (EOFError, BrokenPipeError, KeyboardInterrupt):
        pass  # the parent went away or stopped the point
    finally:
        conn.close()


def _multi_process(
    load: Load,
    parts: int,
    stop: threading.Event | None,
    progress: ProgressFn | None,
    before_window: BeforeWindow | None = None,
) -> Execution:
    ctx = multiprocessing.get_context("spawn")
    mp_stop = ctx.Event()
    shared = ctx.RawArray("q", 2 * parts)
    pipes: list[Connection] = []
    procs = []
    for k, share in enumerate(_split(load, parts)):
        parent, child = ctx.Pipe()
        proc = ctx.Process(
            target=_worker_main, args=(child, share, mp_stop, shared, k), daemon=True
        )
        proc.start()
        child.close()
        pipes.append(parent)
        procs.append(proc)

    def poll() -> None:
        if stop is not None and stop.is_set():
            mp_stop.set()
        if progress is not None:
            progress(sum(shared[0::2]), sum(shared[1::2]))

    def gather(expect: str) -> list[tuple[Any, ...]]:
        replies: dict[int, tuple[Any, ...]] = {}
        while len(replies) < len(pipes):
            waiting = {id(p): (i, p) for i, p in enumerate(pipes) if i not in replies}
            for ready in wait([p for _, p in waiting.values()], timeout=0.25):
                i, conn = waiting[id(ready)]
                try:
                    msg: tuple[Any, ...] = conn.recv()
                except EOFError as exc:
                    raise WorkerFailure(f"load generator worker {i} exited unexpectedly") from exc
                if msg[0] != expect:
                    raise WorkerFailure(f"worker {i} sent {msg[0]!r}, not {expect!r}")
                replies[i] = msg
            for i, proc in enumerate(procs):
                if i not in replies and not proc.is_alive():
                    raise WorkerFailure(
                        f"load generator worker {i} exited with status {proc.exitcode}",
                        hint="run with --workers 1 to see the error in this process",
                    )
            poll()
        return [replies[i] for i in range(len(pipes))]

    try:
        gather("ready")
        failure = None
        if load.warmup:
            start = monotonic() + START_MARGIN_S
            for conn in pipes:
                conn.send(("warmup", start))
            tallies = [reply[1] for reply in gather("warm")]
            failure = None if mp_stop.is_set() else warmup_failure(tallies)
        if failure is None and before_window is not None and not mp_stop.is_set():
            failure = before_window()
        cpu_parent = cpu_seconds()
        t0 = monotonic() + START_MARGIN_S
        for conn in pipes:
            conn.send(("measure", t0) if failure is None else ("skip", t0))
        replies = gather("records")
        cpu = sum(r[2] for r in replies) + cpu_seconds() - cpu_parent
        records = sorted((rec for r in replies for rec in r[1]), key=lambda rec: rec.index)
        poll()
        cut = failure or next((r[3] for r in replies if r[3] is not None), None)
        return Execution(
            records=records, t0=t0, cpu_s=cpu, workers=parts, stopped=mp_stop.is_set(), cut=cut
        )
    finally:
        mp_stop.set()
        for conn in pipes:
            conn.close()  # a worker waiting for a start time sees EOF and exits
        for proc in procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.kill()
                proc.join()
