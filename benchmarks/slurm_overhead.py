"""What Slurm adds to a run, measured on the local cluster (scripts/slurm-up).

Submits a small simulated 1P2D variant with `disagg submit` and reports:
- submit -> first measured request, minus the engines' own start-up (launch to
  healthy for workers and router): queueing, job start, srun steps, health polling
  and the canary;
- last point's end -> job end (as `scontrol` sees it): teardown of the steps and
  the job's exit.
Target: under 5 s each. Prints numbers; asserts nothing.

    .venv/bin/python benchmarks/slurm_overhead.py [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "slurm" / "data"
RIG_CONF = Path(os.environ.get("DISAGG_SLURM_DIR", "/tmp/disagg-slurm")) / "etc" / "slurm.conf"
ACTIVE = ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING")


def job_state(job_id: str) -> str:
    out = subprocess.run(
        ["scontrol", "-o", "show", "job", job_id], capture_output=True, text=True, check=False
    ).stdout
    for word in out.split():
        if word.startswith("JobState="):
            return word.split("=", 1)[1]
    return "UNKNOWN"


def one_run(out: Path) -> dict[str, float]:
    started = time.time()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "disagg",
            "submit",
            f"{DATA / 'sim-1p2d-3node.yaml'}:base",
            "--cluster",
            str(DATA / "local-slurm.yaml"),
            "--out",
            str(out),
            "--json",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    submitted = time.time()
    if done.returncode != 0:
        raise SystemExit(f"submit failed: {done.stderr}")
    job_id = str(json.loads(done.stdout)[0]["job_id"])
    state = job_state(job_id)
    while state in ACTIVE:
        time.sleep(0.02)
        state = job_state(job_id)
    ended = time.time()
    summary: dict[str, Any] = json.loads((out / "summary.json").read_text())
    timeline: dict[str, float] = summary.get("timeline", {})
    points = summary["points"]
    if not all(p.get("started_at") and p.get("finished_at") for p in points):
        raise RuntimeError(f"the run ended before its points: {summary.get('reason')}")
    engines = (timeline["workers_healthy"] - timeline["workers_launch"]) + (
        timeline.get("router_healthy", 0.0) - timeline.get("router_launch", 0.0)
    )
    first = points[0]["started_at"]
    last = max(p["finished_at"] for p in points if p.get("finished_at"))
    return {
        "submit_command_s": submitted - started,
        "submit_to_job_start_s": summary["started_at"] - started,
        "engine_startup_s": engines,
        "submit_to_first_request_s": first - started,
        "overhead_to_first_request_s": first - started - engines,
        "last_point_to_job_end_s": ended - last,
        "last_point_to_orchestrator_exit_s": summary["finished_at"] - last,
        "job_completed": 1.0 if state == "COMPLETED" else 0.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if not os.environ.get("SLURM_CONF") and RIG_CONF.is_file():
        os.environ["SLURM_CONF"] = str(RIG_CONF)
    if subprocess.run(["sinfo", "-h"], capture_output=True, check=False).returncode != 0:
        raise SystemExit("no Slurm reachable: start the local cluster with scripts/slurm-up")
    rows = []
    with tempfile.TemporaryDirectory(prefix="disagg-slurm-bench-") as tmp:
        for i in range(args.runs):
            try:
                row = one_run(Path(tmp) / f"run{i}")
            except RuntimeError as exc:
                print(f"run {i}: skipped, {exc}", flush=True)
                continue
            rows.append(row)
            print(f"run {i}: " + "  ".join(f"{k}={v:.2f}" for k, v in row.items()), flush=True)
    if not rows:
        raise SystemExit("no run reached its points")
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print("note: PYTHONDONTWRITEBYTECODE is set: without cached bytecode, imports compile")
    print(f"\nmedian of {len(rows)} run(s) (target < 5 s for the two overheads):")
    for key in rows[0]:
        print(f"  {key:36s} {statistics.median(r[key] for r in rows):7.2f}")


if __name__ == "__main__":
    main()
