"""How much time the orchestrator adds around the engines, for a simulated 1P1D run.

Prints, per repetition and as a median:
- startup overhead: orchestrator start -> first measured request, minus the engines'
  own start-up (workers launched -> healthy, router launched -> ready);
- point gap: last request of one point -> first request of the next.
Targets: under 2 s and under 0.5 s.

The first request of a point is taken as `point end - duration` (the load generator's
measured window, from its start to the last response); this counts the time the
load generator spends writing a result file into the overhead, never out of it.

Usage: .venv/bin/python benchmarks/orchestration.py [--repeat 3] [--recipe FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from disagg.launch.orchestrator import Orchestrator, OrchestratorOptions, make_launcher
from disagg.launch.state import PointState, RunSummary
from disagg.plan.from_recipe import plans_for
from disagg.plan.model import Plan, PointPlan

RECIPE = Path(__file__).resolve().parent.parent / "examples" / "sim" / "1p1d.yaml"
CONCURRENCIES = (1, 2, 4, 8)


def short_plan(recipe: Path) -> Plan:
    """The example's plan with short points: the sweep's length is not what is measured."""
    plan = plans_for([str(recipe)], None)[0]
    points = [PointPlan(concurrency=c, num_prompts=2 * c) for c in CONCURRENCIES]
    bench = plan.bench.model_copy(update={"points": points, "osl": 16, "isl": 64})
    return plan.model_copy(update={"bench": bench})


def first_request(point: PointState, result: dict[str, float]) -> float:
    assert point.finished_at is not None
    duration: float = result["duration"]
    return point.finished_at - duration


def measure(plan: Plan, run_dir: Path) -> tuple[float, float, list[float], RunSummary]:
    plan.write(run_dir)
    options = OrchestratorOptions(echo=False, quiet_bench=True)
    launcher = make_launcher("local", plan, run_dir)
    summary = Orchestrator(run_dir, plan, launcher, options).run()
    if summary.status.value != "completed":
        raise SystemExit(f"run {summary.status.value}: {summary.reason}")
    timeline = summary.timeline
    engines = (timeline["workers_healthy"] - timeline["workers_launch"]) + (
        timeline.get("router_healthy", 0.0) - timeline.get("router_launch", 0.0)
    )
    results = [json.loads(Path(p.result or "").read_text()) for p in summary.points]
    starts = [first_request(p, r) for p, r in zip(summary.points, results, strict=True)]
    overhead = starts[0] - summary.started_at - engines
    ends = [p.finished_at or 0.0 for p in summary.points]
    gaps = [starts[i + 1] - ends[i] for i in range(len(ends) - 1)]
    return overhead, engines, gaps, summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--recipe", type=Path, default=RECIPE)
    args = parser.parse_args()
    plan = short_plan(args.recipe)
    overheads: list[float] = []
    all_gaps: list[float] = []
    for rep in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="disagg-bench-") as tmp:
            started = time.monotonic()
            overhead, engines, gaps, summary = measure(plan, Path(tmp))
            total = time.monotonic() - started
        overheads.append(overhead)
        all_gaps.extend(gaps)
        phases = " ".join(f"{k}={v:.2f}" for k, v in summary.phase_seconds.items())
        print(
            f"run {rep + 1}: startup overhead {overhead:.3f} s (engines {engines:.3f} s), "
            f"point gaps {', '.join(f'{g:.3f}' for g in gaps)} s, total {total:.1f} s  [{phases}]"
        )
    print(
        f"median startup overhead: {statistics.median(overheads):.3f} s (target < 2 s); "
        f"median point gap: {statistics.median(all_gaps):.3f} s, "
        f"max {max(all_gaps):.3f} s (target < 0.5 s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
