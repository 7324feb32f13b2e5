"""Nothing a custom benchmark command starts outlives it: background children in its
process group, `nohup` ones and ones that left the group with `setsid` are stopped when
the command ends, and each one found outside the group is named in the log."""

from __future__ import annotations

import os
import signal
from contextlib import suppress
from pathlib import Path

import pytest
import yaml

from .workload_support import disagg

pytestmark = pytest.mark.slow

RECIPE = Path(__file__).parent / "data" / "sim-custom.yaml"

BACKGROUND = """\
pids="$DISAGG_RESULTS_DIR/background.pids"
sleep 1001 & echo "$!" > "$pids"
nohup sleep 1002 > /dev/null 2>&1 & echo "$!" >> "$pids"
setsid sleep 1003 > /dev/null 2>&1 & echo "$!" >> "$pids"
"""


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def recipe_with_background(tmp_path: Path) -> Path:
    variants = yaml.safe_load(RECIPE.read_text())
    base = variants["base"]
    base["benchmark"]["command"] = BACKGROUND + base["benchmark"]["command"]
    path = tmp_path / "leftovers.yaml"
    path.write_text(yaml.safe_dump({"base": base}, sort_keys=False))
    return path


def test_background_children_of_a_custom_command_end_with_it(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    recipe = recipe_with_background(tmp_path)
    pids: list[int] = []
    try:
        done = disagg("run", f"{recipe}:base", "--local", "--out", run_dir)
        pids = [int(w) for w in (run_dir / "bench-results" / "background.pids").read_text().split()]
        assert done.returncode == 0, done.stderr[-3000:]
        assert len(pids) == 3
        still = [pid for pid in pids if alive(pid)]
        assert still == [], f"left running after the run: {still}"
        log = (run_dir / "logs" / "orchestrator.log").read_text()
        # the one that left the process group is named, by name and PID
        assert f"sleep (pid {pids[2]})" in log
        assert "outside its process group" in log
    finally:
        for pid in pids:
            if alive(pid):
                with suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
