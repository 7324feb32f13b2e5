"""`disagg status` (and `logs --follow`'s end check) over mutated run directories: every
record truncated, rewritten, retyped or replaced by something that is not a file gives a
view or one DisaggError naming the file; never another exception, a hang or unbounded
memory."""

from __future__ import annotations

import io
import json
import os
import random
import shutil
import tempfile
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console

from disagg.commands.slurm import _render_views
from disagg.errors import DisaggError
from disagg.launch import slurm
from disagg.launch.logs import run_ended
from disagg.launch.state import (
    Failure,
    PointState,
    PointStatus,
    RoleState,
    RunState,
    RunStatus,
    RunSummary,
    TaskState,
)
from disagg.probe import MAX_RECORD_BYTES

from .conftest import make_plan, python_role

MEMORY_BOUND = 64 * 2**20  # records are refused past 16 MiB before a byte is read
RECORDS = ("state.json", "summary.json")
VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
)


def write_run(run_dir: Path) -> None:
    """A failed run's records, the way an orchestrator leaves them."""
    make_plan([python_role("decode-0", "pass")]).write(run_dir)
    (run_dir / "logs").mkdir()
    (run_dir / "logs" / "orchestrator.log").write_text("12:00:00 run started\n")
    points = [
        PointState(key="conc1", status=PointStatus.MEASURED, headline={"output_throughput": 1.0}),
        PointState(key="conc2", status=PointStatus.ABORTED),
    ]
    roles = [
        RoleState(
            name="decode-0",
            kind="decode",
            ports={"http_port": 12000},
            tasks=[TaskState(node_rank=0, node="local0", log="logs/decode-0.log", exit_code=3)],
        )
    ]
    failure = Failure(reason="role decode-0 exited with code 3", role="decode-0", log_tail=["x"])
    RunState(
        name="t",
        selector="t.yaml:base",
        run_dir=str(run_dir),
        simulated=True,
        executor="local",
        orchestrator_pid=0,
        status=RunStatus.FAILED,
        points=points,
        roles=roles,
        failure=failure,
    ).write(run_dir)
    RunSummary(
        name="t",
        selector="t.yaml:base",
        run_dir=str(run_dir),
        simulated=True,
        executor="local",
        status=RunStatus.FAILED,
        exit_code=1,
        reason=failure.reason,
        failure=failure,
        started_at=1.0,
        finished_at=2.0,
        points=points,
    ).write(run_dir)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _paths(value, (*prefix, index))
    return found


def mutate_json(path: Path, rnd: random.Random, value: Any) -> None:
    try:
        doc = json.loads(path.read_bytes())
    except (ValueError, RecursionError):
        return  # an earlier change left no JSON to change a value of
    inside = _paths(doc)[1:]
    if not inside:
        return
    target = rnd.choice(inside)
    parent = doc
    for part in target[:-1]:
        parent = parent[part]
    if rnd.random() < 0.3 and isinstance(parent, dict):
        del parent[target[-1]]
    else:
        parent[target[-1]] = value
    path.write_text(json.dumps(doc))


def replace(path: Path, make: Callable[[Path], None]) -> None:
    path.unlink()
    make(path)


def sparse(size: int) -> Callable[[Path], None]:
    def make(path: Path) -> None:
        with path.open("wb") as handle:
            handle.truncate(size)

    return make


MUTATIONS: dict[str, Callable[[Path, random.Random, Any], None]] = {
    "value": mutate_json,
    "truncate": lambda p, rnd, _: p.write_bytes(
        p.read_bytes()[: rnd.randrange(max(p.stat().st_size, 1))]
    ),
    "garbage": lambda p, rnd, _: p.write_bytes(rnd.randbytes(rnd.randrange(1, 200))),
    "other json": lambda p, _, value: p.write_text(json.dumps(value)),
    "deep": lambda p, rnd, _: p.write_text("[" * rnd.randrange(900, 100_000)),
    "empty": lambda p, _rnd, _v: p.write_bytes(b""),
    "directory": lambda p, _rnd, _v: replace(p, Path.mkdir),
    "fifo": lambda p, _rnd, _v: replace(p, os.mkfifo),
    "/dev/zero": lambda p, _rnd, _v: replace(p, lambda q: q.symlink_to("/dev/zero")),
    "link loop": lambda p, _rnd, _v: replace(p, lambda q: q.symlink_to(q)),
    "dangling": lambda p, _rnd, _v: replace(p, lambda q: q.symlink_to(q.parent / "gone")),
    "huge": lambda p, _rnd, _v: replace(p, sparse(MAX_RECORD_BYTES + 1)),
    "removed": lambda p, _rnd, _v: p.unlink(),
}


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    changes=st.lists(
        st.tuples(st.sampled_from(RECORDS), st.sampled_from(sorted(MUTATIONS)), VALUES),
        min_size=1,
        max_size=3,
    ),
    seed=st.integers(0, 2**32 - 1),
)
def test_status_over_mutated_run_directories_is_a_view_or_one_clear_error(
    changes: list[tuple[str, str, Any]], seed: int
) -> None:
    rnd = random.Random(seed)
    run_dir = Path(tempfile.mkdtemp(prefix="status-fuzz-"))
    try:
        write_run(run_dir)
        for name, kind, value in changes:
            path = run_dir / name
            if path.is_file() and not path.is_symlink():  # a later change to one still there
                MUTATIONS[kind](path, rnd, value)
        tracemalloc.start()
        try:
            try:
                view = slurm.view(str(run_dir))
                row = view.to_json()
                json.dumps(row)  # what `status --json` prints
                Console(file=io.StringIO(), width=120).print(_render_views([view]))
            except DisaggError as exc:
                assert str(run_dir) in str(exc), exc
            assert isinstance(run_ended(run_dir), bool)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak < MEMORY_BOUND
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
