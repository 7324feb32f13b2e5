"""The cross-node directory lock: exclusion between processes, dead and silent holders."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from disagg.staging.locks import DirLock, LockTimeout

HOLDER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from disagg.staging.locks import DirLock
    lock_path, journal, hold_s = Path(sys.argv[1]), Path(sys.argv[2]), float(sys.argv[3])
    with DirLock(lock_path, poll_s=0.01):
        with open(journal, "a") as out:
            out.write("enter\\n")
        print("held", flush=True)
        time.sleep(hold_s)
        with open(journal, "a") as out:
            out.write("leave\\n")
    """
)


def start_holder(lock: Path, journal: Path, hold_s: float) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(lock), str(journal), str(hold_s)],
        stdout=subprocess.PIPE,
        text=True,
    )


def test_processes_never_hold_it_together(tmp_path: Path) -> None:
    lock, journal = tmp_path / "repo.lock", tmp_path / "journal"
    procs = [start_holder(lock, journal, 0.15) for _ in range(3)]
    for proc in procs:
        proc.communicate(timeout=60)
        assert proc.returncode == 0
    assert journal.read_text().split() == ["enter", "leave"] * 3
    assert not lock.exists()


def test_a_killed_holder_on_this_host_is_replaced_quickly(tmp_path: Path) -> None:
    lock = tmp_path / "repo.lock"
    proc = start_holder(lock, tmp_path / "journal", 60)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    notes: list[str] = []
    # Taken over at once because the holder is dead, not after the 600 s stale time:
    # waiting for it would end in LockTimeout.
    with DirLock(lock, stale_after_s=600, timeout_s=120, on_wait=notes.append):
        pass
    assert any("no longer running" in note for note in notes)


def fake_remote_holder(lock: Path) -> None:
    """A lock left by a process on another node: its PID cannot be checked from here."""
    lock.mkdir()
    owner = {
        "host": "node-elsewhere",
        "boot_id": "x",
        "pid_ns": 1,
        "pid": 1,
        "token": "t",
        "beat": 3,
    }
    (lock / "owner.json").write_text(json.dumps(owner))


def test_a_silent_remote_holder_is_broken_after_the_stale_time(tmp_path: Path) -> None:
    lock = tmp_path / "repo.lock"
    fake_remote_holder(lock)
    notes: list[str] = []
    started = time.monotonic()
    with DirLock(lock, stale_after_s=0.5, poll_s=0.02, timeout_s=120, on_wait=notes.append):
        waited = time.monotonic() - started
    assert waited >= 0.5  # broken only once the stale time had passed
    assert notes[0].startswith("waiting for lock") and "node-elsewhere pid 1" in notes[0]
    assert any("no heartbeat" in note for note in notes)


def test_a_live_holder_keeps_its_lock_by_heartbeat(tmp_path: Path) -> None:
    lock = tmp_path / "repo.lock"
    holder = DirLock(lock, stale_after_s=0.4)
    with holder:
        # Pretend the holder is on another node, so only its heartbeat protects it.
        owner = json.loads((lock / "owner.json").read_text())
        assert owner["host"]
        waiter = DirLock(lock, stale_after_s=0.4, poll_s=0.02, timeout_s=1.5)
        waiter._holder_is_dead = lambda owner: False  # type: ignore[method-assign]
        with pytest.raises(LockTimeout) as info:
            waiter.acquire()
        assert "held by" in str(info.value)
        assert json.loads((lock / "owner.json").read_text())["beat"] > owner["beat"]
    assert not holder.lost


def test_a_holder_notices_when_its_lock_was_broken(tmp_path: Path) -> None:
    lock = tmp_path / "repo.lock"
    holder = DirLock(lock, stale_after_s=0.2)
    holder.acquire()
    fresh = tmp_path / "taken-over"
    lock.rename(fresh)  # what a breaker does, then another stager takes it
    fake_remote_holder(lock)
    time.sleep(0.3)
    holder.release()
    assert holder.lost
    assert (lock / "owner.json").exists()  # the new holder's lock is left alone
