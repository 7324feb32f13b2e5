"""The command line speaks the field's habits: --version, -h, no Python types in help,
one short flag per shared option, the aliases benchmark users type."""

from __future__ import annotations

import re

import pytest
import typer
from typer.testing import CliRunner

from disagg import __version__
from disagg.bench.metrics import parse_slo
from disagg.cli import _register, app

_register()
COMMAND = typer.main.get_command(app)
NAMES = sorted(COMMAND.commands)  # type: ignore[attr-defined]
runner = CliRunner()


def _help(*args: str) -> str:
    result = runner.invoke(app, [*args, "-h"], env={"COLUMNS": "200", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    return result.output


def test_version_flag_prints_the_version() -> None:
    for flag in ("--version", "-V"):
        result = runner.invoke(app, [flag])
        assert result.exit_code == 0 and result.output.strip() == __version__


@pytest.mark.parametrize("name", NAMES)
def test_help_has_no_python_types(name: str) -> None:
    text = _help(*name.split())
    assert not re.search(r"<(bool|str|int|float|path|list\[)", text), text
    usage = next(line for line in text.splitlines() if "usage:" in line.lower())
    assert not re.search(r"\{[a-z_]+\}", usage), usage  # RECIPE, not {recipe}


def test_shared_options_have_the_same_short_flag_everywhere() -> None:
    def commands(group: object) -> list[object]:
        out = []
        for sub in getattr(group, "commands", {}).values():
            out += commands(sub) if hasattr(sub, "commands") else [sub]
        return out

    for command in commands(COMMAND):
        for param in getattr(command, "params", []):
            opts = list(getattr(param, "opts", []))
            if "--cluster" in opts:
                assert "-c" in opts, command
            if "--out" in opts:
                assert "-o" in opts, command


def test_bench_takes_the_names_benchmark_users_type() -> None:
    text = _help("bench")
    for alias in ("--base-url", "--max-concurrency", "--num-warmups", "--goodput"):
        assert alias in text
    assert "[ratio*N, N]" in text
    assert parse_slo("ttft:50") == {"ttft": 50.0}
    assert parse_slo("ttft:50 tpot:20,e2el=900") == {"ttft": 50.0, "tpot": 20.0, "e2el": 900.0}


def test_every_command_is_listed_under_the_area_that_registers_it() -> None:
    """`disagg CMD ...` registers only CMD's area (start-up time): the table must know
    every command, or that command would not be found."""
    from disagg.commands import AREAS, COMMANDS, register_area

    found: dict[str, str] = {}
    for area in AREAS:
        alone = typer.Typer()
        alone.callback()(lambda: None)
        register_area(alone, area)
        for name in typer.main.get_command(alone).commands:  # type: ignore[attr-defined]
            found[name] = area
    assert found == COMMANDS


def test_one_area_then_all_lists_every_command_in_help_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`main` registers the area it runs; asking for all later (a test, a second call)
    starts over, so help lists every command in the path a recipe takes."""
    from disagg import cli

    monkeypatch.setattr(cli.app, "registered_commands", [])
    monkeypatch.setattr(cli.app, "registered_groups", [])
    monkeypatch.setattr(cli, "_registered", set())
    cli._register(["plan", "x.yaml"])
    assert sorted(typer.main.get_command(app).commands) == ["plan", "schema", "version"]  # type: ignore[attr-defined]
    cli._register()
    assert sorted(typer.main.get_command(app).commands) == NAMES  # type: ignore[attr-defined]
    listed = [line.split()[0] for line in _help().split("Commands:")[1].splitlines() if line]
    assert listed[:3] == ["lint", "plan", "schema"] and listed.count("version") == 1


def test_plain_line_styles_honour_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    """lint and plan print styled plain lines; NO_COLOR leaves the style out, as rich does."""
    from disagg.console import styled

    monkeypatch.delenv("NO_COLOR", raising=False)
    assert styled("DA001", bold=True) != "DA001" and "DA001" in styled("DA001", bold=True)
    monkeypatch.setenv("NO_COLOR", "1")
    assert styled("DA001", bold=True, fg="red") == "DA001"


@pytest.mark.parametrize(
    ("args", "shown"),
    [
        (["--help"], "Commands:"),
        ([], "Commands:"),
        (["-h"], "Commands:"),
        (["plann"], "No such command"),
        (["--version"], __version__),
    ],
)
def test_a_command_line_that_only_lists_prints_what_the_whole_app_prints(
    args: list[str], shown: str
) -> None:
    """`disagg --help` lists commands without building each (`cli._register_listing`):
    what it prints, and its exit status, are those of the app with every command."""
    import subprocess
    import sys

    env = {"COLUMNS": "100", "NO_COLOR": "1", "PATH": ""}
    full = (
        "import sys; from disagg import cli; cli._register();"
        "cli.app(args=sys.argv[1:], prog_name='disagg')"
    )
    listing = "import sys; sys.argv[0] = 'disagg'; from disagg import cli; cli.main()"
    runs = [
        subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env)
        for code in (full, listing)
    ]
    assert runs[0].stdout == runs[1].stdout and runs[0].stderr == runs[1].stderr
    assert runs[0].returncode == runs[1].returncode
    assert shown in runs[0].stdout + runs[0].stderr
