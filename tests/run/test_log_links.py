"""Logs are created in the run directory itself: a symbolic link (or FIFO, or hard link)
planted where a log goes is refused, never written through, like state and results."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from disagg.errors import DisaggError
from disagg.launch.local import LocalLauncher
from disagg.launch.orchestrator import Orchestrator, OrchestratorOptions
from disagg.launch.state import RunStatus

from .conftest import make_plan, python_role

OPTIONS = OrchestratorOptions(echo=False, handle_signals=False, stop_grace_s=2.0)
SERVE = "import time; time.sleep(60)"


def planted(run_dir: Path, name: str, victim: Path) -> None:
    logs = run_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    (logs / name).symlink_to(victim)


def test_a_link_planted_as_a_role_log_is_refused_and_not_written_through(
    tmp_path: Path,
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    run_dir = tmp_path / "run"
    planted(run_dir, "decode-0.log", victim)
    plan = make_plan([python_role("decode-0", SERVE)])
    plan.write(run_dir)

    summary = Orchestrator(run_dir, plan, LocalLauncher(), OPTIONS).run()

    assert victim.read_text() == "precious\n"
    assert summary.status is RunStatus.FAILED
    assert summary.reason == (
        f"refusing to write log {run_dir / 'logs' / 'decode-0.log'}: a symbolic link\n"
        "  hint: remove it; disagg creates its logs itself"
    )


def test_a_link_planted_as_the_orchestrator_log_is_refused(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    run_dir = tmp_path / "run"
    planted(run_dir, "orchestrator.log", victim)
    plan = make_plan([python_role("decode-0", SERVE)])

    with pytest.raises(DisaggError, match=r"orchestrator\.log: a symbolic link"):
        Orchestrator(run_dir, plan, LocalLauncher(), OPTIONS)
    assert victim.read_text() == "precious\n"


def test_a_linked_logs_directory_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "logs").symlink_to(elsewhere)
    plan = make_plan([python_role("decode-0", SERVE)])

    with pytest.raises(DisaggError, match="a symbolic link"):
        Orchestrator(run_dir, plan, LocalLauncher(), OPTIONS)
    assert list(elsewhere.iterdir()) == []


@pytest.mark.parametrize("kind", ["fifo", "hardlink"])
def test_a_log_that_is_not_a_plain_file_of_its_own_is_refused(tmp_path: Path, kind: str) -> None:
    from disagg.launch.logs import open_log

    logs = tmp_path / "logs"
    logs.mkdir()
    target = logs / "decode-0.log"
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    if kind == "fifo":
        os.mkfifo(target)
    else:
        os.link(victim, target)

    with pytest.raises(DisaggError, match="refusing to write log"):
        open_log(target)
    assert victim.read_text() == "precious\n"
