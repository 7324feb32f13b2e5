"""Where a disagg job deliberately differs from the job srt-slurm's `srtctl` renders.

A user switching from srtctl must get the same job from the same recipe, or be told how
and why it differs. This table is the one list of such differences: each row says what
srtctl does, what disagg does and why. `docs/compat.md` shows the same rows (a test keeps
the two in step), and a plan names the rows it hits in `Plan.differs`, which
`disagg plan` prints on its `differs from srt-slurm` line. A difference that is not a row
here is a bug.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Difference:
    """One deliberate difference from srtctl."""

    id: str
    srtctl: str
    disagg: str
    why: str


_ROWS = (
    Difference(
        "smg-router",
        "runs the `sglang-router` package's `sglang_router.launch_router` for "
        "`frontend.type: sglang` (v1) / `sglang-router`",
        "runs smg 1.13.0 (`smg.launch_router`, the same flags), unless the recipe sets "
        "`frontend.package: sglang-router` (then sglang-router 0.3.2)",
        "sglang-router 0.3.2 is that package's last release; the project continues as smg",
    ),
    Difference(
        "load-generator",
        "runs the sa-bench client script (`benchmark_serving.py`) in the benchmark container",
        "runs its own load generator with vLLM's metric definitions and sa-bench's request "
        "shape (lengths, warm-up, request rate), writing the same result fields",
        "one client for every benchmark type, validated results, resume and live progress",
    ),
    Difference(
        "staged-hf-model",
        "gives the engines an `hf:` model (and a draft model named by repo id) as the repo id, "
        "so each worker downloads it at start-up; mounts no `/model` for it",
        "stages the snapshot into the cluster's shared model cache before the job starts and "
        "gives the engines its path as the container sees it through the cache mount",
        "one checked download per cluster instead of one per worker at start-up, and a job "
        "that starts without reaching the model hub",
    ),
)

DIFFERENCES: dict[str, Difference] = {row.id: row for row in _ROWS}


def differs(*ids: str) -> list[str]:
    """`ids` checked against the table (a typo is a bug, caught by the first plan that hits it)."""
    for name in ids:
        if name not in DIFFERENCES:
            raise KeyError(f"no srt-slurm difference {name!r} in disagg.plan.compat")
    return list(ids)


def rows(ids: list[str]) -> list[dict[str, str]]:
    """The table rows `ids` name, each once, in first-named order: what `Plan.differs` holds."""
    return [
        {"id": row.id, "srtctl": row.srtctl, "disagg": row.disagg, "why": row.why}
        for row in (DIFFERENCES[name] for name in dict.fromkeys(differs(*ids)))
    ]
