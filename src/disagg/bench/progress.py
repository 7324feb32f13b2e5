"""Progress on a terminal (requests done, rate, errors); silent in a job or when quiet."""

from __future__ import annotations

import sys
import threading
from time import monotonic
from types import TracebackType

from rich.console import Console
from rich.live import Live
from rich.text import Text


class PointProgress:
    """A one-line live status, refreshed from the counters the client keeps.

    `update` may be called from any thread; rendering happens at most 4 times a second
    on rich's own refresh thread, so the hot path only pays for two integer stores.
    """

    def __init__(self, label: str, total: int, *, quiet: bool = False) -> None:
        self.label = label
        self.total = total
        self.done = 0
        self.failed = 0
        self._start = monotonic()
        self._lock = threading.Lock()
        console = Console(stderr=True)
        self.enabled = not quiet and console.is_terminal and sys.stderr.isatty()
        self._live = (
            Live(console=console, refresh_per_second=4, transient=True, get_renderable=self._render)
            if self.enabled
            else None
        )

    def update(self, done: int, failed: int) -> None:
        with self._lock:
            self.done, self.failed = done, failed

    def _render(self) -> Text:
        elapsed = max(monotonic() - self._start, 1e-9)
        with self._lock:
            done, failed = self.done, self.failed
        style = "red" if failed else "green"
        return Text.assemble(
            (f"{self.label} ", "bold"),
            f"{done}/{self.total} requests  {done / elapsed:,.1f} req/s  ",
            (f"{failed} errors", style),
        )

    def __enter__(self) -> PointProgress:
        self._start = monotonic()
        if self._live is not None:
            self._live.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._live is not None:
            self._live.__exit__(exc_type, exc, tb)
