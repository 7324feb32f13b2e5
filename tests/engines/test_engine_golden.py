"""Golden worker command lines (and engine config files) for each engine's recipes in
data/<engine>/ (small recipes written for these tests, each header saying what it covers).

Regenerate after an intended change and review the diff:

    DISAGG_UPDATE_GOLDEN=1 .venv/bin/pytest tests/engines/test_engine_golden.py
"""

from __future__ import annotations

from pathlib import Path

import pytest

from disagg.plan.placement import place
from disagg.recipe.variants import load_variants
from slurm.golden_support import check_golden

from .engine_support import task_lines

RECIPES = Path(__file__).parent / "data"  # small recipes, one feature set each
GOLDEN = Path(__file__).parent / "golden"

CASES = [
    (path.parent.name, path)
    for engine in ("sglang", "vllm", "trtllm")
    for path in sorted((RECIPES / engine).glob("*.yaml"))
]


def test_every_engine_has_its_recipes() -> None:
    """The golden cases are the files under data/: none went missing unnoticed."""
    engines = [engine for engine, _ in CASES]
    assert {e: engines.count(e) for e in engines} == {"sglang": 2, "vllm": 4, "trtllm": 4}


@pytest.mark.parametrize(("engine", "recipe"), CASES, ids=[p.stem for _, p in CASES])
def test_worker_command_lines(engine: str, recipe: Path) -> None:
    parts = []
    for variant in load_variants(recipe):
        plan = place(variant)
        assert plan.engine == engine
        parts.append(f"# {variant.name}\n{task_lines(plan)}")
        for role in plan.roles:  # engine configs the run directory gets (TRT-LLM's YAML)
            for name, text in role.files.items():
                parts.append(f"## {role.name}: {name}\n{text}")
    check_golden(f"{engine}/{recipe.stem}.txt", "".join(parts), directory=GOLDEN)
