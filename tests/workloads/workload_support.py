"""The CLI as a user runs it, for the benchmark-type tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def disagg(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """`python -m disagg ARGS` in a child process; its exit code and output, never raised."""
    return subprocess.run(
        [sys.executable, "-m", "disagg", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
