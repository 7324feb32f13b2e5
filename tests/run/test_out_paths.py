"""Where a run's files go: `--out` must name a directory (never a file, never ""), and a
recipe's name never places a run directory outside the results root."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from disagg.commands.run import run_dirs_for
from disagg.plan.from_recipe import plans_for

from .conftest import PY, disagg
from .test_run_cli import RECIPE

COMMANDS = {
    "run": ("run", "{recipe}", "--local"),
    "submit": ("submit", "{recipe}", "--dry-run"),
    "report": ("report", "{run}"),
    "collect": ("collect", "{run}", "--allow-simulated"),
}


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
