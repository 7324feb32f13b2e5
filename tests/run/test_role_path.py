"""A role's command is looked up on the PATH the role runs with, as on a cluster node.

An engine environment (scripts/engine-env) or a profile's `env` puts the engine's bin
first on the workers' PATH only; the orchestrator's own PATH does not have it.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from disagg.errors import DisaggError
from disagg.launch.executor import Task
from disagg.launch.local import LocalLauncher


def _tool(tmp_path: Path) -> Path:
    bin_dir = tmp_path / "engine-bin"
    bin_dir.mkdir()
    tool = bin_dir / "engine-only-tool"
    tool.write_text("#!/bin/sh\necho started from the role PATH\n")
    tool.chmod(0o755)
    return bin_dir


def test_command_found_only_on_the_roles_path_starts(tmp_path: Path) -> None:
    bin_dir = _tool(tmp_path)
    log = tmp_path / "role.log"
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    proc = LocalLauncher().launch(
        Task(role="aggregated-0", node_rank=0, argv=["engine-only-tool"], env=env, log_path=log)
    )
    try:
        while proc.poll() is None:  # the test timeout bounds the wait
            time.sleep(0.05)
    finally:
        proc.stop()
    assert proc.poll() == 0
    assert "started from the role PATH" in log.read_text()


def test_command_on_no_path_is_refused_naming_it(tmp_path: Path) -> None:
    _tool(tmp_path)
    with pytest.raises(DisaggError, match=r"engine-only-tool.*not found"):
        LocalLauncher().launch(
            Task(
                role="aggregated-0",
                node_rank=0,
                argv=["engine-only-tool"],
                env={},
                log_path=tmp_path / "role.log",
            )
        )
