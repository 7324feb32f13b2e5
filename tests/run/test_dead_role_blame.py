"""A point whose requests failed because a role was killed names the role, not the point.

A SIGKILLed process closes its sockets before its exit can be collected: the point's
requests fail at once, and for a moment the process still looks alive. The run must then
wait (a bounded moment) for the exit, so that it fails as "role X exited with code -9"
rather than as "N invalid point(s)".
"""

from __future__ import annotations

from pathlib import Path

from disagg.launch.executor import RoleProcess
from disagg.launch.local import LocalLauncher
from disagg.launch.orchestrator import OrchestratorOptions
from disagg.launch.run_context import RunContext
from disagg.launch.state import RoleState, TaskState

from .conftest import make_plan, python_role

OPTIONS = OrchestratorOptions(echo=False, handle_signals=False)


class ReapedLate(RoleProcess):
    """A killed task whose exit shows only after `alive_polls` more polls."""

    role = "decode-0"
    node_rank = 0

    def __init__(self, alive_polls: int | None) -> None:
        self.alive_polls = alive_polls  # None: never exits
        self.polls = 0

    @property
    def pid(self) -> int:
        return 1

    def poll(self) -> int | None:
        self.polls += 1
        if self.alive_polls is None or self.polls <= self.alive_polls:
            return None
        return -9

    def stop(self, grace_s: float = 5.0) -> int | None:
        return -9


def _run(tmp_path: Path, process: ReapedLate) -> RunContext:
    plan = make_plan([python_role("decode-0", "pass")])
    run = RunContext(tmp_path, plan, LocalLauncher(), OPTIONS, None)
    task = TaskState(node_rank=0, node="localhost", pid=process.pid, log="decode-0.log")
    run.state.roles.append(RoleState(name="decode-0", kind="decode", tasks=[task]))
    run.tasks.append((plan.roles[0], process))
    return run


def test_a_role_whose_exit_shows_late_is_named_as_the_cause(tmp_path: Path) -> None:
    process = ReapedLate(alive_polls=3)
    run = _run(tmp_path, process)

    run.name_dead_roles()

    assert run.stop.is_set()
    assert run.state.failure is not None
    assert run.state.failure.reason == "role decode-0 exited with code -9"
    assert run.state.failure.role == "decode-0"
    assert run.state.role("decode-0").tasks[0].exit_code == -9
    assert process.polls == 4  # polled until it showed, not a poll more


def test_with_every_role_alive_nothing_is_blamed_and_the_wait_ends(tmp_path: Path) -> None:
    process = ReapedLate(alive_polls=None)
    run = _run(tmp_path, process)

    run.name_dead_roles()  # returns: the wait is bounded

    assert not run.stop.is_set() and run.state.failure is None
    assert process.polls > 1  # it did wait for a late exit before giving up
