"""The `disagg` command line. Thin: parse, call, print. Commands live in `disagg.commands`."""

from __future__ import annotations

import sys
from collections.abc import Sequence

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
    (what `main` asks: the others would cost start-up time and not be used). Tests and
    `main` may both ask, in any order; the commands are laid out afresh in AREAS order
    each time the set of areas grows, so that `disagg --help` lists them in their order."""
    from disagg.commands import AREAS, area_of, register_area
    from disagg.commands.options import plain_help_types

    area = area_of(argv)
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
