"""Rich consoles for every command, configured once.

Emoji codes are off because `file.yaml:100:20` would otherwise print as a
hundred-points emoji: locations, selectors and paths must print as written.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console


def make_console(*, stderr: bool = False, **options: Any) -> Console:
    return Console(stderr=stderr, emoji=False, **options)
