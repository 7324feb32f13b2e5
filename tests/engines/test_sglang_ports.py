"""SGLang workers start on a pinned `--nccl-port` of their own, as srt-slurm's do.

srt-slurm v1.0.68's `SGLangProtocol.build_worker_command` drops a recipe's own
`nccl-port` and passes `SGLANG_NCCL_PORT_BASE (17500) + the process's index`, so that
workers starting together on one node never race for the port SGLang would otherwise
probe for (its tests: `test_worker_command_assigns_deterministic_nccl_port`, and
`test_direct_plan_contains_owned_infrastructure_and_observability`: every worker a
different one). disagg reserves the port with each worker's other ports.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from disagg.plan.model import RoleKind
from engines.engine_support import WORKER_KINDS, plan_text, recipe, worker_tasks

PD = (
    "  gpus_per_node: 8\n  prefill_nodes: 1\n  prefill_workers: 2\n"
    "  decode_nodes: 1\n  decode_workers: 2\n"
)
ROLES = (
    "    prefill:\n      tp-size: 4\n      nccl-port: 1234\n"
    "    decode:\n      tp-size: 4\n      nccl_port: 1234\n"
)


@pytest.mark.parametrize("frontend", ["sglang", "dynamo"])
def test_every_worker_gets_a_pinned_nccl_port_of_its_own(tmp_path: Path, frontend: str) -> None:
    text = recipe("sglang", ROLES, resources=PD, frontend=frontend)
    plan = plan_text(tmp_path, text)
    ports = []
    for role, _, argv, _ in worker_tasks(plan):
        if role.kind not in WORKER_KINDS:
            continue
        assert argv.count("--nccl-port") == 1 and "--nccl_port" not in argv
        assert "nccl" in role.ports
        ports.append(argv[argv.index("--nccl-port") + 1])
    assert len(ports) == 4 and len(set(ports)) == 4 and "1234" not in ports
    # the recipe's own value is replaced, and the plan says so
    said = {i["field"] for i in plan.ignored if "nccl" in i["field"]}
    assert said == {
        "backend.sglang_config.prefill.nccl-port",
        "backend.sglang_config.decode.nccl_port",
    }


def test_a_multi_node_worker_passes_its_port_on_every_node(tmp_path: Path) -> None:
    resources = "  gpus_per_node: 8\n  agg_nodes: 2\n  agg_workers: 1\n"
    plan = plan_text(
        tmp_path, recipe("sglang", "    aggregated:\n      tp-size: 16\n", resources=resources)
    )
    argvs = [argv for role, _, argv, _ in worker_tasks(plan) if role.kind is RoleKind.AGGREGATED]
    assert len(argvs) == 2
    assert len({argv[argv.index("--nccl-port") + 1] for argv in argvs}) == 1
