"""The `disagg` command line. Thin: parse, call, print. Commands live in `disagg.commands`."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

import typer

from disagg.console import LazyConsole
from disagg.errors import DisaggError

app = typer.Typer(
    name="disagg",
    help="Disaggregated LLM-serving benchmarks: recipe -> lint -> plan -> stage -> run -> report.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # click's plain help: typer's rich help costs ~0.2 s of start-up
    context_settings={"help_option_names": ["-h", "--help"]},  # every command takes -h
)

err_console = LazyConsole(stderr=True)


def version() -> None:
    """Print the disagg version."""
    from disagg import __version__

    print(__version__)


_registered: set[str] = set()  # areas whose commands `app` holds


def _register(argv: Sequence[str] = ()) -> None:
    """Hold the commands of every area, or add only the area of the command `argv` names
    (the others would cost start-up time). Laid out afresh in AREAS order each time the
    set grows, so that `disagg --help` lists them in their order."""
    from disagg.commands import AREAS, COMMANDS, register_area
    from disagg.commands.options import plain_help_types

    area = COMMANDS.get(argv[0]) if argv else None
    wanted = set(AREAS) if area is None else _registered | {area}
    if wanted == _registered:
        return
    plain_help_types()
    app.registered_commands.clear()
    app.registered_groups.clear()
    for name in AREAS:
        if name in wanted:
            register_area(app, name)
    app.command()(version)
    _registered.update(wanted)


def _register_listing() -> None:
    """Hold every command with a stand-in callback that takes no parameters, for a command
    line that can only list them (`--help`, `--version`, no command): typer reads every
    parameter's type before it parses, about a third of `disagg --help`, and a listing
    needs only each command's name and help. The next `_register` brings the real ones."""
    from copy import copy

    _register()
    commands = []
    for info in app.registered_commands:
        stand_in = copy(info)
        stand_in.callback = _stand_in(info.callback)
        commands.append(stand_in)
    app.registered_commands = commands
    _registered.clear()  # what `app` holds is no longer the areas' own commands


def _stand_in(callback: Callable[..., Any] | None) -> Callable[[], None]:
    def listed() -> None:
        raise AssertionError("a stand-in command never runs")  # pragma: no cover

    if callback is not None:
        listed.__name__, listed.__doc__ = callback.__name__, callback.__doc__
    return listed


def _lists_only(argv: Sequence[str]) -> bool:
    """True when no word of `argv` names a command: nothing but help, the version or a
    usage error can follow (a command named after `--` or an option still runs)."""
    from disagg.commands import COMMANDS

    return not any(arg in COMMANDS for arg in argv)


def _print_version(value: bool) -> None:
    if value:
        version()
        raise typer.Exit()


@app.callback()
def _root(
    _version: bool = typer.Option(
        False,
        "--version",
        "-V",
        help="Print the disagg version and exit.",
        callback=_print_version,
        is_eager=True,
    ),
) -> None:
    """Disaggregated LLM-serving benchmarks: recipe -> lint -> plan -> stage -> run -> report."""


def main() -> None:
    """Entry point: user errors print one message (no traceback) and exit with their code."""
    from disagg.gc_settings import tune

    tune()
    if _lists_only(sys.argv[1:]):
        _register_listing()
    else:
        _register(sys.argv[1:])
    try:
        app()
    except DisaggError as exc:
        err_console.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(130)


if __name__ == "__main__":
    main()
