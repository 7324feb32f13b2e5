"""One run per run directory: a second one is refused naming the first; a dead holder's lock
is taken over."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
from pathlib import Path

import pytest

from disagg import job
from disagg.launch.runlock import RUN_LOCK, RunDirBusy, hold_run_dir

from .conftest import PY, SIM_RECIPE, disagg, make_plan, python_role, start_run, wait_for_phase


def _dead_pid() -> int:
    proc = subprocess.Popen([PY, "-c", "pass"])
    proc.wait()
    return proc.pid


def _identity_of(pid: int) -> dict[str, object]:
    boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    pid_ns = os.stat("/proc/self/ns/pid").st_ino
    return {"host": socket.gethostname(), "boot_id": boot, "pid_ns": pid_ns, "pid": pid}


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_second_run_into_a_busy_directory_is_refused_naming_the_first(tmp_path: Path) -> None:
    out = tmp_path / "run"
    first = start_run(out)
    try:
        wait_for_phase(out, "measure", first)
        second = disagg("run", SIM_RECIPE, "--local", "--out", out)
        assert second.returncode == 2
        message = " ".join(second.stderr.split())
        assert f"{out} is in use by another run: {socket.gethostname()} pid {first.pid}" in message
        assert "Traceback" not in second.stderr
        first.send_signal(signal.SIGTERM)
        assert first.wait(timeout=120) == 3  # the first went on until cancelled
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert not (out / RUN_LOCK).exists()  # released when it ended


def test_a_lock_left_by_a_dead_process_is_taken_over(tmp_path: Path) -> None:
    lock_dir = tmp_path / RUN_LOCK
    lock_dir.mkdir()
    (lock_dir / "owner.json").write_text(json.dumps(_identity_of(_dead_pid())))
    said: list[str] = []

    lock = hold_run_dir(tmp_path, log=said.append)
    try:
        assert any("broke stale lock" in line and "no longer running" in line for line in said)
        with pytest.raises(RunDirBusy, match=f"pid {os.getpid()}"):
            hold_run_dir(tmp_path)  # now held by this live process
    finally:
        lock.release()
    hold_run_dir(tmp_path).release()  # and free again once released


def test_the_job_refuses_a_directory_another_live_run_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    make_plan([python_role("decode-0", "pass")]).write(tmp_path)
    monkeypatch.setattr(job, "LOCK_WAIT_S", 0.0)
    lock = hold_run_dir(tmp_path)
    try:
        code = job.main([str(tmp_path)])
    finally:
        lock.release()
    assert code == 2
    assert f"is in use by another run: {socket.gethostname()} pid {os.getpid()}" in (
        capsys.readouterr().err
    )
    assert not (tmp_path / "state.json").exists()  # nothing of the second run started
