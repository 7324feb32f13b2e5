"""The orchestrator fails fast, names the role, shows its log and leaves nothing running."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from disagg.launch.local import LocalLauncher
from disagg.launch.orchestrator import Orchestrator, OrchestratorOptions
from disagg.launch.state import PointStatus, RunState, RunStatus, RunSummary
from disagg.plan.model import HealthPlan, RoleKind, RolePlan

from .conftest import PY, alive, make_plan, python_role, wait_gone

OPTIONS = OrchestratorOptions(echo=False, handle_signals=False, stop_grace_s=2.0)


def run(tmp_path: Path, plan_roles: list[RolePlan]) -> RunSummary:
    plan = make_plan(plan_roles)
    plan.write(tmp_path)
    return Orchestrator(tmp_path, plan, LocalLauncher(), OPTIONS).run()


def all_pids(summary: RunSummary) -> list[int]:
    return [pid for pids in summary.role_pids.values() for pid in pids]


def test_role_that_never_becomes_healthy_hits_its_deadline(tmp_path: Path) -> None:
    role = python_role("decode-0", "import time; time.sleep(60)", deadline_s=0.5)
    summary = run(tmp_path, [role])

    assert summary.status is RunStatus.FAILED
    assert summary.exit_code == 1
    assert summary.reason is not None
    assert "role decode-0 not healthy after 0.5 s" in summary.reason
    assert "/health" in summary.reason  # says what it polled
    assert summary.failure is not None and summary.failure.role == "decode-0"
    # the orchestrator ended it (it would sleep 60 s): stopped by teardown, not exited
    state_role = RunState.read(tmp_path)
    assert state_role is not None and state_role.role("decode-0").tasks[0].stopped
    assert [p.status for p in summary.points] == [PointStatus.ABORTED]
    assert wait_gone(all_pids(summary)) == []
    state = RunState.read(tmp_path)
    assert state is not None and state.status is RunStatus.FAILED


def test_role_exiting_at_start_is_named_with_its_log_tail(tmp_path: Path) -> None:
    code = "import sys; print('loading weights'); print('CUDA out of memory'); sys.exit(3)"
    summary = run(tmp_path, [python_role("prefill-0", code, deadline_s=60)])

    assert summary.status is RunStatus.FAILED
    assert summary.reason == "role prefill-0 exited with code 3"
    assert summary.failure is not None
    assert summary.failure.log == str(tmp_path / "logs" / "prefill-0.log")
    assert "CUDA out of memory" in summary.failure.log_tail
    assert summary.role_exit_codes["prefill-0"] == [3]  # its own exit, not the deadline
    orchestrator_log = (tmp_path / "logs" / "orchestrator.log").read_text()
    assert "FAILED: role prefill-0 exited with code 3" in orchestrator_log
    assert "| CUDA out of memory" in orchestrator_log


def test_teardown_kills_the_whole_process_tree(tmp_path: Path) -> None:
    # the leader exits after starting a child: the run fails on that exit, and teardown
    # must still reach the child left in the role's process group
    pidfile = tmp_path / "child.pid"
    role = RolePlan(
        name="decode-0",
        kind=RoleKind.DECODE,
        node_ranks=[0],
        ports=["http"],
        argv=["sh", "-c", f"sleep 300 & echo $! > {pidfile}; exit 4"],
        health=HealthPlan(deadline_s=60, interval_s=0.05),
    )
    summary = run(tmp_path, [role])

    assert summary.status is RunStatus.FAILED
    assert summary.reason == "role decode-0 exited with code 4"
    child = int(pidfile.read_text())
    assert wait_gone([child, *all_pids(summary)]) == []


def test_teardown_stops_and_names_a_child_that_left_the_process_group(tmp_path: Path) -> None:
    # `setsid` takes the child out of the role's group (and session): only the mark the
    # role's environment carries still leads to it once the role is gone
    pidfile = tmp_path / "child.pid"
    role = RolePlan(
        name="decode-0",
        kind=RoleKind.DECODE,
        node_ranks=[0],
        ports=["http"],
        argv=["sh", "-c", f"setsid sleep 301 > /dev/null 2>&1 & echo $! > {pidfile}; exit 4"],
        health=HealthPlan(deadline_s=60, interval_s=0.05),
    )
    child = 0
    try:
        summary = run(tmp_path, [role])
        child = int(pidfile.read_text())
        assert summary.reason == "role decode-0 exited with code 4"
        assert not alive(child)  # stopped by teardown itself
        log = (tmp_path / "logs" / "orchestrator.log").read_text()
        assert (
            f"decode-0 left 1 process(es) running outside its process group, stopped: "
            f"sleep (pid {child})" in log
        )
    finally:
        if child and alive(child):
            os.kill(child, signal.SIGKILL)


def test_teardown_stops_a_child_that_shed_both_its_group_and_its_environment(
    tmp_path: Path,
) -> None:
    # `env -i` drops the task mark too: only having been seen below the role while the
    # role ran (the launcher looks every second) still leads to it
    pidfile = tmp_path / "child.pid"
    script = f"env -i setsid sleep 303 > /dev/null 2>&1 & echo $! > {pidfile}; sleep 5; exit 4"
    role = RolePlan(
        name="decode-0",
        kind=RoleKind.DECODE,
        node_ranks=[0],
        ports=["http"],
        argv=["sh", "-c", script],
        health=HealthPlan(deadline_s=60, interval_s=0.05),
    )
    child = 0
    try:
        summary = run(tmp_path, [role])
        child = int(pidfile.read_text())
        assert summary.reason == "role decode-0 exited with code 4"
        assert not alive(child)
        log = (tmp_path / "logs" / "orchestrator.log").read_text()
        assert f"sleep (pid {child})" in log
    finally:
        if child and alive(child):
            os.kill(child, signal.SIGKILL)


def test_unknown_placeholder_fails_before_anything_starts(tmp_path: Path) -> None:
    role = python_role("decode-0", "pass")
    role.argv.append("${router.url}")
    summary = run(tmp_path, [role])

    assert summary.status is RunStatus.FAILED
    assert summary.exit_code == 2
    assert summary.reason is not None and "${router.url}" in summary.reason
    assert summary.role_pids == {}


def test_roles_get_their_bindings_and_gpu_visibility(tmp_path: Path) -> None:
    out = tmp_path / "seen.txt"
    code = (
        "import os, sys; open(sys.argv[1], 'w').write("
        "' '.join(sys.argv[2:]) + ' ' + os.environ['CUDA_VISIBLE_DEVICES'] + ' ' + os.environ['X'])"
    )
    role = RolePlan(
        name="decode-0",
        kind=RoleKind.DECODE,
        node_ranks=[0],
        gpus_per_node=2,
        gpu_ids=[2, 3],
        ports=["http", "bootstrap"],
        argv=[PY, "-c", code, str(out), "${self.url}", "${self.bootstrap_port}", "${run.dir}"],
        env={"X": "${self.host}"},
        # it writes and exits: the exit fails the run, whatever the machine's load
        health=HealthPlan(deadline_s=60, interval_s=0.05),
    )
    summary = run(tmp_path, [role])

    url, bootstrap, run_dir, gpus, host = out.read_text().split()
    state = RunState.read(tmp_path)
    assert state is not None
    ports = state.role("decode-0").ports
    assert url == f"http://127.0.0.1:{ports['http_port']}"
    assert int(bootstrap) == ports["bootstrap_port"] != ports["http_port"]
    assert (run_dir, gpus, host) == (str(tmp_path), "2,3", "127.0.0.1")
    assert summary.reason == "role decode-0 exited with code 0"  # a server must keep running


def test_benchmark_type_the_job_cannot_run_is_refused_before_anything_starts(
    tmp_path: Path,
) -> None:
    plan = make_plan([python_role("decode-0", "import time; time.sleep(60)")])
    plan.bench.type = "mmlu"  # a plan.json written by hand, or by another version
    plan.write(tmp_path)
    summary = Orchestrator(tmp_path, plan, LocalLauncher(), OPTIONS).run()

    assert summary.status is RunStatus.FAILED
    assert summary.exit_code == 2
    assert summary.reason is not None
    assert summary.reason.startswith("unsupported: benchmark type mmlu (an accuracy benchmark")
    assert summary.role_pids == {}


class NodeLosingLauncher(LocalLauncher):
    """Two local nodes; the second is reported gone, as Slurm reports a failed node."""

    def __init__(self) -> None:
        super().__init__(nodes=2)

    def lost_nodes(self) -> dict[int, str]:
        return {1: "local1 (DOWN: cable pulled)"}


def test_a_role_that_ended_with_its_node_names_the_node(tmp_path: Path) -> None:
    role = python_role("decode-0", "import sys; sys.exit(1)", deadline_s=60)
    role.node_ranks = [1]
    router = python_role("router", "import time; time.sleep(60)", deadline_s=60)
    plan = make_plan([role, router])
    plan.write(tmp_path)
    summary = Orchestrator(tmp_path, plan, NodeLosingLauncher(), OPTIONS).run()

    assert summary.status is RunStatus.FAILED
    assert summary.failure is not None
    assert summary.failure.nodes_lost == ["local1"]
    assert summary.failure.role == "decode-0"
    assert summary.reason == (
        "lost node local1 (DOWN: cable pulled): Slurm removed it from the job; "
        "role(s) decode-0 ended with it"
    )
    assert wait_gone(all_pids(summary)) == []
