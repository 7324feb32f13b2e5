"""Golden worker command lines (and engine config files) for corpus recipes of each engine.

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

RECIPES_ROOT = Path(__file__).resolve().parents[3] / "shared" / "recipes"
GOLDEN = Path(__file__).parent / "golden"

V1 = "srt-slurm-v1.0.68"
RECIPES = {
    "sglang": [
        f"{V1}/h100/1k1k/mtp/h100-fp8-1p1d-max-dep-mtp.yaml",
        f"{V1}/h100/1k1k/stp/h100-fp8-1p2d-max-tp.yaml",
    ],
    "vllm": [
        f"{V1}/vllm/test/qwen3-0.6b-single-gpu.yaml",
        f"{V1}/vllm/nemotron-super-120b/b200-fp4/1k1k/agg-tp1.yaml",
        f"{V1}/vllm/deepseek-v4-pro/GB200/8k1k/disagg-gb200-1p4d-dep8-tp8-c256-c512-offload.yaml",
        f"{V1}/vllm/deepseek-v4-pro/GB200/8k1k/disagg-gb200-3p1d-dep8-dep16-c4096-offload.yaml",
    ],
    "trtllm": [
        f"{V1}/trtllm/gpt-oss-120b/b200-fp4/1k1k/agg-tp1.yaml",
        f"{V1}/trtllm/b200-fp8/1k1k/stp/ctx1_gen3_tp8_batch1024_eplb0_mtp0_4_trtllm_serve.yaml",
        # srt-slurm's default frontend: dynamo.trtllm prefill/decode workers behind Dynamo
        f"{V1}/trtllm/b200-fp8/1k1k/stp/ctx1_gen1_dep8_batch512_eplb0_mtp0_4096.yaml",
        "srt-slurm-2.x/examples/trtllm/trtllm-serve-disagg.yaml",
    ],
}
CASES = [(engine, path) for engine, paths in RECIPES.items() for path in paths]


@pytest.mark.parametrize(("engine", "recipe"), CASES, ids=[Path(p).stem for _, p in CASES])
def test_worker_command_lines(engine: str, recipe: str) -> None:
    parts = []
    for variant in load_variants(RECIPES_ROOT / recipe):
        plan = place(variant)
        assert plan.engine == engine
        parts.append(f"# {variant.name}\n{task_lines(plan)}")
        for role in plan.roles:  # engine configs the run directory gets (TRT-LLM's YAML)
            for name, text in role.files.items():
                parts.append(f"## {role.name}: {name}\n{text}")
    check_golden(f"{engine}/{Path(recipe).stem}.txt", "".join(parts), directory=GOLDEN)
