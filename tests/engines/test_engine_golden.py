"""Golden worker command lines for corpus recipes of each engine: what every node starts.

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

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "recipes" / "srt-slurm-v1.0.68"
GOLDEN = Path(__file__).parent / "golden"

RECIPES = {
    "vllm": [
        "vllm/test/qwen3-0.6b-single-gpu.yaml",
        "vllm/nemotron-super-120b/b200-fp4/1k1k/agg-tp1.yaml",
        "vllm/deepseek-v4-pro/GB200/8k1k/disagg-gb200-1p4d-dep8-tp8-c256-c512-offload.yaml",
        "vllm/deepseek-v4-pro/GB200/8k1k/disagg-gb200-3p1d-dep8-dep16-c4096-offload.yaml",
    ],
}
CASES = [(engine, path) for engine, paths in RECIPES.items() for path in paths]


@pytest.mark.parametrize(("engine", "recipe"), CASES, ids=[Path(p).stem for _, p in CASES])
def test_worker_command_lines(engine: str, recipe: str) -> None:
    parts = []
    for variant in load_variants(CORPUS / recipe):
        plan = place(variant)
        assert plan.engine == engine
        parts.append(f"# {variant.name}\n{task_lines(plan)}")
    check_golden(f"{engine}/{Path(recipe).stem}.txt", "".join(parts), directory=GOLDEN)
