"""A predicted max-throughput point of 8,192 streams here, with /health probed throughout.

Runs `disagg run RECIPE --local --predict` (real router, real load generator, predicted
workers) on examples/predict/dsr1-b200-fp4-8k-streams.yaml and, from the moment the
workers listen until the run ends, sends `GET /health` to every worker (and the router's
`/health` and `/readiness`) every `--every` seconds, each with a 5 s timeout, timing the
answer: once over a fresh HTTP connection per probe (what the orchestrator's liveness
probe does; the connect is timed apart) and once over one connection kept open from the
start (an answer that does not wait on the listening socket's accept queue). It also
reads each worker's `/sim/stats` to see how many streams the decode worker ran at once.
Prints the point's outcome, the streams reached, and per role and probe the count, the
median, p99 and worst latency, the longest span without a healthy answer (the
orchestrator fails a point whose gap exceeds `limits.serving_gap`, 5 s; the target here
is that no probe takes a second) and the slowest connect of a fresh connection.

    PYTHONPATH=src python benchmarks/predict_scale.py [--time-scale 1] [--recipe R]

Needs the `predict` group. Takes a few minutes.
"""

from __future__ import annotations

import argparse
import http.client
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

RECIPE = Path(__file__).resolve().parents[1] / "examples/predict/dsr1-b200-fp4-8k-streams.yaml"
PROBE_TIMEOUT_S = 5.0


@dataclass
class Probes:
    role: str
    path: str
    kept: bool = False  # one connection kept open (else a fresh one per probe)
    latencies: list[float] = field(default_factory=list)
    connects: list[float] = field(default_factory=list)  # of fresh connections
    failures: int = 0  # between the first and the last healthy answer
    last_ok: float | None = None
    longest_gap: float = 0.0
    _failed_since_ok: int = 0


def get(port: int, path: str) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=PROBE_TIMEOUT_S)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def probe_loop(probes: Probes, port: int, every: float, stop: threading.Event) -> None:
    """GET every `every` s: over a fresh connection each time (as the orchestrator's
    liveness probe does; the connect is timed apart), or over one kept connection."""
    conn: http.client.HTTPConnection | None = None
    while not stop.is_set():
        started = time.monotonic()
        try:
            if conn is None:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=PROBE_TIMEOUT_S)
                conn.connect()
                if not probes.kept:
                    probes.connects.append(time.monotonic() - started)
            conn.request("GET", probes.path)
            response = conn.getresponse()
            response.read()
            ok = response.status == 200
        except (OSError, http.client.HTTPException):
            ok = False
        if conn is not None and (not ok or not probes.kept):
            conn.close()
            conn = None
        now = time.monotonic()
        if ok:
            probes.latencies.append(now - started)
            if probes.last_ok is not None:
                probes.longest_gap = max(probes.longest_gap, now - probes.last_ok)
                probes.failures += probes._failed_since_ok  # not before it listened
            probes.last_ok = now
            probes._failed_since_ok = 0
        else:  # counted once a later probe succeeds: not after the run stopped it
            probes._failed_since_ok += 1
        stop.wait(max(0.0, every - (now - started)))


def listen_drops() -> dict[str, int]:
    """The kernel's counts of connections a full accept queue turned away (TcpExt, this
    network namespace: every listener here, this run's and any other's)."""
    lines = [line.split() for line in Path("/proc/net/netstat").read_text().splitlines()]
    for names, values in itertools.pairwise(lines):
        if names[0] == "TcpExt:" and values[0] == "TcpExt:":
            counts = dict(zip(names[1:], map(int, values[1:]), strict=True))
            return {k: counts.get(k, 0) for k in ("ListenOverflows", "TCPReqQFullDoCookies")}
    return {}


def stats_loop(port: int, seen: dict[str, int], stop: threading.Event) -> None:
    while not stop.is_set():
        try:
            _, body = get(port, "/sim/stats")
            stats = json.loads(body)
            seen["max_batch"] = max(seen.get("max_batch", 0), int(stats.get("max_batch", 0)))
            seen["running"] = max(seen.get("running", 0), int(stats.get("running", 0)))
        except (OSError, ValueError):
            pass
        stop.wait(1.0)


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of a live process (Linux /proc), None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            continue
    return found


def cpu_loop(
    run_dir: Path, orchestrator: int, used: dict[str, float], stop: threading.Event
) -> None:
    """The CPU each role and the orchestrator with its load-generator processes have used."""
    pids: dict[str, int] = {}
    while not stop.is_set():
        try:
            state = json.loads((run_dir / "state.json").read_text())
        except (OSError, ValueError):
            state = {}
        for role in state.get("roles") or []:
            tasks = role.get("tasks") or []
            if tasks and tasks[0].get("pid"):
                pids[str(role["name"])] = int(tasks[0]["pid"])
        for name, pid in pids.items():
            value = cpu_seconds(pid)
            if value is not None:
                used[name] = value
        mine = set(pids.values())
        spent = [cpu_seconds(c) for c in children(orchestrator) if c not in mine]
        total = (cpu_seconds(orchestrator) or 0.0) + sum(v or 0.0 for v in spent)
        key = "orchestrator + load generator"
        used[key] = max(used.get(key, 0.0), total)
        stop.wait(1.0)


def roles(run_dir: Path, deadline: float) -> list[dict[str, object]]:
    """The roles with their ports, once the run has started them all."""
    while time.monotonic() < deadline:
        try:
            state = json.loads((run_dir / "state.json").read_text())
        except (OSError, ValueError):
            state = {}
        found = [r for r in state.get("roles") or [] if r.get("kind") != "bench"]
        ported = found and all(r.get("ports", {}).get("http_port") for r in found)
        if ported and state.get("phase") in ("health", "canary", "measure"):
            return found
        if state.get("phase") in ("teardown", "done"):
            raise SystemExit(f"the run ended before it served: {state.get('failure')}")
        time.sleep(0.2)
    raise SystemExit("the run did not start its roles in time")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipe", type=Path, default=RECIPE)
    parser.add_argument("--time-scale", type=float, default=1.0)
    parser.add_argument("--every", type=float, default=0.25, help="probe interval, s [0.25]")
    parser.add_argument("--out", type=Path, default=None, help="keep the run directory here")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        run_dir = args.out or Path(tmp) / "run"
        argv = [sys.executable, "-m", "disagg", "run", str(args.recipe), "--local", "--predict"]
        argv += ["--predict-time-scale", str(args.time_scale), "--out", str(run_dir), "--json"]
        started = time.monotonic()
        drops_before = listen_drops()
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        stop = threading.Event()
        threads: list[threading.Thread] = []
        all_probes: list[Probes] = []
        seen: dict[str, int] = {}
        used: dict[str, float] = {}
        try:
            for role in roles(run_dir, started + 300):
                port = int(role["ports"]["http_port"])  # type: ignore[index]
                paths = ["/health", "/readiness"] if role["kind"] == "router" else ["/health"]
                for path in paths:
                    for kept in (False, True):
                        name = f"{role['name']} {path}{' kept' if kept else ''}"
                        probes = Probes(name, path, kept)
                        all_probes.append(probes)
                        threads.append(
                            threading.Thread(
                                target=probe_loop, args=(probes, port, args.every, stop)
                            )
                        )
                if role["kind"] == "decode":
                    threads.append(threading.Thread(target=stats_loop, args=(port, seen, stop)))
            threads.append(threading.Thread(target=cpu_loop, args=(run_dir, proc.pid, used, stop)))
            for thread in threads:
                thread.start()
            out, _ = proc.communicate()
        finally:
            stop.set()
            if proc.poll() is None:  # stopped early: the run tears its roles down on SIGTERM
                proc.terminate()
                proc.wait()
            for thread in threads:
                if thread.is_alive():
                    thread.join()
        wall = time.monotonic() - started
        drops = {k: v - drops_before.get(k, 0) for k, v in listen_drops().items()}
    result = json.loads(out) if out.strip() else {}
    [point] = result.get("points") or [{}]
    headline = point.get("headline") or {}
    print(f"{args.recipe.name} at time scale {args.time_scale:g}: {result.get('status')} ")
    print(
        f"  point {point.get('key')}: {point.get('status')}, {point.get('streams')} streams, "
        f"{headline.get('completed', 0):.0f} completed, {headline.get('failed', 0):.0f} failed, "
        f"{headline.get('output_throughput', 0):,.0f} output tok/s (predicted), "
        f"median TPOT {headline.get('median_tpot_ms', 0):.1f} ms, "
        f"{point.get('seconds') or 0:.0f} s; run {wall:.0f} s wall"
    )
    if point.get("reason") or point.get("discarded"):
        print(f"  reason: {point.get('reason')}; discarded: {point.get('discarded')}")
    print(
        f"  decode worker ran at most {seen.get('max_batch', 0)} streams at once "
        f"(running seen: {seen.get('running', 0)})"
    )
    print(
        "  role, probe                  probes  failed  median ms  p99 ms  worst ms  "
        "longest gap s  worst connect ms"
    )
    for p in all_probes:
        lat = sorted(p.latencies) or [float("nan")]
        p99 = lat[min(len(lat) - 1, int(0.99 * len(lat)))]
        connect = f"{max(p.connects) * 1e3:>17.1f}" if p.connects else f"{'(kept)':>17}"
        print(
            f"  {p.role:<27} {len(p.latencies):>7} {p.failures:>7} "
            f"{statistics.median(lat) * 1e3:>10.1f} {p99 * 1e3:>7.1f} {lat[-1] * 1e3:>9.1f} "
            f"{p.longest_gap:>14.2f} {connect}"
        )
    print("  CPU seconds: " + ", ".join(f"{k} {v:.0f}" for k, v in used.items()))
    print("  full accept queues during the run (kernel): " + str(drops))
    return 0 if result.get("status") == "completed" else 1


if __name__ == "__main__":
    sys.exit(main())
