"""Rich consoles for every command, configured once.

Emoji codes are off because `file.yaml:100:20` would otherwise print as a
hundred-points emoji: locations, selectors and paths must print as written.
rich is imported when a console is first made, so start-up stays fast for
commands that print little (`disagg --help` formats with typer's own helper).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console


def make_console(*, stderr: bool = False, **options: Any) -> Console:
    from rich.console import Console

    return Console(stderr=stderr, emoji=False, **options)


class LazyConsole:
    """A module-level console made on first use (`console.print(...)`)."""

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._console: Console | None = None

    def __getattr__(self, name: str) -> Any:
        if self._console is None:
            self._console = make_console(**self._options)
        return getattr(self._console, name)
