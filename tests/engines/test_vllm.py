"""vLLM workers: `vllm serve` commands for aggregated, prefill/decode and multi-node workers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from disagg.engines.sim.args import parse_args
from disagg.engines.vllm import ADAPTER, kv_transfer_config
from disagg.errors import UnsupportedRecipe
from disagg.plan.model import Plan

from .engine_support import plan_text, recipe

ONE_NODE = "  gpus_per_node: 8\n  agg_nodes: 1\n  agg_workers: 1\n"
PD = (
    "  gpus_per_node: 8\n  prefill_nodes: 1\n  prefill_workers: 1\n"
    "  decode_nodes: 1\n  decode_workers: 1\n"
)
TP8_PD = "    prefill:\n      tensor-parallel-size: 8\n    decode:\n      tensor-parallel-size: 8\n"


def bound(argv: list[str]) -> list[str]:
    """A simulated worker's flags with every `${...}` placeholder given a number."""
    return ["1" if "${" in arg else arg for arg in argv[4:]]


def flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_aggregated_worker_is_vllm_serve_on_the_staged_model(tmp_path: Path) -> None:
    roles = "    aggregated:\n      tensor-parallel-size: 8\n      max-num-seqs: 64\n"
    plan = plan_text(tmp_path, recipe("vllm", roles, resources=ONE_NODE))
    assert (plan.engine, plan.backend, plan.simulated) == ("vllm", "vllm", False)
    [worker] = [r for r in plan.roles if r.name == "aggregated-0"]
    assert worker.argv == [
        "vllm", "serve", "${model.path}",
        "--tensor-parallel-size", "8", "--max-num-seqs", "64", "--served-model-name", "model",
        "--host", "${self.bind_host}", "--port", "${self.http_port}",
    ]  # fmt: skip
    assert worker.node_argv == []
    # srtctl's per-process variables (VLLMProtocol.get_process_environment): NIXL's side
    # channel whatever the connector, the KV-event port, a private VLLM_PORT base
    assert worker.ports == ["http", "nixl", "kv_events", "vllm*50", "system"]
    assert worker.env["VLLM_NIXL_SIDE_CHANNEL_PORT"] == "${self.nixl_port}"
    assert worker.env["DYN_VLLM_KV_EVENT_PORT"] == "${self.kv_events_port}"
    assert worker.env["VLLM_PORT"] == "${self.vllm_port}"
    assert worker.health is not None and worker.health.path == "/health"


def test_prefill_decode_get_the_nixl_connector_and_a_side_channel_each(tmp_path: Path) -> None:
    roles = TP8_PD
    plan = plan_text(tmp_path, recipe("vllm", roles, resources=PD))
    for name in ("prefill-0", "decode-0"):
        role = plan.role(name)
        transfer = json.loads(flag(role.argv, "--kv-transfer-config"))
        assert transfer == {"kv_connector": "NixlConnector", "kv_role": "kv_both"}
        assert role.ports == ["http", "nixl", "kv_events", "vllm*50", "system"]
        assert role.env["VLLM_NIXL_SIDE_CHANNEL_PORT"] == "${self.nixl_port}"
        assert role.env["VLLM_NIXL_SIDE_CHANNEL_HOST"] == "${self.bind_host}"
        assert "--disaggregation-mode" not in role.argv  # not a `vllm serve` flag
    router = plan.role("router").argv
    # smg moves vLLM's KV only for workers registered with their connector (no bootstrap port)
    assert router[1:3] == ["-m", "disagg.frontends.register"]
    at = router.index("--worker")
    assert router[at : at + 4] == ["--worker", "${prefill-0.url}", "prefill", "NixlConnector"]
    assert "--prefill" not in router and "--bootstrap-port" not in router


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        ("nixl", {"kv_connector": "NixlConnector", "kv_role": "kv_both"}),
        ("LMCache", {"kv_connector": "LMCacheConnectorV1", "kv_role": "kv_both"}),
        (
            "kvbm",
            {
                "kv_connector": "DynamoConnector",
                "kv_connector_module_path": "kvbm.vllm_integration.connector",
                "kv_role": "kv_both",
            },
        ),
        (
            '{"kv_connector":"NixlConnector","kv_role":"kv_producer","kv_buffer_device":"cpu"}',
            {"kv_connector": "NixlConnector", "kv_role": "kv_producer", "kv_buffer_device": "cpu"},
        ),
    ],
)
def test_connector_shorthands_expand_and_raw_json_passes_through(
    written: str, expected: dict[str, str]
) -> None:
    text = kv_transfer_config(written)
    assert text is not None and json.loads(text) == expected
    if written.startswith("{"):
        assert text == written  # unchanged, byte for byte
    assert kv_transfer_config("null") is None and kv_transfer_config(None) is None


def test_role_settings_choose_the_connector_before_the_backend(tmp_path: Path) -> None:
    raw = '{"kv_connector": "NixlConnector", "kv_role": "kv_consumer", "kv_buffer_device": "cpu"}'
    roles = (
        f"    prefill:\n      connector: lmcache\n    decode:\n      kv-transfer-config: '{raw}'\n"
    )
    backend = "  connector: kvbm\n"
    plan = plan_text(tmp_path, recipe("vllm", roles, resources=PD, backend=backend))
    prefill = plan.role("prefill-0")
    assert json.loads(flag(prefill.argv, "--kv-transfer-config"))["kv_connector"] == (
        "LMCacheConnectorV1"
    )
    # no NixlConnector, yet NIXL's side channel as srtctl gives every vLLM process one
    assert "--connector" not in prefill.argv and "nixl" in prefill.ports
    decode = plan.role("decode-0")
    assert flag(decode.argv, "--kv-transfer-config") == raw
    assert decode.argv.count("--kv-transfer-config") == 1 and "nixl" in decode.ports


def test_prefill_decode_without_a_connector_is_refused_at_plan_time(tmp_path: Path) -> None:
    roles = TP8_PD
    text = recipe("vllm", roles, resources=PD, backend="  connector: null\n")
    with pytest.raises(UnsupportedRecipe) as caught:
        plan_text(tmp_path, text)
    assert "`vllm serve` prefill worker without a KV connector behind frontend type smg" in str(
        caught.value
    )
    assert "\n" not in str(caught.value)


def test_multi_node_data_parallel_runs_headless_ranks_off_the_head_node(tmp_path: Path) -> None:
    resources = "  gpus_per_node: 4\n  agg_nodes: 2\n  agg_workers: 1\n"
    roles = (
        "    aggregated:\n      data-parallel-size: 8\n      enable-expert-parallel: true\n"
        "      data-parallel-rpc-port: 13345\n"
    )
    plan = plan_text(tmp_path, recipe("vllm", roles, resources=resources))
    worker = plan.role("aggregated-0")
    head, other = worker.node_argv
    # over two nodes: no VLLM_PORT (srtctl unsets it for a worker over several nodes)
    assert head == worker.argv
    assert worker.ports == ["http", "nixl*8", "dp_rpc", "kv_events", "system"]
    assert "VLLM_PORT" not in worker.env
    for argv in (head, other):
        assert flag(argv, "--data-parallel-size") == "8"
        assert flag(argv, "--data-parallel-size-local") == "4"
        assert flag(argv, "--data-parallel-address") == "${self.host}"
        assert flag(argv, "--data-parallel-rpc-port") == "${self.dp_rpc_port}"
    assert "--headless" not in head and "--port" in head
    assert "--headless" in other and flag(other, "--data-parallel-start-rank") == "4"
    assert "--port" not in other
    [ignored] = [i for i in plan.ignored if i["field"].startswith("backend.vllm_config")]
    assert ignored["field"] == "backend.vllm_config.aggregated.data-parallel-rpc-port"
    assert ignored["action"] == "ignored" and "set by the plan" in ignored["why"]


def test_multi_node_tensor_parallel_spans_nodes_with_master_address(tmp_path: Path) -> None:
    resources = "  gpus_per_node: 4\n  agg_nodes: 2\n  agg_workers: 1\n"
    roles = "    aggregated:\n      tensor-parallel-size: 8\n"
    plan = plan_text(tmp_path, recipe("vllm", roles, resources=resources))
    head, other = plan.role("aggregated-0").node_argv
    for rank, argv in enumerate((head, other)):
        assert flag(argv, "--nnodes") == "2" and flag(argv, "--node-rank") == str(rank)
        assert flag(argv, "--master-addr") == "${self.host}"
        assert flag(argv, "--master-port") == "${self.dist_init_port}"
    assert "--headless" in other and "--headless" not in head
    assert "dist_init" in plan.role("aggregated-0").ports


def test_hybrid_load_balancing_across_nodes_is_refused(tmp_path: Path) -> None:
    resources = "  gpus_per_node: 4\n  agg_nodes: 2\n  agg_workers: 1\n"
    roles = "    aggregated:\n      data-parallel-size: 8\n      data-parallel-hybrid-lb: true\n"
    with pytest.raises(UnsupportedRecipe, match="data-parallel-hybrid-lb"):
        plan_text(tmp_path, recipe("vllm", roles, resources=resources))


def test_a_draft_model_repo_in_speculative_config_is_staged_and_bound(tmp_path: Path) -> None:
    spec = '{"method": "eagle3", "model": "org/eagle", "num_speculative_tokens": 3}'
    roles = f"    aggregated:\n      speculative-config: '{spec}'\n"
    plan = plan_text(tmp_path, recipe("vllm", roles, resources=ONE_NODE))
    assert [m.repo_id for m in plan.staging.models if m.purpose == "draft"] == ["org/eagle"]
    bound = json.loads(flag(plan.role("aggregated-0").argv, "--speculative-config"))
    assert bound == {"method": "eagle3", "model": "${model.draft}", "num_speculative_tokens": 3}


def test_simulated_vllm_worker_carries_what_vllm_would_run(tmp_path: Path) -> None:
    roles = (
        "    prefill:\n      tensor-parallel-size: 2\n      data-parallel-size: 4\n"
        "      enable-expert-parallel: true\n      max-num-batched-tokens: 4096\n"
        "    decode:\n      tensor-parallel-size: 8\n      max-num-seqs: 128\n"
        "      max-model-len: 8192\n"
    )
    text = recipe("vllm", roles, resources=PD, backend="  engine: sim\n")
    plan: Plan = plan_text(tmp_path, text)
    assert (plan.engine, plan.backend, plan.simulated) == ("sim", "vllm", True)
    prefill = parse_args(bound(plan.role("prefill-0").argv))
    assert (prefill.tp_size, prefill.dp_size, prefill.ep_size, prefill.gpus) == (2, 4, 8, 8)
    # each of the 4 data-parallel engine cores schedules its own 4096-token steps
    assert prefill.mode == "prefill" and prefill.chunked_prefill_size == 4 * 4096
    assert plan.role("prefill-0").ports == ["http", "bootstrap"]  # the simulator's PD protocol
    decode = parse_args(bound(plan.role("decode-0").argv))
    assert (decode.tp_size, decode.gpus, decode.running_limit) == (8, 8, 128)
    assert decode.context_length == 8192 and not decode.ignored


def test_engine_flags_leave_out_program_model_and_placement() -> None:
    """What a frontend running vLLM under its own module (Dynamo) reuses."""
    from disagg.engines.base import WorkerSpec

    args = {"tensor-parallel-size": 4, "port": 9, "connector": "nixl"}
    flags = ADAPTER.engine_flags(args, WorkerSpec(role="decode", served_name="m"))
    assert flags[:4] == ["--tensor-parallel-size", "4", "--served-model-name", "m"]
    assert "--port" not in flags and "serve" not in flags and "--kv-transfer-config" in flags


def test_engine_wide_knobs_are_carried_out_refused_or_said_to_be_ignored(tmp_path: Path) -> None:
    roles = "    aggregated:\n      tensor-parallel-size: 8\n"
    binary = "  vllm_serve_binary: /opt/vllm-rs/bin/vllm-rs\n  sequential_node_start: 2\n"
    plan = plan_text(tmp_path, recipe("vllm", roles, resources=ONE_NODE, backend=binary))
    assert plan.role("aggregated-0").argv[:2] == ["/opt/vllm-rs/bin/vllm-rs", "serve"]
    backend = [i["field"] for i in plan.ignored if i["field"].startswith("backend.")]
    assert backend == ["backend.sequential_node_start"]  # (frontend fields: their adapter's)
    # srt-slurm's DP launch layout only shapes workers that set data-parallel-size
    per_gpu = recipe("vllm", roles, resources=ONE_NODE, backend="  dp_launch_mode: per_gpu\n")
    plain = plan_text(tmp_path, recipe("vllm", roles, resources=ONE_NODE))
    assert plan_text(tmp_path, per_gpu).role("aggregated-0").argv == plain.role("aggregated-0").argv
    # behind a router, per-GPU ranks (Dynamo registrations) have no API server to reach
    dp = "    aggregated:\n      data-parallel-size: 8\n"
    routed = recipe("vllm", dp, resources=ONE_NODE, backend="  dp_launch_mode: per_gpu\n")
    with pytest.raises(UnsupportedRecipe, match=r"backend\.dp_launch_mode per_gpu behind"):
        plan_text(tmp_path, routed)


def test_vllm_port_is_the_workers_own_and_gone_over_several_nodes(tmp_path: Path) -> None:
    """srtctl's VLLM_PORT (VLLMProtocol.get_process_environment) wins over the recipe's; a
    worker over several nodes has it unset, the recipe's too (worker_stage.start_worker's
    env_to_unset)."""
    env = "environment:\n  VLLM_PORT: '1234'\n"
    one = plan_text(tmp_path, recipe("vllm", TP8_PD, resources=PD) + env)
    assert one.role("prefill-0").env["VLLM_PORT"] == "${self.vllm_port}"
    resources = "  gpus_per_node: 4\n  agg_nodes: 2\n  agg_workers: 1\n"
    roles = "    aggregated:\n      tensor-parallel-size: 8\n"
    two = plan_text(tmp_path, recipe("vllm", roles, resources=resources) + env)
    worker = two.role("aggregated-0")
    assert worker.nnodes == 2 and "VLLM_PORT" not in worker.env
    assert "vllm*50" not in worker.ports
