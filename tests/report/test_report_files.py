"""Report files quote each run's resolved configuration, so they are the owner's alone
unless the user shares them (`--shared`: the usual mode, readable by the team); a file
that cannot be written is one error naming it and the cause."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest

from disagg.report.aggregate import load_runs
from disagg.report.build import analyse
from disagg.report.write import ReportNotWritten, write_report

from .report_fixtures import RunFactory


def test_report_files_are_owner_only_by_default(make_run: RunFactory, tmp_path: Path) -> None:
    files = write_report(analyse(load_runs([make_run("r1")])), tmp_path / "out")

    assert files
    for path in files.values():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path.name


def test_shared_report_files_get_the_usual_permissions(
    make_run: RunFactory, tmp_path: Path
) -> None:
    mask = os.umask(0o022)
    os.umask(mask)
    files = write_report(analyse(load_runs([make_run("r1")])), tmp_path / "out", shared=True)

    for path in files.values():
        assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~mask, path.name


def test_a_report_file_that_cannot_be_written_is_named_with_the_cause(
    make_run: RunFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = analyse(load_runs([make_run("r1")]))
    real_fsync = os.fsync
    written: list[int] = []

    def full_after_one(fd: int) -> None:  # the disk fills after the first file
        if written:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        written.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", full_after_one)
    with pytest.raises(ReportNotWritten) as caught:
        write_report(report, tmp_path / "out")

    assert str(caught.value) == (
        f"cannot write {tmp_path / 'out' / 'pareto.png'}: No space left on device"
    )
    assert caught.value.exit_code == 1
    assert not list((tmp_path / "out").glob(".*.tmp"))  # nothing left half-written
