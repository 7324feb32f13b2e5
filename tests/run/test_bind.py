"""Roles listen on their node's own address (loopback locally), not on every interface."""

from __future__ import annotations

from pathlib import Path

import pytest

from disagg.launch.local import LocalLauncher
from disagg.launch.orchestrator import Orchestrator, OrchestratorOptions
from disagg.launch.state import RunState, RunStatus
from disagg.plan.from_recipe import plans_for
from disagg.plan.model import PointPlan

ROOT = Path(__file__).resolve().parents[2]
LISTEN = "0A"


def listening_addresses(port: int) -> set[str]:
    """Local addresses (as /proc/net/tcp writes them, hex) with a socket listening on `port`."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            address, _, hex_port = fields[1].rpartition(":")
            if fields[3] == LISTEN and int(hex_port, 16) == port:
                found.add(address)
    return found


@pytest.mark.slow
def test_every_role_of_a_recipe_run_listens_on_loopback_only(tmp_path: Path) -> None:
    [plan] = plans_for([f"{ROOT}/examples/sim/1p1d.yaml"], None)
    plan.bench.points = [PointPlan(concurrency=1, num_prompts=2)]
    plan.write(tmp_path)
    seen: dict[str, set[str]] = {}

    def hook(state: RunState) -> None:
        if state.phase.value == "measure" and not seen:
            for role in state.roles:
                for name, port in role.ports.items():
                    if name in ("http_port", "bootstrap_port", "metrics_port"):
                        seen[f"{role.name}.{name}"] = listening_addresses(port)

    options = OrchestratorOptions(echo=False, quiet_bench=True, handle_signals=False)
    summary = Orchestrator(tmp_path, plan, LocalLauncher(), options, on_update=hook).run()

    assert summary.status is RunStatus.COMPLETED, summary.reason
    http = {key: value for key, value in seen.items() if key.endswith("http_port")}
    assert set(http) == {"prefill-0.http_port", "decode-0.http_port", "router.http_port"}
    loopback = {"0100007F"}  # 127.0.0.1, little-endian hex
    assert all(addresses == loopback for addresses in http.values()), seen
    assert all("00000000" not in addresses for addresses in seen.values()), seen
