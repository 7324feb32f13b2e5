"""How long `disagg --help`, `disagg lint FILE` and `disagg plan FILE` take to start and finish.

Runs each command N times in a fresh interpreter and prints the median wall time and
the median CPU time of the child (user + system: steadier than wall time on a busy
machine). Target: under 0.3 s each. `python -c pass` is printed as the floor.

Two columns of CPU time, because most of a short command's time is reading Python
modules: `cached` writes and reads bytecode in a private cache (the first, uncounted run
fills it, so the checkout's own `__pycache__` is left alone); `no-write` is a shell with
PYTHONDONTWRITEBYTECODE=1, which reads the bytecode scripts/bootstrap compiled (the
environment and disagg's own src/) and writes none: a module edited since is compiled
from source on every run.

    .venv/bin/python benchmarks/startup.py [RECIPE] [-n 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_RECIPE = (
    Path(__file__).resolve().parents[2]
    / "shared/recipes/srt-slurm-v1.0.68/h200/1k1k/bs128-agg-tp-mtp.yaml"
)


def _once(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    before = os.times()
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, env=env)
    wall = time.perf_counter() - start
    after = os.times()
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    return wall, cpu


def _environments(cache: str) -> dict[str, dict[str, str]]:
    """`cached`: bytecode written to and read from `cache`; `no-write`: none written."""
    base = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")
    }
    return {
        "cached": {**base, "PYTHONPYCACHEPREFIX": cache},
        "no-write": {**base, "PYTHONDONTWRITEBYTECODE": "1"},
    }


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
    with tempfile.TemporaryDirectory() as cache:
        envs = _environments(cache)
        print(f"{'command':<20} {'wall':>8} {'CPU':>8} {'CPU':>10}   (median of {args.n})")
        print(f"{'':<20} {'cached':>8} {'cached':>8} {'no-write':>10}")
        for label, argv in commands.items():
            _once(argv, envs["cached"])  # fills the bytecode cache; not counted
            cached = [_once(argv, envs["cached"]) for _ in range(args.n)]
            no_write = [_once(argv, envs["no-write"])[1] for _ in range(args.n)]
            wall = statistics.median(r[0] for r in cached)
            cpu = statistics.median(r[1] for r in cached)
            print(f"{label:<20} {wall:7.3f}s {cpu:7.3f}s {statistics.median(no_write):9.3f}s")


if __name__ == "__main__":
    main()
