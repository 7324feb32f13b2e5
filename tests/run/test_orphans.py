"""Nothing outlives its run: roles die with their orchestrator, and a re-run stops leftovers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from disagg.launch.local import LocalLauncher
from disagg.launch.orchestrator import Orchestrator, OrchestratorOptions
from disagg.launch.procs import host_id, start_ticks
from disagg.launch.state import RoleState, RunState, TaskState

from .conftest import (
    PY,
    alive,
    disagg,
    make_plan,
    python_role,
    start_run,
    wait_for_phase,
    wait_gone,
)


def role_pids(state: RunState) -> list[int]:
    return [t.pid for r in state.roles for t in r.tasks if t.pid is not None]


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_sigkilled_run_leaves_no_role_and_status_and_follow_say_it_is_dead(
    tmp_path: Path,
) -> None:
    out = tmp_path / "run"
    proc = start_run(out)
    try:
        state = wait_for_phase(out, "measure", proc)
        pids = role_pids(state)
        assert len(pids) == 3  # prefill, decode, router
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

    assert wait_gone(pids, timeout_s=60) == []
    status = disagg("status", out, "--json")
    assert status.returncode == 1, status.stderr
    row = json.loads(status.stdout)
    assert row["status"] == "dead" and row["orchestrator_pid"] == proc.pid
    text = disagg("status", out)
    assert f"orchestrator (pid {proc.pid}) died" in " ".join(text.stdout.split())
    follow = disagg("logs", out, "--follow", timeout=60)  # returns: the run is over
    assert follow.returncode == 0


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_sighup_stops_the_run_like_sigterm(tmp_path: Path) -> None:
    out = tmp_path / "run"
    proc = start_run(out)
    try:
        state = wait_for_phase(out, "measure", proc)
        proc.send_signal(signal.SIGHUP)
        code = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

    assert code == 3
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "cancelled" and summary["reason"] == "received SIGHUP"
    assert wait_gone(role_pids(state)) == []


def _dead_pid() -> int:
    proc = subprocess.Popen([PY, "-c", "pass"])
    proc.wait()
    return proc.pid


def _leftover(code: str) -> subprocess.Popen[bytes]:
    """A role process in its own session, the way a launcher starts one."""
    return subprocess.Popen([PY, "-c", code], start_new_session=True)


def test_rerun_stops_roles_a_dead_orchestrator_left_and_spares_reused_pids(
    tmp_path: Path,
) -> None:
    stubborn = _leftover(
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(300)"
    )
    stranger = _leftover("import time; time.sleep(300)")
    try:
        time.sleep(0.2)  # both have started (their start time is readable)
        tasks = [
            TaskState(
                node_rank=0,
                node="local0",
                log="x",
                pid=stubborn.pid,
                started=start_ticks(stubborn.pid),
            ),
            # a PID whose process is not the one recorded (other start time): not ours
            TaskState(
                node_rank=0,
                node="local0",
                log="y",
                pid=stranger.pid,
                started=(start_ticks(stranger.pid) or 0) - 1,
            ),
        ]
        old = RunState(
            name="t",
            selector="t.yaml:base",
            run_dir=str(tmp_path),
            simulated=True,
            executor="local",
            orchestrator_pid=_dead_pid(),
            orchestrator_host=host_id(),
            orchestrator_started=1,
            roles=[RoleState(name="decode-0", kind="decode", tasks=tasks)],
        )
        old.write(tmp_path)
        plan = make_plan([python_role("decode-0", "import sys; sys.exit(5)")])
        plan.write(tmp_path)
        options = OrchestratorOptions(echo=False, handle_signals=False, stop_grace_s=0.5)

        Orchestrator(tmp_path, plan, LocalLauncher(), options).run()

        assert stubborn.wait(timeout=30) == -signal.SIGKILL  # it ignored SIGTERM
        assert alive(stranger.pid)
        log = (tmp_path / "logs" / "orchestrator.log").read_text()
        assert f"stopped decode-0 (pid {stubborn.pid})" in log
        assert f"pid {stranger.pid}" not in log
    finally:
        for proc in (stubborn, stranger):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def test_status_of_a_live_local_run_is_running(tmp_path: Path) -> None:
    plan = make_plan([python_role("decode-0", "pass")])
    plan.write(tmp_path)
    state = RunState(
        name="t",
        selector="t.yaml:base",
        run_dir=str(tmp_path),
        simulated=True,
        executor="local",
        orchestrator_pid=os.getpid(),
        orchestrator_host=host_id(),
        orchestrator_started=start_ticks(os.getpid()),
    )
    state.write(tmp_path)
    result = disagg("status", tmp_path, "--json")
    assert json.loads(result.stdout)["status"] == "running", result.stderr
    assert result.returncode == 0
