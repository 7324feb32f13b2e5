"""`disagg logs RUN_DIR [--role R] [--follow] [--lines N]` on a run directory's log files."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from disagg.launch.logs import first_error_line, log_sizes, role_logs, tail
from disagg.launch.state import RunState, RunStatus

from .conftest import disagg


def fake_run(run_dir: Path) -> None:
    logs = run_dir / "logs"
    logs.mkdir(parents=True)
    (logs / "orchestrator.log").write_text("12:00:00 run started\n12:00:01 canary ok\n")
    (logs / "decode-0.log").write_text("".join(f"decode line {i}\n" for i in range(100)))
    (logs / "prefill-0.0.log").write_text("node zero\n")
    (logs / "prefill-0.1.log").write_text("node one\n")


def test_role_logs_groups_nodes_of_a_role(tmp_path: Path) -> None:
    fake_run(tmp_path)
    found = role_logs(tmp_path)
    assert sorted(found) == ["decode-0", "orchestrator", "prefill-0"]
    assert [p.name for p in found["prefill-0"]] == ["prefill-0.0.log", "prefill-0.1.log"]
    assert tail(tmp_path / "logs" / "decode-0.log", 3) == [
        "decode line 97",
        "decode line 98",
        "decode line 99",
    ]


def test_logs_command_shows_a_role_and_every_node(tmp_path: Path) -> None:
    fake_run(tmp_path)
    default = disagg("logs", tmp_path)
    assert default.returncode == 0
    assert default.stdout.splitlines() == ["12:00:00 run started", "12:00:01 canary ok"]

    decode = disagg("logs", tmp_path, "--role", "decode-0", "--lines", "2")
    assert decode.stdout.splitlines() == ["decode line 98", "decode line 99"]

    prefill = disagg("logs", tmp_path, "--role", "prefill-0")
    assert "node zero" in prefill.stdout and "node one" in prefill.stdout
    assert "==> " in prefill.stdout  # each node's file is headed by its path


def test_unknown_role_is_a_clear_error(tmp_path: Path) -> None:
    fake_run(tmp_path)
    result = disagg("logs", tmp_path, "--role", "decode-9")
    assert result.returncode == 2
    assert "no log for role 'decode-9'" in result.stderr
    assert "did you mean 'decode-0'" in result.stderr
    assert "Traceback" not in result.stderr
    missing = disagg("logs", tmp_path / "nope")
    assert missing.returncode == 2 and "no such run directory" in missing.stderr


def test_follow_prints_new_lines_until_the_run_ends(tmp_path: Path) -> None:
    fake_run(tmp_path)
    state = RunState(
        name="t", selector="t.yaml", run_dir=str(tmp_path), simulated=True,
        executor="local", orchestrator_pid=1,
    )  # fmt: skip
    state.write(tmp_path)
    log = tmp_path / "logs" / "decode-0.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "disagg", "logs", str(tmp_path), "-r", "decode-0", "-f", "-n", "1"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    first = proc.stdout.readline()  # the tail is printed: now following
    with log.open("a") as handle:
        handle.write("late line\n")
    time.sleep(0.5)
    state.status = RunStatus.COMPLETED
    state.write(tmp_path)
    rest, _ = proc.communicate(timeout=20)

    assert proc.returncode == 0
    assert [first.strip(), *rest.splitlines()] == ["decode line 99", "late line"]


def follow_until_it_returns(run_dir: Path) -> subprocess.CompletedProcess[str]:
    # the timeout only guards the test run itself: a follow that does not end is the bug
    return subprocess.run(
        [sys.executable, "-m", "disagg", "logs", str(run_dir), "-f", "-n", "1"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_follow_returns_on_a_finished_run_whose_state_is_gone(tmp_path: Path) -> None:
    fake_run(tmp_path)  # logs, no state.json, no run lock: nothing runs here

    done = follow_until_it_returns(tmp_path)

    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["12:00:01 canary ok"]


def test_follow_returns_on_a_run_whose_state_is_truncated(tmp_path: Path) -> None:
    fake_run(tmp_path)
    (tmp_path / "state.json").write_text('{"name": "t", "sta')

    done = follow_until_it_returns(tmp_path)

    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr


def test_follow_waits_while_a_live_run_holds_the_directory(tmp_path: Path) -> None:
    from disagg.launch.runlock import hold_run_dir

    fake_run(tmp_path)
    lock = hold_run_dir(tmp_path)  # a run that has not written state.json yet
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "disagg", "logs", str(tmp_path), "-f", "-n", "1"],
            stdout=subprocess.PIPE,
            text=True,
        )
        # The tail is printed after the follower has taken its position, so a line
        # written once the tail is read can only reach it by following.
        assert proc.stdout is not None
        assert proc.stdout.readline() == "12:00:01 canary ok\n"
        assert proc.poll() is None  # still following: the run holds its directory
        with (tmp_path / "logs" / "orchestrator.log").open("a") as handle:
            handle.write("12:00:02 point conc1\n")
    finally:
        lock.release()
    rest, _ = proc.communicate(timeout=20)
    assert proc.returncode == 0
    assert rest.splitlines() == ["12:00:02 point conc1"]


@pytest.mark.parametrize(
    ("line", "found"),
    [
        ("(Worker pid=7) ERROR 12-06 03:14:03 [base_worker.py:1318] NIXL transfer failure", True),
        ("Traceback (most recent call last):", True),
        ("thread 'main' panicked at src/main.rs:3:5:", True),
        ("2026-12-06 CRITICAL engine core died", True),
        ("INFO KV Transfer metrics: Num failed transfers=0", False),
        ("WARNING retrying KV_ERROR_BUDGET", False),
    ],
)
def test_the_first_error_line_after_a_mark_is_found(tmp_path: Path, line: str, found: bool) -> None:
    log = tmp_path / "decode-0.log"
    log.write_text("ERROR before the mark is not this request's\n")
    mark = log_sizes([log])[log]
    with log.open("a") as handle:
        handle.write("INFO request received\n" + line + "\n")
    assert first_error_line(log, mark) == (line if found else None)
    assert first_error_line(tmp_path / "gone.log", 0) is None
