"""Helpers shared by the recipe tests: the corpus location, a minimal recipe, the real CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

# the team's corpus, for the tests that sweep it (tests/needs.py)
from needs import CORPUS as CORPUS
from needs import SHARED_RECIPES as SHARED_RECIPES

# Shared recipes that srtctl itself rejects, with the error disagg gives (bad input, exit 2);
# tests that walk the trees for other properties pass over them.
BAD_INPUT = {
    # srtctl: "benchmark.command is required for benchmark.type=custom"
    "inferencex-schema2/dsv41flash/vllm/h100-fp4/agentx/agg-tp8-dspark5.yaml": (
        "benchmark type custom needs a command"
    ),
}


def bad_input(path: Path) -> bool:
    """Whether `path` is one of the shared recipes srtctl itself rejects (BAD_INPUT)."""
    found = path.resolve()
    root = SHARED_RECIPES.resolve()
    return found.is_relative_to(root) and found.relative_to(root).as_posix() in BAD_INPUT


MINIMAL = """\
name: tiny
model:
  path: hf:org/tiny
  container: sglang
  precision: bf16
resources:
  gpu_type: h100
  gpus_per_node: 8
  prefill_nodes: 1
  prefill_workers: 1
  decode_nodes: 1
  decode_workers: 1
backend:
  sglang_config:
    prefill:
      tp-size: 8
    decode:
      tp-size: 8
benchmark:
  type: sa-bench
  isl: 1024
  osl: 128
  concurrencies: "1x4"
frontend:
  type: sglang
  enable_multiple_frontends: false
"""


def disagg(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run the real `disagg` entry point in a subprocess."""
    return subprocess.run(
        [sys.executable, "-m", "disagg", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=cwd,
    )


def invoke(*args: str) -> tuple[int, str, str]:
    """Run the CLI in-process like `disagg.cli.main`: (exit code, stdout, error text).

    Faster than a subprocess; `main`'s only extra is printing `error: <message>`.
    """
    from typer.testing import CliRunner

    from disagg.cli import _register, app
    from disagg.errors import DisaggError

    _register()  # every command, once (`main` registers only the one it runs)
    result = CliRunner().invoke(app, list(args))
    error = result.exception
    if isinstance(error, DisaggError):
        return error.exit_code, result.stdout, f"error: {error}"
    if error is not None and not isinstance(error, SystemExit):
        raise error
    return result.exit_code, result.stdout, result.stderr


def after_loading(recipe: Path, imports: str, expression: str) -> Any:
    """`expression`, as JSON from a fresh interpreter that has loaded `recipe`'s variants
    after `imports`: what loading one recipe builds or makes from a clean start."""
    code = (
        "import json, sys\nfrom pathlib import Path\n"
        f"from disagg.recipe.variants import load_variants\n{imports}\n"
        f"load_variants(Path(sys.argv[1]))\nprint(json.dumps({expression}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(recipe)], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


def alias_bomb(levels: int = 9, fanout: int = 10, *, used: bool = False) -> str:
    """`levels` anchors, each a list of `fanout` aliases of the one before (fanout**levels)."""
    lines = ["x-l0: &l0 [" + ", ".join(["lol"] * fanout) + "]"]
    for level in range(1, levels + 1):
        lines.append(f"x-l{level}: &l{level} [" + ", ".join([f"*l{level - 1}"] * fanout) + "]")
    recipe = MINIMAL
    if used:  # the bomb sits in a section every plan reads
        recipe = recipe.replace("backend:\n", f"backend:\n  extra: *l{levels}\n")
    return "\n".join(lines) + "\n" + recipe


def deep_flow(depth: int) -> str:
    return "x-deep: " + "{a: " * depth + "1" + "}" * depth + "\n" + MINIMAL


def deep_block(depth: int) -> str:
    lines = ["x-deep:"] + ["  " * (level + 1) + "a:" for level in range(depth)]
    return "\n".join([*lines, "  " * (depth + 1) + "b: 1"]) + "\n" + MINIMAL
