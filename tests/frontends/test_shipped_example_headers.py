"""Every shipped example plans as its header says, on a fresh clone.

A header gives the commands that run the example (`disagg plan|run|stage|submit ...`,
and `.venv/bin/python tests/tiny_model.py DIR` where it needs a model directory). Before
that directory exists, a recipe that names the Dynamo frontend is refused with the
header's own command as the fix, never planned with another frontend in its place;
once it exists (here: the tests' tiny model), it plans with the frontend it names.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from disagg.errors import DisaggError
from disagg.plan.from_recipe import plans_for
from tiny_model import TinyModel

from .shipped_examples import EXAMPLES, pointed_at

RECIPES = sorted(p for p in EXAMPLES.glob("*/*.yaml") if p.parent.name != "clusters")
# The router package a frontend type runs as (docs/compat.md, smg-router: smg is the
# sglang-router package unless the recipe pins it).
RUNS_AS = {"sglang": "smg", "sglang-router": "smg"}
_COMMAND = re.compile(r"^#\s+(disagg|\.venv/bin/python)\s+(.*)$")


def _header(path: Path) -> list[list[str]]:
    commands = []
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        found = _COMMAND.match(line)
        if found:
            commands.append([found.group(1), *shlex.split(found.group(2))])
    return commands


def _plan_args(command: list[str]) -> tuple[str, str | None]:
    """(recipe selector, cluster) of a header's `disagg plan|run|stage|submit` command."""
    words = command[2:]
    cluster = words[words.index("--cluster") + 1] if "--cluster" in words else None
    return words[0], cluster


def _planned(selector: str, cluster: str | None, root: Path) -> list[str]:
    """The frontend of every variant the command selects, planned from the clone `root`."""
    target = selector if Path(selector).is_absolute() else str(root / selector)
    profile = None if cluster is None else root / cluster
    return [plan.frontend for plan in plans_for([target], profile)]


def test_every_example_has_header_commands() -> None:
    assert RECIPES
    for path in RECIPES:
        assert any(c[0] == "disagg" for c in _header(path)), path


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_an_example_plans_as_its_header_says_or_names_the_command_that_makes_it_plan(
    path: Path, tiny_model: TinyModel, tmp_path: Path
) -> None:
    root = EXAMPLES.parent
    commands = _header(path)
    makes = [c for c in commands if c[0] != "disagg"]
    text = path.read_text()
    found = re.search(r"^frontend:\n\s+type:\s*\"?(\w[\w-]*)", text, re.MULTILINE)
    named = None if found is None else RUNS_AS.get(found.group(1), found.group(1))
    for command in (c for c in commands if c[0] == "disagg"):
        selector, cluster = _plan_args(command)
        needs = [c[-1] for c in makes if c[-1] in text]
        if needs and not Path(needs[0]).is_dir():
            try:
                frontends = _planned(selector, cluster, root)
            except DisaggError as refused:  # the header's own command is the fix
                assert refused.hint is not None and " ".join(makes[0][1:]) in refused.hint
            else:  # planned without it (staged at run time): never with another frontend
                assert named is None or set(frontends) == {named}, (path, frontends)
            copy = pointed_at(path, tiny_model, tmp_path / path.name)
            frontends = _planned(str(copy), cluster, root)
        else:
            frontends = _planned(selector, cluster, root)
        if named is not None:
            assert set(frontends) == {named}, (path, frontends)


def test_a_relative_run_directory_binds_as_an_absolute_one(
    tiny_model: TinyModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`disagg run` puts runs under ./runs: nginx (which reads relative paths against its
    prefix) and any role that changes directory must see the same run directory."""
    from disagg.launch.bindings import build_bindings

    example = EXAMPLES / "dynamo" / "sim-1p1d-dynamo-services.yaml"
    [plan] = plans_for([str(pointed_at(example, tiny_model, tmp_path / "r.yaml"))], None)
    monkeypatch.chdir(tmp_path)
    bindings = build_bindings(
        plan,
        addresses=["127.0.0.1"] * plan.nodes,
        ports={},
        model_path="m",
        draft_path="",
        run_dir=Path("runs/r/base-1"),
    )
    assert bindings["run"]["dir"] == str(tmp_path / "runs" / "r" / "base-1")
