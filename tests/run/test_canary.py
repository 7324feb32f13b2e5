"""The canary: one request through the serving endpoint before any point is measured.

A cold disaggregated deployment can fail its very first request once (vLLM's first NIXL
handshake timing out, a router's pooled connection closed under it): a server error is
tried again, up to three times, and said in the log. A fault that every try meets fails
the run, naming the role whose log recorded an error meanwhile, with its last lines; an
answer no retry can change (a 4xx) fails at once.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from disagg.launch.local import LocalLauncher
from disagg.launch.orchestrator import Orchestrator, OrchestratorOptions
from disagg.launch.point_loop import CANARY_ATTEMPTS
from disagg.launch.state import RunStatus, RunSummary
from disagg.plan.model import HealthPlan, RoleKind, RolePlan

from .conftest import PY, make_plan

OPTIONS = OrchestratorOptions(echo=False, quiet_bench=True, handle_signals=False)

# A serving endpoint on loopback: /health answers 200; the first `failures` completions
# get HTTP `status` (each logged as an ERROR line, the way an engine logs a failed
# request), later ones a completion.
SERVER = r"""
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

port, status, failures = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
seen = [0]

class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.answer(200, {})

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        seen[0] += 1
        if seen[0] <= failures:
            print(f"ERROR request {seen[0]}: NIXL transfer failure: handshake_failed", flush=True)
            self.answer(status, {"error": {"message": "Internal server error"}})
        else:
            print(f"request {seen[0]}: ok", flush=True)
            self.answer(200, {"choices": [{"text": " hello"}]})

ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
"""


def serving_role(status: int, failures: int) -> RolePlan:
    return RolePlan(
        name="decode-0",
        kind=RoleKind.AGGREGATED,
        node_ranks=[0],
        ports=["http"],
        argv=[PY, "-c", SERVER, "${self.http_port}", str(status), str(failures)],
        health=HealthPlan(path="/health", deadline_s=60, interval_s=0.05),
    )


def run_canary_only(tmp_path: Path, role: RolePlan) -> RunSummary:
    """Run a plan whose one point never gets measured: the canary decides the outcome
    (a passing canary leads to a point the sweep measures through the same server)."""
    plan = make_plan([role], points=(1,), num_prompts=1, disaggregated=False)
    plan.write(tmp_path)
    return Orchestrator(tmp_path, plan, LocalLauncher(), OPTIONS).run()


def orchestrator_log(run_dir: Path) -> str:
    return (run_dir / "logs" / "orchestrator.log").read_text()


def test_a_server_error_on_the_first_request_is_tried_again_and_said(tmp_path: Path) -> None:
    summary = run_canary_only(tmp_path, serving_role(500, failures=1))

    log = orchestrator_log(tmp_path)
    assert f"canary attempt 1 of {CANARY_ATTEMPTS} failed: HTTP 500" in log
    assert "canary ok through http://127.0.0.1:" in log
    assert f"(attempt 2 of {CANARY_ATTEMPTS})" in log
    assert "canary request failed" not in (summary.reason or "")


def test_a_server_error_every_try_meets_fails_the_run_naming_the_role_that_logged_it(
    tmp_path: Path,
) -> None:
    summary = run_canary_only(tmp_path, serving_role(500, failures=CANARY_ATTEMPTS + 5))

    assert summary.status is RunStatus.FAILED
    reason = summary.reason or ""
    assert reason.startswith(f"canary request failed ({CANARY_ATTEMPTS} attempts): HTTP 500")
    assert "decode-0 logged: ERROR request 1: NIXL transfer failure" in reason
    assert summary.failure is not None and summary.failure.role == "decode-0"
    assert summary.failure.log == str(tmp_path / "logs" / "decode-0.log")
    tail = "\n".join(summary.failure.log_tail)
    assert f"ERROR request {CANARY_ATTEMPTS}:" in tail  # every try reached the server
    assert f"ERROR request {CANARY_ATTEMPTS + 1}:" not in tail  # and no more than that


@pytest.mark.parametrize("status", [400, 404])
def test_an_answer_no_retry_can_change_fails_at_once(tmp_path: Path, status: int) -> None:
    summary = run_canary_only(tmp_path, serving_role(status, failures=100))

    assert summary.status is RunStatus.FAILED
    assert (summary.reason or "").startswith(f"canary request failed: HTTP {status}")
    assert "canary attempt" not in orchestrator_log(tmp_path)
    assert "ERROR request 2:" not in (tmp_path / "logs" / "decode-0.log").read_text()


def test_the_canary_failure_is_in_the_summary_file_with_the_role_s_log(tmp_path: Path) -> None:
    run_canary_only(tmp_path, serving_role(503, failures=100))

    written = json.loads((tmp_path / "summary.json").read_text())
    assert written["failure"]["role"] == "decode-0"
    assert any("ERROR request" in line for line in written["failure"]["log_tail"])
