"""Planning cost per engine: every variant of the shared corpora, placed as written and
simulated (`backend.engine: sim`), timed per engine adapter.

Prints variants, planned/refused counts and CPU ms per planned variant for each engine;
the engine adapters should not make one engine much slower to plan than another.

    .venv/bin/python benchmarks/engines.py [RECIPES_DIR]
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections import Counter, defaultdict
from pathlib import Path

from disagg.errors import DisaggError, UnsupportedRecipe
from disagg.plan.placement import place
from disagg.recipe.variants import Variant, load_variants

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "recipes"


def simulated(variant: Variant) -> Variant:
    backend = variant.config.backend.model_copy(update={"engine": "sim"})
    return dataclasses.replace(
        variant, config=variant.config.model_copy(update={"backend": backend})
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("recipes", nargs="?", type=Path, default=DEFAULT)
    root = parser.parse_args().recipes
    variants: list[Variant] = []
    for path in sorted(root.rglob("*.yaml")):
        if "cluster-configs" in path.parts:
            continue
        try:
            variants += load_variants(path)
        except DisaggError:
            continue  # not a recipe (or bad input): not what this measures
    for label, pick in (("as written", lambda v: v), ("simulated", simulated)):
        cpu: defaultdict[str, float] = defaultdict(float)
        outcome: Counter[tuple[str, str]] = Counter()
        for variant in variants:
            engine = variant.config.backend.type
            chosen = pick(variant)
            start = time.process_time()
            try:
                place(chosen)
                outcome[(engine, "planned")] += 1
            except UnsupportedRecipe:
                outcome[(engine, "refused")] += 1
            cpu[engine] += time.process_time() - start
        print(f"{label}:")
        for name in sorted(cpu):
            planned, refused = outcome[(name, "planned")], outcome[(name, "refused")]
            per = 1000 * cpu[name] / max(planned + refused, 1)
            print(f"  {name:8s} {planned:5d} planned {refused:5d} refused  {per:6.2f} ms/variant")


if __name__ == "__main__":
    main()
