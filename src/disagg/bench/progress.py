"""Progress on a terminal (requests done, rate, errors); silent in a job or when quiet."""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable, Iterator
from time import monotonic

from rich.console import Console
from rich.live import Live
from rich.text import Text


@contextlib.contextmanager
def point_progress(
    label: str, total: int, *, quiet: bool = False
) -> Iterator[Callable[[int, int], None]]:
    """A one-line live status while the block runs; yields `update(done, failed)`.

    `update` may be called from any thread; rendering happens at most 4 times a second
    on rich's own refresh thread, so the hot path only pays for two integer stores.
    """
    console = Console(stderr=True)
    if quiet or not console.is_terminal or not sys.stderr.isatty():
        yield lambda done, failed: None
        return
    start = monotonic()
    counts = [0, 0]  # done, failed
    lock = threading.Lock()

    def update(done: int, failed: int) -> None:
        with lock:
            counts[:] = done, failed

    def render() -> Text:
        elapsed = max(monotonic() - start, 1e-9)
        with lock:
            done, failed = counts
        return Text.assemble(
            (f"{label} ", "bold"),
            f"{done}/{total} requests  {done / elapsed:,.1f} req/s  ",
            (f"{failed} errors", "red" if failed else "green"),
        )

    with Live(console=console, refresh_per_second=4, transient=True, get_renderable=render):
        yield update
