"""The CLI as a user runs it, for the benchmark-type tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from disagg.launch.state import PointStatus, RunStatus, RunSummary


def disagg(
    *args: str | Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`python -m disagg ARGS` in a child process (in `env` when given); its exit code and
    output, never raised."""
    return subprocess.run(
        [sys.executable, "-m", "disagg", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=env,
    )


def one_measured_point(run_dir: Path, key: str) -> Path:
    """The result file of a completed run whose only point is `key`, measured."""
    summary = RunSummary.read(run_dir)
    assert summary is not None and summary.status is RunStatus.COMPLETED
    assert [(p.key, p.status) for p in summary.points] == [(key, PointStatus.MEASURED)]
    result = summary.points[0].result
    assert result is not None
    return Path(result)
