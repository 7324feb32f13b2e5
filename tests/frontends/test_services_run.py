"""Dynamo's services for real in simulated runs: etcd and NATS as the discovery, request
and event planes the recipe names, and nginx over several real `dynamo.frontend`s.

What a user relies on: a recipe that names etcd and NATS gets them (its workers register
in etcd, requests travel over NATS), nginx spreads requests over every frontend and keeps
a session on one, a dead service fails the run naming it, and nothing outlives the run.
Needs Debian's etcd-server, nats-server and nginx (scripts/services-up); skipped without
them unless DISAGG_REQUIRE_SERVICES=1 (set by scripts/test), where it fails.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import urllib.request
from pathlib import Path

import pytest

from disagg.launch.local import LocalLauncher
from disagg.launch.orchestrator import Orchestrator
from disagg.launch.state import RunState, RunStatus, RunSummary
from disagg.plan.from_recipe import plans_for
from disagg.plan.model import Plan
from run.conftest import disagg, wait_gone
from tiny_model import TinyModel

from .role_kill import OPTIONS, run_killing
from .shipped_examples import EXAMPLES, pointed_at
from .test_dynamo_run import recipe, results

pytestmark = pytest.mark.slow

SERVICES = "services:\n  - name: etcd\n    type: etcd\n  - name: nats\n    type: nats\n"
# srtctl's topology: nginx on the frontend's own node, one frontend on each worker node.
FAN_OUT = (
    "frontend:\n  type: dynamo\n  enable_multiple_frontends: true\n"
    "  num_additional_frontends: 1\n  nginx_session_affinity: true\n  dedicated_node: true\n"
)
SESSION_HEADER = "X-Dynamo-Session-ID"
EXAMPLE = EXAMPLES / "dynamo" / "sim-1p1d-dynamo-services.yaml"


@pytest.fixture(autouse=True)
def _services_installed() -> None:
    require_services()


def require_services() -> None:
    """Skip (or, under scripts/test, fail) when etcd, nats-server or nginx is missing."""
    missing = [name for name in ("etcd", "nats-server", "nginx") if not _which(name)]
    if missing:
        message = f"{', '.join(missing)} missing: scripts/services-up installs them (apt)"
        if os.environ.get("DISAGG_REQUIRE_SERVICES") == "1":
            pytest.fail(message)
        pytest.skip(message)


def _which(name: str) -> str | None:
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/bin")


def with_services(tmp_path: Path, model: TinyModel, extra: str) -> Path:
    path = recipe(tmp_path, model)
    path.write_text(path.read_text() + extra)
    return path


def all_pids(summary: RunSummary) -> list[int]:
    return [pid for pids in summary.role_pids.values() for pid in pids]


def test_the_services_example_discovers_through_etcd_and_sends_requests_over_nats(
    tmp_path: Path, tiny_model: TinyModel
) -> None:
    """The shipped example: etcd, NATS, a 1P1D mocker pair, two frontends behind nginx."""
    path = pointed_at(EXAMPLE, tiny_model, tmp_path / "services.yaml")
    done = disagg("run", path, "--local", "--out", tmp_path / "runs", "--json", timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    run_dir = Path(json.loads(done.stdout)["run_dir"])
    plan = Plan.read(run_dir)
    assert plan.stages == [
        ["etcd", "nats"],
        ["prefill-0", "decode-0"],
        ["frontend-0", "frontend-1"],
        ["nginx"],
    ]
    assert plan.serving_role == "nginx"
    # srtctl's layout: nginx, etcd and NATS on the frontend's node, a frontend per worker node
    assert plan.nodes == 3
    placed = {role.name: role.node_ranks for role in plan.roles}
    assert placed["nginx"] == placed["etcd"] == placed["nats"] == [0]
    assert [placed["frontend-0"], placed["frontend-1"]] == [placed["prefill-0"], placed["decode-0"]]
    assert not [item for item in plan.ignored if item["field"].startswith("services")]
    for name in ("prefill-0", "decode-0", "frontend-0", "frontend-1"):
        role = plan.role(name)
        # etcd is Dynamo's default discovery (no flag, as srtctl renders it); the workers
        # get `--request-plane`, the frontends DYN_REQUEST_PLANE
        assert "--discovery-backend" not in role.argv
        if name.startswith("frontend"):
            assert role.env["DYN_REQUEST_PLANE"] == "nats"
        else:
            assert "--request-plane nats" in " ".join(role.argv)
        assert "DYN_FILE_KV" not in role.env
    measured = results(run_dir)
    assert [r["valid"] for r in measured] == [True, True, True]
    for result in measured:
        assert result["total_output_tokens"] == result["completed"] * plan.bench.osl  # type: ignore[operator]
    logs = run_dir / "logs"
    # Workers registered in etcd (its data directory lies in the run directory), none in files.
    assert (run_dir / "etcd" / "member").is_dir() and not (run_dir / "dynamo-discovery").exists()
    assert "Prefill router target activated" in (logs / "frontend-0.log").read_text()
    # The workers took requests from NATS (their request plane), not over TCP.
    assert "Starting NATS push endpoint listener" in (logs / "decode-0.log").read_text()
    summary = RunSummary.model_validate_json((run_dir / "summary.json").read_text())
    assert {"etcd", "nats", "nginx"} <= set(summary.role_pids)
    assert wait_gone(all_pids(summary)) == []


def received(log: str) -> set[str]:
    """Request ids a Dynamo frontend's log says it received (its INFO line per request)."""
    plain = re.sub(r"\x1b\[[0-9;]*m", "", log)
    lines = (line for line in plain.splitlines() if "request received" in line)
    return {m.group(1) for line in lines if (m := re.search(r"request_id=([0-9a-f-]{36})", line))}


def children(pid: int) -> list[int]:
    """Processes whose parent is `pid`, from /proc."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _send_sessions(state: RunState, sent: dict[str, list[str]]) -> None:
    """Through nginx: four requests in each of two sessions, and their request ids."""
    nginx = state.role("nginx")
    url = f"http://{nginx.host}:{nginx.ports['http_port']}/v1/completions"
    for session in ("alpha", "beta"):
        for _ in range(4):
            body = {"model": "tiny", "prompt": "Hello", "max_tokens": 4}
            request = urllib.request.Request(
                url,
                data=json.dumps(body).encode(),
                headers={"Content-Type": "application/json", SESSION_HEADER: session},
            )
            with urllib.request.urlopen(request, timeout=60) as response:
                answer = json.loads(response.read())
            sent.setdefault(session, []).append(str(answer["id"]).removeprefix("cmpl-"))


def test_nginx_spreads_requests_over_two_frontends_and_keeps_a_session_on_one(
    tmp_path: Path, tiny_model: TinyModel
) -> None:
    text = recipe(tmp_path, tiny_model).read_text()
    text = text[: text.index("frontend:")] + FAN_OUT + text[text.index("benchmark:") :]
    text = text.replace("decode_nodes: 0", "decode_nodes: 1")  # two worker nodes
    path = tmp_path / "fan-out.yaml"
    path.write_text(text.replace(json.dumps(tiny_model.served_name), '"tiny"'))
    [plan] = plans_for([str(path)], None)
    assert plan.serving_role == "nginx" and plan.stages[-2:] == [
        ["frontend-0", "frontend-1"],
        ["nginx"],
    ]
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    plan.write(run_dir)
    sent: dict[str, list[str]] = {}
    errors: list[BaseException] = []
    workers: list[int] = []  # nginx's worker processes, which must end with the run too

    def hook(state: RunState) -> None:
        if state.current_point == "conc1" and not sent and not errors:
            try:
                master = state.role("nginx").tasks[0].pid
                workers.extend(children(master) if master else [])
                _send_sessions(state, sent)
            except (OSError, ValueError, KeyError) as exc:
                errors.append(exc)

    summary = Orchestrator(run_dir, plan, LocalLauncher(plan.nodes), OPTIONS, on_update=hook).run()  # type: ignore[arg-type]
    assert summary.status is RunStatus.COMPLETED, summary.reason
    assert errors == [] and workers
    served = {
        name: received((run_dir / "logs" / f"{name}.log").read_text())
        for name in ("frontend-0", "frontend-1")
    }
    assert all(served.values()), "nginx sent no request to one of the frontends"
    for session, ids in sent.items():  # every request of a session reached the same frontend
        reached = {name for name, seen in served.items() if set(ids) & seen}
        assert len(reached) == 1, f"session {session} reached {reached}"
        assert set(ids) <= served[reached.pop()]
    assert wait_gone([*all_pids(summary), *workers]) == []


@pytest.mark.parametrize("victim", ["etcd", "nats"])
def test_a_dying_service_fails_the_run_naming_it(
    tmp_path: Path, tiny_model: TinyModel, victim: str
) -> None:
    path = with_services(tmp_path, tiny_model, SERVICES)
    run_killing(path, tmp_path / "run", victim)
