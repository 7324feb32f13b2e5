"""`disagg --help`, `lint FILE` and `plan FILE` start fast because they import only what they use.

Each command runs in a fresh interpreter that reports, when the command has finished,
which modules were loaded. The libraries and areas named here belong to other commands
(migrate, report, bench, run, stage); one of them showing up means a module started
importing it at the top again, and every short command pays for it on every start
(benchmarks/startup.py prints the times).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .recipe_helpers import MINIMAL

# Libraries none of the three commands needs (comment-keeping YAML, charts, HTTP, HF hub).
LIBRARIES = ("ruamel", "matplotlib", "plotly", "aiohttp", "uvloop", "huggingface_hub", "numpy")
# disagg areas none of them needs.
AREAS = ("disagg.launch", "disagg.bench", "disagg.staging", "disagg.recipe.migrate")

_REPORT = """
import atexit, json, pathlib, sys
out = pathlib.Path(sys.argv[1])
atexit.register(lambda: out.write_text(json.dumps(sorted(sys.modules))))
gc_out = out.with_suffix(".gc")
atexit.register(lambda: gc_out.write_text(json.dumps(__import__("gc").get_threshold())))
sys.argv = ["disagg", *sys.argv[2:]]
from disagg.cli import main
main()
"""


def _modules(tmp_path: Path, *args: str) -> list[str]:
    out = tmp_path / "modules.json"
    done = subprocess.run(
        [sys.executable, "-c", _REPORT, str(out), *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert out.exists(), done.stderr
    modules: list[str] = json.loads(out.read_text())
    return modules


def _heavy(modules: list[str]) -> list[str]:
    return [
        name
        for name in modules
        if name.split(".")[0] in LIBRARIES
        or any(name == area or name.startswith(area + ".") for area in AREAS)
    ]


@pytest.fixture
def recipe(tmp_path: Path) -> Path:
    path = tmp_path / "recipe.yaml"
    path.write_text(MINIMAL)
    return path


def test_help_imports_no_recipe_machinery(tmp_path: Path) -> None:
    modules = _modules(tmp_path, "--help")
    assert _heavy(modules) == []
    assert "pydantic.main" not in modules  # no model is built to print help
    assert "disagg.recipe.lint.runner" not in modules


def _command_areas(modules: list[str]) -> list[str]:
    """The `disagg.commands` areas imported (options is what every command shares)."""
    return [m for m in modules if m.startswith("disagg.commands.") and not m.endswith(".options")]


def test_lint_file_imports_only_what_lint_uses(tmp_path: Path, recipe: Path) -> None:
    modules = _modules(tmp_path, "lint", str(recipe))
    assert "disagg.recipe.lint.runner" in modules  # the command did run
    assert _heavy(modules) == []
    assert _command_areas(modules) == ["disagg.commands.lint"]
    # findings print through typer's own styling; rich is for tables (plan, report)
    assert [m for m in modules if m.split(".")[0] == "rich"] == []


def test_plan_file_imports_only_what_plan_uses(tmp_path: Path, recipe: Path) -> None:
    modules = _modules(tmp_path, "plan", str(recipe))
    assert "disagg.plan.placement" in modules  # the command did run
    assert _heavy(modules) == []
    assert "disagg.recipe.lint.runner" not in modules
    assert _command_areas(modules) == ["disagg.commands.recipes"]
    assert [m for m in modules if m.split(".")[0] == "rich"] == []  # plain aligned lines


def test_commands_run_with_disaggs_collector_thresholds(tmp_path: Path, recipe: Path) -> None:
    """A corpus linted or planned in one process is not walked by the collector every
    700 allocations (disagg.gc_settings says why)."""
    from disagg.gc_settings import THRESHOLDS

    _modules(tmp_path, "lint", str(recipe))
    assert tuple(json.loads((tmp_path / "modules.gc").read_text())) == THRESHOLDS
