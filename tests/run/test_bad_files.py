"""Files disagg reads that are not what they should be: a device, a FIFO, a huge file, a
truncated or foreign record. Every command that reads one says which file and why, exits
2, and does so in bounded time and memory (one reader per kind of file)."""

from __future__ import annotations

import json
import os
import resource
import subprocess
from pathlib import Path

import pytest

from .conftest import PY, make_plan, python_role
from .test_run_cli import RECIPE

MEMORY_CAP = 4 * 1024**3  # far over what any of these commands needs; /dev/zero would not fit


def capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def disagg(*args: str | Path) -> subprocess.CompletedProcess[str]:
    # the timeout only guards the test run: a command waiting on a FIFO is the bug
    return subprocess.run(
        [PY, "-m", "disagg", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=capped,
        env={**os.environ, "COLUMNS": "1000"},
        check=False,
    )


def said(done: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    return " ".join(done.stderr.split())


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe.yaml"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("command", ["plan", "migrate", "lint"])
def test_a_device_named_as_a_recipe_is_refused(command: str) -> None:
    done = disagg(command, "/dev/zero")

    assert done.returncode == 2, done.stderr[-2000:]
    assert "/dev/zero: a device, not a file" in said(done) or (
        command == "lint" and "not a regular file" in done.stdout + done.stderr
    )


@pytest.mark.parametrize("command", ["plan", "migrate"])
def test_a_fifo_named_as_a_recipe_is_refused_not_awaited(command: str, fifo: Path) -> None:
    done = disagg(command, fifo)

    assert done.returncode == 2, done.stderr[-2000:]
    assert f"{fifo.name}: a FIFO, not a file" in said(done)


def run_dir_with_plan(tmp_path: Path) -> Path:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    make_plan([python_role("decode-0", "pass")]).write(run_dir)
    return run_dir


STATES = {
    "truncated": lambda p: p.write_text('{"name": "t", "selector": "t.yaml:base", "run_'),
    "foreign": lambda p: p.write_text(json.dumps({"format": "other-tool", "version": 3})),
    "a list": lambda p: p.write_text("[]"),
    "nested deep": lambda p: p.write_text("[" * 100_000 + "]" * 100_000),
    "/dev/zero": lambda p: p.symlink_to("/dev/zero"),
    "a FIFO": lambda p: os.mkfifo(p),
    "a directory": lambda p: p.mkdir(),
}


@pytest.mark.parametrize("kind", sorted(STATES))
def test_status_of_a_run_with_a_broken_state_names_the_file(tmp_path: Path, kind: str) -> None:
    run_dir = run_dir_with_plan(tmp_path)
    state = run_dir / "state.json"
    STATES[kind](state)

    done = disagg("status", run_dir)

    assert done.returncode == 2, done.stdout + done.stderr[-2000:]
    assert str(state) in said(done)


@pytest.mark.parametrize("kind", ["truncated", "foreign", "/dev/zero"])
def test_submit_resume_of_a_run_with_a_broken_state_names_the_file(
    tmp_path: Path, kind: str
) -> None:
    run_dir = run_dir_with_plan(tmp_path)
    state = run_dir / "state.json"
    STATES[kind](state)

    done = disagg("submit", "--resume", run_dir, "--dry-run")

    assert done.returncode == 2, done.stdout + done.stderr[-2000:]
    assert str(state) in said(done)


@pytest.mark.parametrize("kind", ["truncated", "/dev/zero", "a FIFO"])
def test_a_broken_plan_is_refused_by_every_command_that_reads_it(tmp_path: Path, kind: str) -> None:
    run_dir = run_dir_with_plan(tmp_path)
    plan = run_dir / "plan.json"
    plan.unlink()
    STATES[kind](plan)

    for args in (("report", run_dir), ("submit", "--resume", run_dir, "--dry-run")):
        done = disagg(*args)
        assert done.returncode == 2, (args, done.stdout + done.stderr[-2000:])
        assert str(plan) in said(done) or "plan.json" in said(done)


@pytest.mark.parametrize("kind", ["/dev/zero", "a FIFO"])
def test_a_result_that_is_not_a_file_is_skipped_with_its_name(tmp_path: Path, kind: str) -> None:
    recipe = tmp_path / "tiny.yaml"
    recipe.write_text(RECIPE)
    run_dir = tmp_path / "run"
    first = disagg("run", recipe, "--local", "--out", run_dir)
    assert first.returncode == 0, first.stderr[-3000:]
    bad = run_dir / "results" / "tiny-1p1d_conc999_bad.json"
    STATES[kind](bad)

    done = disagg("report", run_dir, "--out", tmp_path / "report")

    assert done.returncode == 0, done.stderr[-3000:]
    assert bad.name in said(done)


def test_a_50_mb_recipe_is_still_read_and_one_past_the_bound_is_refused(tmp_path: Path) -> None:
    from disagg.errors import DisaggError
    from disagg.probe import MAX_RECIPE_BYTES
    from disagg.recipe.load import read_text

    big = tmp_path / "big.yaml"
    padding = "# " + "x" * 1022 + "\n"
    big.write_text(RECIPE + padding * (50 * 1024))  # 50 MB of comments: a real file's text
    assert read_text(big).startswith(RECIPE)

    huge = tmp_path / "huge.yaml"
    with huge.open("wb") as handle:
        handle.truncate(MAX_RECIPE_BYTES + 1)  # sparse: refused by its size, not read
    with pytest.raises(DisaggError, match=r"huge\.yaml: larger than 64 MiB"):
        read_text(huge)


def test_the_reader_uses_memory_for_what_it_reads_not_for_its_bound(tmp_path: Path) -> None:
    import tracemalloc

    from disagg.probe import read_limited

    small = tmp_path / "small.json"
    small.write_text("{}")
    tracemalloc.start()
    try:
        assert read_limited(small, what="record", limit=64 * 2**20) == b"{}"
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2**20
    # a file that says size 0 (as /proc files do) is still read to its end
    assert read_limited("/proc/self/status", what="file", limit=2**20).startswith(b"Name:")
    grown = tmp_path / "grown.json"
    grown.write_bytes(b"x" * 100)
    from disagg.errors import DisaggError

    with pytest.raises(DisaggError, match="larger than"):
        read_limited(grown, what="record", limit=99)
