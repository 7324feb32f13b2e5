"""The environment srtctl's launcher gives every worker process, whatever the frontend.

srt-slurm v1.0.68, `cli/mixins/worker_stage.py`: `start_worker` (a task per node) and
`start_endpoint_worker` (an MPI step) set HEAD_NODE_IP, ETCD_ENDPOINTS, NATS_SERVER,
DYN_SYSTEM_PORT, DYN_REQUEST_PLANE (not on an MPI step), DYN_SKIP_SGLANG_LOG_FORMATTING,
DYN_EVENT_PLANE when set, OpenTelemetry's variables and DYN_LOG's default, then the mode's
and the recipe's environment over them.
"""

from __future__ import annotations

from pathlib import Path

from disagg.plan.launcher_env import DYN_LOG
from disagg.plan.model import WORKER_KINDS
from engines.engine_support import plan_text, recipe, worker_tasks

SGLANG_PD = (
    "  gpus_per_node: 8\n  prefill_nodes: 1\n  prefill_workers: 1\n"
    "  decode_nodes: 1\n  decode_workers: 1\n"
)
ROLES = "    prefill:\n      tp-size: 8\n    decode:\n      tp-size: 8\n"


def router_recipe(extra: str = "") -> str:
    return recipe("sglang", ROLES, resources=SGLANG_PD, frontend="sglang") + extra


def test_router_workers_get_srtctls_launcher_variables(tmp_path: Path) -> None:
    plan = plan_text(tmp_path, router_recipe())
    for name in ("prefill-0", "decode-0"):
        role = plan.role(name)
        assert role.env["HEAD_NODE_IP"] == "${nodes.0}"
        # srtctl's fixed etcd / NATS ports on the infra node, set even though a router job's
        # workers register nowhere (the plan says so: router-infra)
        assert role.env["ETCD_ENDPOINTS"] == "http://${node_names.0}:2379"
        assert role.env["NATS_SERVER"] == "nats://${node_names.0}:4222"
        assert role.env["DYN_SYSTEM_PORT"] == "${self.system_port}" and "system" in role.ports
        assert role.env["DYN_REQUEST_PLANE"] == "tcp"  # DynamoConfig.request_plane's default
        assert role.env["DYN_SKIP_SGLANG_LOG_FORMATTING"] == "1"
        assert role.env["DYN_LOG"] == DYN_LOG
        assert "DYN_EVENT_PLANE" not in role.env and "OTEL_SERVICE_NAME" not in role.env
    assert "router-infra" in [row["id"] for row in plan.differs]


def test_bound_values_name_the_head_and_infra_nodes(tmp_path: Path) -> None:
    tasks = worker_tasks(plan_text(tmp_path, router_recipe()))
    systems = set()
    for role, _rank, _argv, env in tasks:
        if role.kind not in WORKER_KINDS:
            continue
        assert env["HEAD_NODE_IP"] == "10.0.0.1"
        assert env["ETCD_ENDPOINTS"] == "http://10.0.0.1:2379"
        systems.add(env["DYN_SYSTEM_PORT"])
    assert len(systems) == 2  # each worker its own system port


def test_a_dedicated_infra_node_holds_etcd_and_the_head_is_the_next(tmp_path: Path) -> None:
    """srtctl's Nodes.from_slurm: the reserved node is infra; the head is the first worker node."""
    plan = plan_text(tmp_path, router_recipe("infra: {etcd_nats_dedicated_node: true}\n"))
    env = plan.role("prefill-0").env
    assert env["HEAD_NODE_IP"] == "${nodes.1}"
    assert env["NATS_SERVER"] == "nats://${node_names.0}:4222"


def test_the_recipes_environment_and_planes_win_over_the_launchers(tmp_path: Path) -> None:
    extra = (
        "environment: {DYN_LOG: debug}\n"
        "dynamo: {request_plane: nats, event_plane: zmq}\n"
        "observability: {enable_otel: true, otel_endpoint: 'http://otel:4317'}\n"
    )
    plan = plan_text(tmp_path, router_recipe(extra))
    prefill, decode = plan.role("prefill-0").env, plan.role("decode-0").env
    assert prefill["DYN_LOG"] == "debug"  # the recipe's, set after the launcher's default
    assert prefill["DYN_REQUEST_PLANE"] == "nats" and prefill["DYN_EVENT_PLANE"] == "zmq"
    # build_otel_env(observability, mode): the component is the worker's mode
    assert prefill["OTEL_SERVICE_NAME"] == "dynamo-prefill"
    assert decode["OTEL_SERVICE_NAME"] == "dynamo-decode"
    assert prefill["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] == "http://otel:4317"


def test_an_mpi_worker_gets_no_request_plane_variable(tmp_path: Path) -> None:
    """start_endpoint_worker (TRT-LLM's MPI step) sets no DYN_REQUEST_PLANE."""
    roles = "    aggregated:\n      tensor_parallel_size: 1\n"
    resources = "  gpus_per_node: 8\n  agg_nodes: 1\n  agg_workers: 1\n  gpus_per_agg: 1\n"
    plan = plan_text(tmp_path, recipe("trtllm", roles, resources=resources, frontend="dynamo"))
    worker = plan.role("aggregated-0")
    assert worker.mpi is not None
    assert "DYN_REQUEST_PLANE" not in worker.env and worker.env["HEAD_NODE_IP"] == "${nodes.0}"


def test_simulated_workers_get_none_of_it(tmp_path: Path) -> None:
    text = router_recipe().replace("  type: sglang\n", "  type: sglang\n  engine: sim\n", 1)
    plan = plan_text(tmp_path, text)
    assert plan.simulated
    for name in ("prefill-0", "decode-0"):
        assert "HEAD_NODE_IP" not in plan.role(name).env
    assert "router-infra" not in [row["id"] for row in plan.differs]
