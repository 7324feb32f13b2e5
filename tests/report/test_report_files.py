"""Report files are shared artefacts: readable by the team like any file the user creates."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from disagg.report.aggregate import load_runs
from disagg.report.build import analyse, write_report

from .report_fixtures import RunFactory


def test_report_files_get_the_usual_permissions(make_run: RunFactory, tmp_path: Path) -> None:
    mask = os.umask(0o022)
    os.umask(mask)
    files = write_report(analyse(load_runs([make_run("r1")])), tmp_path / "out")

    for path in files.values():
        assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~mask, path.name
