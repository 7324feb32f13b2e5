"""Where role logs live and how to read their ends.

One file per launched task: `RUN_DIR/logs/<role>.log`, or `<role>.<node_rank>.log`
for roles spread over several nodes; the orchestrator writes `orchestrator.log`.
"""

from __future__ import annotations

from pathlib import Path

LOG_DIR = "logs"
ORCHESTRATOR_LOG = "orchestrator.log"


def log_dir(run_dir: Path) -> Path:
    return run_dir / LOG_DIR


def task_log_path(run_dir: Path, role: str, node_rank: int, nnodes: int) -> Path:
    name = f"{role}.log" if nnodes <= 1 else f"{role}.{node_rank}.log"
    return log_dir(run_dir) / name


def tail(
    path: Path, lines: int = 30, *, end: int | None = None, max_bytes: int = 256 * 1024
) -> list[str]:
    """The last `lines` lines of a text file, up to byte `end` (reads at most `max_bytes`)."""
    try:
        with path.open("rb") as handle:
            size = handle.seek(0, 2) if end is None else end
            handle.seek(max(0, size - max_bytes))
            data = handle.read(size - handle.tell())
    except OSError:
        return []
    text = data.decode("utf-8", errors="replace")
    return text.splitlines()[-lines:] if lines > 0 else []


def role_logs(run_dir: Path) -> dict[str, list[Path]]:
    """Role (or `orchestrator`) -> its log files, sorted by node rank."""
    found: dict[str, list[Path]] = {}
    directory = log_dir(run_dir)
    if not directory.is_dir():
        return found
    for path in sorted(directory.glob("*.log")):
        stem = path.name[: -len(".log")]
        head, _, rank = stem.rpartition(".")
        role = head if head and rank.isdigit() else stem
        found.setdefault(role, []).append(path)
    return found
