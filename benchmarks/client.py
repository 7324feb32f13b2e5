"""How fast and how accurate is the load generator? Prints numbers; asserts nothing.

Two local servers (tests/stream_server.py, each in its own process):
- instant: answers every request at once with 64 tokens, one SSE event each;
  measures requests/s, output tokens/s and the client's CPU per request at
  concurrency 64, 512 and 2048.
- scheduled: first token 50 ms after the request, then one token every 10 ms,
  each its own chunk; measures median TTFT, TPOT and ITL against that truth at
  concurrency 16, 256 and 1024. The server's own lateness against its schedule
  (`GET /stats`) is printed too, so its error is not blamed on the client.

Each row runs with disagg's default HTTP/1.1 protocol client (`disagg`), with
disagg on aiohttp (`disagg-aio`), and with a naive single-process aiohttp client (line iteration and
`json.loads` per event, the usual way such clients are written) as the baseline.
Client CPU is `getrusage` of the client's processes only (the server is separate).
Targets: at most 0.2 ms of client CPU per request against the instant server, and a
median TTFT under 5 ms above the truth at concurrency 1024 (figures:
benchmarks/README.md).

    .venv/bin/python benchmarks/client.py            # full run, a few minutes
    .venv/bin/python benchmarks/client.py --quick    # fewer requests on the instant rows
    .venv/bin/python benchmarks/client.py --against /tmp/old/src   # this checkout vs another

`--against SRC` compares this checkout's client with the one under SRC (another
checkout's `src/`, e.g. a `git worktree` of an older commit): each round runs both,
one after the other in alternating order, in fresh processes against the same server
(this checkout's): the instant one at concurrency 64 and 512, then the 50/10 ms one at
concurrency 1024; it prints CPU per request, requests/s and TTFT error of each run,
then the medians and the ratio of CPU per request. CPU time, not wall time, is the
figure to compare on a shared machine; TTFT error there moves with the machine's load
(the server's own lateness is printed beside it).

Fixed concurrency against a deterministic server keeps all streams in lockstep:
every wave of requests reaches the single-threaded test server at once and queues
there before it stamps arrival, which the client rightly sees as TTFT. The last
row offers the same load with Poisson arrivals to separate that from client error.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

# Only names that every measured checkout has (back to 77258cc) are imported from disagg:
# with --against, a row runs in a process whose disagg is the other checkout's.
from disagg.bench.client import raise_fd_limit
from disagg.bench.metrics import percentile
from disagg.bench.results import PointContext
from disagg.bench.runner import ClientOptions, run_point
from disagg.plan.model import BenchPlan, PointPlan

sys.path.append(str(Path(__file__).resolve().parents[1] / "tests"))
from stream_server import ServerConfig, serve_in_subprocess  # the tests' mock server

ISL, OSL = 128, 64
TTFT_MS, ITL_MS = 50.0, 10.0


@dataclass
class Row:
    client: str
    server: str
    concurrency: int
    requests: int
    failed: int
    req_s: float
    tok_s: float
    cpu_ms_per_req: float
    ttft_ms: float
    tpot_ms: float
    itl_p50_ms: float
    itl_p99_ms: float
    server_late_ms: float = 0.0


def _server_stats(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url + "/stats", timeout=5) as resp:
        data: dict[str, Any] = json.loads(resp.read())
        return data


def run_disagg(
    url: str, server: str, conc: int, n: int, workers: int, http: str, rate: float | None = None
) -> Row:
    if rate is None:
        point = PointPlan(concurrency=conc, num_prompts=n, warmup_requests=conc)
    else:  # Poisson arrivals, no cap: about `conc` in flight without lockstep waves
        point = PointPlan(request_rate=rate, num_prompts=n, warmup_requests=conc)
    bench = BenchPlan(model_name="m", isl=ISL, osl=OSL, points=[point])
    ctx = PointContext("bench", point, 0, 0, False, simulated=True)
    with tempfile.TemporaryDirectory() as tmp:
        r = run_point(
            base_url=url,
            bench=bench,
            ctx=ctx,
            out_dir=Path(tmp),
            options=ClientOptions(workers=workers, http=http),  # type: ignore[arg-type]
            quiet=True,
        ).result
    return Row(
        client=f"disagg{'-aio' if http == 'aiohttp' else ''} x{r['client_workers']}",
        server=server,
        concurrency=conc,
        requests=n,
        failed=r["failed"],
        req_s=r["request_throughput"],
        tok_s=r["output_throughput"],
        cpu_ms_per_req=r["client_cpu_ms_per_request"] or 0.0,
        ttft_ms=r["median_ttft_ms"],
        tpot_ms=r["median_tpot_ms"],
        itl_p50_ms=r["median_itl_ms"],
        itl_p99_ms=r["p99_itl_ms"],
    )


async def _naive(url: str, conc: int, n: int) -> tuple[list[dict[str, Any]], float]:
    """The straightforward client: a semaphore, `async for line`, json.loads per event."""
    sem = asyncio.Semaphore(conc)
    results: list[dict[str, Any]] = []
    timeout = aiohttp.ClientTimeout(total=600)
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(timeout=timeout, connector=connector) as session:

        async def one(i: int) -> None:
            payload = {
                "model": "m",
                "prompt": [1000 + (i + k) % 20000 for k in range(ISL)],
                "max_tokens": OSL,
                "stream": True,
                "stream_options": {"include_usage": True},
                "ignore_eos": True,
            }
            async with sem:
                st = time.perf_counter()
                last, ttft, itl, out, ok = st, 0.0, [], 0, False
                try:
                    async with session.post(url + "/v1/completions", json=payload) as resp:
                        async for line in resp.content:
                            line = line.strip()
                            if not line:
                                continue
                            chunk = line.decode().removeprefix("data: ")
                            if chunk == "[DONE]":
                                ok = True
                                continue
                            data = json.loads(chunk)
                            if data.get("choices") and data["choices"][0].get("text"):
                                ts = time.perf_counter()
                                if ttft == 0.0:
                                    ttft = ts - st
                                else:
                                    itl.append(ts - last)
                                last = ts
                            elif data.get("usage"):
                                out = data["usage"]["completion_tokens"]
                except aiohttp.ClientError:
                    ok = False
                results.append({"ok": ok, "ttft": ttft, "e2e": last - st, "itl": itl, "out": out})

        # warm-up opens the connections, as for the disagg client
        await asyncio.gather(*(one(i) for i in range(conc)))
        results.clear()
        start = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(n)))
        return results, time.perf_counter() - start


def run_naive(url: str, server: str, conc: int, n: int) -> Row:
    # here, not at the top: a --row process imports the other checkout's disagg, which may
    # predate bench.phase; the naive client runs only in this checkout's process
    from disagg.bench.phase import cpu_seconds

    cpu0 = cpu_seconds()
    results, duration = asyncio.run(_naive(url, conc, n))
    cpu = cpu_seconds() - cpu0
    ok = [r for r in results if r["ok"]]
    ttfts = sorted(r["ttft"] * 1000 for r in ok)
    tpots = sorted((r["e2e"] - r["ttft"]) / (r["out"] - 1) * 1000 for r in ok if r["out"] > 1)
    itls = sorted(x * 1000 for r in ok for x in r["itl"])
    return Row(
        client="naive aiohttp",
        server=server,
        concurrency=conc,
        requests=n,
        failed=n - len(ok),
        req_s=len(ok) / duration,
        tok_s=sum(r["out"] for r in ok) / duration,
        cpu_ms_per_req=1000 * cpu / max(1, n),
        ttft_ms=percentile(ttfts, 50),
        tpot_ms=percentile(tpots, 50),
        itl_p50_ms=percentile(itls, 50),
        itl_p99_ms=percentile(itls, 99),
    )


def _print_header() -> None:
    head = (
        f"{'client':<22} {'server':<9} {'conc':>5} {'reqs':>6} {'fail':>4} {'req/s':>8} "
        f"{'out tok/s':>10} {'cpu ms/req':>10} {'TTFT p50':>9} {'TPOT p50':>9} "
        f"{'ITL p50':>8} {'ITL p99':>8} {'srv late':>8}"
    )
    print(head)
    print("-" * len(head))


def _print_row(r: Row) -> None:
    timing = r.server == "50/10ms"
    ttft = f"{r.ttft_ms - TTFT_MS:+.2f}" if timing else f"{r.ttft_ms:.2f}"
    tpot = f"{r.tpot_ms - ITL_MS:+.3f}" if timing else f"{r.tpot_ms:.3f}"
    itl = f"{r.itl_p50_ms - ITL_MS:+.2f}" if timing else f"{r.itl_p50_ms:.2f}"
    print(
        f"{r.client:<22} {r.server:<9} {r.concurrency:>5} {r.requests:>6} {r.failed:>4} "
        f"{r.req_s:>8.1f} {r.tok_s:>10.0f} {r.cpu_ms_per_req:>10.3f} {ttft:>9} {tpot:>9} "
        f"{itl:>8} {r.itl_p99_ms:>8.2f} {r.server_late_ms:>8.2f}",
        flush=True,
    )


def _row_in(src: Path, url: str, server: str, conc: int, n: int, workers: int) -> Row:
    """One disagg row measured in a fresh process that imports disagg from `src`."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    argv = [sys.executable, __file__, "--row", json.dumps([url, server, conc, n, workers])]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the client under {src} failed:\n{done.stderr[-2000:]}")
    return Row(**json.loads(done.stdout.splitlines()[-1]))


def _one_row(spec: str) -> None:
    """`--row`: measure one row with whichever disagg this process imports."""
    import disagg

    url, server, conc, n, workers = json.loads(spec)
    row = run_disagg(url, server, conc, n, workers, "fast")
    row.client = str(Path(disagg.__file__).resolve().parents[1])
    print(json.dumps(row.__dict__))


def compare(other: Path, rounds: int, scale: float, workers: int) -> None:
    """This checkout's client against the one under `other`, alternating, same server:
    CPU per request at the ceiling, and TTFT error at concurrency 1024."""
    ours = Path(__file__).resolve().parents[1] / "src"
    sides = {"this": ours, "other": other.resolve()}
    print(f"this:  {sides['this']}\nother: {sides['other']}")
    print(
        f"{'server':<8} {'conc':>5} {'round':>5} {'side':<6} {'reqs':>6} {'fail':>4} {'req/s':>8}"
        f" {'cpu ms/req':>10} {'TTFT err':>9} {'srv late':>8}"
    )
    timed = ServerConfig(ttft_ms=TTFT_MS, itl_ms=ITL_MS)
    rows = [
        ("instant", ServerConfig(), conc, int(max(5000, 5 * conc) * scale)) for conc in (64, 512)
    ]
    rows.append(("50/10ms", timed, 1024, 3 * 1024))
    for server, config, conc, n in rows:
        got: dict[str, list[Row]] = {"this": [], "other": []}
        for k in range(rounds):
            for side in ("this", "other") if k % 2 == 0 else ("other", "this"):
                with serve_in_subprocess(config) as url:
                    row = _row_in(sides[side], url, server, conc, n, workers)
                    if server != "instant":
                        row.server_late_ms = float(_server_stats(url)["first_chunk_lateness_ms"])
                got[side].append(row)
                ttft = f"{row.ttft_ms - TTFT_MS:+.2f}" if server != "instant" else "-"
                print(
                    f"{server:<8} {conc:>5} {k + 1:>5} {side:<6} {row.requests:>6} {row.failed:>4}"
                    f" {row.req_s:>8.1f} {row.cpu_ms_per_req:>10.3f} {ttft:>9}"
                    f" {row.server_late_ms:>8.2f}",
                    flush=True,
                )
        med = {
            side: (
                statistics.median(r.cpu_ms_per_req for r in got[side]),
                statistics.median(r.req_s for r in got[side]),
                statistics.median(r.ttft_ms - TTFT_MS for r in got[side]),
            )
            for side in got
        }
        line = f"{server:<8} {conc:>5} median:" + "".join(
            f" {side} {cpu:.3f} ms/req {rate:.0f} req/s"
            + (f" TTFT {ttft:+.2f} ms;" if server != "instant" else ";")
            for side, (cpu, rate, ttft) in med.items()
        )
        print(f"{line} CPU this/other {med['this'][0] / med['other'][0]:.2f}x", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer requests per row")
    parser.add_argument("--no-naive", action="store_true", help="skip the naive baseline")
    parser.add_argument("--workers", type=int, default=0, help="disagg client processes (0=auto)")
    parser.add_argument("--json", type=Path, help="also write the rows to this file")
    parser.add_argument("--against", type=Path, help="compare with the client under this src/")
    parser.add_argument("--rounds", type=int, default=3, help="--against: rounds per side")
    parser.add_argument("--row", help=argparse.SUPPRESS)  # one row, for --against
    args = parser.parse_args()
    raise_fd_limit()
    if args.row:
        _one_row(args.row)
        return
    scale = 0.25 if args.quick else 1.0
    if args.against is not None:
        if not (args.against / "disagg" / "__init__.py").is_file():
            raise SystemExit(f"--against {args.against}: no disagg package there (name a src/)")
        compare(args.against, args.rounds, scale, args.workers)
        return
    rows: list[Row] = []
    print("instant server (64 tokens/request): latency columns are absolute ms")
    print("50/10ms server: TTFT/TPOT/ITL p50 columns are errors against the truth (ms)\n")
    plan: list[tuple[str, ServerConfig, int, int, float | None]] = []
    for conc in (64, 512, 2048):
        plan.append(("instant", ServerConfig(), conc, int(max(5000, 5 * conc) * scale), None))
    timed = ServerConfig(ttft_ms=TTFT_MS, itl_ms=ITL_MS)
    for conc in (16, 256, 1024):
        n = max(3 * conc, 200)  # three waves at least: timing rows are not shortened
        plan.append(("50/10ms", timed, conc, n, None))
    # the same load as concurrency 256 (~370 req/s) but Poisson: no lockstep bursts
    plan.append(("50/10ms", timed, 256, 768, 256 / (TTFT_MS + (OSL - 1) * ITL_MS) * 1000))
    _print_header()
    for server_name, config, conc, n, rate in plan:
        clients = ["fast", "aiohttp"]
        if not args.no_naive and rate is None:
            clients.append("naive")
        for client in clients:
            with serve_in_subprocess(config) as url:
                if client == "naive":
                    row = run_naive(url, server_name, conc, n)
                else:
                    row = run_disagg(url, server_name, conc, n, args.workers, client, rate)
                if rate is not None:
                    row.client += " poisson"
                if server_name != "instant":
                    row.server_late_ms = float(_server_stats(url)["first_chunk_lateness_ms"])
            rows.append(row)
            _print_row(row)
    if args.json:
        args.json.write_text(json.dumps([r.__dict__ for r in rows], indent=2) + "\n")


if __name__ == "__main__":
    main()
