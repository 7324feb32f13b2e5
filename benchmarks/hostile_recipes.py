"""What refusing hostile recipes costs: an alias bomb and a 1,000-deep map, loaded and linted.

Each case prints CPU seconds and the tracemalloc peak of the loader (`parse_yaml`) and
of `lint_paths`, and the message it ends with. The target: well under a second and a
few MB each, however large the expansion the file describes (the bomb describes
10**10 nodes in under 1 KB).

    .venv/bin/python benchmarks/hostile_recipes.py [--levels N] [--depth N]
"""

from __future__ import annotations

import argparse
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from disagg.errors import DisaggError
from disagg.recipe.lint import lint_paths
from disagg.recipe.load import parse_yaml

RECIPE = "name: x\nmodel: {path: m, container: c, precision: bf16}\n"


def alias_bomb(levels: int) -> str:
    lines = ["x-l0: &l0 [" + ", ".join(["lol"] * 10) + "]"]
    for level in range(1, levels + 1):
        lines.append(f"x-l{level}: &l{level} [" + ", ".join([f"*l{level - 1}"] * 10) + "]")
    return "\n".join(lines) + "\n" + RECIPE


def deep_map(depth: int) -> str:
    return "x-deep: " + "{a: " * depth + "1" + "}" * depth + "\n" + RECIPE


def measure(what: str, run: Callable[[], str]) -> None:
    tracemalloc.start()
    started = time.process_time()
    try:
        outcome = run()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    cpu = time.process_time() - started
    print(f"{what:28} {cpu:6.3f} s CPU  peak {peak / 2**20:6.2f} MB  {outcome[:90]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", type=int, default=9, help="alias levels (10**levels nodes)")
    parser.add_argument("--depth", type=int, default=1000, help="nesting depth of the deep map")
    args = parser.parse_args()
    cases = {"alias bomb": alias_bomb(args.levels), "deep map": deep_map(args.depth)}
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in cases.items():
            path = Path(tmp) / f"{name.replace(' ', '-')}.yaml"
            path.write_text(text)
            print(f"{name}: {len(text)} bytes of text")

            def load(text: str = text) -> str:
                try:
                    parse_yaml(text, file="x.yaml")
                except DisaggError as exc:
                    return f"refused: {exc.message}"
                return "loaded"

            def lint(path: Path = path) -> str:
                report = lint_paths([path])
                return f"exit {report.exit_code}: {report.findings[0].message}"

            measure(f"  load {name}", load)
            measure(f"  lint {name}", lint)


if __name__ == "__main__":
    main()
