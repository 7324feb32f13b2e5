"""Per-repo staging progress: a live bar (bytes, files) on a terminal, plain lines in a job.

`huggingface_hub` reports progress through tqdm-compatible classes; `tqdm_class_for`
builds one that renders nothing itself and forwards counts to a `Reporter`.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import Any, ClassVar

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TaskID,
    TextColumn,
    TransferSpeedColumn,
)
from tqdm import tqdm as std_tqdm  # type: ignore[import-untyped]

from disagg.console import make_console


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1000:
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{size:.1f} TB"


class Reporter:
    """Line-oriented: one line when a repo starts downloading and one when it is done.

    Quiet on purpose: a job log should show what happened, not a redrawn bar.
    """

    def __init__(self, log: Callable[[str], None]) -> None:
        self.log = log
        self._lock = threading.Lock()
        self._counts: dict[tuple[str, str], list[int]] = {}  # (repo, files|bytes) -> [done, total]

    def note(self, repo_id: str, message: str) -> None:
        self.log(f"{repo_id}: {message}")

    def begin_download(self, repo_id: str) -> None:
        with self._lock:
            self._counts[repo_id, "files"] = [0, 0]
            self._counts[repo_id, "bytes"] = [0, 0]
        self.note(repo_id, "downloading")

    def count(self, repo_id: str, kind: str, *, done: int = 0, total: int | None = None) -> None:
        """Add `done` to one repo's count of `kind` (files or bytes); `total` when known."""
        with self._lock:
            counts = self._counts.setdefault((repo_id, kind), [0, 0])
            counts[0] += done
            if total is not None:
                counts[1] = total
        self._refresh(repo_id)

    def progress_of(self, repo_id: str) -> tuple[list[int], list[int]]:
        """([files done, total], [bytes done, total]) of `repo_id`."""
        with self._lock:
            files = self._counts.get((repo_id, "files"), [0, 0])
            nbytes = self._counts.get((repo_id, "bytes"), [0, 0])
            return list(files), list(nbytes)

    def counts(self, repo_id: str) -> tuple[int, int]:
        """(files, bytes) fetched so far for `repo_id`."""
        files, nbytes = self.progress_of(repo_id)
        return files[0], nbytes[0]

    def end_download(self, repo_id: str, seconds: float) -> None:
        files, nbytes = self.counts(repo_id)
        self.note(repo_id, f"downloaded {files} files, {human_bytes(nbytes)} in {seconds:.1f}s")

    def _refresh(self, repo_id: str) -> None:
        """Hook for live renderers."""

    def close(self) -> None:
        """Stop any live display."""


class RichReporter(Reporter):
    """A live bar per repo on a terminal; notes are printed above the bars."""

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or make_console(stderr=True)
        super().__init__(lambda line: self.console.print(line, highlight=False))
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            DownloadColumn(),
            TextColumn("{task.fields[files]} files"),
            TransferSpeedColumn(),
            console=self.console,
            transient=False,
        )
        self._tasks: dict[str, TaskID] = {}
        self.progress.start()

    def begin_download(self, repo_id: str) -> None:
        super().begin_download(repo_id)
        self._tasks[repo_id] = self.progress.add_task(repo_id, total=None, files="0/?")

    def _refresh(self, repo_id: str) -> None:
        task = self._tasks.get(repo_id)
        if task is None:
            return
        (files_done, files_total), (done, total) = self.progress_of(repo_id)
        self.progress.update(
            task,
            completed=done,
            total=total or None,
            files=f"{files_done}/{files_total or '?'}",
        )

    def close(self) -> None:
        self.progress.stop()


def default_reporter(log: Callable[[str], None]) -> Reporter:
    """Rich bars when stderr is a terminal, plain log lines otherwise (batch jobs)."""
    if sys.stderr.isatty():
        return RichReporter()
    return Reporter(log)


class _ForwardingTqdm(std_tqdm):  # type: ignore[misc]
    """A tqdm that draws nothing and forwards counts to a Reporter.

    `snapshot_download` creates three kinds of bar: the file counter ("Fetching N
    files"), a bytes-written bar ("Reconstructing ...") and a network bar
    ("Downloading bytes"). Only the first two are forwarded, so bytes count once.
    """

    reporter: ClassVar[Reporter]
    repo_id: ClassVar[str]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        desc = str(kwargs.get("desc") or "")
        unit = kwargs.get("unit", "it")
        self._kind = "files" if unit != "B" else ("bytes" if desc.startswith("Reconstruct") else "")
        kwargs["disable"] = True
        super().__init__(*args, **kwargs)
        self._started = time.monotonic()

    @property
    def total(self) -> Any:
        return self.__dict__.get("_total")

    @total.setter
    def total(self, value: Any) -> None:
        self.__dict__["_total"] = value
        kind = getattr(self, "_kind", "")
        if value is not None and kind:
            self.reporter.count(self.repo_id, kind, total=int(value))

    def update(self, n: float | None = 1) -> bool | None:
        if n and self._kind:
            self.reporter.count(self.repo_id, self._kind, done=int(n))
        self.n += n or 0
        return None

    @property
    def format_dict(self) -> dict[str, Any]:
        elapsed = time.monotonic() - self._started
        return {"n": self.n, "total": self.total, "rate": self.n / elapsed if elapsed else None}


def tqdm_class_for(reporter: Reporter, repo_id: str) -> type[std_tqdm]:
    """A tqdm class bound to one repo's progress."""
    return type("StagingTqdm", (_ForwardingTqdm,), {"reporter": reporter, "repo_id": repo_id})
