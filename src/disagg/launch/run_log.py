"""The orchestrator's log: `logs/orchestrator.log`, echoed on stderr when asked."""

from __future__ import annotations

import io
import logging
import sys
import time
from pathlib import Path

from disagg.launch.logs import ORCHESTRATOR_LOG, log_dir, open_log


class _LogFileHandler(logging.FileHandler):
    """The orchestrator's log file; a failed write (disk full) is said once on stderr.

    logging's default prints a traceback per lost line, which would bury the one
    error that explains the run's end.
    """

    _reported = False

    def _open(self) -> io.TextIOWrapper:
        """Opened without following a link planted in the run directory."""
        return io.TextIOWrapper(open_log(Path(self.baseFilename)), encoding="utf-8")

    def handleError(self, record: logging.LogRecord) -> None:
        if not self._reported:
            self._reported = True
            error = sys.exc_info()[1]
            print(f"disagg: cannot write {self.baseFilename}: {error}", file=sys.stderr)


def make_logger(run_dir: Path, *, echo: bool) -> logging.Logger:
    directory = log_dir(run_dir)
    directory.mkdir(parents=True, exist_ok=True)
    logger = logging.getLogger(f"disagg.job.{id(run_dir)}.{time.monotonic_ns()}")
    logger.setLevel(logging.INFO)
    logger.propagate = False
    formatter = logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S")
    file_handler = _LogFileHandler(directory / ORCHESTRATOR_LOG)
    file_handler.setFormatter(formatter)
    logger.addHandler(file_handler)
    if echo:
        stream = logging.StreamHandler(sys.stderr)
        stream.setFormatter(formatter)
        logger.addHandler(stream)
    return logger


def close_log(log: logging.Logger) -> None:
    for handler in list(log.handlers):
        handler.close()
        log.removeHandler(handler)
