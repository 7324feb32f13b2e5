"""Rich consoles for every command, configured once, and `styled` for plain lines.

Emoji codes are off: `file.yaml:100:20` would print as a hundred-points emoji. rich is
imported when a console is first made, so start-up stays fast for commands that print little.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console


def styled(text: str, **style: Any) -> str:
    """`text` with typer's ANSI style (bold, dim, fg...), for the commands that print plain
    lines without loading rich (lint, plan). Colour is dropped off a terminal by typer's
    echo, and left out here under NO_COLOR, which rich honours for the other commands."""
    import typer

    return text if os.environ.get("NO_COLOR") else typer.style(text, **style)


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
