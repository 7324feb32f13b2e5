"""vLLM workers under Dynamo as srt-slurm v1.0.68 renders them (`python3 -m dynamo.vllm`).

The reference is srt-slurm's `srtctl/backends/vllm.py` (`VLLMProtocol.build_worker_command`,
`_dp_per_node_endpoints_to_processes`) and its own tests in `tests/test_configs.py`
(`test_dp_per_node_*`, `test_connector_*`): their concrete assertions are restated here
against the per-node commands a disagg plan starts.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from disagg.errors import UnsupportedRecipe
from disagg.plan.model import Plan
from engines.engine_support import plan_text, worker_tasks

LMCACHE = "LMCacheConnectorV1"
ONE = "  gpus_per_node: 8\n  agg_nodes: 1\n  agg_workers: 1\n  gpus_per_agg: 1\n"


def dynamo_vllm(roles: str, resources: str, backend: str = "") -> str:
    """A real vLLM recipe behind Dynamo (the container's Dynamo: no install wrapper)."""
    return (
        "name: t\n"
        "model: {path: hf:org/model, container: img, precision: bf16}\n"
        f"resources:\n  gpu_type: gb200\n{resources}"
        f"backend:\n  type: vllm\n{backend}  vllm_config:\n{roles}"
        "frontend: {type: dynamo, enable_multiple_frontends: false}\n"
        "dynamo: {install: false}\n"
        "benchmark: {type: sa-bench, isl: 128, osl: 16, concurrencies: '1'}\n"
    )


def nodes(count: int, role: str = "agg", gpus: int = 4) -> str:
    return f"  gpus_per_node: {gpus}\n  {role}_nodes: {count}\n  {role}_workers: 1\n"


def commands(plan: Plan, name: str) -> list[list[str]]:
    """The worker's command on each of its nodes, placeholders bound (head node first)."""
    return [argv for role, _, argv, _ in worker_tasks(plan) if role.name == name]


def value(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def test_per_node_dp_gives_every_node_its_local_ranks_and_hybrid_lb(tmp_path: Path) -> None:
    """srt-slurm `test_dp_per_node_hybrid_command_targets_local_rank_range`: the recipe's own
    local size, start rank and hybrid-lb are replaced by the layout's, once each."""
    roles = (
        "    decode:\n      data-parallel-size: 8\n      data-parallel-size-local: 99\n"
        "      data-parallel-start-rank: 99\n      data-parallel-rpc-port: 13345\n"
        "      data-parallel-hybrid-lb: true\n      enable-expert-parallel: true\n"
        "    prefill:\n      tensor-parallel-size: 4\n"
    )
    resources = nodes(2, "decode") + "  prefill_nodes: 1\n  prefill_workers: 1\n"
    plan = plan_text(tmp_path, dynamo_vllm(roles, resources))
    head, follower = commands(plan, "decode-0")
    for rank, cmd in enumerate((head, follower)):
        assert cmd[:3] == ["python3", "-m", "dynamo.vllm"]
        assert cmd.count("--data-parallel-hybrid-lb") == 1
        assert cmd.count("--data-parallel-size-local") == 1
        assert cmd.count("--data-parallel-start-rank") == 1
        assert value(cmd, "--data-parallel-size-local") == "4"
        assert value(cmd, "--data-parallel-start-rank") == str(4 * rank)
        assert value(cmd, "--data-parallel-size") == "8"
        assert "--data-parallel-rank" not in cmd and "--headless" not in cmd
    # one RPC port for the worker, the head node's address on both nodes
    assert value(head, "--data-parallel-rpc-port") == value(follower, "--data-parallel-rpc-port")
    assert value(head, "--data-parallel-address") == value(follower, "--data-parallel-address")
    assert value(head, "--data-parallel-address") == "10.0.0.2"  # decode's first node


def test_per_node_dp_forces_hybrid_lb_the_recipe_turned_off(tmp_path: Path) -> None:
    """srt-slurm `test_dp_per_node_forces_hybrid_lb_for_follower`: every node's Dynamo
    runtime registers with the frontend, whatever the recipe says."""
    roles = "    aggregated:\n      data-parallel-size: 8\n      data_parallel_hybrid_lb: false\n"
    plan = plan_text(tmp_path, dynamo_vllm(roles, nodes(2)))
    for cmd in commands(plan, "aggregated-0"):
        assert "--data-parallel-size-local" in cmd and "--data-parallel-start-rank" in cmd
        assert cmd.count("--data-parallel-hybrid-lb") == 1 and "--headless" not in cmd
    [note] = [i for i in plan.ignored if i["field"].endswith("data_parallel_hybrid_lb")]
    assert note["field"] == "backend.vllm_config.aggregated.data_parallel_hybrid_lb"
    assert "per-node data-parallel layout" in note["why"]


def test_dp4_tp4_on_four_gpu_nodes_runs_one_local_rank_per_node(tmp_path: Path) -> None:
    """srt-slurm `test_dp_per_node_uses_local_dp_rank_for_dp4_tp4`."""
    roles = "    aggregated:\n      data-parallel-size: 4\n      tensor-parallel-size: 4\n"
    plan = plan_text(tmp_path, dynamo_vllm(roles, nodes(4)))
    cmds = commands(plan, "aggregated-0")
    assert [value(c, "--data-parallel-size-local") for c in cmds] == ["1"] * 4
    assert [value(c, "--data-parallel-start-rank") for c in cmds] == ["0", "1", "2", "3"]
    assert all("--data-parallel-hybrid-lb" in c for c in cmds)
    assert all("--nnodes" not in c and "--headless" not in c for c in cmds)


def test_dp2_tp8_on_four_gpu_nodes_plans_with_a_cross_node_rendezvous(tmp_path: Path) -> None:
    """srt-slurm `test_dp_per_node_uses_multinode_rendezvous_for_dp2_tp8`: a replica larger
    than a node selects vLLM's multi-node launch, headless off the head node."""
    roles = "    aggregated:\n      data-parallel-size: 2\n      tensor-parallel-size: 8\n"
    plan = plan_text(tmp_path, dynamo_vllm(roles, nodes(4)))
    worker = plan.role("aggregated-0")
    assert worker.nnodes == 4 and "dist_init" not in worker.ports and "dp_rpc" in worker.ports
    cmds = commands(plan, "aggregated-0")
    assert [value(c, "--master-addr") for c in cmds] == ["10.0.0.1"] * 4
    assert [value(c, "--nnodes") for c in cmds] == ["4"] * 4
    assert [value(c, "--node-rank") for c in cmds] == ["0", "1", "2", "3"]
    assert ["--headless" in c for c in cmds] == [False, True, True, True]
    assert all("--data-parallel-size-local" not in c for c in cmds)
    assert all(value(c, "--data-parallel-address") == "10.0.0.1" for c in cmds)
    assert all("--master-port" not in c for c in cmds)  # srt-slurm leaves vLLM's default


@pytest.mark.parametrize(
    ("dp", "tp", "pp", "node_count"), [(8, 8, 1, 16), (2, 8, 1, 4), (4, 16, 1, 16), (2, 4, 2, 4)]
)
def test_regular_cross_node_layouts_plan_one_command_per_node(
    tmp_path: Path, dp: int, tp: int, pp: int, node_count: int
) -> None:
    """srt-slurm `test_dp_per_node_supports_regular_cross_node_topologies`."""
    roles = (
        f"    aggregated:\n      data-parallel-size: {dp}\n      tensor-parallel-size: {tp}\n"
        f"      pipeline-parallel-size: {pp}\n"
    )
    plan = plan_text(tmp_path, dynamo_vllm(roles, nodes(node_count)))
    cmds = commands(plan, "aggregated-0")
    assert len(cmds) == node_count
    assert [value(c, "--node-rank") for c in cmds] == [str(r) for r in range(node_count)]


def test_local_rank_count_divides_node_gpus_by_tp_times_pp(tmp_path: Path) -> None:
    """srt-slurm `test_dp_per_node_accounts_for_pipeline_parallel_size`."""
    roles = (
        "    aggregated:\n      data-parallel-size: 2\n      tensor-parallel-size: 2\n"
        "      pipeline-parallel-size: 2\n"
    )
    plan = plan_text(tmp_path, dynamo_vllm(roles, nodes(2)))
    cmds = commands(plan, "aggregated-0")
    assert [value(c, "--data-parallel-size-local") for c in cmds] == ["1", "1"]
    assert [value(c, "--data-parallel-start-rank") for c in cmds] == ["0", "1"]


def test_one_node_dp_is_the_same_layout_on_its_one_node(tmp_path: Path) -> None:
    """`build_worker_command` takes the per-node branch for any DP worker, one node included."""
    roles = "    aggregated:\n      data-parallel-size: 8\n"
    plan = plan_text(tmp_path, dynamo_vllm(roles, nodes(1, gpus=8)))
    [cmd] = commands(plan, "aggregated-0")
    assert value(cmd, "--data-parallel-size-local") == "8"
    assert value(cmd, "--data-parallel-start-rank") == "0"
    assert "--data-parallel-hybrid-lb" in cmd and "--data-parallel-address" in cmd


def test_headless_with_dp_is_refused_as_srtctl_refuses_it(tmp_path: Path) -> None:
    """srt-slurm `VLLMProtocol.__post_init__`: `headless` cannot be set with per_node DP."""
    roles = "    aggregated:\n      data-parallel-size: 8\n      headless: true\n"
    with pytest.raises(UnsupportedRecipe, match="headless with data-parallel-size"):
        plan_text(tmp_path, dynamo_vllm(roles, nodes(2)))


def test_a_layout_that_does_not_fill_the_worker_is_refused(tmp_path: Path) -> None:
    """srt-slurm fails such a job at start (`_dp_per_node_endpoints_to_processes`)."""
    roles = "    aggregated:\n      data-parallel-size: 2\n      tensor-parallel-size: 2\n"
    with pytest.raises(UnsupportedRecipe, match="= 4 GPUs, but the worker has 8"):
        plan_text(tmp_path, dynamo_vllm(roles, nodes(2)))


@pytest.mark.parametrize(
    ("backend", "own", "expected"),
    [
        ("", None, {"kv_connector": "NixlConnector", "kv_role": "kv_both"}),  # the default
        ("  connector: nixl\n", None, {"kv_connector": "NixlConnector", "kv_role": "kv_both"}),
        ("  connector: lmcache\n", None, {"kv_connector": LMCACHE, "kv_role": "kv_both"}),
        (
            "  connector: kvbm\n",
            None,
            {
                "kv_connector": "DynamoConnector",
                "kv_connector_module_path": "kvbm.vllm_integration.connector",
                "kv_role": "kv_both",
            },
        ),
        ("  connector: nixl\n", "lmcache", {"kv_connector": LMCACHE, "kv_role": "kv_both"}),
        ("  connector: null\n", None, None),
        ("  connector: none\n", None, None),
    ],
)  # fmt: skip
def test_aggregated_dynamo_workers_get_the_backend_connector(
    tmp_path: Path, backend: str, own: str | None, expected: dict[str, str] | None
) -> None:
    """srt-slurm `test_connector_*` (all aggregated): `backend.connector`, nixl unless set,
    or the role's own, becomes `--kv-transfer-config`; null/none renders none."""
    roles = "    aggregated:\n      max-model-len: 4096\n" + (
        f"      connector: {own}\n" if own else ""
    )
    plan = plan_text(tmp_path, dynamo_vllm(roles, ONE, backend))
    worker = plan.role("aggregated-0")
    assert "--connector" not in worker.argv
    # NIXL's side channel whatever the connector (VLLMProtocol.get_process_environment)
    assert "nixl" in worker.ports and "VLLM_NIXL_SIDE_CHANNEL_PORT" in worker.env
    if expected is None:
        assert "--kv-transfer-config" not in worker.argv
        return
    assert json.loads(value(worker.argv, "--kv-transfer-config")) == expected
    assert worker.argv.count("--kv-transfer-config") == 1


PD_ROLES = "    prefill:\n      max-model-len: 4096\nOWN    decode:\n      max-model-len: 4096\n"
PD_ONE_NODE = (
    "  gpus_per_node: 8\n  prefill_nodes: 1\n  prefill_workers: 1\n  gpus_per_prefill: 4\n"
    "  decode_nodes: 0\n  decode_workers: 1\n  gpus_per_decode: 4\n"
)


@pytest.mark.parametrize(
    ("backend", "own", "transfer"),
    [
        ("  connector: null\n", "", False),
        ("  connector: none\n", "", False),
        ("", "      connector: none\n", False),
        ("", "      connector: 'null'\n", False),
        ("", "      connector: null\n", True),  # None: the backend's (nixl by default)
        ("  connector: null\n", "      connector: nixl\n", True),
    ],
)
def test_prefill_without_a_connector_runs_without_kv_transfer_config(
    tmp_path: Path, backend: str, own: str, transfer: bool
) -> None:
    """srt-slurm v1.0.68 `VLLMProtocol.build_worker_command` (backends/vllm.py): the mode's
    `connector`, else `backend.connector` when the mode's is None; `--kv-transfer-config`
    only `if connector and connector not in ("null", "none", None)`."""
    roles = PD_ROLES.replace("OWN", own)
    plan = plan_text(tmp_path, dynamo_vllm(roles, PD_ONE_NODE, backend))
    prefill = plan.role("prefill-0")
    assert ("--kv-transfer-config" in prefill.argv) is transfer
    # NIXL's side channel whatever the connector (VLLMProtocol.get_process_environment)
    assert "nixl" in prefill.ports and "--connector" not in prefill.argv
    assert value(prefill.argv, "--disaggregation-mode") == "prefill"
    if transfer:
        config = json.loads(value(prefill.argv, "--kv-transfer-config"))
        assert config == {"kv_connector": "NixlConnector", "kv_role": "kv_both"}


def test_a_raw_json_connector_passes_through_unchanged(tmp_path: Path) -> None:
    """srt-slurm `test_connector_custom_json_passthrough`."""
    custom = '{"kv_connector":"MyCustomConnector","kv_role":"kv_both"}'
    backend = f"  connector: '{custom}'\n"
    roles = "    aggregated:\n      max-model-len: 4096\n"
    plan = plan_text(tmp_path, dynamo_vllm(roles, ONE, backend))
    assert value(plan.role("aggregated-0").argv, "--kv-transfer-config") == custom


@pytest.mark.parametrize(
    ("backend", "listed"),
    [("", True), ("  set_cuda_visible_devices: true\n", False)],
)
def test_gpu_selection_by_environment_is_a_listed_difference(
    tmp_path: Path, backend: str, listed: bool
) -> None:
    """srt-slurm passes `--device-ids` (`build_worker_command`, unless
    `set_cuda_visible_devices`); disagg masks GPUs by environment and says so."""
    roles = "    aggregated:\n      max-model-len: 4096\n"
    plan = plan_text(tmp_path, dynamo_vllm(roles, ONE, backend))
    assert ("vllm-device-ids" in [row["id"] for row in plan.differs]) is listed
    [(_, _, argv, env)] = [t for t in worker_tasks(plan) if t[0].name == "aggregated-0"]
    assert "--device-ids" not in argv and env["CUDA_VISIBLE_DEVICES"] == "0"


def test_a_dp_workers_nixl_side_channel_reserves_a_port_per_rank(tmp_path: Path) -> None:
    """vLLM's NIXL side channel listens on its base port plus the DP rank; srt-slurm
    reserves a block of DP size (`next_nixl_port_block`), so does the plan (`nixl*16`)."""
    roles = (
        "    prefill:\n      tensor-parallel-size: 4\n"
        "    decode:\n      data-parallel-size: 16\n      enable-expert-parallel: true\n"
    )
    resources = nodes(4, "decode") + "  prefill_nodes: 1\n  prefill_workers: 1\n"
    plan = plan_text(tmp_path, dynamo_vllm(roles, resources))
    # besides: the KV-event port, a VLLM_PORT block and Dynamo's system port, every process's
    # own (srtctl's VLLMProtocol.get_process_environment, endpoints_to_processes)
    # (a worker over several nodes gets no VLLM_PORT: srtctl unsets it)
    own = ["kv_events", "vllm*50", "system"]
    assert plan.role("decode-0").ports == ["http", "nixl*16", "dp_rpc", "kv_events", "system"]
    assert plan.role("prefill-0").ports == ["http", "nixl", *own]
    decode = [env for role, _, _, env in worker_tasks(plan) if role.name == "decode-0"]
    assert len({env["VLLM_NIXL_SIDE_CHANNEL_PORT"] for env in decode}) == 1  # one base
