"""How many concurrent streams one simulated worker carries before it becomes the bottleneck.

Starts one aggregated `python -m disagg.engines.sim` worker, opens N concurrent
streaming completions (default 2000) from one aiohttp client, and prints:

- achieved output tokens/s (tokens received / wall time) against the model's own
  tokens/s (tokens / simulated GPU busy time, from `/sim/stats`);
- busy/active: simulated GPU time over the worker's wall time from its first step to
  its last (client ramp-up excluded); near 1 means the process keeps up with its model;
- the worker's CPU time per output token and per chunk (from /proc).

    .venv/bin/python benchmarks/sim_engine.py [--streams 2000] [--osl 64] [-- --sim-flags...]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

from disagg.engines.sim.testing import Proc, http_get, start_worker, wait_ready


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks  # utime + stime


async def _one(session: aiohttp.ClientSession, url: str, body: bytes) -> tuple[int, int]:
    """Stream one completion; returns (output tokens from usage, content chunks)."""
    chunks = tokens = 0
    async with session.post(url, data=body, headers={"Content-Type": "application/json"}) as r:
        r.raise_for_status()
        async for line in r.content:
            if not line.startswith(b"data: {"):
                continue
            event = json.loads(line[6:])
            if event.get("usage"):
                tokens = event["usage"]["completion_tokens"]
            elif event["choices"]:
                chunks += 1
    return tokens, chunks


async def _drive(url: str, streams: int, isl: int, osl: int) -> tuple[float, int, int, int]:
    body = json.dumps(
        {
            "prompt": list(range(isl)),
            "max_tokens": osl,
            "ignore_eos": True,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
    ).encode()
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=600)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        start = time.monotonic()
        results = await asyncio.gather(
            *(_one(session, url + "/v1/completions", body) for _ in range(streams)),
            return_exceptions=True,
        )
        wall = time.monotonic() - start
    ok = [r for r in results if isinstance(r, tuple)]
    failed = len(results) - len(ok)
    return wall, sum(t for t, _ in ok), sum(c for _, c in ok), failed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=2000)
    parser.add_argument("--isl", type=int, default=128)
    parser.add_argument("--osl", type=int, default=64)
    parser.add_argument("sim_args", nargs="*", help="extra worker flags (after --)")
    opts = parser.parse_args()
    worker_args = [
        "--max-running-requests",
        str(opts.streams),
        "--log-level",
        "warning",
        *opts.sim_args,
    ]
    with tempfile.TemporaryDirectory() as tmp:
        proc: Proc = start_worker("aggregated-0", "aggregated", Path(tmp), args=worker_args)
        try:
            wait_ready(proc, "/health")
            cpu_before = _cpu_seconds(proc.pid)
            wall, tokens, chunks, failed = asyncio.run(
                _drive(proc.url, opts.streams, opts.isl, opts.osl)
            )
            cpu = _cpu_seconds(proc.pid) - cpu_before
            stats = json.loads(http_get(proc.url + "/sim/stats")[1])
        finally:
            proc.stop()
    busy, active = stats["busy_s"], stats["active_s"]
    print(f"streams            {opts.streams} (isl {opts.isl}, osl {opts.osl}), failed {failed}")
    print(f"worker args        {' '.join(worker_args)}")
    print(f"wall time          {wall:.2f} s (client view)   worker active {active:.2f} s")
    print(f"simulated GPU busy {busy:.2f} s   (busy/active = {busy / active:.2f}: 1.00 = keeps up)")
    print(f"max batch          {stats['max_batch']}")
    print(f"output tokens      {tokens}   chunks {chunks}")
    print(f"achieved tok/s     {tokens / wall:,.0f}")
    print(f"model tok/s        {tokens / busy:,.0f}   (achieved/model = {busy / wall:.2f})")
    print(f"worker CPU         {cpu:.2f} s = {cpu / max(tokens, 1) * 1e6:.1f} us/token")
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
