"""`host_setup`: commands run once per node before anything starts, teardown after, as
srt-slurm runs them (here: the local executor, where every node rank is this host).

What a user relies on: the commands run before any role, joined with `&&`, on the nodes
named (`all` or `workers`), their output in the run directory; a failing (or overdue)
command ends the run before any worker starts, naming the node; `ignore_failure` goes on;
teardown runs after every role has stopped, even when the run failed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from disagg.launch.state import RunSummary
from disagg.plan.from_recipe import plans_for
from disagg.plan.job_plan import host_setup_plan
from disagg.plan.model import RoleKind, RolePlan
from disagg.recipe.job_sections import HostSetupSection

from .conftest import SIM_RECIPE, disagg, wait_gone


def recipe(tmp_path: Path, block: str) -> Path:
    path = tmp_path / "setup.yaml"
    text = SIM_RECIPE.read_text().replace('"1x2x4x8x16x32"', '"1x2"')
    path.write_text(text + "\nhost_setup:\n" + block)
    return path


def run(tmp_path: Path, block: str) -> tuple[int, Path, RunSummary]:
    out = tmp_path / "run"
    done = disagg("run", recipe(tmp_path, block), "--local", "--out", out, timeout=180)
    summary = RunSummary.model_validate_json((out / "summary.json").read_text())
    assert wait_gone([pid for pids in summary.role_pids.values() for pid in pids]) == []
    return done.returncode, out, summary


def marks(tmp_path: Path) -> str:
    return f"{tmp_path}/marks"


def test_the_commands_run_before_any_role_and_teardown_after_all_of_them(
    tmp_path: Path,
) -> None:
    block = (
        "  commands:\n"
        f"    - echo setup >> {marks(tmp_path)}\n"
        "    - echo second command on $(hostname)\n"
        "  teardown:\n"
        f"    - echo teardown >> {marks(tmp_path)}\n"
    )
    code, out, summary = run(tmp_path, block)
    assert code == 0, summary.reason
    assert Path(marks(tmp_path)).read_text() == "setup\nteardown\n"
    setup_log = (out / "logs" / "host-setup.0.log").read_text()
    assert "second command on" in setup_log
    assert (out / "logs" / "host-teardown.0.log").is_file()
    # Before the first stage was launched.
    timeline = summary.timeline
    assert timeline["host_setup_done"] <= min(
        value for key, value in timeline.items() if key.endswith("_launch")
    )


def test_a_failing_command_ends_the_run_before_any_worker_naming_the_node(
    tmp_path: Path,
) -> None:
    block = (
        "  commands:\n"
        "    - echo about to fail\n"
        "    - exit 3\n"
        f"    - echo never >> {marks(tmp_path)}\n"
        "  teardown:\n"
        f"    - echo teardown >> {marks(tmp_path)}\n"
    )
    code, out, summary = run(tmp_path, block)
    assert code == 1
    assert summary.reason is not None
    assert summary.reason.startswith("host setup failed on node ")
    assert summary.reason.endswith(": exit code 3")
    assert summary.failure is not None and summary.failure.log_tail[-1] == "about to fail"
    assert summary.role_pids == {}  # no role was started
    assert not (out / "logs" / "prefill-0.log").exists()
    assert Path(marks(tmp_path)).read_text() == "teardown\n"  # teardown all the same
    status = disagg("status", out, "--json")
    assert json.loads(status.stdout)["failure"]["reason"] == summary.reason


def test_commands_past_their_time_are_stopped_and_fail_the_run(tmp_path: Path) -> None:
    block = "  timeout_seconds: 1\n  commands:\n    - sleep 60\n"
    code, _, summary = run(tmp_path, block)
    assert code == 1
    assert summary.reason is not None and summary.reason.endswith("not done within 1 s")


def test_ignore_failure_logs_the_node_and_goes_on(tmp_path: Path) -> None:
    block = "  ignore_failure: true\n  commands:\n    - exit 5\n"
    code, out, summary = run(tmp_path, block)
    assert code == 0, summary.reason
    log = (out / "logs" / "orchestrator.log").read_text()
    assert "host setup failed on node" in log and "exit code 5" in log


@pytest.mark.parametrize(("nodes", "ranks"), [("all", [0, 1, 2]), ("workers", [1, 2])])
def test_the_nodes_it_targets(nodes: str, ranks: list[int]) -> None:
    """`workers`: only the nodes running engine workers (not a node of services alone)."""
    section = HostSetupSection(commands=["hostname"], nodes=nodes)  # type: ignore[arg-type]
    workers = [
        RolePlan(name="prefill-0", kind=RoleKind.PREFILL, node_ranks=[1]),
        RolePlan(name="decode-0", kind=RoleKind.DECODE, node_ranks=[2]),
    ]
    plan = host_setup_plan(section, workers, 3)
    assert plan is not None and plan.node_ranks == ranks and plan.timeout_s == 300


def test_a_two_node_recipe_runs_its_commands_on_both_nodes(tmp_path: Path) -> None:
    text = recipe(tmp_path, "  commands: [hostname]\n").read_text()
    path = tmp_path / "two.yaml"
    path.write_text(text.replace("  decode_nodes: 0\n", "  decode_nodes: 1\n"))
    [plan] = plans_for([str(path)], None)
    assert plan.nodes == 2
    assert plan.host_setup is not None and plan.host_setup.node_ranks == [0, 1]
