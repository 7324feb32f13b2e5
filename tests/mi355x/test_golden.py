"""Golden files for the MI355X family: job.sbatch and every role's srun line.

Three variants cover the shapes that differ: STP 1P1D TP8, STP 2P1D DEP8 and MTP3
1P2D TP8 (with the draft model). Regenerate after an intended change with
`DISAGG_UPDATE_GOLDEN=1 .venv/bin/pytest tests/mi355x/test_golden.py` and review
the diff.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from disagg.launch.slurm import render
from disagg.plan.from_recipe import plans_for
from slurm.golden_support import check_golden, srun_lines

ROOT = Path(__file__).resolve().parents[2]
FAMILY = ROOT / "examples" / "mi355x" / "dsr1-fp4-disagg.yaml"
PROFILE = ROOT / "examples" / "clusters" / "mi355x.yaml"
GOLDEN = Path(__file__).parent / "golden"
RUN_DIR = Path("/shared/results/disagg/mi355x-dsr1-fp4/run-20260101T000000Z")
PYTHON = "/shared/disagg/.venv/bin/python"
NODES = ["mi355x-001", "mi355x-002", "mi355x-003"]
SNAPSHOTS = "/shared/hf/hub/models--{}/snapshots/0123456789abcdef"

VARIANTS = ["override_stp_1p1d_tp8", "override_stp_2p1d_dep8", "override_mtp3_1p2d_tp8_wide"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_job_sbatch(variant: str) -> None:
    [plan] = plans_for([f"{FAMILY}:{variant}"], PROFILE)
    check_golden(f"{variant}.sbatch", render(plan, RUN_DIR, python=PYTHON), directory=GOLDEN)


@pytest.mark.parametrize("variant", VARIANTS)
def test_role_command_lines(variant: str) -> None:
    [plan] = plans_for([f"{FAMILY}:{variant}"], PROFILE)
    lines = srun_lines(
        plan,
        nodes=NODES,
        run_dir=RUN_DIR,
        model_path=SNAPSHOTS.format("amd--DeepSeek-R1-0528-MXFP4-v2"),
        draft_path=SNAPSHOTS.format("SGLang--DeepSeek-R1-NextN"),
        python=PYTHON,
    )
    check_golden(f"{variant}.srun.txt", lines, directory=GOLDEN)
    # AMD: every worker is pinned with the HIP/ROCR variables, never CUDA's
    for line in lines.splitlines():
        if "sglang.launch_server" in line:
            assert "HIP_VISIBLE_DEVICES=0,1,2,3,4,5,6,7" in line
            assert "ROCR_VISIBLE_DEVICES=0,1,2,3,4,5,6,7" in line
            assert "CUDA_VISIBLE_DEVICES" not in line
