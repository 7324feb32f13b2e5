"""How long `disagg --help`, `disagg lint FILE` and `disagg plan FILE` take to start and finish.

Runs each command N times in a fresh interpreter and prints the median wall time and
the median CPU time of the child (user + system: steadier than wall time on a busy
machine). Target: under 0.3 s each. `python -c pass` is printed as the floor.

    .venv/bin/python benchmarks/startup.py [RECIPE] [-n 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

DEFAULT_RECIPE = (
    Path(__file__).resolve().parents[2]
    / "shared/recipes/srt-slurm-v1.0.68/h200/1k1k/bs128-agg-tp-mtp.yaml"
)


def _once(argv: list[str]) -> tuple[float, float]:
    before = os.times()
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - start
    after = os.times()
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("recipe", nargs="?", type=Path, default=DEFAULT_RECIPE)
    parser.add_argument("-n", type=int, default=7, help="runs per command")
    args = parser.parse_args()
    python = sys.executable
    commands = {
        "python -c pass": [python, "-c", "pass"],
        "disagg --help": [python, "-m", "disagg", "--help"],
        "disagg lint FILE": [python, "-m", "disagg", "lint", str(args.recipe)],
        "disagg plan FILE": [python, "-m", "disagg", "plan", str(args.recipe)],
    }
    print(f"{'command':<20} {'wall':>8} {'CPU':>8}   (median of {args.n})")
    for label, argv in commands.items():
        runs = [_once(argv) for _ in range(args.n)]
        wall = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[1] for r in runs)
        print(f"{label:<20} {wall:7.3f}s {cpu:7.3f}s")


if __name__ == "__main__":
    main()
