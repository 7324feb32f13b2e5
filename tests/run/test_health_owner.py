"""A role is healthy only when the process the plan started answers: not another program
that took its port, and never a role whose process has already ended."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from disagg.launch.executor import RoleProcess
from disagg.launch.health import probe
from disagg.launch.local import LocalLauncher
from disagg.launch.orchestrator import Orchestrator, OrchestratorOptions
from disagg.launch.role_start import RoleStarter
from disagg.launch.run_context import RunContext
from disagg.launch.state import RunState, RunStatus, RunSummary

from .conftest import make_plan, python_role

OPTIONS = OrchestratorOptions(echo=False, handle_signals=False, stop_grace_s=2.0)


class AlwaysHealthy(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def impostor(port: int) -> Iterator[None]:
    server = HTTPServer(("127.0.0.1", port), AlwaysHealthy)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()


def start_in_background(
    run_dir: Path, code: str, deadline_s: float
) -> tuple[threading.Thread, list[RunSummary]]:
    plan = make_plan([python_role("decode-0", code, deadline_s=deadline_s)])
    plan.write(run_dir)
    orchestrator = Orchestrator(run_dir, plan, LocalLauncher(), OPTIONS)
    box: list[RunSummary] = []
    thread = threading.Thread(target=lambda: box.append(orchestrator.run()), daemon=True)
    thread.start()
    return thread, box


def launched_port(run_dir: Path, thread: threading.Thread) -> int:
    """The role's http port, once its task has started (the test's own timeout bounds it)."""
    while thread.is_alive():
        try:
            state = RunState.read(run_dir)
        except ValueError:
            state = None
        if state is not None and state.roles and state.roles[0].tasks[0].pid:
            return state.roles[0].ports["http_port"]
        time.sleep(0.02)
    raise AssertionError("the run ended before its role started")


def test_an_impostor_answering_on_the_roles_port_does_not_make_it_healthy(
    tmp_path: Path,
) -> None:
    # the role never binds its port (an engine still loading, or one that failed to bind)
    thread, box = start_in_background(tmp_path, "import time; time.sleep(60)", deadline_s=3.0)
    port = launched_port(tmp_path, thread)
    with impostor(port):
        thread.join(timeout=60)
    [summary] = box

    assert summary.status is RunStatus.FAILED
    assert summary.reason is not None
    assert summary.reason.startswith("role decode-0 not healthy after 3 s")
    assert f"port {port} answers, but not from decode-0's processes" in summary.reason
    assert f"(pid {os.getpid()})" in summary.reason  # the impostor, by name and PID
    state = RunState.read(tmp_path)
    assert state is not None and not state.role("decode-0").healthy


def test_the_role_itself_answering_is_healthy(tmp_path: Path) -> None:
    # the same check passes a role that serves its port itself (through a child process)
    serve = (
        "import subprocess, sys, os; "
        "subprocess.run([sys.executable, '-m', 'http.server', os.environ['PORT'], "
        "'--bind', '127.0.0.1'])"
    )
    plan = make_plan([python_role("decode-0", serve, deadline_s=30.0)])
    plan.roles[0].env = {"PORT": "${self.http_port}"}
    health = plan.roles[0].health
    assert health is not None
    health.path = "/"
    plan.write(tmp_path)

    summary = Orchestrator(tmp_path, plan, LocalLauncher(), OPTIONS).run()

    state = RunState.read(tmp_path)
    assert state is not None and state.role("decode-0").healthy, summary.reason


def test_a_port_taken_after_it_was_handed_out_is_named_before_the_role_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = make_plan([python_role("decode-0", "import time; time.sleep(60)")])
    plan.write(tmp_path)
    real_bind = RoleStarter.bind
    taker = socket.socket()

    def bind_then_taken(self: RoleStarter, models: tuple[str, str]) -> None:
        real_bind(self, models)  # ports handed out; now something else takes one
        taker.bind(("127.0.0.1", self.run.state.role("decode-0").ports["http_port"]))
        taker.listen()

    monkeypatch.setattr(RoleStarter, "bind", bind_then_taken)
    with taker:
        summary = Orchestrator(tmp_path, plan, LocalLauncher(), OPTIONS).run()
        port = taker.getsockname()[1]

    assert summary.status is RunStatus.FAILED
    assert summary.reason is not None
    assert summary.reason.startswith(
        f"port {port} (http_port) of role decode-0 was taken after it was handed out"
    )
    assert f"(pid {os.getpid()})" in summary.reason
    assert summary.role_pids == {}  # the role never started


class Ended(RoleProcess):
    """A task that has already exited (as a role that failed to bind its port does)."""

    role = "decode-0"
    node_rank = 0

    @property
    def pid(self) -> int:
        return 1

    def poll(self) -> int | None:
        return 1

    def stop(self, grace_s: float = 5.0) -> int | None:
        return 1


def test_a_role_whose_process_has_exited_is_never_healthy(tmp_path: Path) -> None:
    plan = make_plan([python_role("decode-0", "pass")])
    run = RunContext(tmp_path, plan, LocalLauncher(), OPTIONS, None)
    run.tasks.append((plan.roles[0], Ended()))
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    with impostor(port):
        url = f"http://127.0.0.1:{port}/health"
        assert probe(url)[0]  # something answers 200 there
        why = RoleStarter(run).serving_role("decode-0", url)

    assert why == "decode-0's process has exited"
