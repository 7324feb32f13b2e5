"""How long loading, linting and planning the whole shared recipe corpus takes in one process.

Stages: read + parse (with positions), expand + validate variants, place every
supported variant (each through `disagg.plan.file_plans`, as `disagg plan` does), lint
every file (`disagg.recipe.lint.lint_paths`; inside `file_plans.shared()` its DA013
reads the plans just made instead of placing every variant again). Prints seconds per
stage and files/s; the target is the whole corpus in under 2 s. The process runs with
the collector thresholds `disagg` sets for itself (`disagg.gc_settings`). Then lint
once more on its own, as `disagg lint DIR` runs (nothing planned before it).
`--compare` also times ruamel's own loaders on the same texts, the baseline this loader
was chosen against.

    .venv/bin/python benchmarks/recipes.py [CORPUS_DIR] [--compare]
"""

from __future__ import annotations

import argparse
import time
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


def _plan_then_lint(files: list[Path]) -> tuple[dict[str, tuple[float, float]], str, LintReport]:
    """Time each stage of planning every file, then linting them all (DA013 reuses)."""
    timings: dict[str, tuple[float, float]] = {}  # stage -> (wall s, CPU s)
    clock = _Clock()
    every: list[FilePlans] = [file_plans(path.read_text(), str(path)) for path in files]
    for one in every:
        one.loaded  # noqa: B018 - computes and keeps the stage
    recipes = [one for one in every if not one.is_cluster_config]  # configs are no recipes
    timings["load (parse + positions)"] = clock.lap()

    variants = 0
    for one in recipes:
        expanded = one.variants
        variants += 0 if isinstance(expanded, DisaggError) else len(expanded)
    timings["expand + validate"] = clock.lap()

    planned = unsupported = 0
    for one in recipes:
        for _, outcome in one.placed:
            planned += not isinstance(outcome, DisaggError)
            unsupported += isinstance(outcome, UnsupportedRecipe)
    timings["plan"] = clock.lap()

    report = lint_paths(files)
    timings["lint (plans reused)"] = clock.lap()
    counts = f"{variants} variants ({planned} planned, {unsupported} unsupported)"
    return timings, counts, report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--compare", action="store_true", help="also time ruamel's loaders")
    args = parser.parse_args()
    files = sorted(args.corpus.rglob("*.yaml"))
    if not files:
        raise SystemExit(f"no YAML files under {args.corpus}")

    tune()  # the collector thresholds `disagg` itself runs with
    with shared():  # as one process that plans the corpus and then lints it
        timings, counts, report = _plan_then_lint(files)
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
