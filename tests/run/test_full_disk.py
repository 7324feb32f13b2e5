"""A run directory on a full or read-only file system: the run keeps its points and ends
with its own exit status; the report step then fails like any other step, in one line
naming the file and the cause, never as a traceback.

The file systems are real: a 2 MB tmpfs (the run's records fit, a report with charts
does not) and a read-only one, mounted for the test and unmounted after. Mounting needs
root; elsewhere these tests skip, naming it (the report's own write errors are covered by
tests/report/test_report_files.py without a mount), and fail where DISAGG_REQUIRE_TMPFS=1
says the mount must work (CI, .ci/run).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from needs import unavailable

from .conftest import PY
from .test_run_cli import RECIPE

TMPFS_GUARD = "DISAGG_REQUIRE_TMPFS"


@contextmanager
def tmpfs(where: Path, options: str) -> Iterator[Path]:
    where.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        unavailable("needs root, to mount a tmpfs", TMPFS_GUARD)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        unavailable(f"needs a tmpfs mount, refused here: {mounted.stderr.strip()}", TMPFS_GUARD)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PY, "-m", "disagg", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "COLUMNS": "1000"},  # one message, one line
    )


def test_a_full_run_directory_keeps_the_points_and_the_report_fails_in_one_line(
    tmp_path: Path,
) -> None:
    recipe = tmp_path / "tiny.yaml"
    recipe.write_text(RECIPE)
    with tmpfs(tmp_path / "small", "size=2m") as small:
        run_dir = small / "run"
        done = run("run", recipe, "--local", "--out", run_dir, "--json")

        assert "Traceback" not in done.stderr, done.stderr[-3000:]
        summary = json.loads((run_dir / "summary.json").read_text())
        assert summary["status"] == "completed"
        assert done.returncode == summary["exit_code"] == 0
        assert all(p["status"] == "measured" for p in summary["points"])
        assert all(Path(p["result"]).is_file() for p in summary["points"])
        lines = [line for line in done.stderr.splitlines() if "report not rendered" in line]
        assert len(lines) == 1, done.stderr[-3000:]
        found = re.fullmatch(
            r"report not rendered: cannot write (\S+): No space left on device", lines[0]
        )
        assert found is not None, lines
        assert Path(found[1]).parent == run_dir / "report"
        assert json.loads(done.stdout)["report"] is None


def test_report_into_a_read_only_directory_is_refused_in_one_line_exit_2(tmp_path: Path) -> None:
    """An --out on a read-only file system is bad input, refused before any file is made."""
    recipe = tmp_path / "tiny.yaml"
    recipe.write_text(RECIPE)
    run_dir = tmp_path / "run"
    first = run("run", recipe, "--local", "--out", run_dir)
    assert first.returncode == 0, first.stderr[-3000:]
    with tmpfs(tmp_path / "ro", "size=1m,ro") as read_only:
        done = run("report", run_dir, "--out", read_only / "report")

        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr
        [line] = [line for line in done.stderr.splitlines() if line.startswith("error:")]
        assert line == (
            f"error: --out {read_only / 'report'}: {read_only} is on a read-only file system"
        )
        assert list(read_only.iterdir()) == []
    assert (run_dir / "summary.json").is_file()


def test_a_run_onto_a_read_only_file_system_is_refused_before_it_starts(tmp_path: Path) -> None:
    recipe = tmp_path / "tiny.yaml"
    recipe.write_text(RECIPE)
    with tmpfs(tmp_path / "ro", "size=1m,ro") as read_only:
        done = run("run", recipe, "--local", "--out", read_only / "run")

        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr
        assert f"{read_only} is on a read-only file system" in done.stderr
        assert list(read_only.iterdir()) == []
