"""How long loading, linting and planning the whole shared recipe corpus takes in one process.

Stages: read + parse (with positions), expand + validate variants, place every
supported variant (each through `disagg.plan.file_plans`, as `disagg plan` does), lint
every file (`disagg.recipe.lint.lint_paths`; inside `file_plans.shared()` its DA013
reads the plans just made instead of placing every variant again). Prints seconds per
stage and files/s; the target is the whole corpus in under 1.5 s (figures:
benchmarks/README.md). The process runs with the collector thresholds `disagg` sets
for itself (`disagg.gc_settings`). Then lint once more on its own, as `disagg lint DIR`
runs (nothing planned before it).
`--compare` also times ruamel's own loaders on the same texts, the baseline this loader
was chosen against.

`--against SRC` instead measures this checkout and the disagg under SRC (another
checkout's `src/`), each in fresh processes taking turns (`--rounds` each), and prints
the median of each stage for both, so that a before/after comparison shares the
machine's load.

`--instructions` counts instead the instructions each stage executes, under valgrind's
callgrind (hash seed 0; with `--against`, for both checkouts): a count does not move
with the machine's load, so a before/after comparison holds on a shared machine. Each
stage's count is the difference of two runs of this script cut after consecutive stages
(five runs a side, as many at once as there are CPUs: 4 minutes a side on 2 CPUs).

    .venv/bin/python benchmarks/recipes.py [CORPUS_DIR] [--compare] [--against SRC]
        [--instructions]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from disagg.errors import DisaggError, UnsupportedRecipe
from disagg.gc_settings import tune
from disagg.plan.file_plans import FilePlans, file_plans, shared
from disagg.recipe.lint import LintReport, lint_paths

DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "recipes"


class _Clock:
    """Wall and CPU time since the previous lap (CPU time is steadier on a busy machine)."""

    def __init__(self) -> None:
        self.wall = time.perf_counter()
        self.cpu = time.process_time()

    def lap(self) -> tuple[float, float]:
        wall, cpu = time.perf_counter(), time.process_time()
        lap = (wall - self.wall, cpu - self.cpu)
        self.wall, self.cpu = wall, cpu
        return lap


def _compare(files: list[Path]) -> None:
    from ruamel.yaml import YAML

    texts = [path.read_text() for path in files]
    for label, typ, pure in (
        ("ruamel safe, C parser", "safe", False),
        ("ruamel round-trip", "rt", False),
    ):
        yaml = YAML(typ=typ, pure=pure)
        start = time.perf_counter()
        for text in texts:
            yaml.load(text)
        print(f"  {label:<24} {time.perf_counter() - start:6.3f} s (values only)")


STAGES = ("load (parse + positions)", "expand + validate", "plan", "lint (plans reused)")


def _plan_then_lint(
    files: list[Path], upto: int = len(STAGES)
) -> tuple[dict[str, tuple[float, float]], str, LintReport | None]:
    """Time each stage of planning every file, then linting them all (DA013 reuses); with
    `upto`, stop after that many stages (0: nothing but the imports)."""
    timings: dict[str, tuple[float, float]] = {}  # stage -> (wall s, CPU s)
    clock = _Clock()
    if len(timings) >= upto:
        return timings, "", None
    every: list[FilePlans] = [file_plans(path.read_text(), str(path)) for path in files]
    for one in every:
        one.loaded  # noqa: B018 - computes and keeps the stage
    recipes = [one for one in every if not one.is_cluster_config]  # configs are no recipes
    timings[STAGES[0]] = clock.lap()
    if len(timings) >= upto:
        return timings, "", None

    variants = 0
    for one in recipes:
        expanded = one.variants
        variants += 0 if isinstance(expanded, DisaggError) else len(expanded)
    timings[STAGES[1]] = clock.lap()
    if len(timings) >= upto:
        return timings, "", None

    planned = unsupported = 0
    for one in recipes:
        for _, outcome in one.placed:
            planned += not isinstance(outcome, DisaggError)
            unsupported += isinstance(outcome, UnsupportedRecipe)
    timings[STAGES[2]] = clock.lap()
    if len(timings) >= upto:
        return timings, "", None

    report = lint_paths(files)
    timings[STAGES[3]] = clock.lap()
    counts = f"{variants} variants ({planned} planned, {unsupported} unsupported)"
    return timings, counts, report


def _side(src: Path, corpus: Path) -> dict[str, list[float]]:
    """One measurement in a fresh process importing disagg from `src`: stage -> [wall, CPU]."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    argv = [sys.executable, __file__, str(corpus), "--stages-json"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the run with {src} failed:\n{done.stderr[-2000:]}")
    stages: dict[str, list[float]] = json.loads(done.stdout.splitlines()[-1])
    return stages


def against(other: Path, corpus: Path, rounds: int) -> None:
    """Median CPU and wall time of each stage, this checkout against the one under `other`."""
    sides = {"this": Path(__file__).resolve().parents[1] / "src", "other": other.resolve()}
    runs: dict[str, list[dict[str, list[float]]]] = {side: [] for side in sides}
    for k in range(rounds):
        for side in sides if k % 2 == 0 else reversed(sides):
            runs[side].append(_side(sides[side], corpus))
    for side, src in sides.items():
        print(f"{side}: {src}")
    print(
        f"  {'stage (median of ' + str(rounds) + ')':<26} {'this CPU':>9} {'other CPU':>10}"
        f" {'this wall':>10} {'other wall':>11}"
    )
    for stage in runs["this"][0]:
        cells = [
            statistics.median(run[stage][i] for run in runs[side]) for i in (1, 0) for side in sides
        ]
        print(f"  {stage:<26} {cells[0]:8.3f}s {cells[1]:9.3f}s {cells[2]:9.3f}s {cells[3]:10.3f}s")


def _instructions_upto(src: Path, corpus: Path, upto: int) -> float:
    """Millions of instructions of a fresh process importing disagg from `src` and running
    the first `upto` stages (startup.py's callgrind count, hash seed 0)."""
    from startup import _instructions  # beside this script; only the parent needs it

    argv = [sys.executable, __file__, str(corpus), "--upto", str(upto)]
    return _instructions(argv, {**os.environ, "PYTHONPATH": str(src)})


def instructions(sides: dict[str, Path], corpus: Path) -> None:
    """Millions of instructions each stage executes, for each side: the difference of two
    runs cut after consecutive stages (a count does not move with the machine's load)."""
    jobs = [(side, upto) for side in sides for upto in range(len(STAGES) + 1)]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        found = pool.map(lambda job: _instructions_upto(sides[job[0]], corpus, job[1]), jobs)
        counts = dict(zip(jobs, found, strict=True))
    for side, src in sides.items():
        print(f"{side}: {src}")
    print(f"  {'stage (instructions)':<26}" + "".join(f" {side:>10}" for side in sides))
    for index, stage in enumerate(("imports", *STAGES)):
        cells = []
        for side in sides:
            before = counts[(side, index - 1)] if index else 0
            cells.append(f" {counts[(side, index)] - before:9,.0f}M")
        print(f"  {stage:<26}" + "".join(cells))
    totals = "".join(f" {counts[(side, len(STAGES))] - counts[(side, 0)]:9,.0f}M" for side in sides)
    print(f"  {'the four stages':<26}{totals}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--compare", action="store_true", help="also time ruamel's loaders")
    parser.add_argument("--against", type=Path, help="compare with the disagg under this src/")
    parser.add_argument("--rounds", type=int, default=3, help="--against: runs of each side")
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="count each stage's instructions under callgrind instead (needs valgrind)",
    )
    parser.add_argument("--stages-json", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--upto", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    files = sorted(args.corpus.rglob("*.yaml"))
    if not files:
        raise SystemExit(f"no YAML files under {args.corpus}")
    if args.against is not None and not (args.against / "disagg" / "__init__.py").is_file():
        raise SystemExit(f"--against {args.against}: no disagg package there (name a src/)")
    if args.instructions:
        if shutil.which("valgrind") is None:
            raise SystemExit("--instructions needs valgrind on PATH")
        sides = {"this": Path(__file__).resolve().parents[1] / "src"}
        if args.against is not None:
            sides["other"] = args.against.resolve()
        instructions(sides, args.corpus)
        return
    if args.against is not None:
        against(args.against, args.corpus, args.rounds)
        return

    tune()  # the collector thresholds `disagg` itself runs with
    with shared():  # as one process that plans the corpus and then lints it
        timings, counts, report = _plan_then_lint(
            files, len(STAGES) if args.upto is None else args.upto
        )
    if args.upto is not None or report is None:  # a cut run of --instructions
        return
    if args.stages_json:  # one side of --against
        timings["total"] = (
            sum(t[0] for t in timings.values()),
            sum(t[1] for t in timings.values()),
        )
        print(json.dumps(timings))
        return
    print(f"lint: {len(report.findings)} finding(s)")
    print(f"{len(files)} files, {counts}")
    print(f"  {'stage':<26} {'wall':>7}   {'CPU':>7}")
    for stage, (seconds, cpu_seconds) in timings.items():
        print(f"  {stage:<26} {seconds:7.3f} s {cpu_seconds:7.3f} s")
    wall = sum(t[0] for t in timings.values())
    cpu = sum(t[1] for t in timings.values())
    print(f"  {'total':<26} {wall:7.3f} s {cpu:7.3f} s  ({len(files) / wall:,.0f} files/s wall)")

    clock = _Clock()
    alone = lint_paths(files)  # outside shared(): every file planned afresh
    seconds, cpu_seconds = clock.lap()
    same = "same findings" if alone.findings == report.findings else "DIFFERENT findings"
    print(f"  {'lint alone (disagg lint)':<26} {seconds:7.3f} s {cpu_seconds:7.3f} s  ({same})")
    if args.compare:
        _compare(files)


if __name__ == "__main__":
    main()
