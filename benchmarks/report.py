"""How long `disagg report` takes for a large sweep: RUNS run directories of POINTS points each.

Builds the run directories in a temporary folder (plan.json plus result files shaped like
the load generator's), then times each stage: load, analyse, summary.csv, pareto.png,
report.html. Prints seconds per stage and file sizes; the target is a few seconds in all.

    .venv/bin/python benchmarks/report.py [RUNS] [POINTS] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from disagg.plan.model import BenchPlan, Plan, PointPlan, RoleKind, RolePlan, SlurmPlan, StagingPlan

T = TypeVar("T")


def _plan(index: int, prefill: int, decode: int, concs: list[int]) -> Plan:
    return Plan(
        name="sweep",
        selector=f"recipes/sweep.yaml:zip_override_sweep[{index}]",
        recipe_file="recipes/sweep.yaml",
        variant=f"zip_override_sweep[{index}]",
        engine="sim",
        simulated=True,
        nodes=2,
        gpus_per_node=8,
        prefill_gpus=prefill,
        decode_gpus=decode,
        disaggregated=True,
        roles=[RolePlan(name="bench", kind=RoleKind.BENCH, node_ranks=[0])],
        bench=BenchPlan(
            model_name="m",
            isl=1024,
            osl=1024,
            points=[PointPlan(concurrency=c, num_prompts=c * 10) for c in concs],
        ),
        staging=StagingPlan(skip=True),
        slurm=SlurmPlan(job_name="sweep", nodes=2, gpus_per_node=8),
        config={"backend": {"sglang_config": {"decode": {"max-running-requests": 64 * index}}}},
    )


def _result(conc: int, prefill: int, decode: int, speed: float, requests: int) -> dict[str, Any]:
    tpot = (9.0 + 0.11 * conc) / speed
    ttft = (70.0 + 3.5 * conc) / speed
    e2el = ttft + tpot * 1023
    duration = 10 * e2el / 1000.0
    output = conc * 10 * 1024 / duration
    result: dict[str, Any] = {
        "completed": conc * 10,
        "failed": 0,
        "duration": duration,
        "request_throughput": conc * 10 / duration,
        "output_throughput": output,
        "total_token_throughput": 2 * output,
        "tput_per_gpu": 2 * output / (prefill + decode),
        "output_tput_per_gpu": output / decode,
        "input_tput_per_gpu": output / prefill,
        "conc": conc,
        "isl": 1024,
        "osl": 1024,
        "num_prefill_gpu": prefill,
        "num_decode_gpu": decode,
        "valid": True,
        "simulated": True,
        "median_intvty": 1000.0 / tpot,
    }
    for metric, median in (("ttft", ttft), ("tpot", tpot), ("itl", tpot), ("e2el", e2el)):
        for stat, factor in (("mean", 1.02), ("median", 1.0), ("p90", 1.3), ("p99", 1.8)):
            result[f"{stat}_{metric}_ms"] = median * factor
    result["point"] = f"conc{conc}"
    if requests:  # per-request arrays, as the load generator writes them after the metrics
        result["input_lens"] = [1024] * requests
        result["output_lens"] = [1024] * requests
        result["ttfts"] = [round(ttft / 1000, 6)] * requests
        result["itls"] = [[round(tpot / 1000 + i * 1e-6, 6) for i in range(1023)]] * requests
    return result


def build_sweep(root: Path, runs: int, points: int, requests: int = 0) -> None:
    concs = [2**i for i in range(points)]
    for index in range(runs):
        prefill, decode = 8 * (1 + index % 2), 8 * (1 + index % 3)
        run_dir = root / f"run-{index:03d}"
        (run_dir / "results").mkdir(parents=True)
        _plan(index, prefill, decode, concs).write(run_dir)
        for conc in concs:
            name = f"run-{index:03d}_conc{conc}_gpus_{prefill + decode}_ctx_{prefill}_gen_{decode}"
            result = _result(conc, prefill, decode, 0.6 + 0.02 * index, requests)
            (run_dir / "results" / f"{name}.json").write_text(json.dumps(result, indent=2))


def timed(label: str, fn: Callable[[], T]) -> T:
    start = time.perf_counter()
    value = fn()
    print(f"{label:<16} {time.perf_counter() - start:7.3f} s")
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="?", type=int, default=50)
    parser.add_argument("points", nargs="?", type=int, default=10)
    parser.add_argument("--keep", type=Path, help="write the sweep and report here and keep them")
    parser.add_argument(
        "--requests",
        type=int,
        default=0,
        help="add per-request arrays (lengths, TTFTs, 1023 ITLs each) for this many requests",
    )
    args = parser.parse_args()

    root = args.keep or Path(tempfile.mkdtemp(prefix="disagg-report-bench-"))
    try:
        shutil.rmtree(root / "sweep", ignore_errors=True)
        build_sweep(root / "sweep", args.runs, args.points, args.requests)
        size = sum(p.stat().st_size for p in (root / "sweep").rglob("*.json")) / 1e6
        print(f"{args.runs} runs x {args.points} points, {size:.1f} MB of JSON")
        total = time.perf_counter()
        from disagg.report import csv, html, png
        from disagg.report.aggregate import load_runs
        from disagg.report.build import analyse

        runs = timed("load", lambda: load_runs([root / "sweep"]))
        report = timed("analyse", lambda: analyse(runs))
        out = root / "report"
        timed("summary.csv", lambda: csv.write_summary(runs, report.charts, out / "summary.csv"))
        timed("pareto.png", lambda: png.write_png(report.charts.charts, out / "pareto.png"))
        timed("report.html", lambda: html.write_html(report, out / "report.html"))
        print(f"{'total':<16} {time.perf_counter() - total:7.3f} s (imports included)")
        for path in sorted(out.iterdir()):
            print(f"  {path.name:<14} {path.stat().st_size / 1e6:7.2f} MB")
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
