"""Where a command's files go: `--out` must name a directory (never a file, never "", never
a path under a regular file or where this user cannot write), a file output must name a
file it can write, and a recipe's name never places a run directory outside the results
root. Every refusal is exit 2 with one line naming the path and the reason, before any
work: never a traceback from the first write."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from disagg.commands.run import run_dirs_for
from disagg.plan.from_recipe import plans_for

from .conftest import PY, disagg
from .test_full_disk import tmpfs
from .test_run_cli import RECIPE

COMMANDS = {
    "run": ("run", "{recipe}", "--local"),
    "submit": ("submit", "{recipe}", "--dry-run"),
    "report": ("report", "{run}"),
    "collect": ("collect", "{run}", "--allow-simulated"),
}
# every command that writes into an --out directory
DIRECTORY_OUT = {
    **COMMANDS,
    "bench": (
        *("bench", "--url", "http://127.0.0.1:9", "--model", "m", "--num-prompts", "1"),
        *("--isl", "8", "--osl", "8", "--concurrency", "1"),
    ),
}
# every command that writes one file to --out
FILE_OUT = {
    "schema": ("schema",),
    "migrate": ("migrate", "{recipe}"),
    "cluster import": ("cluster", "import", "{cluster}"),
}
CLUSTER = "cluster: east\ndefault_partition: batch\ngpus_per_node: 8\n"


def _args(spec: tuple[str, ...], tmp_path: Path) -> list[str]:
    recipe = tmp_path / "tiny.yaml"
    recipe.write_text(RECIPE)
    cluster = tmp_path / "srtslurm.yaml"
    cluster.write_text(CLUSTER)
    return [a.format(recipe=recipe, run=tmp_path / "no-run", cluster=cluster) for a in spec]


def _error(done: subprocess.CompletedProcess[str]) -> str:
    """The one `error:` line, after a refusal that is bad input and not a traceback."""
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    [line] = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    return line


@pytest.mark.parametrize("name", ["..", ".", "../..", "a/../..", "/etc", ".hidden"])
def test_run_directories_stay_below_the_results_root(tmp_path: Path, name: str) -> None:
    recipe = tmp_path / "tiny.yaml"
    recipe.write_text(RECIPE.replace('name: "tiny-1p1d"', f"name: {name!r}"))
    root = tmp_path / "root" / "runs"
    plans = plans_for([str(recipe)], None)

    dirs = run_dirs_for(plans, None, root)

    for path in dirs:
        assert path.resolve().is_relative_to(root.resolve()), path
        assert path.parent.parent == root  # ROOT/<name>/<variant>-<stamp>
        assert not path.parent.name.startswith(".")


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_out_naming_a_file_is_refused_before_anything_is_written(
    tmp_path: Path, command: str
) -> None:
    recipe = tmp_path / "tiny.yaml"
    recipe.write_text(RECIPE)
    target = tmp_path / "a-file"
    target.write_text("keep me\n")
    args = [a.format(recipe=recipe, run=tmp_path / "no-run") for a in COMMANDS[command]]

    done = disagg(*args, "--out", target)

    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert f"--out {target}: exists and is not a directory" in " ".join(done.stderr.split())
    assert target.read_text() == "keep me\n"


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_empty_out_is_refused_not_taken_as_the_current_directory(
    tmp_path: Path, command: str
) -> None:
    recipe = tmp_path / "tiny.yaml"
    recipe.write_text(RECIPE)
    args = [a.format(recipe=recipe, run=tmp_path / "no-run") for a in COMMANDS[command]]

    here = tmp_path / "cwd"
    here.mkdir()
    done = subprocess.run(
        [PY, "-m", "disagg", *args, "--out", ""],
        capture_output=True,
        text=True,
        cwd=here,
        timeout=120,
        check=False,
    )

    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "--out is empty" in done.stderr
    assert list(here.iterdir()) == []


@pytest.mark.parametrize("command", sorted(DIRECTORY_OUT))
def test_out_under_a_regular_file_is_refused_before_anything_is_written(
    tmp_path: Path, command: str
) -> None:
    args = _args(DIRECTORY_OUT[command], tmp_path)
    blocker = tmp_path / "a-file"
    blocker.write_text("keep me\n")
    before = sorted(tmp_path.iterdir())

    done = disagg(*args, "--out", blocker / "sub" / "dir")

    line = _error(done)
    assert line == f"error: --out {blocker / 'sub' / 'dir'}: {blocker} is not a directory"
    assert blocker.read_text() == "keep me\n"
    assert sorted(tmp_path.iterdir()) == before


@pytest.mark.parametrize("command", sorted(FILE_OUT))
def test_file_out_under_a_regular_file_or_naming_a_directory_is_refused(
    tmp_path: Path, command: str
) -> None:
    args = _args(FILE_OUT[command], tmp_path)
    blocker = tmp_path / "a-file"
    blocker.write_text("keep me\n")

    under = _error(disagg(*args, "--out", blocker / "out.yaml"))
    assert under == f"error: --out {blocker / 'out.yaml'}: {blocker} is not a directory"
    assert blocker.read_text() == "keep me\n"

    directory = tmp_path / "a-dir"
    directory.mkdir()
    assert _error(disagg(*args, "--out", directory)) == f"error: --out {directory}: is a directory"
    assert list(directory.iterdir()) == []


@pytest.mark.parametrize("command", ["run", "submit"])
def test_a_default_results_root_under_a_regular_file_is_refused(
    tmp_path: Path, command: str
) -> None:
    """Without --out, run directories go to ./runs: a file of that name stops the command
    before a variant starts, naming the run directory and the file in the way."""
    args = _args(COMMANDS[command], tmp_path)
    here = tmp_path / "cwd"
    here.mkdir()
    (here / "runs").write_text("not a directory\n")

    done = subprocess.run(
        [PY, "-m", "disagg", *args],
        capture_output=True,
        text=True,
        cwd=here,
        timeout=120,
        check=False,
        env={**os.environ, "COLUMNS": "1000"},
    )

    line = _error(done)
    assert line.startswith("error: run directory runs/tiny-1p1d/base-"), line
    assert line.endswith(": runs is not a directory"), line
    assert sorted(p.name for p in here.iterdir()) == ["runs"]


@contextmanager
def unwritable(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A directory this user cannot write, and why: mode 0555, or for root (who writes
    there anyway) a read-only tmpfs (tests/run/test_full_disk.py's mount)."""
    locked = tmp_path / "locked"
    if os.geteuid() == 0:
        with tmpfs(locked, "size=1m,ro") as mounted:
            yield mounted, f"{mounted} is on a read-only file system"
        return
    locked.mkdir()
    locked.chmod(0o555)
    try:
        yield locked, f"{locked} is not writable (permission denied)"
    finally:
        locked.chmod(0o755)


@pytest.mark.parametrize("command", sorted(DIRECTORY_OUT) + sorted(FILE_OUT))
def test_out_in_a_directory_this_user_cannot_write_is_refused(tmp_path: Path, command: str) -> None:
    args = _args({**DIRECTORY_OUT, **FILE_OUT}[command], tmp_path)
    with unwritable(tmp_path) as (locked, why):
        line = _error(disagg(*args, "--out", locked / "out"))
        assert line == f"error: --out {locked / 'out'}: {why}"
        assert list(locked.iterdir()) == []
