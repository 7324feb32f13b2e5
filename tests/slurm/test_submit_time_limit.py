"""`disagg submit --time-limit`: more time for a resubmission after a TIMEOUT (dry runs)."""

from __future__ import annotations

import json
from pathlib import Path

from disagg.plan.model import Plan

from .cli_support import DATA, PROFILE, disagg

RECIPE = f"{DATA / 'sim-1p1d-2node.yaml'}:base"


def test_resume_with_a_longer_time_limit_rewrites_the_job_and_the_run_limit(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "run"
    first = disagg(
        "submit", RECIPE, "-c", str(PROFILE), "--out", str(run_dir), "-t", "1", "--dry-run"
    )
    assert first.returncode == 0, first.stderr
    plan = Plan.read(run_dir)
    assert (plan.slurm.time_limit, plan.limits.run_timeout_s) == ("1", 54)
    assert "#SBATCH --signal=B:USR1@6" in (run_dir / "job.sbatch").read_text().splitlines()

    again = disagg("submit", "--resume", str(run_dir), "--time-limit", "10", "--dry-run", "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)[0]["run_dir"] == str(run_dir.resolve())
    resumed = Plan.read(run_dir)
    assert (resumed.slurm.time_limit, resumed.limits.run_timeout_s) == ("10", 600 - 60)
    assert "#SBATCH --time=10" in (run_dir / "job.sbatch").read_text().splitlines()
    # the points measured under the old limit stay reusable: nothing else changed
    assert resumed.model_copy(update={"slurm": plan.slurm, "limits": plan.limits}) == plan


def test_a_time_limit_slurm_would_not_read_is_refused(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    done = disagg(
        "submit", RECIPE, "-c", str(PROFILE), "--out", str(run_dir), "-t", "soon", "--dry-run"
    )
    assert done.returncode == 2
    assert "--time-limit 'soon' is not a Slurm time limit" in done.stderr
    assert "Traceback" not in done.stderr
    assert not run_dir.exists()


def test_a_signal_directive_disagg_cannot_tell_from_a_cancel_is_refused(tmp_path: Path) -> None:
    recipe = tmp_path / "r.yaml"
    text = (DATA / "sim-1p1d-2node.yaml").read_text()
    recipe.write_text(text.replace('exclusive: ""', 'exclusive: ""\n    signal: "B:TERM@120"'))
    run_dir = tmp_path / "run"
    out = ("--out", str(run_dir))
    done = disagg("submit", f"{recipe}:base", "-c", str(PROFILE), *out, "--dry-run")
    assert done.returncode == 2
    message = " ".join(done.stderr.split())
    assert "submission refused, nothing was submitted" in message
    assert "signal='B:TERM@120': disagg needs Slurm's time-limit warning as B:USR1@N" in message
    assert "Traceback" not in done.stderr
    assert not run_dir.exists()
