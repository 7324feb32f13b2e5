"""How fast failures end the work they stop. Prints seconds; asserts nothing.

- stop latency: a point's stop event set (a role died, a cancel) 1 s after its
  first request -> the load generator returned (its result written), in this
  process and with 2 worker processes. Target: ~1 s.
- hung worker: a decode worker of a simulated 1P2D run is SIGSTOPped during a point
  -> the run has failed naming it, with `limits.liveness_timeout` 5 s. Target: the
  liveness timeout plus a few seconds.
- role death: a decode worker SIGKILLed during a point -> the run has failed.
  Target: under 5 s.
- paused worker: a decode worker SIGSTOPped for 3 s during a point, then SIGCONTed
  (`limits.serving_gap` 1.5 s, probes every 0.5 s) -> the serving gap the discarded
  attempt reports. Target: the pause plus under one probe interval and timeout.

The tests check what happens in these cases (order and outcome); how long it takes
depends on the machine's load, so it is measured here.

Usage: .venv/bin/python benchmarks/failure_latency.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

from disagg.bench.results import PointContext
from disagg.bench.runner import ClientOptions, run_point
from disagg.launch.orchestrator import Orchestrator, OrchestratorOptions, make_launcher
from disagg.launch.state import RunState, RunSummary
from disagg.plan.from_recipe import plans_for
from disagg.plan.limits import LimitsPlan
from disagg.plan.model import BenchPlan, Plan, PointPlan

sys.path.append(str(Path(__file__).resolve().parents[1] / "tests"))
from stream_server import ServerConfig, serve_in_subprocess  # the tests' mock server

RECIPE = Path(__file__).resolve().parent.parent / "examples" / "sim" / "1p2d.yaml"


def stop_latency(workers: int) -> float:
    """Seconds from setting the stop event, once 1 s of requests ran, to `run_point` returning."""
    point = PointPlan(concurrency=8, num_prompts=400)
    bench = BenchPlan(model_name="m", isl=32, osl=100, points=[point])
    stop = threading.Event()
    set_at: list[float] = []

    def fire_after_first_request(url: str) -> None:
        while not stop.is_set():
            with urllib.request.urlopen(url + "/stats", timeout=5) as resp:
                if json.loads(resp.read())["requests"] >= 1:
                    time.sleep(1.0)  # the streams are running, not starting
                    set_at.append(time.monotonic())
                    stop.set()
                    return
            time.sleep(0.01)

    with serve_in_subprocess(ServerConfig(ttft_ms=50, itl_ms=50)) as url:
        firing = threading.Thread(target=fire_after_first_request, args=(url,), daemon=True)
        firing.start()
        with tempfile.TemporaryDirectory() as tmp:
            run_point(
                base_url=url,
                bench=bench,
                ctx=PointContext("bench", point, 0, 0, False, simulated=True),
                out_dir=Path(tmp),
                options=ClientOptions(workers=workers),
                quiet=True,
                stop=stop,
            )
        ended = time.monotonic()
        firing.join()
    return ended - set_at[0]


def _run_acting_on_decode(
    num_prompts: int, limits: LimitsPlan, act: Callable[[int], None]
) -> tuple[RunSummary, float]:
    """One point of the 1P2D recipe, calling `act(pid)` on decode-1 one second into it:
    the summary and the monotonic time the run returned. decode-1 is always resumed."""
    plan: Plan = plans_for([str(RECIPE)], None)[0]
    points = [PointPlan(concurrency=16, num_prompts=num_prompts)]
    plan = plan.model_copy(
        update={"bench": plan.bench.model_copy(update={"points": points}), "limits": limits}
    )
    pids: list[int] = []

    def hook(state: RunState) -> None:
        if state.current_point and not pids:
            pid = state.role("decode-1").tasks[0].pid
            assert pid is not None
            pids.append(pid)
            threading.Timer(1.0, act, args=(pid,)).start()

    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp)
        plan.write(run_dir)
        options = OrchestratorOptions(echo=False, quiet_bench=True, handle_signals=False)
        launcher = make_launcher("local", plan, run_dir)
        try:
            summary = Orchestrator(run_dir, plan, launcher, options, on_update=hook).run()
            return summary, time.monotonic()
        finally:
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)


def stopped_run(kill: signal.Signals) -> float:
    """Seconds from signalling decode-1 during a point to the run's summary."""
    signalled: list[float] = []

    def send(pid: int) -> None:
        signalled.append(time.monotonic())
        os.kill(pid, kill)

    limits = LimitsPlan(liveness_timeout_s=5.0, liveness_interval_s=0.5)
    summary, ended = _run_acting_on_decode(4000, limits, send)
    if summary.status.value != "failed":
        raise SystemExit(f"expected a failed run, got {summary.status.value}")
    return ended - signalled[-1]


def paused_gap(pause_s: float = 3.0) -> float:
    """The gap (s) a point's discarded attempt reports for a decode worker paused `pause_s`."""

    def pause(pid: int) -> None:
        os.kill(pid, signal.SIGSTOP)
        threading.Timer(pause_s, os.kill, args=(pid, signal.SIGCONT)).start()

    limits = LimitsPlan(liveness_timeout_s=60.0, liveness_interval_s=0.5, serving_gap_s=1.5)
    summary, _ = _run_acting_on_decode(1500, limits, pause)
    [point] = summary.points
    if not point.discarded:
        raise SystemExit(f"expected a discarded attempt, got {point.status.value}")
    return float(point.discarded[0].split(" stopped serving for ", 1)[1].split(" s ", 1)[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rows: dict[str, Callable[[], float]] = {
        "stop latency, in-process (s)": lambda: stop_latency(1),
        "stop latency, 2 workers (s)": lambda: stop_latency(2),
        "hung decode worker -> run failed, liveness 5 s (s)": lambda: stopped_run(signal.SIGSTOP),
        "killed decode worker -> run failed (s)": lambda: stopped_run(signal.SIGKILL),
        "decode worker paused 3 s -> serving gap reported (s)": paused_gap,
    }
    for name, fn in rows.items():
        values = [fn() for _ in range(args.repeat)]
        shown = " ".join(f"{v:.2f}" for v in values)
        print(f"{name:<52} median {statistics.median(values):6.2f}   ({shown})", flush=True)


if __name__ == "__main__":
    main()
