"""How closely a trace replay keeps to the trace's timestamps: send lateness per request.

Replays a synthetic Mooncake-format trace (Poisson arrivals, shared prefixes) through
`disagg run --local` on the simulated engine, then reads the point's per-request records
and prints how late each request left against its timestamp (p50, p99, max) and the
replay's span against the trace's.

    .venv/bin/python benchmarks/trace_replay.py [--requests N] [--rate R] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

RECIPE = Path(__file__).resolve().parents[1] / "tests" / "workloads" / "data" / "sim-trace.yaml"


def write_trace(path: Path, requests: int, rate: float) -> list[float]:
    rng = random.Random(1)
    stamps, now = [], 0.0
    with path.open("w") as handle:
        for index in range(requests):
            stamps.append(now)
            record = {
                "timestamp": round(now * 1000, 3),
                "input_length": rng.randint(32, 96),
                "output_length": rng.randint(4, 16),
                "hash_ids": [index % 4, 100 + index],
            }
            handle.write(json.dumps(record) + "\n")
            now += rng.expovariate(rate)
    return stamps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--rate", type=float, default=20.0, help="mean requests/s")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    work = args.out or Path(tempfile.mkdtemp(prefix="trace-replay-"))
    work.mkdir(parents=True, exist_ok=True)
    trace = work / "trace.jsonl"
    stamps = write_trace(trace, args.requests, args.rate)
    recipe = work / "recipe.yaml"
    recipe.write_text(RECIPE.read_text().replace("mini-trace.jsonl", str(trace)))
    run_dir = work / "run"
    done = subprocess.run(
        [sys.executable, "-m", "disagg", "run", str(recipe), "--local", "--out", str(run_dir)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        sys.exit(f"run failed ({done.returncode}):\n{done.stderr[-2000:]}")
    records = sorted(
        (
            json.loads(line)
            for path in (run_dir / "results").glob("*.jsonl")
            for line in path.read_text().splitlines()
        ),
        key=lambda r: r["index"],
    )
    late = sorted(r["send_ms"] - 1000 * s for r, s in zip(records, stamps, strict=True))
    p99 = late[min(len(late) - 1, int(0.99 * len(late)))]
    span = (records[-1]["send_ms"] - records[0]["send_ms"]) / 1000
    print(f"{len(records)} requests over {stamps[-1]:.2f} s of trace (mean {args.rate:g}/s)")
    print(
        f"send lateness ms: p50 {statistics.median(late):.2f}  p99 {p99:.2f}  "
        f"max {late[-1]:.2f}; replay span {span:.2f} s"
    )


if __name__ == "__main__":
    main()
