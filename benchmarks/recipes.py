"""How long loading, linting and planning the whole shared recipe corpus takes in one process.

Stages: read + parse (with positions), expand + validate variants, place every
supported variant, lint every file (`disagg.recipe.lint.lint_paths`, skipped with a
note when the linter is not installed). Prints seconds per stage and files/s; the
target is the whole corpus in under 2 s. `--compare` also times ruamel's own loaders
on the same texts, the baseline this loader was chosen against.

    .venv/bin/python benchmarks/recipes.py [CORPUS_DIR] [--compare]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from disagg.cluster_srtslurm import is_srtslurm_config
from disagg.errors import UnsupportedRecipe
from disagg.plan.placement import place
from disagg.recipe.load import LoadedYaml, load_yaml
from disagg.recipe.variants import Variant, variants_of

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--compare", action="store_true", help="also time ruamel's loaders")
    args = parser.parse_args()
    files = sorted(args.corpus.rglob("*.yaml"))
    if not files:
        raise SystemExit(f"no YAML files under {args.corpus}")

    timings: dict[str, tuple[float, float]] = {}  # stage -> (wall s, CPU s)
    clock = _Clock()
    loaded: list[LoadedYaml] = [load_yaml(path) for path in files]
    loaded = [  # srt-slurm cluster configs are not recipes
        item
        for item in loaded
        if not (isinstance(item.data, dict) and is_srtslurm_config(item.data))
    ]
    timings["load (parse + positions)"] = clock.lap()

    variants: list[Variant] = [v for item in loaded for v in variants_of(item)]
    timings["expand + validate"] = clock.lap()

    planned = unsupported = 0
    for variant in variants:
        try:
            place(variant)
            planned += 1
        except UnsupportedRecipe:
            unsupported += 1
    timings["plan"] = clock.lap()

    try:
        from disagg.recipe.lint import lint_paths
    except ImportError:
        print("lint: disagg.recipe.lint not available, skipped")
    else:
        clock.lap()
        report = lint_paths(files)
        timings["lint"] = clock.lap()
        print(f"lint: {len(report.findings)} finding(s)")

    wall = sum(t[0] for t in timings.values())
    cpu = sum(t[1] for t in timings.values())
    print(
        f"{len(files)} files, {len(variants)} variants "
        f"({planned} planned, {unsupported} unsupported)"
    )
    print(f"  {'stage':<26} {'wall':>7}   {'CPU':>7}")
    for stage, (seconds, cpu_seconds) in timings.items():
        print(f"  {stage:<26} {seconds:7.3f} s {cpu_seconds:7.3f} s")
    print(f"  {'total':<26} {wall:7.3f} s {cpu:7.3f} s  ({len(files) / wall:,.0f} files/s wall)")
    if args.compare:
        _compare(files)


if __name__ == "__main__":
    main()
