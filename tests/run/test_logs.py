"""`disagg logs RUN_DIR [--role R] [--follow] [--lines N]` on a run directory's log files."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from disagg.launch.logs import role_logs, tail
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
