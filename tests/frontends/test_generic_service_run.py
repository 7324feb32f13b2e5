"""A recipe's own `type: generic` service started by a simulated run, as srt-slurm starts one.

What a user relies on: the command runs as written with its env, on its node, in its
start stage; the job waits for its readiness gate (a TCP port and a log line) before the
next stage; a critical service that dies fails the run naming it, a non-critical one
costs only its log; a gate that never opens fails the run naming the service; and
nothing outlives the run. The service is a tiny Python TCP server.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import socket
import sys
import threading
from pathlib import Path

import pytest
from rich.console import Console

from disagg.launch.local import LocalLauncher
from disagg.launch.orchestrator import Orchestrator
from disagg.launch.runner import roles_table
from disagg.launch.state import RunState, RunStatus, RunSummary
from disagg.plan.from_recipe import plans_for
from disagg.plan.model import Plan
from run.conftest import SIM_RECIPE, disagg, wait_gone

from .role_kill import OPTIONS, run_killing

pytestmark = pytest.mark.slow

SERVER = """\
import os, socket, sys
port = int(sys.argv[1])
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", port))
server.listen()
print("probe listening on", port, "greeting", os.environ["PROBE_GREETING"], flush=True)
while True:
    conn, _ = server.accept()
    conn.close()
"""


def rendered_roles(run_dir: Path) -> list[str]:
    """The lines of the roles table `disagg run` and `disagg status --watch` show."""
    state = RunState.model_validate_json((run_dir / "state.json").read_text())
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(roles_table(state))
    return [line.strip() for line in console.export_text().splitlines()]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def recipe(tmp_path: Path, *, port: int, extra: str = "", gate_port: int | None = None) -> Path:
    """The simulated 1P1D recipe with a `probe` service: the TCP server above."""
    service = (
        "services:\n"
        "  - name: probe\n"
        "    type: generic\n"
        "    start: before_workers\n"
        f"    command: [{json.dumps(sys.executable)}, -c, {json.dumps(SERVER)}, '{port}']\n"
        "    env:\n      PROBE_GREETING: hello-from-recipe\n"
        "    preamble: echo preamble ran\n"
        "    readiness:\n"
        f"      tcp: {{port: {gate_port or port}}}\n"
        "      log: {pattern: 'probe listening on \\d+'}\n"
        "      timeout_seconds: 30\n"
        "      interval_seconds: 0\n"
        f"{extra}"
    )
    path = tmp_path / "service.yaml"
    text = SIM_RECIPE.read_text().replace('"1x2x4x8x16x32"', '"1x2x4"')
    path.write_text(text + service)
    return path


def test_the_service_runs_as_written_and_gates_the_workers(tmp_path: Path) -> None:
    port = free_port()
    done = disagg(
        "run", recipe(tmp_path, port=port), "--local", "--out", tmp_path / "runs", "--json"
    )
    assert done.returncode == 0, done.stderr[-3000:]
    run_dir = Path(json.loads(done.stdout)["run_dir"])
    plan = Plan.read(run_dir)
    assert plan.stages[0] == ["service_probe"]  # before_workers: ahead of the workers
    assert plan.stages[1] == ["prefill-0", "decode-0"]
    log = (run_dir / "logs" / "service_probe.log").read_text()
    assert "preamble ran" in log
    assert f"probe listening on {port} greeting hello-from-recipe" in log
    orchestrator = (run_dir / "logs" / "orchestrator.log").read_text()
    # The gate opened before any worker was started.
    assert orchestrator.index("service_probe ready after") < orchestrator.index("start prefill-0")
    state = json.loads((run_dir / "state.json").read_text())
    roles = {role["name"]: role for role in state["roles"]}
    assert roles["service_probe"]["healthy"] is True
    line = next(row for row in rendered_roles(run_dir) if row.startswith("service_probe"))
    assert "stopped" in line  # the live view's line for it: stopped at teardown, by PID
    summary = RunSummary.model_validate_json((run_dir / "summary.json").read_text())
    assert "service_probe" in summary.role_pids
    assert wait_gone([pid for pids in summary.role_pids.values() for pid in pids]) == []


def test_a_critical_service_that_dies_fails_the_run_naming_it(tmp_path: Path) -> None:
    path = recipe(tmp_path, port=free_port(), extra="    critical: true\n")
    run_killing(path, tmp_path / "run", "service_probe")
    status = disagg("status", tmp_path / "run", "--json")
    assert status.returncode == 1
    assert json.loads(status.stdout)["failure"]["role"] == "service_probe"


def test_a_sidecar_that_dies_costs_its_log_and_the_run_goes_on(tmp_path: Path) -> None:
    [plan] = plans_for([str(recipe(tmp_path, port=free_port()))], None)
    assert plan.role("service_probe").critical is False
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    plan.write(run_dir)
    killed: list[int] = []

    def kill(state: RunState) -> None:
        pid = state.role("service_probe").tasks[0].pid
        assert pid is not None
        killed.append(pid)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)

    def hook(state: RunState) -> None:
        if state.current_point == plan.bench.points[1].key and not killed:
            killed.append(0)
            threading.Timer(0.1, kill, args=(state,)).start()

    summary = Orchestrator(run_dir, plan, LocalLauncher(plan.nodes), OPTIONS, on_update=hook).run()
    assert killed and killed[-1] > 0
    assert summary.status is RunStatus.COMPLETED, summary.reason
    state = json.loads((run_dir / "state.json").read_text())
    [task] = next(r for r in state["roles"] if r["name"] == "service_probe")["tasks"]
    assert task["exit_code"] == -9
    orchestrator = (run_dir / "logs" / "orchestrator.log").read_text()
    assert (
        "service service_probe exited with code -9 (not critical: the run goes on)" in orchestrator
    )
    line = next(row for row in rendered_roles(run_dir) if row.startswith("service_probe"))
    assert "exited -9" in line
    assert wait_gone([pid for pids in summary.role_pids.values() for pid in pids]) == []


def test_a_gate_that_never_opens_fails_the_run_naming_the_service(tmp_path: Path) -> None:
    nobody = free_port()  # the gate waits on a port the service never opens
    path = recipe(tmp_path, port=free_port(), gate_port=nobody)
    path.write_text(path.read_text().replace("timeout_seconds: 30", "timeout_seconds: 1"))
    done = disagg("run", path, "--local", "--out", tmp_path / "runs", "--json")
    assert done.returncode == 1
    run_dir = Path(json.loads(done.stdout)["run_dir"])
    summary = RunSummary.model_validate_json((run_dir / "summary.json").read_text())
    assert summary.failure is not None and summary.failure.role == "service_probe"
    assert summary.reason is not None
    assert summary.reason.startswith("service service_probe not ready after 1 s on node(s) 0")
    assert f"TCP 127.0.0.1:{nobody}" in summary.reason
    assert wait_gone([pid for pids in summary.role_pids.values() for pid in pids]) == []


def test_a_port_held_by_another_program_does_not_open_the_gate(tmp_path: Path) -> None:
    with socket.socket() as other:  # answers on the gated port, but is not the service
        other.bind(("127.0.0.1", 0))
        other.listen()
        held = int(other.getsockname()[1])
        path = recipe(tmp_path, port=free_port(), gate_port=held)
        path.write_text(path.read_text().replace("timeout_seconds: 30", "timeout_seconds: 1"))
        done = disagg("run", path, "--local", "--out", tmp_path / "runs", "--json")
    assert done.returncode == 1
    run_dir = Path(json.loads(done.stdout)["run_dir"])
    summary = RunSummary.model_validate_json((run_dir / "summary.json").read_text())
    assert summary.failure is not None and summary.failure.role == "service_probe"
    assert summary.reason is not None
    assert f"port {held} answers, but not from service_probe's processes" in summary.reason
    assert wait_gone([pid for pids in summary.role_pids.values() for pid in pids]) == []
