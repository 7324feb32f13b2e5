"""Two MI355X variants, switched to the simulated engine, run as real jobs on the local Slurm.

The recipe is the shipped family with one override on top (`backend.engine: sim`
and a smaller workload); the topology, the AMD profile settings and every code
path from `disagg submit` to the result files are the ones a real cluster uses.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from slurm.conftest import job_state, wait_job_end

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
FAMILY = ROOT / "examples" / "mi355x" / "dsr1-fp4-disagg.yaml"
VARIANTS = {"override_stp_1p1d_tp8": [1, 2], "override_mtp3_1p2d_tp8_narrow": [2, 4]}


def simulated_family(tmp_path: Path) -> Path:
    """The family with the simulated engine and a laptop-sized workload."""
    yaml = YAML()
    doc: Any = yaml.load(FAMILY.read_text())
    doc["base"]["backend"]["engine"] = "sim"
    doc["base"]["benchmark"].update({"isl": 256, "osl": 16, "num_prompts_mult": 2})
    for name, concurrencies in VARIANTS.items():
        doc[name]["benchmark"]["concurrencies"] = concurrencies
    out = tmp_path / "dsr1-fp4-sim.yaml"
    with out.open("w") as handle:
        yaml.dump(doc, handle)
    return out


def local_amd_profile(tmp_path: Path) -> Path:
    """The local rig's partition and nodes, with the MI355X profile's AMD settings."""
    yaml = YAML()
    profile: Any = yaml.load((ROOT / "examples" / "clusters" / "mi355x.yaml").read_text())
    for key in ("account", "hf_cache", "legacy_cache_roots", "results_root", "mounts"):
        profile.pop(key, None)
    profile.update(
        {"partition": "debug", "exclusive": False, "time_limit": "00:10:00", "pyxis": False}
    )
    profile["network_interface"] = "lo"
    out = tmp_path / "local-amd.yaml"
    with out.open("w") as handle:
        yaml.dump(profile, handle)
    return out


def test_two_simulated_variants_complete_on_slurm(slurm_cluster: list[str], tmp_path: Path) -> None:
    recipe = simulated_family(tmp_path)
    profile = local_amd_profile(tmp_path)
    runs = tmp_path / "runs"
    submitted = []
    for name in VARIANTS:
        done = subprocess.run(
            [
                *(sys.executable, "-m", "disagg", "submit", f"{recipe}:{name}"),
                *("--cluster", str(profile), "--out", str(runs / name), "--json"),
            ],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env=dict(os.environ),
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        [row] = json.loads(done.stdout)
        submitted.append((name, str(row["job_id"]), Path(row["run_dir"])))
    for name, job_id, run_dir in submitted:
        state = wait_job_end(job_id, timeout_s=180)
        log = run_dir / f"slurm-{job_id}.out"
        assert state == "COMPLETED", log.read_text() if log.exists() else job_state(job_id)
        plan = json.loads((run_dir / "plan.json").read_text())
        assert plan["simulated"] and plan["gpu_vendor"] == "amd"
        summary = json.loads((run_dir / "summary.json").read_text())
        assert summary["status"] == "completed"
        points = summary["points"]
        assert [p["status"] for p in points] == ["measured"] * len(VARIANTS[name])
        for point in points:
            result = json.loads(Path(point["result"]).read_text())
            assert result["valid"] is True and result["simulated"] is True
            assert result["completed"] == max(16, 2 * result["max_concurrency"])
            assert result["total_output_tokens"] == 16 * result["completed"]
        gpus = {"override_stp_1p1d_tp8": (8, 8), "override_mtp3_1p2d_tp8_narrow": (8, 16)}[name]
        assert (result["num_prefill_gpu"], result["num_decode_gpu"]) == gpus
