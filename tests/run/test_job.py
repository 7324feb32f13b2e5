"""`python -m disagg.job RUN_DIR`: exit statuses a batch script relies on."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from disagg.launch.state import RunState, RunStatus, RunSummary

from .conftest import PY, disagg, make_plan, python_role, wait_gone


def job(run_dir: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [PY, "-m", "disagg.job", str(run_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_missing_run_dir_is_a_usage_error(tmp_path: Path) -> None:
    proc = subprocess.run(
        [PY, "-m", "disagg.job", str(tmp_path / "nope")], capture_output=True, text=True
    )
    assert proc.returncode == 2
    assert "not a directory" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_broken_plan_is_a_usage_error_naming_the_field(tmp_path: Path) -> None:
    data = json.loads(make_plan([python_role("decode-0", "pass")]).model_dump_json())
    data["bench"]["points"][0]["num_prompts"] = "many"
    (tmp_path / "plan.json").write_text(json.dumps(data))
    proc = subprocess.run([PY, "-m", "disagg.job", str(tmp_path)], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "bench.points.0.num_prompts" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_sigterm_cancels_cleanly_with_exit_3(tmp_path: Path) -> None:
    plan = make_plan([python_role("decode-0", "import time; time.sleep(60)", deadline_s=60)])
    plan.write(tmp_path)
    proc = job(tmp_path)
    pid = None
    deadline = time.monotonic() + 20
    while pid is None and time.monotonic() < deadline:
        state = RunState.read(tmp_path) if (tmp_path / "state.json").exists() else None
        if state and state.roles and state.roles[0].tasks[0].pid:
            pid = state.roles[0].tasks[0].pid
        time.sleep(0.05)
    assert pid is not None, proc.communicate(timeout=5)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=15)

    assert proc.returncode == 3, err
    summary = RunSummary.read(tmp_path)
    assert summary is not None and summary.status is RunStatus.CANCELLED
    assert summary.reason == "received SIGTERM"
    assert wait_gone([pid]) == []


def test_commands_reading_a_run_dir_refuse_a_broken_plan_without_a_traceback(
    tmp_path: Path,
) -> None:
    (tmp_path / "plan.json").write_text('{"name": 1}')
    for args in (
        ["collect", str(tmp_path), "--into", str(tmp_path / "out")],
        ["submit", "--resume", str(tmp_path), "--dry-run"],
        ["stage", str(tmp_path), "--dry-run"],
    ):
        proc = disagg(*args)
        assert proc.returncode == 2, (args, proc.stderr)
        assert "Traceback" not in proc.stderr
        assert "plan" in proc.stderr


def test_a_timed_out_slurm_job_waits_for_slurms_kill_only_when_it_is_near(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # so that Slurm records TIMEOUT; a recipe's own run_timeout far before it frees the nodes
    from disagg import job as job_module

    slept: list[float] = []
    monkeypatch.setattr(job_module.time, "sleep", slept.append)
    plan = make_plan([python_role("decode-0", "pass")])
    plan.slurm.time_limit = "10"  # 600 s
    job_module._await_time_limit(plan, time.time() - 580, None)  # about 20 s left
    job_module._await_time_limit(plan, time.time() - 60, None)  # nine minutes left
    # Slurm's end time wins over the plan's (`scontrol update TimeLimit=` since)
    job_module._await_time_limit(plan, time.time() - 60, time.time() + 30)
    plan.slurm.time_limit = None
    job_module._await_time_limit(plan, time.time() - 580, None)  # no limit known: no wait
    linger = job_module.SLURM_TIMEOUT_LINGER_S
    assert len(slept) == 2
    assert 20 + linger - 10 < slept[0] <= 20 + linger
    assert 30 + linger - 10 < slept[1] <= 30 + linger
