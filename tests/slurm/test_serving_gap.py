"""A decode worker on another Slurm node pauses during a point, then comes back.

The pause (SIGSTOP, then SIGCONT a few seconds later) is far shorter than the
recipe's liveness limit, so the job goes on; the point it paused in is measured
once more and the job completes with every point a result.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

import pytest

from .cli_support import assert_nothing_left, read_json, role_processes, submit, wait_for
from .conftest import wait_job_end

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

PAUSE_S = 6.0  # over the recipe's serving_gap (3 s), far under its liveness_timeout (120 s)


def test_a_point_a_remote_worker_paused_in_is_measured_again(
    slurm_cluster: list[str], tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    job_id = submit("override_paused", run_dir)

    def measuring() -> bool:
        state = read_json(run_dir / "state.json")
        return state.get("phase") == "measure" and state.get("current_point") is not None

    wait_for(measuring, 120, "the first point to start")
    victims = wait_for(lambda: role_processes(run_dir).get("decode-1"), 10, "decode-1's process")
    try:
        for pid in victims:
            os.kill(pid, signal.SIGSTOP)
        time.sleep(PAUSE_S)  # the fault's length, not a check of any speed
    finally:
        for pid in victims:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
    assert wait_job_end(job_id, timeout_s=300) == "COMPLETED", (
        run_dir / f"slurm-{job_id}.out"
    ).read_text()

    summary = read_json(run_dir / "summary.json")
    assert summary["status"] == "completed"
    points = summary["points"]
    assert [p["status"] for p in points] == ["measured"] * len(points)
    again = [p for p in points if p["attempts"] == 2]
    assert len(again) == 1, points
    assert again[0]["discarded"][0].startswith("role decode-1 stopped serving for ")
    assert all(p["attempts"] == 1 for p in points if p is not again[0])
    for point in points:
        assert read_json(Path(point["result"]))["valid"] is True
    assert_nothing_left(run_dir, job_id)
