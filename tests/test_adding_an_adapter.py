"""Adding an engine or a frontend is adding its module: nothing else in the tree changes.

A copy of the package gets one new engine module and one new frontend module (each a
subclass of an existing adapter under a new name), and nothing else; a recipe that names
them plans with them. Without the modules the same recipe is refused, naming the types.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import disagg

EXAMPLE = Path(__file__).parents[1] / "examples" / "sim" / "agg.yaml"

ENGINE_MODULE = '''"""A new engine: SGLang's command line under another name."""

from typing import ClassVar

from disagg.engines.sglang import SGLang


class Toy(SGLang):
    name: ClassVar[str] = "toy"


ADAPTER = Toy()
'''

FRONTEND_MODULE = '''"""A new frontend type: smg's plan under another name."""

from disagg.frontends.smg import RouterFrontend

TYPES = ("toy-router",)


class ToyRouter(RouterFrontend):
    pass


ADAPTER = ToyRouter()
'''


def _package_copy(root: Path) -> Path:
    """The installed package copied under `root`/src, without bytecode."""
    src = root / "src"
    shutil.copytree(
        Path(disagg.__file__).parent, src / "disagg", ignore=shutil.ignore_patterns("__pycache__")
    )
    return src


def _recipe(root: Path) -> Path:
    """The shipped aggregated example on a real GPU type, naming the toy engine and router."""
    text = EXAMPLE.read_text()
    for old, new in (
        ("type: sglang\n", "type: toy\n"),
        ("sglang_config:", "toy_config:"),
        ('type: "sglang-router"', 'type: "toy-router"'),
        ("  engine: sim\n", ""),
        ('gpu_type: "sim"', 'gpu_type: "h100"'),
    ):
        assert old in text, old
        text = text.replace(old, new)
    path = root / "toy.yaml"
    path.write_text(text)
    return path


def _plan(src: Path, recipe: Path) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    env.pop("SRTSLURM_CONFIG", None)
    done = subprocess.run(
        [sys.executable, "-m", "disagg", "plan", str(recipe), "--json"],
        cwd=recipe.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    out: dict[str, Any] = json.loads(done.stdout)
    return out


def test_a_new_engine_and_frontend_are_one_module_each(tmp_path: Path) -> None:
    src = _package_copy(tmp_path)
    recipe = _recipe(tmp_path)

    refused = _plan(src, recipe)
    assert refused["variants"] == []
    [error] = refused["errors"]
    assert "backend.toy_config" in error["error"] and "got text ('toy')" in error["error"]

    (src / "disagg" / "engines" / "toy.py").write_text(ENGINE_MODULE)
    (src / "disagg" / "frontends" / "toy_router.py").write_text(FRONTEND_MODULE)
    planned = _plan(src, recipe)
    assert planned["errors"] == [] and planned["unsupported"] == []
    [plan] = planned["variants"]
    assert plan["engine"] == "toy" and plan["backend"] == "toy"
    roles = {role["name"]: role for role in plan["roles"]}
    worker = roles["aggregated-0"]["argv"]
    assert worker[:3] == ["python3", "-m", "sglang.launch_server"]
    assert worker[worker.index("--tp-size") + 1] == "2"  # read from toy_config
    assert roles["router"]["argv"][1:3] == ["-m", "smg.launch_router"]
